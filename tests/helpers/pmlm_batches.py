"""Two PMLM examples collated into a batch, and the least task the criterions need, for the criterion and
host-read tests."""

from argparse import Namespace

import numpy as np
import torch
from fairseq.data import FairseqDataset

from unilm_fairseq.data.pretraining import PMLMDataset


class Pairs(FairseqDataset):
    def __init__(self, items):
        self.items = items
        self.sizes = np.array([len(i["tokens"]) for i in items])

    def __getitem__(self, index):
        return self.items[index]

    def __len__(self):
        return len(self.items)


def pmlm_dataset(dictionary, ae=True, par=True, **options):
    rng = np.random.default_rng(0)
    items = []
    for n in (30, 22):
        words = rng.integers(dictionary.nspecial, len(dictionary) - 1, size=n - 3)
        tokens = [dictionary.bos(), *words[:10], dictionary.eos(), *words[10:], dictionary.eos()]
        segments = [0] * 12 + [1] * (n - 12)
        items.append({"tokens": torch.tensor(tokens), "segments": torch.tensor(segments)})
    mask_idx = dictionary.index("<mask>")
    return PMLMDataset(Pairs(items), dictionary, mask_idx, seed=1, ae=ae, par=par, **options)


def batch(dictionary, ae=True, par=True, **options):
    dataset = pmlm_dataset(dictionary, ae, par, **options)
    return dataset.collater([dataset[0], dataset[1]])


class Task:
    def __init__(self, dictionary, par_skip_unchanged=False):
        self.target_dictionary = dictionary
        self.cfg = Namespace(par_skip_unchanged=par_skip_unchanged)
