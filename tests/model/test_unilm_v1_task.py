"""Task ``unilm`` on real binarized files, criterion ``unilm`` bookkeeping, NSP head checkpoints.

Bad input (empty and one-sentence documents, one-word documents, a sentence longer than
the block, a one-document corpus) is counted and logged, never a crash.
"""

import logging
import math

import pytest
import torch

from unilm_fairseq.checkpoint.unilmv2_init import load_pretrained_weights
from unilm_fairseq.criterions.unilm import UniLMCriterion
from unilm_fairseq.data.pretraining.unilm_cloze_dataset import UniLMClozeDataset
from unilm_fairseq.data.pretraining.unilm_objectives import BIDIRECTIONAL, NO_NSP, NOT_NEXT, OBJECTIVE_NAMES
from unilm_fairseq.models.unilmv2 import SEGMENT_TABLE
from unilm_fairseq.tasks.unilm import UniLMConfig, UniLMTask

from ..helpers.cli import binarize
from ..helpers.models import make_dictionary, save_checkpoint, tiny_config, tiny_model
from ..helpers.unilm_v1 import PAPER_WEIGHTS, objective_dataset, synthetic_corpus

LONG_SENTENCE = " ".join(f"w{i % 30}" for i in range(80))


@pytest.fixture(scope="module")
def messy_bin(tmp_path_factory):
    """Four documents: repeated empty lines, a one-sentence one, a one-word one, an 80-token sentence."""
    lines = [
        "", "w1 w2 w3 .", "w4 w5 w6 w7 .", "", "", "", "w8 w9 w10 w11 w12 .", "",
        "w13", "", LONG_SENTENCE, "w9 w10 .", "w11 w12 w13 .", "",
    ]  # fmt: skip
    return binarize(tmp_path_factory.mktemp("unilm_messy"), lines)


@pytest.fixture(scope="module")
def one_doc_bin(tmp_path_factory):
    return binarize(tmp_path_factory.mktemp("unilm_one_doc"), ["w1 w2 w3 .", "w4 w5 .", "w6 w7 w8 .", "w9 ."])


def all_items(dataset, epochs=(1, 2, 3)):
    items = []
    for epoch in epochs:
        dataset.set_epoch(epoch)
        items += [dataset[i] for i in range(len(dataset))]
    return items


def train_step_is_finite(task, items):
    model = tiny_model(task.dictionary, num_segments=6)
    model.build_nsp_head()
    criterion = UniLMCriterion(task)
    batch = task.datasets["train"].collater(items)
    loss, sample_size, log = criterion(model, batch)
    loss.backward()
    assert torch.isfinite(loss) and sample_size == int(batch["net_input"]["masked_tokens"].sum()) > 0
    return log


def test_messy_corpus_is_counted_and_trains(messy_bin, caplog):
    task = UniLMTask.setup_task(UniLMConfig(data=str(messy_bin), tokens_per_sample=32, seed=1))
    with caplog.at_level(logging.INFO):
        dataset = task.load_dataset("train")
    message = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("train:"))
    assert "14 lines, 7 empty (document breaks) -> 5 blocks of at most 29 tokens from 4 documents" in message
    assert "1 holding a sentence over the limit" in message
    assert "one document only" not in caplog.text

    d = task.dictionary
    items = all_items(dataset)
    for item in items:
        assert len(item["source"]) <= 32
        assert item["tokens"][0] == d.bos() and item["tokens"][-1] == d.eos()
    long = [it for it in items if (it["tokens"] == d.index("w29")).any()]  # only the long sentence has w29
    assert long and all(it["trimmed"] and len(it["tokens"]) == 32 for it in long)
    one_word = [
        it for it in items if it["objective"] == BIDIRECTIONAL and it["tokens"].tolist()[1] == d.index("w13")
    ]
    one_word = [it for it in one_word if len(it["tokens"]) == 3]  # "[SOS] w13 [EOS]": no second segment
    assert one_word and all(it["nsp_label"] == NO_NSP and it["nsp_skipped"] for it in one_word)
    # the one-sentence document still gives a pair: its sentence is cut in two
    one_sentence = [it for it in items if it["tokens"].tolist()[1] == d.index("w8") and it["objective"] < 2]
    assert one_sentence and all((it["segments"] != it["segments"][0]).any() for it in one_sentence)
    log = train_step_is_finite(task, items)
    assert log["nsp_skipped"] == sum(it["nsp_skipped"] for it in items) > 0
    assert log["trimmed"] == sum(it["trimmed"] for it in items) > 0


