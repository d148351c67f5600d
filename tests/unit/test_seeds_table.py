"""examples/aclsum/seeds_table.py on seed folders laid out as examples/aclsum/seeds.sh leaves them, with
real ACLSum summaries (tests/fixtures/rouge_real) as references and outputs."""

import json
import os
import statistics
import subprocess

import pytest

from tests.helpers.cli import load_script
from unilm_fairseq.scoring.metrics import rouge_scores

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL_PAIRS = os.path.join(REPO, "tests", "fixtures", "rouge_real")
seeds_table = load_script(os.path.join(REPO, "examples", "aclsum", "seeds_table.py"))

VALID_LINE = (
    "2026-11-29 03:30:00 | INFO | valid | epoch 004 | valid on 'valid' subset | loss {loss} | "
    "nll_loss {nll} | ppl 100.0 | wps 1000 | wpb 100 | bsz 150 | num_updates {update}\n"
)


def lines(name):
    with open(os.path.join(REAL_PAIRS, name), encoding="utf-8") as f:
        return f.read().splitlines()


def seed_folder(work, seed, hyps, refs, positional, valid):
    folder = work / f"seed{seed}"
    (folder / "data").mkdir(parents=True)
    (folder / "run" / "logs").mkdir(parents=True)
    (folder / "data" / "test.tgt").write_text("".join(r + "\n" for r in refs))
    (folder / "data" / "test.positional.hyp").write_text("".join(p + "\n" for p in positional))
    (folder / "run" / "test.hyp").write_text("".join(h + "\n" for h in hyps))
    log = "".join(VALID_LINE.format(loss=nll + 1, nll=nll, update=update) for update, nll in valid)
    (folder / "run" / "logs" / "train.log").write_text(log)


def test_seeds_table_mean_spread_and_baseline(tmp_path, capsys):
    refs, system = lines("reference.txt"), lines("system.txt")
    positional = [" ".join(s.split()[:6]) for s in system]  # a weaker baseline: six words of each
    outputs = {
        1: system,
        2: [" ".join(s.split()[:20]) for s in system],
        3: [" ".join(s.split()[3:]) for s in system],
    }
    for seed, hyps in outputs.items():
        seed_folder(tmp_path, seed, hyps, refs, positional, [(125, 6.5 + seed / 10), (250, 6.0 + seed / 10)])
    (tmp_path / "seed4").mkdir()  # unfinished: no test.hyp, left out
    assert seeds_table.main([str(tmp_path), "--resamples", "200", "--json", str(tmp_path / "s.json")]) == 0
    out = capsys.readouterr().out
    record = json.loads((tmp_path / "s.json").read_text())
    assert [row["seed"] for row in record["seeds"]] == [1, 2, 3]
    expected = {seed: rouge_scores(hyps, refs) for seed, hyps in outputs.items()}
    for row in record["seeds"]:
        for key in ("rouge1", "rouge2", "rougeL"):
            assert row["scores"][key] == pytest.approx(100 * expected[row["seed"]][key])
        assert row["valid_nll"] == [pytest.approx(6.0 + row["seed"] / 10), 250]
    rouge_l = [100 * expected[seed]["rougeL"] for seed in (1, 2, 3)]
    mean, sd, low, high = record["mean_sd_min_max"]["rougeL"]
    assert mean == pytest.approx(statistics.mean(rouge_l)) and sd == pytest.approx(statistics.stdev(rouge_l))
    assert (low, high) == (pytest.approx(min(rouge_l)), pytest.approx(max(rouge_l)))
    assert "| mean ± sd over 3 seeds | 6.20 ± 0.10 | " in out
    # against the baseline: seed 1's lead and the seeds' mean per pair
    base_l = 100 * rouge_scores(positional, refs)["rougeL"]
    assert record["seeds"][0]["against"]["rougeL"][0] == pytest.approx(rouge_l[0] - base_l)
    assert record["seeds_mean_against_baseline"]["rougeL"][0] == pytest.approx(
        statistics.mean(rouge_l) - base_l
    )
    assert 0 < record["interval_width"]["rougeL"] < 30
    assert "positional baseline: " in out
    # another baseline by name: the same comparison against its file
    (tmp_path / "seed1" / "data" / "test.short.hyp").write_text("".join(p + "\n" for p in positional))
    assert seeds_table.main([str(tmp_path), "--resamples", "200", "--baseline", "short"]) == 0
    out = capsys.readouterr().out
    assert "short baseline: " in out and "ROUGE-L - short (p)" in out
    assert seeds_table.main([str(tmp_path), "--baseline", "missing"]) == 1
    assert "test.missing.hyp: no such baseline" in capsys.readouterr().err


