"""Exported models against their outside readers, and round trips through the importer.

* ``bert``: the directory loads in ``transformers.BertForMaskedLM`` and ``BertModel`` (nothing missing,
  nothing unexpected) and gives the plugin model's hidden states and MLM logits within ``ATOL`` on a
  right-padded batch: tiny perturbed models with a WordPiece or a fairseq dictionary, 2, 6 (UniLM v1) or
  no segment embeddings, and each activation.
* ``unilm``/``s2s-ft``: the weights run through an independent forward of UniLM's layouts (fused or
  separate projections, the shared relative position bias) to the same hidden states and logits.
* import -> export -> import gives every weight back exactly (``torch.equal``); export -> import -> export
  gives the same files and tensors.
"""

import logging
import os

import pytest
import torch
import torch.nn.functional as F

from unilm_fairseq.models.unilmv2 import layer_key

from ..helpers.hf import (
    ATOL,
    TINY,
    load_converted,
    max_real_diff,
    padded_batch,
    perturb_,
    save_hf,
    unilm_forward,
    wordpiece_tokens,
    write_json,
)
from ..helpers.hf_export import (
    differing_tensors,
    exported_tensors,
    fairseq_dictionary,
    perturbed_model,
    read_json,
    read_text,
    wordpiece_dictionary,
    write_checkpoint,
)
from ..helpers.unilm_reference import MAX_REL_POS, REL_POS_BINS, fast_qkv_state, reference_unilm_forward

logger = logging.getLogger(__name__)
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from unilm_fairseq.hf_export import export_checkpoint  # noqa: E402
from unilm_fairseq.hf_import import convert_hf_checkpoint  # noqa: E402

MIN_OUTPUT_STD = 0.1  # real-token outputs must vary this much, so agreement is not agreement of constants
TEXT_FILES = ("config.json", "vocab.txt", "tokenizer_config.json")
DICTIONARIES = {"wordpiece": wordpiece_dictionary, "fairseq": fairseq_dictionary}


def batch_for(dictionary, segment_rows: int, seed: int = 0):
    """A right-padded batch of the dictionary's words; segments drawn from every row of the table."""
    first_word = max(dictionary.nspecial, dictionary.unk() + 1)
    mask = dictionary.index("<mask>")
    words = len(dictionary) - 1 if mask == len(dictionary) - 1 else len(dictionary)
    ids, attention_mask, _ = padded_batch(
        words, first_word, dictionary.bos(), dictionary.eos(), dictionary.pad(), seed
    )
    generator = torch.Generator().manual_seed(seed + 1)
    segments = torch.randint(0, max(segment_rows, 1), ids.shape, generator=generator) * attention_mask
    return ids, attention_mask, segments


def hf_outputs(model, ids, attention_mask, segments):
    with torch.no_grad():
        out = model(
            input_ids=ids, attention_mask=attention_mask, token_type_ids=segments, output_hidden_states=True
        )
    return out.hidden_states[-1], out.logits


def assert_close(expected, actual, attention_mask, name):
    assert float(actual[attention_mask.bool()].std()) > MIN_OUTPUT_STD
    diff = max_real_diff(expected, actual, attention_mask)
    logger.info("%s: max |diff| %.2e", name, diff)
    assert diff < ATOL, f"{name}: differs by {diff:.2e}"


def reference_logits(state, config, hidden):
    """BERT's MLM head over ``hidden``, from the exported weights."""
    p = "cls.predictions."
    eps = config["layer_norm_eps"]
    x = F.gelu(hidden @ state[p + "transform.dense.weight"].t() + state[p + "transform.dense.bias"])
    x = F.layer_norm(
        x, (x.size(-1),), state[p + "transform.LayerNorm.weight"], state[p + "transform.LayerNorm.bias"], eps
    )
    return x @ state["bert.embeddings.word_embeddings.weight"].t() + state[p + "bias"]


