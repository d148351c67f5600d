"""UniLMv2's answerability classifier for SQuAD v2.0 (§4.2: "we use the output vector of [SOS] to predict
whether the instance is unanswerable or not"): its loss, its gradients, its checkpoints, and the decoding
rule that uses it in place of the null span."""

import json
import math

import numpy as np
import pytest
import torch
from fairseq import checkpoint_utils, metrics
from fairseq.dataclass.configs import FairseqConfig
from omegaconf import OmegaConf

from unilm_fairseq.criterions.squad_span import SquadSpanCriterion
from unilm_fairseq.losses import answerability_targets
from unilm_fairseq.modules.heads import ANSWERABLE, UNANSWERABLE
from unilm_fairseq.qa.span_decoding import WindowScores, predict_span, question_no_answer_prob
from unilm_fairseq.qa.squad_inference import decode_answers, window_scores
from unilm_fairseq.tasks.squad_qa import SquadQAConfig, SquadQATask

from ..helpers.cli import load_script
from ..helpers.host_reads import no_host_reads
from ..helpers.models import save_checkpoint, tiny_config
from ..helpers.squad import write_squad_dir

HEAD = "squad_answerability_head"
WINDOW = dict(max_seq_length=64, doc_stride=24, max_query_length=16)
TOL = 1e-5

pytestmark = pytest.mark.usefixtures("one_thread")


def model_config():
    cfg = OmegaConf.structured(tiny_config(max_positions=64))
    cfg._name = "unilmv2"
    return cfg


@pytest.fixture
def data_dir(tmp_path):
    write_squad_dir(tmp_path, train_paragraphs=8, valid_paragraphs=8, unanswerable_prob=0.5)
    return tmp_path


def make_task(data_dir, **options):
    return SquadQATask.setup_task(SquadQAConfig(data=str(data_dir), **WINDOW, **options))


def hand_made_batch(task):
    """Three windows "[SOS] q [EOS] p p p [EOS]": no answer, answer at passage tokens 4-5, no answer."""
    d = task.dictionary
    q, p = d.index("what"), d.index("ka")
    tokens = torch.tensor([[d.bos(), q, d.eos(), p, p, p, d.eos()]] * 3)
    span_mask = torch.zeros_like(tokens, dtype=torch.bool)
    span_mask[:, 0] = True  # [SOS]
    span_mask[:, 3:6] = True  # the passage
    return {
        "id": torch.arange(3),
        "nsentences": 3,
        "ntokens": int(tokens.numel()),
        "net_input": {"src_tokens": tokens},
        "target": torch.tensor([[0, 0], [4, 5], [0, 0]]),
        "span_mask": span_mask,
    }


def test_answerability_targets_are_1_where_the_span_target_is_the_null_position():
    assert (ANSWERABLE, UNANSWERABLE) == (0, 1)
    assert answerability_targets(torch.tensor([0, 7, 0, 12])).tolist() == [1, 0, 1, 0]


def test_head_loss_on_a_hand_made_batch(data_dir):
    task = make_task(data_dir, answerability_head=True)
    torch.manual_seed(0)
    model = task.build_model(model_config())
    with torch.no_grad():  # whatever the [SOS] vector: logits (ln 3, 0), so P(unanswerable) = 1 / 4
        head = model.classification_heads[HEAD].out_proj
        head.weight.zero_()
        head.bias.copy_(torch.tensor([math.log(3.0), 0.0]))
    batch = hand_made_batch(task)
    # labels (1, 0, 1): -ln(1/4) twice and -ln(3/4) once
    expected = 2 * math.log(4.0) + math.log(4.0 / 3.0)
    weight = 0.5
    loss, sample_size, log = SquadSpanCriterion(task, answerability_weight=weight)(model, batch)
    span_only, _, span_log = SquadSpanCriterion(make_task(data_dir))(model, batch)
    assert sample_size == 3
    assert float(log["answerability_loss"]) == pytest.approx(expected, abs=TOL)
    assert float(loss.detach()) == pytest.approx(float(span_only.detach()) + weight * expected, abs=TOL)
    assert log["answerability_correct"] == 1  # it always says "answerable": right on the second window
    assert "answerability_loss" not in span_log


def logged(logging_outputs):
    """What ``reduce_metrics`` logs: each average meter's (sum, count), unrounded."""
    with metrics.aggregate(new_root=True) as agg:
        SquadSpanCriterion.reduce_metrics(logging_outputs)
    return {key: (float(m.sum), float(m.count)) for key, m in agg.items() if hasattr(m, "sum")}


