"""Official-rule SQuAD EM/F1 on hand-checked cases (v1.1 and v2.0)."""

import json
import subprocess
import sys

import pytest

from unilm_fairseq.scoring.squad import evaluate, exact_match, f1, gold_answers, normalize_answer, squad_gold

from ..helpers.cli import REPO


def test_normalize_answer():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("an apple, a pear and THE plum.") == "apple pear and plum"
    assert normalize_answer("theory anthem") == "theory anthem"  # articles only as whole words
    assert normalize_answer("  ") == ""


def test_exact_match_and_f1_hand_checked():
    assert exact_match("the Denver Broncos", "Denver Broncos!") == 1.0
    assert exact_match("Denver", "Denver Broncos") == 0.0
    # prediction "denver broncos won" vs gold "broncos": common 1, precision 1/3, recall 1 -> F1 0.5
    assert f1("Denver Broncos won", "Broncos") == pytest.approx(0.5)
    # bags: "x y y" vs "y y z": common 2 (y twice), P = R = 2/3
    assert f1("x y y", "y y z") == pytest.approx(2 / 3)
    assert f1("x", "y") == 0.0
    assert f1("", "") == 1.0 and f1("", "y") == 0.0 and f1("y", "") == 0.0


def test_best_over_gold_answers_and_no_answer():
    golds = {"q1": ["Denver Broncos", "The Broncos"], "q2": ["1874", "in 1874"], "q3": [], "q4": []}
    predictions = {"q1": "broncos", "q2": "1874 AD", "q3": "", "q4": "something"}
    result = evaluate(golds, predictions)
    # q1: EM with "The Broncos" (1), q2: F1 max(2/3, 1/2) = 2/3, EM 0; q3: empty == empty; q4: 0
    assert result["exact"] == pytest.approx(100 * 2 / 4)
    assert result["f1"] == pytest.approx(100 * (1 + 2 / 3 + 1 + 0) / 4)
    assert result["HasAns_total"] == 2 and result["HasAns_exact"] == pytest.approx(50.0)
    assert result["HasAns_f1"] == pytest.approx(100 * (1 + 2 / 3) / 2)
    assert result["NoAns_total"] == 2 and result["NoAns_exact"] == 50.0 and result["NoAns_f1"] == 50.0
    assert gold_answers(["", "  the "]) == [""]  # nothing left after normalization: unanswerable


def test_missing_prediction_scores_zero():
    result = evaluate({"a": ["x"], "b": ["y"]}, {"a": "x"})
    assert result["exact"] == 50.0 and result["f1"] == 50.0 and result["total"] == 2
    assert "NoAns_total" not in result


def test_evaluate_script_on_the_squad_fixture(tmp_path):
    data = f"{REPO}/tests/fixtures/seq2seq/squad/train-v1.1.json"
    with open(data) as f:
        golds = squad_gold(json.load(f)["data"])
    assert golds["gp-4"] == ["the keepers"]
    predictions = {"gp-1": "1874", "gp-2": "burned oil", "gp-3": "120 steps", "gp-4": "keepers"}
    (tmp_path / "pred.json").write_text(json.dumps(predictions))
    script = f"{REPO}/scripts/evaluate_squad.py"
    out = subprocess.run([sys.executable, script, data, str(tmp_path / "pred.json")],
                         capture_output=True, text=True, check=True, cwd=REPO)  # fmt: skip
    result = json.loads(out.stdout)
    assert result["exact"] == pytest.approx(100 * 2 / 4)  # gp-1 and gp-4 ("the" is dropped)
    assert result["f1"] == pytest.approx(100 * (1 + 2 / 3 + 2 / 3 + 1) / 4)
