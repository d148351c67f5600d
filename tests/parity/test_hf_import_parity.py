"""Parity of converted checkpoints with the Hugging Face models they come from.

Tiny randomly initialised (and perturbed) ``transformers`` models of every
format are saved with ``save_pretrained``, converted, loaded back through
fairseq's checkpoint loader, and compared on a right-padded batch: final hidden
states of the real tokens, and MLM logits where the source has a head, within
``ATOL``. The fast-QKV format is checked against an independent reference
forward (UniLM's fused projections and shared relative position bias).
"""

import logging
import os
import sys

import pytest
import torch

from ..helpers.cli import REPO, run_cli
from ..helpers.hf import (
    ATOL,
    ELECTRA_EMBEDDING_SIZE,
    TINY,
    load_converted,
    max_real_diff,
    padded_batch,
    perturb_,
    roberta_vocab,
    save_hf,
    unilm_forward,
    wordpiece_tokens,
    write_json,
)
from ..helpers.unilm_reference import MAX_REL_POS, REL_POS_BINS, fast_qkv_state, reference_unilm_forward

logger = logging.getLogger(__name__)
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from unilm_fairseq.hf_export import export_checkpoint  # noqa: E402
from unilm_fairseq.hf_import import convert_hf_checkpoint  # noqa: E402

SCRIPT = os.path.join(REPO, "scripts", "convert_hf_checkpoint.py")
# real-token outputs must vary this much, so agreement within ATOL is not agreement of constants
MIN_OUTPUT_STD = 0.1


def _hf(model, ids, attention_mask, token_type_ids=None):
    """Last hidden states and, for models with an MLM head, its logits."""
    kwargs = dict(input_ids=ids, attention_mask=attention_mask)
    if token_type_ids is not None:
        kwargs["token_type_ids"] = token_type_ids
    with torch.no_grad():
        hidden = model.base_model(**kwargs).last_hidden_state
        logits = model(**kwargs).logits if type(model).__name__.endswith("ForMaskedLM") else None
    return hidden, logits


def _bert_dir(tmp_path, cls=None, **overrides):
    tokens = wordpiece_tokens()
    config = transformers.BertConfig(vocab_size=len(tokens), pad_token_id=0, **{**TINY, **overrides})
    torch.manual_seed(0)
    model = (cls or transformers.BertForMaskedLM)(config).eval()
    perturb_(model, seed=1)
    save_hf(model, str(tmp_path / "hf"), {"vocab.txt": "\n".join(tokens) + "\n"})
    return model, str(tmp_path / "hf")


def _wordpiece_batch(seed=0):
    tokens = wordpiece_tokens()
    ids = {t: i for i, t in enumerate(tokens)}
    return padded_batch(len(tokens), len(tokens) - 40, ids["[CLS]"], ids["[SEP]"], ids["[PAD]"], seed)


def _check(hf_out, ours, attention_mask, name):
    (hf_hidden, hf_logits), (hidden, logits) = hf_out, ours
    diff = max_real_diff(hf_hidden, hidden, attention_mask)
    assert float(hidden[attention_mask.bool()].std()) > MIN_OUTPUT_STD
    assert diff < ATOL, f"{name}: hidden states differ by {diff:.2e}"
    logger.info("%s: max |hidden diff| %.2e", name, diff)
    if hf_logits is not None:
        logit_diff = max_real_diff(hf_logits, logits, attention_mask)
        assert float(logits[attention_mask.bool()].std()) > MIN_OUTPUT_STD
        assert logit_diff < ATOL, f"{name}: MLM logits differ by {logit_diff:.2e}"
        logger.info("%s: max |logit diff| %.2e", name, logit_diff)


def test_bert_masked_lm(tmp_path):
    hf, model_dir = _bert_dir(tmp_path)
    out = convert_hf_checkpoint(model_dir, str(tmp_path / "out"))
    model, task = load_converted(out)
    ids, attention_mask, segments = _wordpiece_batch()
    assert task.dictionary.pad() == 0 and task.dictionary.index("<mask>") == wordpiece_tokens().index(
        "[MASK]"
    )
    ours = unilm_forward(model, ids, segments, task.dictionary.pad())
    _check(_hf(hf, ids, attention_mask, segments), ours, attention_mask, "bert")
    assert model.cfg.layernorm_eps == TINY["layer_norm_eps"] and model.cfg.rel_pos_bins == 0


