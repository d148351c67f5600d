"""s2s-ft bad input: empty lines, over-long sources/targets, unknown tokens, mismatched dictionaries."""

import logging

import pytest
import torch
from fairseq import utils

from unilm_fairseq.tasks.unilm_seq2seq import UniLMSeq2SeqConfig, UniLMSeq2SeqTask, _TokenList

from ..helpers.cli import preprocess
from ..helpers.models import tiny_model
from ..helpers.seq2seq import line, make_task

SOURCES = ["a b c", "", "a b", " ".join(["a"] * 30), "a zzz b", "c"]
TARGETS = ["b c", "a", "", "a b", "b", " ".join(["c"] * 20)]


@pytest.fixture(scope="module")
def messy_pairs(tmp_path_factory):
    work = tmp_path_factory.mktemp("messy_pairs")
    (work / "dict.txt").write_text("a 5\nb 5\nc 5\n")
    for split in ("train", "alt"):
        (work / f"{split}.src").write_text("\n".join(SOURCES) + "\n")
        (work / f"{split}.tgt").write_text("\n".join(TARGETS) + "\n")
    preprocess(["--source-lang", "src", "--target-lang", "tgt", "--srcdict", str(work / "dict.txt"),
                "--tgtdict", str(work / "dict.txt"), "--trainpref", str(work / "train"),
                "--destdir", str(work / "bin"), "--workers", "1"])  # fmt: skip
    return work


def task_for(path, **overrides):
    cfg = UniLMSeq2SeqConfig(data=str(path), seed=1, max_source_positions=12, max_target_positions=8)
    for key, value in overrides.items():
        setattr(cfg, key, value)
    return UniLMSeq2SeqTask.setup_task(cfg)


@pytest.mark.parametrize("method", ["causal", "masked", "pseudo_masked"])
def test_counted_skipped_truncated_and_trainable(messy_pairs, caplog, method):
    task = task_for(messy_pairs / "bin", finetune_method=method)
    assert task.dictionary.index("<mask>") == len(task.dictionary) - 1  # added to a dict without it
    with caplog.at_level(logging.INFO):
        dataset = task.load_dataset("train")
    message = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("train:"))
    assert "6 pairs; skipped 2 with an empty source or target" in message
    assert "truncated 1 sources to --max-source-positions 12 and 1 targets" in message
    assert len(dataset) == 4
    items = [dataset[i] for i in range(len(dataset))]
    assert sorted(int(i["id"]) for i in items) == [0, 3, 4, 5]  # raw line numbers survive the skips
    for item in items:
        assert len(item["source"]) <= 12 and len(item["target"]) <= 8
        assert item["source"][0] == task.dictionary.bos() and item["source"][-1] == task.dictionary.eos()
        assert item["target"][-1] == task.dictionary.eos()
    unknown = next(i for i in items if int(i["id"]) == 4)["source"]
    assert task.dictionary.unk() in unknown.tolist()  # "zzz" is not in the vocabulary

    model = tiny_model(task.dictionary, max_positions=20, seq2seq_method=method)
    batch = dataset.collater(items)
    logits, _ = model(**batch["net_input"])
    assert logits.shape[0] == batch["ntokens"] == int(batch["layout_target"].ne(task.dictionary.pad()).sum())
    assert torch.isfinite(logits).all()


def test_different_dictionaries_are_a_clear_error(messy_pairs, tmp_path):
    (tmp_path / "other.txt").write_text("a 5\nb 5\nd 5\n")
    preprocess(["--source-lang", "src", "--target-lang", "tgt", "--srcdict",
                str(messy_pairs / "dict.txt"), "--tgtdict", str(tmp_path / "other.txt"),
                "--trainpref", str(messy_pairs / "alt"), "--destdir", str(tmp_path / "bin"),
                "--workers", "1"])  # fmt: skip
    with pytest.raises(ValueError, match="joined-dictionary"):
        task_for(tmp_path / "bin")


