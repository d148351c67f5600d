"""A corrupt data shard stops ``load_dataset`` with the shard's name and what is wrong."""

import os

import numpy as np
import pytest
import torch
from fairseq.data import indexed_dataset

from unilm_fairseq.data.shard_check import CorruptShardError, check_binarized_split
from unilm_fairseq.tasks.pmlm import PMLMConfig, PMLMTask

from ..helpers.models import make_dictionary


def write_split(folder, split, lines):
    """``lines`` (lists of token ids, [] for a document break) as fairseq's mmap ``split.{bin,idx}``."""
    os.makedirs(folder, exist_ok=True)
    prefix = os.path.join(folder, split)
    data_path = indexed_dataset.data_file_path(prefix)
    builder = indexed_dataset.MMapIndexedDatasetBuilder(data_path, dtype=np.uint16)
    eos = make_dictionary().eos()
    for line in lines:
        builder.add_item(torch.tensor(line + [eos], dtype=torch.int64))
    builder.finalize(indexed_dataset.index_file_path(prefix))
    return prefix


@pytest.fixture
def shards(tmp_path):
    """Two shards of two documents each, the valid split in the first, and the dictionary."""
    lines = [[5, 6, 7], [8, 9], [], [10, 11, 12, 13]]
    for k in range(2):
        folder = tmp_path / f"shard{k}"
        write_split(str(folder), "train", lines)
        make_dictionary().save(str(folder / "dict.txt"))
    write_split(str(tmp_path / "shard0"), "valid", lines[:2])
    return tmp_path


def pmlm_task(shards):
    data = f"{shards / 'shard0'}:{shards / 'shard1'}"
    return PMLMTask.setup_task(PMLMConfig(data=data, tokens_per_sample=16, seed=1))


def test_intact_shards_load(shards):
    task = pmlm_task(shards)
    for epoch in (1, 2):
        assert len(task.load_dataset("train", epoch=epoch)) > 0
    assert len(task.load_dataset("valid")) > 0
    assert check_binarized_split(str(shards / "shard1" / "train")) == "mmap"


def test_truncated_data_file_names_the_shard(shards):
    data = shards / "shard1" / "train.bin"
    data.write_bytes(data.read_bytes()[:-4])
    task = pmlm_task(shards)
    task.load_dataset("train", epoch=1)  # shard0 is intact
    message = r"shard1: train\.bin is truncated \(\d+ bytes, train\.idx describes"
    with pytest.raises(CorruptShardError, match=message):
        task.load_dataset("train", epoch=2)


def test_data_file_longer_than_its_index(shards):
    data = shards / "shard0" / "train.bin"
    data.write_bytes(data.read_bytes() + b"\0\0")
    with pytest.raises(CorruptShardError, match=r"shard0: train\.bin is longer than its index"):
        pmlm_task(shards).load_dataset("train", epoch=1)


def test_missing_index_names_the_shard(shards):
    os.remove(shards / "shard1" / "train.idx")
    with pytest.raises(CorruptShardError, match=r"shard1: train\.idx is missing \(train\.bin is there\)"):
        pmlm_task(shards).load_dataset("train", epoch=2)


def test_missing_data_file_names_the_shard(shards):
    os.remove(shards / "shard0" / "valid.bin")
    with pytest.raises(CorruptShardError, match=r"shard0: valid\.bin is missing"):
        pmlm_task(shards).load_dataset("valid")


def test_truncated_index(shards):
    index = shards / "shard0" / "train.idx"
    index.write_bytes(index.read_bytes()[:-3])
    message = r"shard0: train\.idx has \d+ bytes, its header \(4 items\) needs"
    with pytest.raises(CorruptShardError, match=message):
        pmlm_task(shards).load_dataset("train", epoch=1)
    index.write_bytes(index.read_bytes()[:12])
    with pytest.raises(CorruptShardError, match=r"train\.idx is truncated"):
        pmlm_task(shards).load_dataset("train", epoch=1)


def test_absent_split_is_still_not_found(shards):
    with pytest.raises(FileNotFoundError, match="dataset not found: test"):
        pmlm_task(shards).load_dataset("test")
