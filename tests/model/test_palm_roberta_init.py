"""PALM pre-training with its encoder initialised from a converted RoBERTa (PALM §3.1, --pretrained-encoder).

A tiny random ``transformers`` RoBERTa (hidden 64, 4 heads, FFN 96: ``palm_tiny``'s sizes) is saved with a
``vocab.json`` and ``merges.txt`` written here, converted by the project's converter, and a small corpus is
binarized with the converted ``dict.txt``. After ``palm_pretrain``'s model setup, and after one
``fairseq-train`` step at learning rate 0, every encoder tensor equals the converted one exactly; the decoder
keeps its own fresh initialisation apart from the token table it shares with the encoder.
"""

import os
import re

import pytest
import torch
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from ..helpers.cli import preprocess, run_cli
from ..helpers.hf import FAIRSEQ_SPECIALS, perturb_, roberta_vocab, save_hf, write_json

transformers = pytest.importorskip("transformers")

from unilm_fairseq.hf_import import convert_hf_checkpoint  # noqa: E402
from unilm_fairseq.tasks.palm_pretrain import PALMPretrainConfig, PALMPretrainTask  # noqa: E402

ROBERTA_EPS = 1e-6  # not fairseq's 1e-5, so an encoder built with the wrong epsilon shows
POSITIONS = 64  # RoBERTa's usable positions (its table has 2 more rows, for ids at or below the pad)
ARCH_FLAGS = ["--arch", "palm_tiny", "--max-source-positions", str(POSITIONS),
              "--max-target-positions", str(POSITIONS), "--dropout", "0"]  # fmt: skip