def test_the_criterion_reads_nothing_back_and_logs_what_host_counts_logged(data_dir):
    task = make_task(data_dir, answerability_head=True)
    torch.manual_seed(0)
    model, batch = task.build_model(model_config()).train(), hand_made_batch(task)
    with no_host_reads():
        loss, _, log = SquadSpanCriterion(task)(model, batch)
        loss.backward()
    counts = ("start_correct", "end_correct", "span_correct", "answerability_correct")
    assert all(torch.is_tensor(log[key]) for key in counts)
    as_host_ints = {**log, **{key: int(log[key]) for key in counts}}  # what forward logged before
    assert logged([log, log]) == logged([as_host_ints, as_host_ints])
    assert set(logged([log])) >= {"start_acc", "end_acc", "span_acc", "answerability_acc"}


def test_gradients_reach_the_head_only_when_enabled(data_dir):
    torch.manual_seed(0)
    model = make_task(data_dir, answerability_head=True).build_model(model_config())
    batch = hand_made_batch(make_task(data_dir))
    head = list(model.classification_heads[HEAD].parameters())
    for enabled in (True, False):
        model.zero_grad(set_to_none=True)
        loss, _, _ = SquadSpanCriterion(make_task(data_dir, answerability_head=enabled))(model, batch)
        loss.backward()
        reached = [p.grad is not None and bool(p.grad.ne(0).any()) for p in head]
        assert reached == [enabled] * len(head)
        assert model.span_heads["squad_span_head"].out_proj.weight.grad.ne(0).any()


def test_pretrained_checkpoint_gets_a_fresh_head(data_dir, tmp_path):
    task = make_task(data_dir, answerability_head=True)
    torch.manual_seed(3)
    pretrained = make_task(data_dir).build_model(model_config())  # no answerability head
    save_checkpoint(pretrained.state_dict(), tmp_path / "pretrained.pt")
    task.cfg.pretrained_checkpoint = str(tmp_path / "pretrained.pt")
    model = task.build_model(model_config())
    assert HEAD in model.classification_heads
    old = pretrained.state_dict()
    for key, value in model.state_dict().items():
        if key.startswith("transformer."):
            assert torch.equal(value, old[key]), key


def save_qa_checkpoint(model, task, path):
    """What fairseq-train saves for --task squad_qa, without optimizer state."""
    full = FairseqConfig()
    full.model = model_config()
    full.task = OmegaConf.structured(task.cfg)
    full.task._name = "squad_qa"
    container = OmegaConf.to_container(OmegaConf.structured(full), resolve=True, enum_to_str=True)
    torch.save(
        {
            "args": None,
            "cfg": container,
            "model": model.state_dict(),
            "optimizer_history": [
                {"criterion_name": "x", "optimizer_name": "x", "lr_scheduler_state": {}, "num_updates": 0}
            ],
            "extra_state": {},
            "last_optimizer_state": None,
        },
        path,
    )


@pytest.mark.parametrize("enabled", [True, False])
def test_checkpoint_round_trip_keeps_the_head(data_dir, tmp_path, enabled):
    task = make_task(data_dir, answerability_head=enabled)
    torch.manual_seed(5)
    model = task.build_model(model_config())
    save_qa_checkpoint(model, task, tmp_path / "qa.pt")
    models, _, loaded_task = checkpoint_utils.load_model_ensemble_and_task([str(tmp_path / "qa.pt")])
    assert loaded_task.answerability_head_name == (HEAD if enabled else None)
    assert (HEAD in models[0].classification_heads) == enabled
    saved, loaded = model.state_dict(), models[0].state_dict()
    assert set(saved) == set(loaded)
    for key, value in saved.items():
        assert torch.equal(value, loaded[key]), key


# ---------------------------------------------------------------------------------------------------
# decoding


def window(start, end, no_answer_prob, doc_start=0):
    """A window "[SOS] q [EOS] p p p [EOS]" (passage at positions 3-5)."""
    return WindowScores(
        np.array(start, float), np.array(end, float), 3, doc_start, (True,) * 3, no_answer_prob
    )