@pytest.mark.parametrize(
    "dictionary, overrides",
    [
        ("wordpiece", dict(activation_fn="gelu")),
        ("fairseq", dict(num_segments=6, activation_fn="gelu_accurate", layernorm_eps=1e-6)),
        ("wordpiece", dict(num_segments=0, activation_fn="relu")),
    ],
    ids=["wordpiece-2seg-gelu", "fairseq-6seg-gelu_accurate", "wordpiece-noseg-relu"],
)
def test_bert_export_matches_transformers(tmp_path, dictionary, overrides):
    model = perturbed_model(DICTIONARIES[dictionary](), seed=1, rel_pos_bins=0, **overrides)
    out = export_checkpoint(write_checkpoint(model, str(tmp_path / "ckpt")), str(tmp_path / "bert")).out_dir
    d = model.dictionary
    hf, info = transformers.BertForMaskedLM.from_pretrained(out, output_loading_info=True)
    assert not any(info.values()), info  # nothing missing, unexpected or mismatched
    ids, attention_mask, segments = batch_for(d, model.cfg.num_segments)
    hidden, logits = unilm_forward(model, ids, segments, d.pad())
    hf_hidden, hf_logits = hf_outputs(hf.eval(), ids, attention_mask, segments)
    assert_close(hidden, hf_hidden, attention_mask, f"bert export ({dictionary}, {overrides}): hidden")
    assert_close(logits, hf_logits, attention_mask, f"bert export ({dictionary}, {overrides}): logits")
    base, info = transformers.BertModel.from_pretrained(out, output_loading_info=True)
    # the bare encoder: only the pooler (no counterpart in the plugin) is new, only the MLM head left over
    assert set(info["missing_keys"]) <= {"pooler.dense.weight", "pooler.dense.bias"}
    assert all(key.startswith("cls.predictions.") for key in info["unexpected_keys"])
    with torch.no_grad():
        base_hidden = base.eval()(input_ids=ids, attention_mask=attention_mask, token_type_ids=segments)
    assert_close(hidden, base_hidden.last_hidden_state, attention_mask, "bert export: BertModel")
    # BERT's tokenizer over the written files keeps every id and special token
    tokenizer = transformers.BertTokenizerFast.from_pretrained(out)
    assert tokenizer.convert_tokens_to_ids(list(d.symbols)) == list(range(len(d)))
    assert (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id) == (
        d.bos(),
        d.eos(),
        d.pad(),
    )
    assert (tokenizer.unk_token_id, tokenizer.mask_token_id) == (d.unk(), d.index("<mask>"))


@pytest.mark.parametrize("layout", ["unilm", "s2s-ft"])
def test_unilm_layouts_match_an_independent_forward(tmp_path, layout):
    model = perturbed_model(
        wordpiece_dictionary(), seed=2, rel_pos_bins=REL_POS_BINS, max_rel_pos=MAX_REL_POS, num_segments=6
    )
    out = export_checkpoint(
        write_checkpoint(model, str(tmp_path / "ckpt")), str(tmp_path / layout), layout
    ).out_dir
    state, config = exported_tensors(out), read_json(os.path.join(out, "config.json"))
    assert (config["model_type"], config["rel_pos_bins"], config["max_rel_pos"]) == (
        "unilm",
        REL_POS_BINS,
        MAX_REL_POS,
    )
    # pre-trained here with UniLM v1's six segment rows: s2s-ft is to fine-tune it with ids 4/5, as we do
    assert (config["source_type_id"], config["target_type_id"], config["type_vocab_size"]) == (4, 5, 6)
    fused = any(k.endswith("qkv_linear.weight") for k in state)
    assert fused == (layout == "unilm") and any(k.endswith("key.bias") for k in state) == (layout == "s2s-ft")
    d = model.dictionary
    ids, attention_mask, segments = batch_for(d, 6, seed=3)
    hidden, logits = unilm_forward(model, ids, segments, d.pad())
    reference = reference_unilm_forward(state, config, ids, attention_mask, segments)
    assert_close(reference, hidden, attention_mask, f"{layout} export: hidden")
    assert_close(
        reference_logits(state, config, reference), logits, attention_mask, f"{layout} export: logits"
    )


def _hf_bert(tmp_path):
    tokens = wordpiece_tokens()
    config = transformers.BertConfig(vocab_size=len(tokens), pad_token_id=0, **TINY)
    torch.manual_seed(0)
    hf = transformers.BertForMaskedLM(config).eval()
    perturb_(hf, seed=5)
    return save_hf(hf, str(tmp_path / "hf"), {"vocab.txt": "\n".join(tokens) + "\n"})


