"""Bootstrap intervals and the paired bootstrap test over test pairs (unilm_fairseq/scoring/bootstrap.py),
and scripts/rouge_table.py --bootstrap on real ACLSum summaries."""

import json
import os
import sys

import numpy as np
import pytest

from tests.helpers.cli import load_script, run_cli
from unilm_fairseq.scoring.bootstrap import mean_interval, paired_comparison, resample_indices
from unilm_fairseq.scoring.metrics import rouge_pair_scores, rouge_scores

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL_PAIRS = os.path.join(REPO, "tests", "fixtures", "rouge_real")


def loop_means(values, indices):
    """Each resample's mean, one pair at a time: an independent computation of what the module vectorizes."""
    return [sum(values[i] for i in row) / len(row) for row in indices.tolist()]


def test_resamples_are_seeded_draws_with_replacement():
    a, b = resample_indices(50, 200, seed=3), resample_indices(50, 200, seed=3)
    assert a.shape == (200, 50) and np.array_equal(a, b)
    assert not np.array_equal(a, resample_indices(50, 200, seed=4))
    assert a.min() >= 0 and a.max() == 49
    # with replacement: a resample of 50 draws almost surely repeats a pair
    assert all(len(set(row)) < 50 for row in a.tolist())
    for bad in ((0, 10), (10, 0)):
        with pytest.raises(ValueError):
            resample_indices(*bad)


def test_mean_interval_is_the_percentile_interval_of_the_resampled_means():
    rng = np.random.default_rng(0)
    values = rng.random(40).tolist()
    indices = resample_indices(40, 500, seed=1)
    low, high = mean_interval(values, indices)
    expected = np.percentile(loop_means(values, indices), [2.5, 97.5])
    assert (low, high) == pytest.approx(tuple(expected), abs=1e-12)
    assert low < float(np.mean(values)) < high
    # a wider confidence gives a wider interval; constant values give no spread at all
    low90, high90 = mean_interval(values, indices, confidence=0.9)
    assert low < low90 < high90 < high
    assert mean_interval([0.25] * 40, indices) == pytest.approx((0.25, 0.25))
    with pytest.raises(ValueError, match="39 per-pair values for resamples of 40 pairs"):
        mean_interval(values[:-1], indices)
    with pytest.raises(ValueError, match="confidence"):
        mean_interval(values, indices, confidence=1.0)


def test_paired_comparison_resamples_the_two_systems_together():
    rng = np.random.default_rng(1)
    # two systems whose per-pair scores move together (hard and easy pairs), A ahead by 0.02 on average:
    # the pairs' own spread (0.3) hides a lead that pairing shows
    difficulty = rng.random(60) * 0.6
    b = difficulty + rng.normal(0, 0.01, 60)
    a = b + 0.02 + rng.normal(0, 0.01, 60)
    indices = resample_indices(60, 1000, seed=1)
    result = paired_comparison(a.tolist(), b.tolist(), indices)
    assert result.difference == pytest.approx(float(np.mean(a - b)))
    assert 0 < result.low < result.difference < result.high
    assert result.not_ahead == 0.0
    # unpaired, the two intervals overlap: the pairing is what separates them
    a_low, a_high = mean_interval(a.tolist(), indices)
    b_low, b_high = mean_interval(b.tolist(), indices)
    assert a_low < b_high
    # the share of resamples where A is not ahead, counted by a loop
    noisy = (b + rng.normal(0.01, 0.05, 60)).tolist()
    result = paired_comparison(noisy, b.tolist(), indices)
    means = np.array(loop_means(noisy, indices)) - np.array(loop_means(b.tolist(), indices))
    assert result.difference > 0
    assert result.not_ahead == pytest.approx(float(np.mean(means <= 0)))
    assert 0.0 < result.not_ahead < 0.5
    # behind: the share of resamples where it is not behind; equal: 1.0 and no spread
    behind = paired_comparison(b.tolist(), noisy, indices)
    assert behind.difference == pytest.approx(-result.difference)
    assert behind.not_ahead == pytest.approx(float(np.mean(means <= 0)))
    same = paired_comparison(b.tolist(), b.tolist(), indices)
    assert (same.difference, same.low, same.high, same.not_ahead) == (0.0, 0.0, 0.0, 1.0)


def test_pair_scores_average_to_rouge_scores():
    with open(os.path.join(REAL_PAIRS, "reference.txt"), encoding="utf-8") as f:
        refs = f.read().splitlines()
    with open(os.path.join(REAL_PAIRS, "system.txt"), encoding="utf-8") as f:
        hyps = f.read().splitlines()
    per_pair = rouge_pair_scores(hyps, refs)
    means = rouge_scores(hyps, refs)
    assert set(per_pair) == set(means)
    for key, values in per_pair.items():
        assert len(values) == len(refs)
        assert sum(values) / len(values) == means[key]
    assert len(set(per_pair["rouge2"])) > 5  # real pairs differ from each other


