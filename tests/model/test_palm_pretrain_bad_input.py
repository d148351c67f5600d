"""PALM pre-training on a messy binarized corpus: empty and too-short documents are counted, never a crash."""

import logging
import math

import pytest
import torch

from unilm_fairseq.criterions.palm import PALMCriterion
from unilm_fairseq.tasks.palm_pretrain import PALMPretrainConfig, PALMPretrainTask

from ..helpers.cli import binarize


@pytest.fixture(scope="module")
def messy_bin(tmp_path_factory):
    """Documents of [4 5], [1], [80 3 4] and [3 1] tokens between repeated empty lines."""
    long_sentence = " ".join(f"w{i % 30}" for i in range(80))
    lines = [
        "w1 w2 w3 .", "w4 w5 w6 w7 .", "", "", "w8", "",
        long_sentence, "w9 w10 .", "w11 w12 w13 .", "", "w14 w15 .", "w16",
    ]  # fmt: skip
    return binarize(tmp_path_factory.mktemp("palm_messy"), lines)


def load(data, stage=1, **overrides):
    cfg = PALMPretrainConfig(data=str(data), stage=stage, max_fragment_tokens=32, seed=1, **overrides)
    task = PALMPretrainTask.setup_task(cfg)
    return task, task.load_dataset("train")


def test_messy_corpus_is_counted(messy_bin, caplog):
    with caplog.at_level(logging.INFO):
        _, dataset = load(messy_bin)
    message = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("train:"))
    assert "12 lines, 4 empty (document breaks) -> 4 documents" in message
    assert "8 windows (one per sentence) -> 6 pairs" in message
    assert "skipped 2 windows under 2 tokens, 1 documents with no pair" in message
    assert "1 windows cut inside a sentence over 32 tokens" in message
    assert len(dataset) == 6
    for i in range(len(dataset)):
        item = dataset[i]
        assert 2 <= len(item["source"]) <= 33 and 2 <= len(item["target"])
        assert item["mlm_target"].ne(dataset.pad).any()


def test_paper_limits_hold_through_the_task(tmp_path, caplog):
    """The issue's documents, binarized: sentences of 450 + 50 and of 350 + 150 tokens, 500-token windows.

    Every source is at most 400 tokens plus </s> and every target at most 100 plus </s> (PALM §2.2,
    §3.1); the log counts the two windows whose nearby sentence boundary broke a limit.
    """

    def sentence(n, offset):
        return " ".join(f"w{(offset + i) % 30}" for i in range(n))

    lines = [sentence(450, 0), sentence(50, 1), "", sentence(350, 2), sentence(150, 3)]
    data = binarize(tmp_path, lines)
    # the paper's defaults: 500, 400, 100; no masking, to compare the text
    cfg = PALMPretrainConfig(data=str(data), mask_prob=0.0, seed=1)
    task = PALMPretrainTask.setup_task(cfg)
    with caplog.at_level(logging.INFO):
        dataset = task.load_dataset("train")
    message = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("train:"))
    assert "mid-sentence 4 times (2 of them because every boundary near the cut would exceed 400 context" in (
        message
    )
    assert sorted(map(tuple, dataset.sizes.tolist())) == [(41, 11), (121, 31), (401, 101), (401, 101)]
    for i in range(len(dataset)):
        item = dataset[i]
        assert len(item["source"]) <= 401 and len(item["target"]) <= 101
        # nothing lost: context and continuation are the window's text, in order
        assert torch.equal(torch.cat([item["source"][:-1], item["target"][:-1]]), dataset.text(i))
    with pytest.raises(ValueError, match="--max-fragment-tokens 500 is more than --max-context-tokens 300"):
        PALMPretrainTask.setup_task(PALMPretrainConfig(data=str(data), max_context_tokens=300))


def test_a_corpus_without_any_pair_is_a_clear_error(tmp_path):
    data = binarize(tmp_path, ["w1", "", "", "w2", ""])
    with pytest.raises(ValueError, match="no document holds a context/continuation pair"):
        load(data)