def test_seeds_table_errors(tmp_path, capsys):
    assert seeds_table.main([str(tmp_path)]) == 1
    assert "no finished seed" in capsys.readouterr().err
    refs = lines("reference.txt")
    seed_folder(tmp_path, 1, refs, refs, refs, [])
    seed_folder(tmp_path, 2, refs, refs[::-1], refs, [])
    assert seeds_table.main([str(tmp_path)]) == 1
    assert "seed2/data/test.tgt differs from seed 1's references" in capsys.readouterr().err


def test_seeds_against_another_folder(tmp_path, capsys):
    """--against: per shared seed number, this folder's validation NLL and ROUGE minus the other's; the mean
    and sd of those; the seeds' mean per pair against the other's, by the paired bootstrap."""
    refs, system = lines("reference.txt"), lines("system.txt")
    positional = [" ".join(s.split()[:6]) for s in system]
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    mine = {1: system, 2: [" ".join(s.split()[1:]) for s in system], 3: system}
    other = {1: [" ".join(s.split()[:12]) for s in system], 2: [" ".join(s.split()[:8]) for s in system]}
    for seed, hyps in mine.items():
        seed_folder(ours, seed, hyps, refs, positional, [(250, 5.8 + seed / 100)])
    for seed, hyps in other.items():
        seed_folder(theirs, seed, hyps, refs, positional, [(250, 6.0 + seed / 10)])
    args = [str(ours), "--against", str(theirs), "--resamples", "300", "--json", str(tmp_path / "s.json")]
    assert seeds_table.main(args) == 0
    out = capsys.readouterr().out
    against = json.loads((tmp_path / "s.json").read_text())["against"]
    assert [row["seed"] for row in against["seeds"]] == [1, 2]  # seed 3 has no partner
    differences = {}
    for row in against["seeds"]:
        seed = row["seed"]
        assert row["valid_nll"] == pytest.approx((5.8 + seed / 100) - (6.0 + seed / 10))
        for key in ("rouge1", "rouge2", "rougeL"):
            expected = rouge_scores(mine[seed], refs)[key] - rouge_scores(other[seed], refs)[key]
            assert row["rouge"][key] == pytest.approx(100 * expected)
        differences[seed] = row["rouge"]["rougeL"]
    difference, low, high, p = against["seeds_mean_per_pair"]["rougeL"]
    assert difference == pytest.approx(statistics.mean(differences.values()))
    assert low <= difference <= high and 0 <= p <= 1
    assert difference > 0 and p < 0.05  # whole summaries against cut ones
    assert f"against {theirs} (this folder minus it" in out
    assert "| 1 | -0.290 | " in out and "| mean ± sd over 2 seeds | " in out
    assert "| the seeds' mean per pair (95% interval) p | | " in out
    # no seed in common, or other references: a clear error
    assert seeds_table.main([str(theirs), "--against", str(tmp_path / "none")]) == 1
    assert "has none of the seeds [1, 2] finished" in capsys.readouterr().err
    (theirs / "seed1" / "data" / "test.tgt").write_text("".join(r + "\n" for r in refs[::-1]))
    assert seeds_table.main([str(ours), "--against", str(theirs)]) == 1
    assert "seed1/data/test.tgt differs from this folder's references" in capsys.readouterr().err


def test_seeds_script_checks_its_seeds_before_any_work(tmp_path):
    script = os.path.join(REPO, "examples", "aclsum", "seeds.sh")
    result = subprocess.run(
        ["bash", script, str(tmp_path / "work"), "1", "two"], capture_output=True, text=True
    )
    assert result.returncode == 2 and "error: seed two is not a whole number" in result.stderr
    assert not (tmp_path / "work").exists()
    usage = subprocess.run(["bash", script, "-h"], capture_output=True, text=True, cwd=tmp_path)
    assert usage.returncode == 0 and "SEED ..." in usage.stdout and list(tmp_path.iterdir()) == []


def test_valid_nll_is_the_decoded_checkpoints(tmp_path):
    """The NLL reported is that of checkpoint_best.pt, the lowest label-smoothed validation loss (the later
    of equal ones), which need not be the lowest NLL."""
    log = tmp_path / "train.log"
    rows = [(7.10, 5.90, 200), (7.05, 5.95, 250), (7.20, 5.85, 300), (7.05, 5.96, 350)]
    log.write_text("".join(VALID_LINE.format(loss=loss, nll=nll, update=u) for loss, nll, u in rows))
    assert seeds_table.best_valid_nll(str(log)) == (5.96, 350)
    assert seeds_table.best_valid_nll(str(tmp_path / "none.log")) is None