def rouge_table(*args):
    return run_cli([sys.executable, os.path.join(REPO, "scripts", "rouge_table.py"), *args], check=False)


def test_rouge_table_bootstrap_on_real_summaries(tmp_path):
    ref = os.path.join(REAL_PAIRS, "reference.txt")
    hyps = os.path.join(REAL_PAIRS, "system.txt")
    # a worse system: each hypothesis cut to its first four words
    with open(hyps, encoding="utf-8") as f:
        (tmp_path / "short.hyp").write_text("".join(" ".join(h.split()[:4]) + "\n" for h in f))
    argv = ["--ref", ref, "--system", f"full={hyps}", "--system", f"short={tmp_path / 'short.hyp'}",
            "--bootstrap", "300", "--json", str(tmp_path / "s.json")]  # fmt: skip
    out = rouge_table(*argv)
    assert out.returncode == 0, out.stderr
    assert "95% intervals (300 bootstrap resamples of the 27 test pairs, seed 1)" in out.stdout
    assert "full against each system: its lead (full minus the system)" in out.stdout
    record = json.loads((tmp_path / "s.json").read_text())
    boot = record["bootstrap"]
    assert boot["against"] == "full" and boot["resamples"] == 300 and set(boot["paired"]) == {"short"}
    for name in ("full", "short"):
        for key in ("rouge1", "rouge2", "rougeL"):
            low, high = boot["intervals"][name][key]
            assert low < record["scores"][name][key] < high
    short = boot["paired"]["short"]["rouge1"]  # full's lead over short
    assert short["difference"] == pytest.approx(
        record["scores"]["full"]["rouge1"] - record["scores"]["short"]["rouge1"]
    )
    assert short["low"] > 0 and short["p"] < 0.05
    line = next(line for line in out.stdout.splitlines() if line.startswith("short") and "p " in line)
    assert (
        f"{short['difference']:+.2f} ({short['low']:+.2f}..{short['high']:+.2f}) p {short['p']:.3f}" in line
    )
    # the same seed gives the same tables; the main table's scores are those without --bootstrap
    assert rouge_table(*argv).stdout == out.stdout
    plain = rouge_table(
        "--ref", ref, "--system", f"full={hyps}", "--system", f"short={tmp_path / 'short.hyp'}"
    )
    assert out.stdout.startswith(plain.stdout)
    # --against picks the reference system
    again = rouge_table(*argv[:-2], "--against", "short")
    assert "short against each system:" in again.stdout
    row = again.stdout.splitlines()[-1]
    assert row.startswith("full") and row.count(" p 0.000") == 3


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--bootstrap", "-1"], "--bootstrap -1: must be 0 (off) or more"),
        (["--against", "x"], "--against needs --bootstrap N"),
        (["--bootstrap", "10", "--against", "x"], "--against 'x' is not one of the systems: s"),
        (["--bootstrap", "10", "--rouge-backend", "perl"], "the perl backend prints its own 95% intervals"),
    ],
)
def test_rouge_table_bootstrap_bad_flags(tmp_path, extra, message):
    ref = tmp_path / "ref.txt"
    ref.write_text("a b\n")
    out = rouge_table("--ref", str(ref), "--system", f"s={ref}", *extra)
    assert out.returncode == 2 and message in out.stderr


def test_model_card_shows_the_intervals_rouge_table_recorded():
    from unilm_fairseq.hf_export.model_card import _scores_section

    systems = {"lead": {"rouge1": 22.32, "rouge2": 6.55, "rougeL": 17.05},
               "model": {"rouge1": 29.98, "rouge2": 10.43, "rougeL": 24.59}}  # fmt: skip
    plain = "\n".join(_scores_section({"num_pairs": 300, "rouge_backend": "rouge-score", "scores": systems}))
    assert "| model | 29.98 | 10.43 | 24.59 |" in plain and "bootstrap" not in plain
    intervals = {"model": {"rouge1": [28.59, 31.48], "rouge2": [9.43, 11.54], "rougeL": [23.32, 25.94]}}
    record = {"num_pairs": 300, "rouge_backend": "rouge-score", "scores": systems,
              "bootstrap": {"resamples": 1000, "intervals": intervals}}  # fmt: skip
    card = "\n".join(_scores_section(record))
    assert "| model | 29.98 (28.59-31.48) | 10.43 (9.43-11.54) | 24.59 (23.32-25.94) |" in card
    assert "| lead | 22.32 | 6.55 | 17.05 |" in card  # no interval recorded for it: the score alone
    assert "the 95% interval over 1000 bootstrap resamples of the test pairs" in card