def test_bert_model_without_head_through_cli(tmp_path):
    """A bare ``BertModel`` (pooler, no MLM head), converted by the command-line script."""
    hf, model_dir = _bert_dir(tmp_path, cls=transformers.BertModel)
    run_cli([sys.executable, SCRIPT, model_dir, str(tmp_path / "out")])
    model, task = load_converted(str(tmp_path / "out"))
    ids, attention_mask, segments = _wordpiece_batch(seed=3)
    ours = unilm_forward(model, ids, segments, task.dictionary.pad())
    _check(_hf(hf, ids, attention_mask, segments), ours, attention_mask, "bert (no head, CLI)")
    # the new head is tied to the word embeddings
    assert model.lm_head.weight is model.transformer.embeddings.tokens.weight
    with open(tmp_path / "out" / "model_args.txt") as f:
        assert "--rel-pos-bins 0" in f.read()
    # the pooler is kept, frozen, and exported back: BertModel's pooler_output is the source's
    assert torch.equal(model.pooler.dense.weight, hf.pooler.dense.weight)
    assert not any(p.requires_grad for p in model.pooler.parameters())
    exported = export_checkpoint(str(tmp_path / "out" / "model.pt"), str(tmp_path / "exported")).out_dir
    back, info = transformers.BertModel.from_pretrained(exported, output_loading_info=True)
    assert not info["missing_keys"]
    with torch.no_grad():
        expected = hf.eval()(input_ids=ids, attention_mask=attention_mask, token_type_ids=segments)
        pooled = back.eval()(input_ids=ids, attention_mask=attention_mask, token_type_ids=segments)
    assert float(expected.pooler_output.std()) > 0.1
    assert float((pooled.pooler_output - expected.pooler_output).abs().max()) < ATOL


def test_roberta(tmp_path):
    vocab = roberta_vocab()
    config = transformers.RobertaConfig(
        vocab_size=len(vocab), type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        **{**TINY, "max_position_embeddings": TINY["max_position_embeddings"] + 2},
    )  # fmt: skip
    torch.manual_seed(0)
    hf = transformers.RobertaForMaskedLM(config).eval()
    perturb_(hf, seed=2)
    model_dir = save_hf(hf, str(tmp_path / "hf"), {"merges.txt": "#version: 0.2\n"})
    write_json(os.path.join(model_dir, "vocab.json"), vocab)
    out = convert_hf_checkpoint(model_dir, str(tmp_path / "out"))
    model, task = load_converted(out)
    d = task.dictionary
    assert len(d) == len(vocab) and d.index("<mask>") == vocab["<mask>"] and d.index("17") == 17
    ids, attention_mask, segments = padded_batch(len(vocab) - 1, 4, d.bos(), d.eos(), d.pad())
    # one token type, copied into both segments: the segment ids UniLM passes change nothing
    ours = unilm_forward(model, ids, segments, d.pad())
    _check(_hf(hf, ids, attention_mask), ours, attention_mask, "roberta")
    assert model.cfg.max_positions == TINY["max_position_embeddings"]


def _train_sentencepiece(tmp_path, vocab_size=40):
    import sentencepiece as spm

    text = tmp_path / "spm.txt"
    words = [f"word{i} piece{i % 7} thing{i % 13}" for i in range(300)]
    text.write_text("\n".join(words) + "\n")
    prefix = str(tmp_path / "spm")
    spm.SentencePieceTrainer.train(
        input=str(text), model_prefix=prefix, vocab_size=vocab_size, minloglevel=2, num_threads=1
    )
    return prefix + ".model"


def test_xlm_roberta(tmp_path):
    import sentencepiece as spm

    spm_file = _train_sentencepiece(tmp_path)
    pieces = spm.SentencePieceProcessor(model_file=spm_file).get_piece_size()
    config = transformers.XLMRobertaConfig(
        vocab_size=pieces + 2, type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        **{**TINY, "max_position_embeddings": TINY["max_position_embeddings"] + 2},
    )  # fmt: skip
    torch.manual_seed(0)
    hf = transformers.XLMRobertaForMaskedLM(config).eval()
    perturb_(hf, seed=3)
    model_dir = save_hf(hf, str(tmp_path / "hf"))
    with open(spm_file, "rb") as src, open(os.path.join(model_dir, "sentencepiece.bpe.model"), "wb") as dst:
        dst.write(src.read())
    out = convert_hf_checkpoint(model_dir, str(tmp_path / "out"))
    model, task = load_converted(out)
    d = task.dictionary
    sp = spm.SentencePieceProcessor(model_file=spm_file)
    # XLM-R's id of a piece is its sentencepiece id + 1; <mask> is last
    assert len(d) == pieces + 2 and d.index("<mask>") == pieces + 1
    assert all(d.index(sp.id_to_piece(i)) == i + 1 for i in range(3, pieces))
    ids, attention_mask, segments = padded_batch(pieces + 1, 4, d.bos(), d.eos(), d.pad())
    _check(
        _hf(hf, ids, attention_mask), unilm_forward(model, ids, segments, d.pad()), attention_mask, "xlm-r"
    )


