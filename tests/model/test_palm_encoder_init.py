"""--pretrained-encoder: a unilmv2 (BERT-style) checkpoint initialises PALM's encoder to the same function."""

import pytest
import torch

from unilm_fairseq.checkpoint.palm_init import load_unilmv2_encoder, read_unilmv2_checkpoint
from unilm_fairseq.tasks.palm_seq2seq import PALMSeq2SeqConfig, PALMSeq2SeqTask

from ..helpers.models import make_dictionary, save_checkpoint, tiny_model
from ..helpers.palm import BERT_SIZES, palm_args, palm_model


def unilm_and_batch(dictionary, **overrides):
    unilm = tiny_model(dictionary, seed=3, rel_pos_bins=0, max_positions=48, **{**BERT_SIZES, **overrides})
    with torch.no_grad():  # BERT's init leaves LayerNorms and biases at 1/0: make every tensor count
        for name, param in unilm.named_parameters():
            if "layer_norm" in name or name.endswith("bias"):
                param.add_(0.1 * torch.randn_like(param))
    g = torch.Generator().manual_seed(0)
    src = torch.randint(dictionary.nspecial, len(dictionary) - 1, (3, 10), generator=g)
    src[:, -1] = dictionary.eos()
    src[1, 7:] = dictionary.pad()  # right padding
    return unilm, src


def unilm_states(unilm, src, pad):
    bsz, length = src.shape
    visible = src.ne(pad).unsqueeze(1).expand(bsz, length, length)
    positions = torch.arange(length).expand(bsz, length)
    states, _ = unilm(src, torch.zeros_like(src), positions, visible, features_only=True)
    return states  # B x S x C


def palm_states(palm, src, pad):
    return palm.encoder(src, src_lengths=src.ne(pad).sum(1))["encoder_out"][0].transpose(0, 1)


def test_encoder_computes_the_unilmv2_function(tmp_path):
    dictionary = make_dictionary(50)
    pad = dictionary.pad()
    unilm, src = unilm_and_batch(dictionary)
    path = tmp_path / "bert.pt"
    save_checkpoint(unilm.state_dict(), path)
    state, eps = read_unilmv2_checkpoint(str(path))
    assert eps == 1e-12  # BERT's, the unilmv2 default
    palm = palm_model(dictionary, encoder_layernorm_eps=eps)
    load_unilmv2_encoder(palm, state, str(path))
    real = src.ne(pad)
    expected, got = unilm_states(unilm, src, pad), palm_states(palm, src, pad)
    assert (got[real] - expected[real]).abs().max() < 1e-5
    assert torch.allclose(palm.encoder_mlm_head(got[real]), unilm.lm_head(expected[real]), atol=1e-4)
    assert palm.decoder.embed_tokens.weight is palm.encoder.embed_tokens.weight  # shared table, now BERT's


def test_task_option_sets_the_epsilon_and_loads(tmp_path):

    dictionary = make_dictionary(50)
    unilm, src = unilm_and_batch(dictionary)
    path = tmp_path / "bert.pt"
    save_checkpoint(unilm.state_dict(), path)
    task = PALMSeq2SeqTask(PALMSeq2SeqConfig(pretrained_encoder=str(path)), dictionary, dictionary)
    args = palm_args()
    palm = task.build_model(args).eval()
    assert args.encoder_layernorm_eps == 1e-12 and palm.encoder.layers[0].final_layer_norm.eps == 1e-12
    assert palm.encoder_mlm_head is None  # fine-tuning builds none
    real = src.ne(dictionary.pad())
    got, expected = palm_states(palm, src, dictionary.pad()), unilm_states(unilm, src, dictionary.pad())
    assert (got[real] - expected[real]).abs().max() < 1e-5
    task.cfg.pretrained_checkpoint = str(path)
    with pytest.raises(ValueError, match="not both"):
        task.build_model(palm_args())


def test_unmappable_checkpoints_are_clear_errors(tmp_path):
    dictionary = make_dictionary(50)
    cases = [
        (dict(rel_pos_bins=32), "relative position bias"),
        (dict(encoder_layers=3), "3 layers but the encoder has 2"),
        (dict(encoder_ffn_embed_dim=80), "FFN size"),
    ]
    for overrides, message in cases:
        unilm = tiny_model(dictionary, max_positions=48, **{**BERT_SIZES, "rel_pos_bins": 0, **overrides})
        save_checkpoint(unilm.state_dict(), tmp_path / "x.pt")
        state, _ = read_unilmv2_checkpoint(str(tmp_path / "x.pt"))
        with pytest.raises(ValueError, match=message):
            load_unilmv2_encoder(palm_model(dictionary), state, "x.pt")
    unilm = tiny_model(dictionary, max_positions=20, **{**BERT_SIZES, "rel_pos_bins": 0})
    save_checkpoint(unilm.state_dict(), tmp_path / "short.pt")
    state, _ = read_unilmv2_checkpoint(str(tmp_path / "short.pt"))
    with pytest.raises(ValueError, match="--max-source-positions 20 or less"):
        load_unilmv2_encoder(palm_model(dictionary), state, "short.pt")
    with pytest.raises(ValueError, match="dict.txt"):
        load_unilmv2_encoder(palm_model(make_dictionary(51)), state, "short.pt")