def test_model_card_shows_the_scores_score_py_recorded():
    """The paper recipes keep scripts/score.py's --json (one system, its scores at the top level)."""
    from unilm_fairseq.hf_export.model_card import _scores_section

    record = {"num_pairs": 11490, "rouge1": 43.2, "rouge2": 20.1, "rougeL": 30.4, "rougeLsum": 40.15,
              "bleu4": 17.0, "rouge_backend": "rouge-score",
              "rouge_ci": {"rouge1": [42.9, 43.5]}}  # fmt: skip
    card = "\n".join(_scores_section(record))
    assert "| system | ROUGE-1 | ROUGE-2 | ROUGE-L | ROUGE-Lsum | BLEU-4 |" in card
    assert "| model | 43.20 (42.90-43.50) | 20.10 | 30.40 | 40.15 | 17.00 |" in card
    assert "11490 pairs" in card and "scripts/score.py" in card and "rouge_table" not in card
    assert "no scores in a known layout" in "\n".join(_scores_section({"other": 1}))


def test_score_script_bootstrap_intervals(tmp_path):
    ref = os.path.join(REAL_PAIRS, "reference.txt")
    hyps = os.path.join(REAL_PAIRS, "system.txt")
    script = os.path.join(REPO, "scripts", "score.py")
    base = [sys.executable, script, "--hyp", hyps, "--ref", ref, "--metrics", "rouge"]
    out = run_cli([*base, "--bootstrap", "200", "--json", str(tmp_path / "s.json")], check=False)
    assert out.returncode == 0, out.stderr
    record = json.loads((tmp_path / "s.json").read_text())
    per_pair = rouge_pair_scores(lines_of(hyps), lines_of(ref))
    expected = mean_interval(per_pair["rouge2"], resample_indices(27, 200, seed=1))
    assert record["rouge_ci"]["rouge2"] == pytest.approx([100 * x for x in expected])
    assert f"(95% CI {100 * expected[0]:.2f} - {100 * expected[1]:.2f})" in out.stdout
    assert "intervals: 200 resamples of the pairs, seed 1" in out.stdout
    plain = run_cli(base, check=False)
    assert "95% CI" not in plain.stdout and plain.stdout.splitlines()[2] == out.stdout.splitlines()[2][:20]
    refused = run_cli([*base, "--bootstrap", "5", "--rouge-backend", "perl"], check=False)
    assert refused.returncode == 2 and "the perl backend prints its own 95% intervals" in refused.stderr


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def test_tune_decoding_p_column_and_max_p_guard(capsys):
    """scripts/tune_decoding.py: each setting's p against the folder's own is the paired bootstrap's share
    of resamples where its lead does not keep its sign; --max-p keeps the folder's setting when the best's
    p is above it."""
    tune = load_script(os.path.join(REPO, "scripts", "tune_decoding.py"))
    rng = np.random.default_rng(2)
    base = rng.random(40) * 50
    per_pair = {
        "folder": base,
        "clear": base + 2 + rng.normal(0, 0.5, 40),  # ahead on almost every pair
        "noise": base + rng.normal(0.2, 6, 40),  # ahead on average, not reliably
    }
    rows = [
        {"setting": {"name": name}, "pairs": {"rougeL": list(values)}} for name, values in per_pair.items()
    ]
    mine, clear, noise = rows
    tune.add_p(rows, mine, "rougeL", 500)
    indices = resample_indices(40, 500, seed=1)
    for row in rows:
        expected = paired_comparison(row["pairs"]["rougeL"], mine["pairs"]["rougeL"], indices).not_ahead
        assert row["p"] == expected
    assert mine["p"] == 1.0 and clear["p"] == 0.0 and 0.05 < noise["p"] < 0.5
    assert tune.guarded_best(clear, mine, rows, 0.05) is clear
    assert (
        tune.guarded_best(noise, mine, rows, 0.05) is mine
        and tune.guarded_best(noise, mine, rows, 1.0) is noise
    )
    assert (
        tune.guarded_best(mine, mine, rows, 0.0) is mine
        and tune.guarded_best(noise, None, rows, 0.0) is noise
    )
    # the best of two settings tried beside the folder's: its p counts twice (Bonferroni)
    assert tune.adjusted_p(noise, rows) == pytest.approx(min(1.0, 2 * noise["p"]))
    assert tune.guarded_best(noise, mine, rows, 1.5 * noise["p"]) is mine
    assert tune.guarded_best(noise, mine, rows[:2] + [noise], 2.5 * noise["p"]) is noise
    for argv, message in (
        (["--bootstrap", "0", "--max-p", "0.05"], "--max-p needs --bootstrap N"),
        (["--max-p", "1.5"], "--max-p 1.5: must be between 0 and 1"),
        (["--bootstrap", "-2"], "--bootstrap -2: must be 0 (no p) or more"),
    ):
        with pytest.raises(SystemExit):
            tune.parse_args(["folder", "--source", "s", "--reference", "r", *argv])
        assert message in capsys.readouterr().err