def test_missing_split_is_a_clear_error(messy_pairs):
    task = task_for(messy_pairs / "bin")
    with pytest.raises(FileNotFoundError, match="valid"):
        task.load_dataset("valid")


def test_a_split_with_no_usable_pair_is_an_error_at_load(tmp_path):
    """Every pair empty on one side: refused when the split loads, for UniLM and PALM, instead of fairseq's
    IndexError in batching or KeyError('loss') at the first validation, an epoch later."""
    from unilm_fairseq.tasks.palm_seq2seq import PALMSeq2SeqConfig, PALMSeq2SeqTask

    (tmp_path / "dict.txt").write_text("a 5\nb 5\n")
    (tmp_path / "valid.src").write_text("a b\n\na\n")
    (tmp_path / "valid.tgt").write_text("\nb\n\n")
    preprocess(["--source-lang", "src", "--target-lang", "tgt", "--srcdict", str(tmp_path / "dict.txt"),
                "--tgtdict", str(tmp_path / "dict.txt"), "--validpref", str(tmp_path / "valid"),
                "--destdir", str(tmp_path / "bin"), "--workers", "1"])  # fmt: skip
    with pytest.raises(ValueError, match="valid: no pair left to use: all 3 have an empty source or target"):
        task_for(tmp_path / "bin").load_dataset("valid")
    palm = PALMSeq2SeqTask.setup_task(PALMSeq2SeqConfig(data=str(tmp_path / "bin"), dataset_impl=None))
    with pytest.raises(ValueError, match="valid: no pair left to use: all 3 have an empty source or target"):
        palm.load_dataset("valid")


@pytest.mark.parametrize(
    "limits, message",
    [
        ({"max_source_positions": 2}, "--max-source-positions 2: at least 3"),
        ({"max_target_positions": 1}, "--max-target-positions 1: at least 2"),
    ],
)
def test_limits_without_room_for_a_token_are_refused(messy_pairs, limits, message):
    """A source of [SOS] [EOS] alone, or a target of [EOS] alone: the dataset's cut went negative and items
    came out longer than the sizes it claimed."""
    with pytest.raises(ValueError, match=message):
        task_for(messy_pairs / "bin", **limits)


def test_a_cut_binarized_file_is_named_when_the_split_loads(messy_pairs, tmp_path):
    """A .bin shorter than its index (a copy cut short) stops the load with the file named; it used to fail
    when a data loader's worker read past the end."""
    import shutil

    from unilm_fairseq.data.shard_check import CorruptShardError

    shutil.copytree(messy_pairs / "bin", tmp_path / "bin")
    data = tmp_path / "bin" / "train.src-tgt.tgt.bin"
    data.write_bytes(data.read_bytes()[:-4])
    with pytest.raises(CorruptShardError, match=r"train\.src-tgt\.tgt\.bin is truncated"):
        task_for(tmp_path / "bin").load_dataset("train")


@pytest.mark.parametrize("method", ["pseudo_masked", "causal"])
def test_max_tokens_below_a_packed_pseudo_masked_example_is_named(method):
    """A pseudo-masked example packs a pseudo token per target token: S + 2T tokens in S + T positions.
    --max-tokens between the two passed the length filter, then fairseq's batching asserted."""
    task = make_task(finetune_method=method, max_source_positions=16, max_target_positions=8)
    sources, targets = [line(10, 1), line(3, 2), line(4, 3)], [line(7, 1), line(2, 2), line(2, 3)]
    dataset = task._dataset(_TokenList(sources), _TokenList(targets))
    positions = utils.resolve_max_positions(task.max_positions(), 64, 24)
    if method == "causal":  # S + T tokens: it batches
        batches = task.get_batch_iterator(dataset, max_tokens=24, max_positions=positions)
        assert sum(len(b["id"]) for b in batches.next_epoch_itr(shuffle=False)) == 3
        return
    most = max(dataset.num_tokens(i) for i in range(len(dataset)))
    with pytest.raises(ValueError, match=f"--max-tokens 24 is less than the {most} tokens of the longest"):
        task.get_batch_iterator(dataset, max_tokens=24, max_positions=positions)
