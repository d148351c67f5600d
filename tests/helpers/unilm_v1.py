"""UniLM v1 objective datasets over hand-made or synthetic token blocks."""

import numpy as np
import torch
from fairseq.data import ListDataset

from unilm_fairseq.data.pretraining.unilm_objectives import (
    BIDIRECTIONAL,
    LEFT_TO_RIGHT,
    RIGHT_TO_LEFT,
    SEQ2SEQ,
    UniLMObjectiveDataset,
)

ONLY = {
    BIDIRECTIONAL: [1.0, 0.0, 0.0, 0.0],
    SEQ2SEQ: [0.0, 1.0, 0.0, 0.0],
    LEFT_TO_RIGHT: [0.0, 0.0, 1.0, 0.0],
    RIGHT_TO_LEFT: [0.0, 0.0, 0.0, 1.0],
}
PAPER_WEIGHTS = [2.0, 2.0, 1.0, 1.0]


def blocks_dataset(blocks):
    tensors = [torch.tensor(b, dtype=torch.long) for b in blocks]
    return ListDataset(tensors, sizes=np.array([len(b) for b in tensors]))


def objective_dataset(blocks, docs, dictionary, weights, seed=1, nsp_random_prob=0.5, max_length=64):
    docs = np.asarray(docs)
    return UniLMObjectiveDataset(
        blocks_dataset(blocks), (docs, docs), dictionary, max_length, seed, weights, nsp_random_prob
    )


def synthetic_corpus(d, n_docs=6, blocks_per_doc=60, seed=0):
    """Blocks of 2-4 sentences; document ``k`` uses only words ``w{6k}..w{6k+5}``."""
    rng = np.random.default_rng(seed)
    blocks, docs = [], []
    for doc in range(n_docs):
        words = [d.index(f"w{6 * doc + i}") for i in range(6)]
        for _ in range(blocks_per_doc):
            block = []
            for _ in range(int(rng.integers(2, 5))):
                block += rng.choice(words, int(rng.integers(2, 7))).tolist() + [d.eos()]
            blocks.append(block)
            docs.append(doc)
    return blocks, docs