def test_one_document_corpus_trains_without_nsp(one_doc_bin, caplog):
    task = UniLMTask.setup_task(
        UniLMConfig(
            data=str(one_doc_bin), tokens_per_sample=8, objective_weights=[1.0, 0.0, 0.0, 0.0], seed=1
        )
    )
    with caplog.at_level(logging.INFO):
        dataset = task.load_dataset("train")
    assert "one document only" in caplog.text
    items = all_items(dataset)
    assert len(items) == 3 * len(dataset) >= 6
    assert all(it["nsp_label"] == NO_NSP and it["nsp_skipped"] for it in items)
    log = train_step_is_finite(task, items)
    assert log["nsp_examples"] == 0 and log["nsp_skipped"] == len(items)


def test_too_few_segments_is_a_clear_error(one_doc_bin):
    task = UniLMTask.setup_task(UniLMConfig(data=str(one_doc_bin), seed=1))
    with pytest.raises(ValueError, match="--num-segments >= 6"):
        task.build_model(tiny_config(num_segments=2))


@pytest.mark.parametrize("weights", [[1.0, 1.0, 1.0], [1.0, -1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
def test_bad_objective_weights_are_a_clear_error(one_doc_bin, weights):
    task = UniLMTask.setup_task(UniLMConfig(data=str(one_doc_bin), objective_weights=weights, seed=1))
    with pytest.raises(ValueError, match="objective weights must be 4 non-negative numbers"):
        task.load_dataset("train")


def test_criterion_bookkeeping_matches_hand_computation():
    d = make_dictionary()
    blocks, docs = synthetic_corpus(d, n_docs=3, blocks_per_doc=8)
    data = UniLMClozeDataset(
        objective_dataset(blocks, docs, d, PAPER_WEIGHTS, seed=4), d, d.index("<mask>"), 4
    )
    batch = data.collater([data[i] for i in range(len(data))])
    assert set(batch["objective"].tolist()) == {0, 1, 2, 3}
    has_nsp = batch["nsp_target"] != NO_NSP
    assert (batch["nsp_target"] == NOT_NEXT).any() and (batch["nsp_target"] == 0).any()
    model = tiny_model(d, num_segments=6)
    model.build_nsp_head()
    with torch.no_grad():
        loss, sample_size, log = UniLMCriterion(None)(model, batch)

    net = dict(batch["net_input"], masked_tokens=None)
    with torch.no_grad():
        logits, extra = model(**net, nsp=True)  # B x T x V, every position
    lprobs = torch.log_softmax(logits.float(), -1)
    per_example = []
    for b in range(len(batch["objective"])):
        rows = batch["net_input"]["masked_tokens"][b]
        per_example.append(-lprobs[b, rows].gather(1, batch["target"][b, rows, None]).sum())
    per_example = torch.stack(per_example)
    for i, name in enumerate(OBJECTIVE_NAMES):
        chosen = batch["objective"] == i
        assert float(log[f"{name}_loss"]) == pytest.approx(float(per_example[chosen].sum()), rel=1e-5)
        assert log[f"{name}_tokens"] == int(batch["net_input"]["masked_tokens"][chosen].sum())
    nsp_lprobs = torch.log_softmax(extra["nsp_logits"][has_nsp], -1)
    nsp_nll = -nsp_lprobs.gather(1, batch["nsp_target"][has_nsp, None]).view(-1)
    assert float(log["nsp_loss"]) == pytest.approx(float(nsp_nll.sum()), rel=1e-5)
    correct = (extra["nsp_logits"][has_nsp].argmax(-1) == batch["nsp_target"][has_nsp]).sum()
    assert log["nsp_correct"] == int(correct) and log["nsp_examples"] == int(has_nsp.sum())
    # loss / sample_size = mean cloze loss + mean NSP loss
    expected = per_example.sum() / sample_size + nsp_nll.mean()
    assert float(loss) / sample_size == pytest.approx(float(expected), rel=1e-5)
    assert not math.isnan(float(loss))


def test_nsp_head_checkpoints_load_both_ways():
    d = make_dictionary()
    pretrained = tiny_model(d, num_segments=6)
    pretrained.build_nsp_head()
    finetune = tiny_model(d, seed=1, num_segments=6)  # no NSP head: fine-tuning, generation
    finetune.load_state_dict(pretrained.state_dict(), strict=True)
    assert finetune.nsp_head is None
    for name, value in finetune.state_dict().items():
        assert torch.equal(value, pretrained.state_dict()[name])

    continued = tiny_model(d, seed=2, num_segments=6)  # v1 pre-training from a checkpoint without the head
    continued.build_nsp_head()
    fresh = {k: v.clone() for k, v in continued.nsp_head.state_dict().items()}
    continued.load_state_dict(finetune.state_dict(), strict=True)
    assert all(torch.equal(v, fresh[k]) for k, v in continued.nsp_head.state_dict().items())
    assert torch.equal(continued.lm_head.bias, pretrained.lm_head.bias)


def test_pretrained_bert_like_checkpoint_grows_segments_and_keeps_a_fresh_nsp_head(tmp_path):
    d = make_dictionary()
    bert = tiny_model(d, seed=1)  # 2 segment ids, no NSP head
    save_checkpoint(bert.state_dict(), tmp_path / "bert.pt")
    v1 = tiny_model(d, seed=2, num_segments=6)
    v1.build_nsp_head()
    before = {k: v.clone() for k, v in v1.state_dict().items()}
    load_pretrained_weights(v1, str(tmp_path / "bert.pt"))
    after = v1.state_dict()
    assert torch.equal(after[SEGMENT_TABLE][:2], bert.state_dict()[SEGMENT_TABLE])
    assert torch.equal(after[SEGMENT_TABLE][2:], before[SEGMENT_TABLE][2:])
    for key, value in after.items():
        if key.startswith("classification_heads.nsp."):
            assert torch.equal(value, before[key])
        elif key != SEGMENT_TABLE:
            assert torch.equal(value, bert.state_dict()[key]), key

    # and a UniLM v1 checkpoint initialises a model without the head (seq2seq fine-tuning)
    save_checkpoint(v1.state_dict(), tmp_path / "v1.pt")
    finetune = tiny_model(d, seed=3, num_segments=6)
    load_pretrained_weights(finetune, str(tmp_path / "v1.pt"))
    assert finetune.nsp_head is None
    assert torch.equal(finetune.state_dict()[SEGMENT_TABLE], after[SEGMENT_TABLE])


@pytest.mark.parametrize("mode", ["complete", "none"])
def test_pair_objectives_need_blocks_inside_one_document(one_doc_bin, mode):
    """With blocks across documents, a cut at the document break gave a B from the next document labelled
    the continuation of A; the left-to-right and right-to-left objectives alone have no pairs."""
    with pytest.raises(ValueError, match=f"--sample-break-mode {mode}: a block may end one document"):
        UniLMTask.setup_task(UniLMConfig(data=str(one_doc_bin), sample_break_mode=mode, seed=1))
    weights = [0.0, 0.0, 1.0, 1.0]
    task = UniLMTask.setup_task(
        UniLMConfig(data=str(one_doc_bin), sample_break_mode=mode, objective_weights=weights, seed=1)
    )
    assert len(task.load_dataset("train")) > 0