def test_classifier_rule_decides_no_answer_by_the_lowest_window_probability():
    # the null score (10 + 10) beats every span by far: the null-span rule says "no answer"
    sure_null = window([10, 0, 0, 1, 0, 0, 0], [10, 0, 0, 0, 2, 0, 0], 0.7)
    other = window([10, 0, 0, 0, 0, 3, 0], [10, 0, 0, 0, 0, 3, 0], 0.4, doc_start=2)
    windows = [sure_null, other]
    assert predict_span(windows, allow_no_answer=True).span is None
    assert question_no_answer_prob(windows) == 0.4  # the window most sure of an answer decides
    best = predict_span(windows, allow_no_answer=True, answerability_threshold=0.5)
    assert best.span == (6.0, 4, 4) and best.no_answer_prob == 0.4  # the best non-null span
    assert predict_span(windows, allow_no_answer=True, answerability_threshold=0.3).span is None
    # v1.1: always a span; the probability is still reported
    assert predict_span(windows, allow_no_answer=False, answerability_threshold=0.3).span == (6.0, 4, 4)
    with pytest.raises(ValueError, match="no_answer_prob"):
        predict_span([sure_null, other._replace(no_answer_prob=None)], answerability_threshold=0.5)


def test_window_scores_report_the_classifier_probability(data_dir):
    task = make_task(data_dir, answerability_head=True)
    torch.manual_seed(0)
    model = task.build_model(model_config())
    dataset = task.load_squad(task.split_file("valid"), training=False)
    scores, probs = window_scores(model, dataset, "squad_span_head", 3, answerability_head_name=HEAD)
    alone, probs_alone = window_scores(model, dataset, "squad_span_head", 1, answerability_head_name=HEAD)
    assert set(probs) == set(scores) == set(range(len(dataset)))
    for index, prob in probs.items():
        assert 0 < prob < 1 and prob == pytest.approx(probs_alone[index], abs=TOL)  # batching changes nothing
    assert window_scores(model, dataset, "squad_span_head", 3)[1] is None
    answers = decode_answers(dataset, scores, allow_no_answer=True, no_answer_probs=probs)
    assert set(answers.no_answer_prob) == set(answers.text)


def test_predict_squad_uses_the_classifier_when_the_model_has_it(data_dir, tmp_path):
    predict_squad = load_script("scripts/predict_squad.py")
    task = make_task(data_dir, answerability_head=True)
    torch.manual_seed(0)
    model = task.build_model(model_config())
    valid = str(data_dir / "valid.json")
    qids = {qa["id"] for p in json.loads((data_dir / "valid.json").read_text())["data"][0]["paragraphs"]
            for qa in p["qas"]}  # fmt: skip

    def predict(bias, *extra):
        with torch.no_grad():
            model.classification_heads[HEAD].out_proj.weight.zero_()
            model.classification_heads[HEAD].out_proj.bias.copy_(torch.tensor(bias))
        save_qa_checkpoint(model, task, tmp_path / "qa.pt")
        out = tmp_path / "pred.json"
        predict_squad.main(["--checkpoint", str(tmp_path / "qa.pt"), "--input", valid, "--output", str(out),
                            "--cpu", "--version-2-with-negative", *extra])  # fmt: skip
        return json.loads(out.read_text())

    # the classifier is sure every question is unanswerable, then sure every one is answerable
    assert predict([-20.0, 20.0]) == {qid: "" for qid in qids}
    answered = predict([20.0, -20.0], "--no-answer-prob-output", str(tmp_path / "probs.json"))
    assert set(answered) == qids and all(answered.values())
    assert all(p < 1e-6 for p in json.loads((tmp_path / "probs.json").read_text()).values())
    # the threshold moves the decision: P(no answer) = 1 / (1 + e^-1) = 0.73 for every question
    assert predict([0.0, 1.0], "--answerability-threshold", "0.8") == answered
    assert predict([0.0, 1.0], "--answerability-threshold", "0.7") == {qid: "" for qid in qids}
    # --no-answer-rule null-span ignores the classifier: the null-span decisions of the same span scores
    null_span = predict([-20.0, 20.0], "--no-answer-rule", "null-span")
    dataset = task.load_squad(valid, training=False)
    scores, _ = window_scores(model.eval(), dataset, "squad_span_head")
    assert null_span == decode_answers(dataset, scores, allow_no_answer=True).text


def test_predict_squad_classifier_rule_needs_the_head(data_dir, tmp_path):
    predict_squad = load_script("scripts/predict_squad.py")
    task = make_task(data_dir)
    save_qa_checkpoint(task.build_model(model_config()), task, tmp_path / "qa.pt")
    with pytest.raises(SystemExit, match="--answerability-head"):
        predict_squad.main(["--checkpoint", str(tmp_path / "qa.pt"), "--input", str(data_dir / "valid.json"),
                            "--output", str(tmp_path / "p.json"), "--cpu", "--no-answer-rule",
                            "classifier"])  # fmt: skip