MAX_FRAGMENT = 60
PAD_OFFSET = 2  # fairseq's and RoBERTa's first position id: padding id 1, plus one


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """(HF model, converted folder, binarized corpus) for a tiny random RoBERTa."""
    work = tmp_path_factory.mktemp("palm_roberta")
    vocab = roberta_vocab()
    config = transformers.RobertaConfig(
        vocab_size=len(vocab), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=96, max_position_embeddings=POSITIONS + PAD_OFFSET, type_vocab_size=1,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, layer_norm_eps=ROBERTA_EPS,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    torch.manual_seed(0)
    hf = transformers.RobertaForMaskedLM(config).eval()
    perturb_(hf, seed=4)  # every weight matters, none sits at BERT's 0/1 init
    merges = "#version: 0.2\n\u0120 w\n\u0120w 1\n"  # byte-level BPE merges of the vocabulary's pieces
    model_dir = save_hf(hf, str(work / "hf"), {"merges.txt": merges})
    write_json(os.path.join(model_dir, "vocab.json"), vocab)
    out = convert_hf_checkpoint(model_dir, str(work / "converted"))

    # a corpus in the converted vocabulary: RoBERTa's token ids are the dict.txt symbols
    g = torch.Generator().manual_seed(1)
    first, last = len(FAIRSEQ_SPECIALS), len(vocab) - 1  # words only: no specials, no <mask>
    lines = []
    for _ in range(6):  # documents
        for _ in range(5):  # sentences
            n = int(torch.randint(4, 20, (1,), generator=g))
            lines.append(" ".join(str(int(i)) for i in torch.randint(first, last, (n,), generator=g)))
        lines.append("")
    (work / "train.txt").write_text("\n".join(lines) + "\n")
    preprocess(["--only-source", "--srcdict", os.path.join(out, "dict.txt"),
                "--trainpref", str(work / "train.txt"), "--validpref", str(work / "train.txt"),
                "--destdir", str(work / "bin"), "--workers", "1"])  # fmt: skip
    return hf, out, work / "bin"


def model_cfg(data, *flags):
    """The model options that ``fairseq-train DATA --task palm_pretrain ARCH_FLAGS flags`` parses."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [str(data), "--task", "palm_pretrain", *ARCH_FLAGS, *flags])
    return convert_namespace_to_omegaconf(args).model


def build(data, seed=0, **task_options):
    """The ``palm_tiny`` model ``fairseq-train --task palm_pretrain`` builds, and its task."""
    cfg = PALMPretrainConfig(data=str(data), max_fragment_tokens=MAX_FRAGMENT, seed=1, **task_options)
    task = PALMPretrainTask.setup_task(cfg)
    torch.manual_seed(seed)
    return task.build_model(model_cfg(data)).eval(), task


def expected_encoder(converted_state, num_layers):
    """``{palm name: tensor}`` for every encoder (and MLM head) tensor, from the converted checkpoint,
    with the name mapping written out here independently of the loader."""
    c = converted_state
    expected = {
        "encoder.embed_tokens.weight": c["transformer.embeddings.tokens.weight"],
        "encoder.layernorm_embedding.weight": c["transformer.embeddings.layer_norm.weight"],
        "encoder.layernorm_embedding.bias": c["transformer.embeddings.layer_norm.bias"],
        "encoder_mlm_head.weight": c["transformer.embeddings.tokens.weight"],  # tied, as in RoBERTa
    }
    for name in ("dense.weight", "dense.bias", "layer_norm.weight", "layer_norm.bias", "bias"):
        expected[f"encoder_mlm_head.{name}"] = c[f"lm_head.{name}"]
    for key, tensor in c.items():
        if key.startswith("transformer.layers."):
            index = int(key.split(".")[2])
            assert index < num_layers
            expected["encoder." + key[len("transformer.") :]] = tensor
    return expected


def check_encoder_is_the_converted_one(state, converted_state):
    """Every encoder tensor of ``state`` equals the converted tensor exactly (see the module docstring)."""
    expected = expected_encoder(converted_state, num_layers=2)
    encoder = {k for k in state if k.startswith(("encoder.", "encoder_mlm_head.")) and k != "encoder.version"}
    position_table = "encoder.embed_positions.weight"
    assert encoder == set(expected) | {position_table}  # nothing in the encoder is left unchecked
    for key, tensor in expected.items():
        assert torch.equal(state[key], tensor), key
    # positions: RoBERTa's row p (p >= 2) plus its one token-type vector, at fairseq's row p
    positions = converted_state["transformer.embeddings.positions.weight"]
    token_type = converted_state["transformer.embeddings.segments.weight"][0]
    assert state[position_table].shape == (POSITIONS + PAD_OFFSET, 64)
    assert torch.equal(state[position_table][PAD_OFFSET:], positions[:POSITIONS] + token_type)
    assert not state[position_table][1].any()  # the padding row: read by pad tokens only


def test_task_setup_loads_exactly_the_converted_encoder(converted):
    hf, out, data = converted
    converted_state = torch.load(os.path.join(out, "model.pt"), weights_only=True)["model"]
    model, _ = build(data, pretrained_encoder=os.path.join(out, "model.pt"))
    state = model.state_dict()
    check_encoder_is_the_converted_one(state, converted_state)
    assert model.encoder.layers[0].final_layer_norm.eps == ROBERTA_EPS  # the checkpoint's epsilon
    assert model.encoder_mlm_head.layer_norm.eps == ROBERTA_EPS

    # the decoder keeps the initialisation the same seed gives without the option ...
    fresh, _ = build(data)
    shared = state["encoder.embed_tokens.weight"].data_ptr()
    tied = [k for k in state if k.startswith("decoder.") and state[k].data_ptr() == shared]
    assert sorted(tied) == ["decoder.embed_tokens.weight", "decoder.output_projection.weight",
                            "decoder.pointer.embed_weight"]  # fmt: skip
    own = [k for k in state if k.startswith("decoder.") and k not in tied]
    assert any(k.startswith("decoder.layers.") for k in own) and "decoder.pointer.vocab_proj.weight" in own
    for key in own:
        assert torch.equal(state[key], fresh.state_dict()[key]), key
    # ... but reads and writes RoBERTa's token table (PALM §2.3 ties W^e to the input embedding)
    assert not torch.equal(
        fresh.state_dict()["encoder.embed_tokens.weight"], state["decoder.embed_tokens.weight"]
    )

    # the same function as the Hugging Face model: hidden states and MLM logits of a right-padded batch
    ids = torch.tensor([[0, 9, 17, 5, 30, 2], [0, 12, 8, 2, 1, 1]])  # <s> words </s> <pad>
    real = ids.ne(1)
    with torch.no_grad():
        hidden = hf.roberta(input_ids=ids, attention_mask=real.long()).last_hidden_state
        logits = hf(input_ids=ids, attention_mask=real.long()).logits
        ours = model.encoder(ids, src_lengths=real.sum(1))["encoder_out"][0].transpose(0, 1)
        our_logits = model.encoder_mlm_head(ours[real])
    assert (ours[real] - hidden[real]).abs().max() < 1e-5 and hidden[real].std() > 0.1
    assert (our_logits - logits[real]).abs().max() < 1e-4


def test_mismatches_are_clear_errors(converted, tmp_path):
    _, out, data = converted
    path = os.path.join(out, "model.pt")
    cases = [
        (["--encoder-attention-heads", "8"], "4 attention heads per layer but the encoder has 8"),
        (["--encoder-layers", "3"], "2 layers but the encoder has 3"),
        (["--encoder-embed-dim", "32"], "the dictionary.s size but another width"),
        (["--encoder-ffn-embed-dim", "80"], "hidden or FFN size"),
    ]
    cfg = PALMPretrainConfig(data=str(data), max_fragment_tokens=MAX_FRAGMENT, pretrained_encoder=path)
    task = PALMPretrainTask.setup_task(cfg)
    for flags, message in cases:
        with pytest.raises(ValueError, match=message):
            task.build_model(model_cfg(data, *flags))
    with pytest.raises(ValueError, match="has 64 positions: use --max-source-positions 64 or less"):
        task.build_model(model_cfg(data, "--max-source-positions", "100"))

    # a vocabulary of the right size but in another order: the dict.txt beside the checkpoint tells
    other = tmp_path / "other"
    other.mkdir()
    lines = (data / "dict.txt").read_text().splitlines()
    lines[0], lines[1] = lines[1], lines[0]
    (other / "dict.txt").write_text("\n".join(lines) + "\n")
    for split in ("train.bin", "train.idx"):
        (other / split).write_bytes((data / split).read_bytes())
    with pytest.raises(ValueError, match=r"is not the task's dictionary .* id 4 is '4' there but '5' here"):
        build(other, pretrained_encoder=path)
    with pytest.raises(ValueError, match="--stage1-checkpoint .* or --pretrained-encoder, not both"):
        PALMPretrainTask.setup_task(
            PALMPretrainConfig(data=str(data), stage=2, stage1_checkpoint=path, pretrained_encoder=path)
        )


@pytest.mark.slow
def test_first_step_at_learning_rate_zero_keeps_the_converted_encoder(converted, tmp_path):
    """fairseq-train --task palm_pretrain --pretrained-encoder: one real update with lr 0 (stage 1)."""
    _, out, data = converted
    path = os.path.join(out, "model.pt")
    train = run_cli(["fairseq-train", str(data), "--user-dir", "unilm_fairseq", "--task", "palm_pretrain",
                     *ARCH_FLAGS, "--criterion", "palm", "--stage", "1", "--pretrained-encoder", path,
                     "--max-fragment-tokens", str(MAX_FRAGMENT), "--optimizer", "adam", "--lr", "0",
                     "--weight-decay", "0.01", "--batch-size", "8", "--max-update", "1", "--cpu",
                     "--num-workers", "0", "--seed", "3", "--log-format", "simple", "--log-interval", "1",
                     "--save-dir", str(tmp_path), "--no-epoch-checkpoints"])  # fmt: skip
    log = train.stdout + train.stderr
    assert f"initialised the encoder and the shared embeddings from {path}" in log
    assert re.search(r"the decoder keeps its fresh initialisation: \d+ tensors: decoder.embed_positions", log)
    assert re.search(r"train_inner .*mlm_loss=[\d.]+.*num_updates=1\b", log), log[-2000:]
    checkpoint = torch.load(tmp_path / "checkpoint_last.pt", weights_only=True)
    assert checkpoint["optimizer_history"][-1]["num_updates"] == 1
    assert checkpoint["last_optimizer_state"]["state"]  # Adam took its step (moments stored)
    converted_state = torch.load(path, weights_only=True)["model"]
    check_encoder_is_the_converted_one(checkpoint["model"], converted_state)