@pytest.mark.parametrize("cls_name", ["ElectraForMaskedLM", "ElectraForPreTraining"])
def test_electra(tmp_path, cls_name):
    """Generator (MLM head, hidden -> embedding width) and discriminator (detector head dropped)."""
    tokens = wordpiece_tokens()
    config = transformers.ElectraConfig(
        vocab_size=len(tokens), embedding_size=ELECTRA_EMBEDDING_SIZE, pad_token_id=0, **TINY
    )
    torch.manual_seed(0)
    hf = getattr(transformers, cls_name)(config).eval()
    perturb_(hf, seed=4)
    model_dir = save_hf(hf, str(tmp_path / "hf"), {"vocab.txt": "\n".join(tokens) + "\n"})
    out = convert_hf_checkpoint(model_dir, str(tmp_path / "out"))
    model, task = load_converted(out)
    assert model.cfg.token_embed_dim == ELECTRA_EMBEDDING_SIZE
    ids, attention_mask, segments = _wordpiece_batch(seed=5)
    ours = unilm_forward(model, ids, segments, task.dictionary.pad())
    if cls_name == "ElectraForPreTraining":  # its logits are replaced-token scores, not an MLM
        hidden, _ = _hf(hf, ids, attention_mask, segments)
        _check((hidden, None), ours, attention_mask, "electra discriminator")
    else:
        _check(_hf(hf, ids, attention_mask, segments), ours, attention_mask, "electra generator")


# ---- UniLM "fast QKV" with a relative position bias ---------------------------------------------


# released UniLM / MiniLM checkpoints name the bias either way
@pytest.mark.parametrize("bias_key", ["bert.rel_pos_bias.weight", "bert.encoder.rel_pos_bias.weight"])
def test_fast_qkv_with_relative_position_bias(tmp_path, bias_key):
    hf, model_dir = _bert_dir(tmp_path)
    config = hf.config.to_dict()
    state = fast_qkv_state(
        hf.state_dict(), config["num_hidden_layers"], config["num_attention_heads"], seed=6
    )
    ids, attention_mask, segments = _wordpiece_batch(seed=7)

    # the reference is right: without the bias it is BERT (dropping the key bias changes no softmax)
    no_bias = dict(state, **{"bert.rel_pos_bias.weight": torch.zeros_like(state["bert.rel_pos_bias.weight"])})
    hf_hidden, _ = _hf(hf, ids, attention_mask, segments)
    reference_plain = reference_unilm_forward(no_bias, config, ids, attention_mask, segments)
    assert max_real_diff(hf_hidden, reference_plain, attention_mask) < ATOL
    # ... and the bias matters, so agreeing with it below is not an accident
    reference = reference_unilm_forward(state, config, ids, attention_mask, segments)
    assert max_real_diff(reference, reference_plain, attention_mask) > 100 * ATOL

    unilm_dir = tmp_path / "unilm"
    unilm_dir.mkdir()
    saved = dict(state)
    saved[bias_key] = saved.pop("bert.rel_pos_bias.weight")
    torch.save(saved, unilm_dir / "pytorch_model.bin")
    write_json(
        str(unilm_dir / "config.json"),
        dict(config, model_type="unilm", rel_pos_bins=REL_POS_BINS, max_rel_pos=MAX_REL_POS),
    )
    (unilm_dir / "vocab.txt").write_text("\n".join(wordpiece_tokens()) + "\n")
    out = convert_hf_checkpoint(str(unilm_dir), str(tmp_path / "out"))
    model, task = load_converted(out)
    assert (model.cfg.rel_pos_bins, model.cfg.max_rel_pos) == (REL_POS_BINS, MAX_REL_POS)
    hidden, logits = unilm_forward(model, ids, segments, task.dictionary.pad())
    diff = max_real_diff(reference, hidden, attention_mask)
    logger.info("fast-qkv: max |hidden diff| %.2e", diff)
    assert diff < ATOL
    # the MLM head is BERT's, untouched by the attention layout
    with torch.no_grad():
        head_reference = hf.cls(reference)
    assert max_real_diff(head_reference, logits, attention_mask) < ATOL