def test_bad_options_are_clear_errors(messy_bin):
    with pytest.raises(ValueError, match="--stage"):
        load(messy_bin, stage=3)
    with pytest.raises(ValueError, match="--stage1-checkpoint"):
        load(messy_bin, stage=1, stage1_checkpoint="x.pt")


def tiny_model(task, data, *flags):
    """``palm_tiny`` as fairseq-train builds it (dropout 0), through ``task``."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, [str(data), "--task", "palm_pretrain", "--arch", "palm_tiny", "--dropout", "0", *flags]
    )
    torch.manual_seed(0)
    return task.build_model(convert_namespace_to_omegaconf(args).model)


@pytest.mark.parametrize("stage, mlm_weight", [(1, 1.0), (2, 0.5), (2, 0.0)])
def test_messy_batch_gives_finite_losses(messy_bin, stage, mlm_weight):
    task, dataset = load(messy_bin, stage=stage, mlm_weight=mlm_weight)
    model = tiny_model(task, messy_bin)
    criterion = PALMCriterion(task, label_smoothing=0.1)
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    loss, sample_size, log = criterion(model, batch)
    assert math.isfinite(loss.item()) and loss.item() > 0
    loss.backward()
    if stage == 1:
        assert sample_size == batch["num_masked"] == log["mlm_tokens"]
        assert all(p.grad is None for n, p in model.named_parameters() if n.startswith("decoder.layers"))
    else:
        assert sample_size == batch["ntokens"] == log["lm_tokens"]
        assert {"lm_loss", "nll_loss"} <= set(log)
        if mlm_weight:
            per_token = log["lm_loss"] / sample_size + mlm_weight * log["mlm_loss"] / log["mlm_tokens"]
            assert loss.item() / sample_size == pytest.approx(per_token.item(), rel=1e-5)
        else:  # the decoder alone, on unmasked contexts
            assert "mlm_loss" not in log and batch["num_masked"] == 0
            assert loss.item() == pytest.approx(log["lm_loss"].item())
        assert all(p.grad is not None for n, p in model.named_parameters() if n.startswith("decoder.layers"))


def test_stage2_default_is_the_papers_continuation_loss_alone(messy_bin):
    """PALM §2.2: stage 2 trains the decoder's output. By default the loss is the continuation's negative
    log-likelihood under the pointer-generator, summed over target tokens, and nothing else; the encoder
    MLM term of --mlm-weight (this project's choice) is off and the contexts are not masked."""
    task, dataset = load(messy_bin, stage=2)  # --mlm-weight left at its default
    assert task.cfg.mlm_weight == 0.0
    model = tiny_model(task, messy_bin).eval()
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    net = batch["net_input"]
    assert batch["num_masked"] == 0 and not net["src_tokens"].eq(dataset.mask_idx).any()
    loss, sample_size, log = PALMCriterion(task)(model, batch)
    loss.backward()

    # the paper's term, from the model's own pointer-generator output: -sum_t log P(y_t | y_<t, x)
    with torch.no_grad():
        lprobs, extra = model(net["src_tokens"], net["src_lengths"], net["prev_output_tokens"])
    real = batch["target"].ne(dataset.pad)
    expected = -lprobs.gather(-1, batch["target"].unsqueeze(-1)).squeeze(-1)[real].sum()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    assert sample_size == int(real.sum()) and "mlm_loss" not in log
    # no gradient reaches the MLM head's own weights (its output layer is the shared embedding table)
    head = model.encoder_mlm_head
    assert head.dense.weight.grad is None and head.bias.grad is None

    # the option brings the MLM term back: lm + weight * mlm, per token
    task, dataset = load(messy_bin, stage=2, mlm_weight=1.0)
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    joint, sample_size, log = PALMCriterion(task)(tiny_model(task, messy_bin).eval(), batch)
    assert batch["num_masked"] > 0 and "mlm_loss" in log
    per_token = log["lm_loss"] / sample_size + log["mlm_loss"] / log["mlm_tokens"]
    assert joint.item() / sample_size == pytest.approx(per_token.item(), rel=1e-5)
