"""Tiny Hugging Face models and vocabularies for the checkpoint-import tests (nothing is downloaded).

Importing this module switches ``transformers`` to offline mode. Nothing is hidden from it: the set-up
removes a ``torchaudio`` that cannot load (tests/unit/test_environment.py checks the environment).
"""

import json
import os
from typing import Dict, List

import torch
from torch import Tensor

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from fairseq import checkpoint_utils  # noqa: E402

from unilm_fairseq.masks import padded_bidirectional_mask  # noqa: E402

ATOL = 1e-5
# distinct small sizes (hidden 24, 4 heads of 6, FFN 40, ELECTRA embeddings 16) so shape bugs show
TINY = dict(
    hidden_size=24,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=40,
    max_position_embeddings=40,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    layer_norm_eps=1e-6,  # not BERT's default, so a converter that ignores it fails
)
ELECTRA_EMBEDDING_SIZE = 16
# BERT's init (std 0.02) leaves a tiny model's attention almost uniform, hiding wrong positions,
# masks or biases; noise of this size makes every weight matter
PERTURB_STD = 0.2
BERT_SPECIALS = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
FAIRSEQ_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
NUM_WORDS = 40
LENGTHS = (9, 6, 4)  # a padded batch: the longest row sets the width


def wordpiece_tokens() -> List[str]:
    """A BERT-style vocabulary: specials (with an [unused] slot) then word pieces."""
    return BERT_SPECIALS + [f"w{i}" if i % 2 else f"##p{i}" for i in range(NUM_WORDS)]


def roberta_vocab() -> Dict[str, int]:
    """A RoBERTa ``vocab.json``: fairseq's specials, byte-level tokens, ``<mask>`` last."""
    tokens = FAIRSEQ_SPECIALS + [f"\u0120w{i}" for i in range(NUM_WORDS)] + ["<mask>"]
    return {t: i for i, t in enumerate(tokens)}


def perturb_(model: torch.nn.Module, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn(param.shape, generator=generator) * PERTURB_STD)


def save_hf(model, out_dir: str, files: Dict[str, str] = None) -> str:
    """``save_pretrained`` plus vocabulary files (name -> text)."""
    model.save_pretrained(out_dir)
    for name, text in (files or {}).items():
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(text)
    return out_dir


def padded_batch(vocab_size: int, first_word: int, bos: int, eos: int, pad: int, seed: int = 0):
    """``(B, T)`` ids ``bos w.. eos`` right-padded with ``pad``, HF's ``(B, T)`` attention mask,
    and random segments ``(B, T)`` in {0, 1}."""
    generator = torch.Generator().manual_seed(seed)
    width = max(LENGTHS)
    ids = torch.full((len(LENGTHS), width), pad, dtype=torch.long)
    for row, n in enumerate(LENGTHS):
        ids[row, :n] = torch.randint(first_word, vocab_size, (n,), generator=generator)
        ids[row, 0], ids[row, n - 1] = bos, eos
    attention_mask = ids.ne(pad).long()
    segments = torch.randint(0, 2, ids.shape, generator=generator) * attention_mask
    return ids, attention_mask, segments


def load_converted(out_dir: str):
    """The converted model through fairseq's own loader (the ``pmlm`` task reads ``dict.txt``)."""
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([os.path.join(out_dir, "model.pt")])
    return models[0].eval(), task


def unilm_forward(model, ids: Tensor, segments: Tensor, pad: int):
    """Hidden states ``(B, T, C)`` and MLM logits ``(B, T, V)``: bidirectional over real tokens,
    positions ``0..n-1``."""
    positions = torch.arange(ids.size(1)).expand_as(ids)
    visible = padded_bidirectional_mask(ids.eq(pad))
    with torch.no_grad():
        features, _ = model(ids, segments, positions, visible, features_only=True)
        logits, _ = model(ids, segments, positions, visible)
    return features, logits


def max_real_diff(a: Tensor, b: Tensor, attention_mask: Tensor) -> float:
    """Largest absolute difference over real (unpadded) tokens of ``(B, T, N)`` tensors."""
    real = attention_mask.bool()
    return float((a[real] - b[real]).abs().max())


def write_json(path: str, data) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
