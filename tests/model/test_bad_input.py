"""Bad input is counted and logged, never a crash: empty lines, short documents, long sentences, no <mask>."""

import logging

import pytest
import torch

from unilm_fairseq.data.dictionary import load_dictionary_with_mask
from unilm_fairseq.data.pretraining.pmlm_dataset import CONTEXT
from unilm_fairseq.tasks.pmlm import PMLMConfig, PMLMTask

from ..helpers.cli import preprocess
from ..helpers.models import make_dictionary, tiny_model


def test_dictionary_without_mask_gets_it(tmp_path, caplog):
    path = tmp_path / "dict.txt"
    path.write_text("the 10\nof 5\n")
    with caplog.at_level(logging.INFO):
        d = load_dictionary_with_mask(str(path))
    assert d.index("<mask>") == len(d) - 1
    assert d.index("the") == 4 and d.index("of") == 5  # existing ids are unchanged
    assert "has no <mask>" in caplog.text

    path.write_text("the 10\n<mask> 0\nof 5\n")
    d = load_dictionary_with_mask(str(path))
    assert d.index("<mask>") == 5 and len(d) == 7


@pytest.fixture(scope="module")
def messy_bin(tmp_path_factory):
    """Three documents; repeated empty lines; a one-word document; one 80-token sentence."""
    work = tmp_path_factory.mktemp("messy")
    long_sentence = " ".join(f"w{i % 30}" for i in range(80))
    lines = [
        "w1 w2 w3 .", "w4 w5 w6 w7 .", "", "", "w8", "",
        long_sentence, "w9 w10 .", "w11 w12 w13 .", "", "w14 w15 .",
    ]  # fmt: skip
    raw = work / "train.txt"
    raw.write_text("\n".join(lines) + "\n")
    preprocess(["--only-source", "--trainpref", str(raw), "--destdir", str(work / "bin"),
                "--workers", "1"])  # fmt: skip
    return work / "bin"


def test_messy_corpus_is_counted_and_trains(messy_bin, caplog):
    cfg = PMLMConfig(data=str(messy_bin), tokens_per_sample=32, seed=1)
    task = PMLMTask.setup_task(cfg)
    with caplog.at_level(logging.INFO):
        dataset = task.load_dataset("train")
    message = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("train:"))
    assert "11 lines, 4 empty (document breaks)" in message
    assert "-> 4 documents, 3 shorter than one block" in message
    assert "1 holding a sentence over the limit (truncated)" in message

    items = [dataset[i] for i in range(len(dataset))]
    assert len(items) >= 4
    for item in items:
        assert int((item["kind"] == CONTEXT).sum()) <= 32
        assert item["num_masked"] >= 1
    model = tiny_model(task.dictionary)
    batch = dataset.collater(items)
    logits, _ = model(**batch["net_input"])
    assert logits.shape[0] == int(batch["net_input"]["masked_tokens"].sum())
    assert torch.isfinite(logits).all()


def test_block_limit_too_small_is_a_clear_error(messy_bin):
    task = PMLMTask.setup_task(PMLMConfig(data=str(messy_bin), tokens_per_sample=3, seed=1))
    with pytest.raises(ValueError, match="tokens-per-sample 3"):
        task.load_dataset("train")


def test_missing_split_is_a_clear_error(messy_bin):
    task = PMLMTask.setup_task(PMLMConfig(data=str(messy_bin), tokens_per_sample=32, seed=1))
    with pytest.raises(FileNotFoundError, match="valid"):
        task.load_dataset("valid")


def test_a_corpus_of_empty_lines_is_a_clear_error(tmp_path):
    """Only document breaks: refused at load, for PMLM and UniLM v1, instead of numpy's reshape error in
    fairseq's block builder (or one [SOS] [EOS] block with nothing to predict)."""
    from unilm_fairseq.tasks.unilm import UniLMConfig, UniLMTask

    (tmp_path / "dict.txt").write_text("w1 5\n")
    (tmp_path / "train.txt").write_text("\n\n\n")
    dictionary, text = str(tmp_path / "dict.txt"), str(tmp_path / "train.txt")
    binarized = str(tmp_path / "bin")
    preprocess(["--only-source", "--trainpref", text, "--srcdict", dictionary, "--destdir", binarized,
                "--workers", "1"])  # fmt: skip
    for task in (
        PMLMTask.setup_task(PMLMConfig(data=str(tmp_path / "bin"), tokens_per_sample=32, seed=1)),
        UniLMTask.setup_task(UniLMConfig(data=str(tmp_path / "bin"), tokens_per_sample=32, seed=1)),
    ):
        with pytest.raises(ValueError, match=r"train \(.*\): no text, only 3 empty lines"):
            task.load_dataset("train")


def test_position_beyond_table_is_a_clear_error():
    model = tiny_model(make_dictionary())
    tokens = torch.full((1, 3), 5)
    positions = torch.tensor([[0, 1, 64]])
    with pytest.raises(ValueError, match="max_positions=64"):
        model(tokens, torch.zeros_like(tokens), positions, torch.ones(1, 3, 3, dtype=torch.bool))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: PMLMConfig(min_span_length=4, max_span_length=3), "spans need 1 <= min <= max"),
        (lambda: PMLMConfig(min_span_length=0), "spans need 1 <= min <= max"),
    ],
)
def test_span_lengths_that_cannot_be_drawn_are_refused_before_any_data(make, message):
    """They used to load, then fail inside a data loader's worker at the first item (numpy: low >= high)."""
    with pytest.raises(ValueError, match=message):
        PMLMTask(make(), make_dictionary())


def test_unilm_ngrams_need_a_longest_ngram_of_two():
    from unilm_fairseq.tasks.unilm import UniLMConfig, UniLMTask

    with pytest.raises(ValueError, match="--max-span-length tokens, which is 1: give at least 2"):
        UniLMTask(UniLMConfig(max_span_length=1), make_dictionary())
    UniLMTask(UniLMConfig(max_span_length=1, span_prob=0.0), make_dictionary())  # no n-grams: fine