def _fast_qkv_dir(tmp_path):
    """A UniLM release-style directory: fused projections, a relative position bias, UniLM v1's six
    token types and its s2s-ft ids 4/5."""
    tokens = wordpiece_tokens()
    config = transformers.BertConfig(vocab_size=len(tokens), pad_token_id=0, **{**TINY, "type_vocab_size": 6})
    torch.manual_seed(0)
    hf = transformers.BertForMaskedLM(config).eval()
    perturb_(hf, seed=6)
    raw = hf.config.to_dict()
    state = fast_qkv_state(hf.state_dict(), raw["num_hidden_layers"], raw["num_attention_heads"], seed=7)
    folder = tmp_path / "fast_qkv"
    folder.mkdir()
    torch.save(state, folder / "pytorch_model.bin")
    write_json(
        str(folder / "config.json"),
        dict(
            raw,
            model_type="unilm",
            rel_pos_bins=REL_POS_BINS,
            max_rel_pos=MAX_REL_POS,
            source_type_id=4,
            target_type_id=5,
        ),
    )
    (folder / "vocab.txt").write_text("\n".join(tokens) + "\n")
    return str(folder), state


def assert_same_models(a, b):
    (model_a, task_a), (model_b, task_b) = a, b
    assert task_a.dictionary.symbols == task_b.dictionary.symbols
    assert not differing_tensors(model_a.state_dict(), model_b.state_dict())
    for name in ("encoder_layers", "encoder_embed_dim", "num_segments", "rel_pos_bins", "max_rel_pos",
                 "max_positions", "layernorm_eps", "activation_fn", "seq2seq_source_segment",
                 "seq2seq_target_segment"):  # fmt: skip
        assert getattr(model_a.cfg, name) == getattr(model_b.cfg, name), name


@pytest.mark.parametrize("layout", ["bert", "unilm", "s2s-ft"])
def test_import_export_import_is_exact(tmp_path, layout):
    if layout == "bert":
        source, source_state = _hf_bert(tmp_path), None
    else:
        source, source_state = _fast_qkv_dir(tmp_path)
    first = convert_hf_checkpoint(source, str(tmp_path / "first"))
    exported = export_checkpoint(os.path.join(first, "model.pt"), str(tmp_path / "export"), layout).out_dir
    second = convert_hf_checkpoint(exported, str(tmp_path / "second"))
    assert_same_models(load_converted(first), load_converted(second))
    assert read_text(os.path.join(exported, "vocab.txt")) == read_text(os.path.join(source, "vocab.txt"))
    tensors = exported_tensors(exported)
    if (
        layout == "bert"
    ):  # transformers' own files: the exported ones hold the same tensors, nothing more or less
        from safetensors.torch import load_file

        assert not differing_tensors(load_file(os.path.join(source, "model.safetensors")), tensors)
        return
    config = read_json(os.path.join(exported, "config.json"))
    assert (config["source_type_id"], config["target_type_id"]) == (4, 5)  # the source config's, kept
    if layout == "unilm":  # the release layout again: the source's tensors (its 1-D q/v biases now (1, 1, A))
        flat = {k: v.flatten() if k.endswith(("q_bias", "v_bias")) else v for k, v in tensors.items()}
        # the tied decoder (the word embeddings, and the bias again) aside, as each side saves it its own way
        tied = "cls.predictions.decoder."
        mine, theirs = ({k: v for k, v in t.items() if not k.startswith(tied)} for t in (flat, source_state))
        assert not differing_tensors(theirs, mine)


@pytest.mark.parametrize("layout", ["bert", "unilm", "s2s-ft"])
def test_export_import_export_gives_the_same_files(tmp_path, layout):
    rel_pos = (
        dict(rel_pos_bins=0) if layout == "bert" else dict(rel_pos_bins=REL_POS_BINS, max_rel_pos=MAX_REL_POS)
    )
    model = perturbed_model(fairseq_dictionary(), seed=4, num_segments=6, **rel_pos)
    first = export_checkpoint(
        write_checkpoint(model, str(tmp_path / "ckpt")), str(tmp_path / "first"), layout
    )
    imported = convert_hf_checkpoint(first.out_dir, str(tmp_path / "imported"))
    second = export_checkpoint(os.path.join(imported, "model.pt"), str(tmp_path / "second"), layout)
    assert first.files == second.files
    for name in TEXT_FILES:
        assert read_text(os.path.join(first.out_dir, name)) == read_text(
            os.path.join(second.out_dir, name)
        ), name
    assert not differing_tensors(exported_tensors(first.out_dir), exported_tensors(second.out_dir))
    # the imported model is the original one, but for the key bias the fused layout has no place for
    reloaded, _ = load_converted(imported)
    changed = differing_tensors(model.state_dict(), reloaded.state_dict())
    key_biases = [layer_key(i, "self_attn.k_proj.bias") for i in range(model.cfg.encoder_layers)]
    assert changed == (key_biases if layout == "unilm" else [])
