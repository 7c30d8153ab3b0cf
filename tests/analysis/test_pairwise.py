"""Which model differences are real: Holm by hand, the sign-flip and bootstrap p-values, and pairs that are
equal, clearly different, or different only before the correction for multiple comparisons."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_hypeedit.analysis.metrics import MetricSettings, TaskTally
from pytest_hypeedit.analysis.pairwise import (
    Entrant,
    bootstrap_p,
    compare_pair,
    holm,
    indistinguishable,
    pairwise,
    sign_flip_p,
)


def tallies(passes: list[int], judged: int = 10) -> tuple[TaskTally, ...]:
    return tuple(TaskTally(f"t{i:02d}", k, judged, k > 0) for i, k in enumerate(passes))


def test_holm_by_hand():
    # sorted: 0.005 x4 = 0.02, 0.01 x3 = 0.03, 0.03 x2 = 0.06, 0.04 x1 = 0.04 -> kept monotone: 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # capped at 1
    assert holm([0.02]) == [0.02]  # a family of one is not adjusted
    assert holm([]) == []


def test_sign_flip_p():
    # 10 tasks all +1: exactly 2 of the 1,024 sign vectors are as extreme, p = 0.00195
    assert sign_flip_p(np.ones(10)) == pytest.approx(2 / 1024, abs=0.001)
    assert sign_flip_p(np.zeros(10)) == 1.0  # no difference at all
    assert sign_flip_p(np.array([1.0, -1.0] * 5)) == 1.0  # mean 0: every flip is as extreme
    # 6 tasks all +1: 2 / 64
    assert sign_flip_p(np.full(6, 0.5), seed=3) == pytest.approx(2 / 64, abs=0.006)


def test_bootstrap_p():
    assert bootstrap_p(np.array([1.0, 2.0, 3.0])) == pytest.approx(0.0)
    assert bootstrap_p(np.array([-1.0, 1.0, np.nan])) == 1.0
    assert bootstrap_p(np.zeros(5)) == 1.0  # 0 counts on both sides
    assert bootstrap_p(np.array([-1.0, 1.0, 2.0, 3.0])) == pytest.approx(0.5)


def test_identical_models_differ_by_nothing_and_are_not_significant():
    same = tallies([(i * 7) % 11 for i in range(30)])
    found = pairwise({"public": [Entrant("a", same, 0.04), Entrant("b", same, 0.04)]}, MetricSettings())
    assert {e["metric"] for e in found} == {"pass_rate", "pass_at_4", "pass_at_10", "expected_attempts",
                                            "effective_cost", "hype_gap"}
    for entry in found:
        assert entry["difference"] == 0.0
        assert entry["interval"] == [0.0, 0.0]
        assert entry["p_adjusted"] == 1.0
        assert entry["significant"] is False
    assert indistinguishable(found, "public") == [("a", "b")]


def test_a_clearly_different_pair_is_significant():
    good, bad = tallies([8 + i % 3 for i in range(30)]), tallies([i % 3 for i in range(30)])
    found = pairwise({"public": [Entrant("good", good, 0.04), Entrant("bad", bad, 0.04)]}, MetricSettings())
    rate = next(e for e in found if e["metric"] == "pass_rate")
    assert rate["a"] == "good" and rate["b"] == "bad"
    assert rate["difference"] == pytest.approx(0.8)
    assert rate["interval"][0] - 1e-9 <= 0.8 <= rate["interval"][1] + 1e-9
    assert rate["significant"] is True and rate["p_adjusted"] < 0.01
    cost = next(e for e in found if e["metric"] == "effective_cost")
    assert cost["difference"] < 0 and cost["significant"] is True  # the good model costs less per success
    assert indistinguishable(found, "public") == []


def test_holm_turns_a_raw_5_percent_into_not_significant():
    # 6 tasks, a passes everything, b nothing: raw p = 2/64 = 0.031 on each of the 4 task-mean metrics, but the
    # family holds 5 tests (hype gap too; effective cost of b is infinite, so not tested): 5 x 0.031 > 0.05
    a, b = Entrant("a", tallies([4] * 6, 4), 0.04), Entrant("b", tallies([0] * 6, 4), 0.04)
    found = pairwise({"public": [a, b]}, MetricSettings())
    assert [e["metric"] for e in found] == ["pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "hype_gap"]
    raw = sign_flip_p(np.ones(6))
    assert raw < 0.05
    rate = found[0]
    assert rate["p_adjusted"] == pytest.approx(min(1.0, 5 * raw))
    assert rate["significant"] is False
    assert indistinguishable(found, "public") == [("a", "b")]


def test_each_split_is_its_own_family_and_pairs_without_shared_tasks_are_left_out():
    good, bad = tallies([9] * 30), tallies([1] * 30)
    other = tuple(TaskTally(f"x{i}", 5, 10, True) for i in range(5))
    found = pairwise({"public": [Entrant("good", good, 0.04), Entrant("bad", bad, 0.04)],
                      "private": [Entrant("good", good, 0.04), Entrant("lonely", other, 0.04)]}, MetricSettings())
    assert {e["split"] for e in found} == {"public"}
    assert all(set(e) == {"split", "a", "b", "metric", "difference", "interval", "p_adjusted", "significant",
                          "tasks"} for e in found)


def test_compare_pair_uses_the_shared_tasks_only():
    a = Entrant("a", tallies([10, 10, 0]), 0.04)
    b = Entrant("b", tallies([0, 0]), 0.04)
    rate = next(e for e in compare_pair(a, b, MetricSettings()) if e["metric"] == "pass_rate")
    assert rate["difference"] == pytest.approx(1.0) and rate["tasks"] == 2


# --- the leaderboard: merged runs ------------------------------------------------------------


def results_file(tmp_path, name: str, model: str, passes: list[int] | None, split: str = "public"):
    """One run's results JSON of one model: per-task tallies from ``passes`` (10 judged each), or none at all
    (a file written before the tallies were kept)."""
    rate = sum(passes or [5]) / (10 * len(passes or [5]))
    row = {"model": model, "split": split, "tasks": len(passes or [5]), "candidates": 10 * len(passes or [5]),
           "judged": 10 * len(passes or [5]), "errors": 0, "refusals": 0, "cost_per_candidate": 0.04, "spent": 1.0,
           "pass_rate": rate, "complete": True}
    if passes is not None:
        row["task_tallies"] = [{"task_id": f"t{i:02d}", "passes": k, "judged": 10, "first_passed": k > 0,
                                "task_types": []} for i, k in enumerate(passes)]
    data = {"schema": "hypeedit-results/1", "settings": {"repeats": 10, "retry_cap": 4, "review_cost": 0.2778},
            "complete": True, "rows": [row]}
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_the_leaderboard_groups_models_that_cannot_be_told_apart(tmp_path):
    from pytest_hypeedit.report.leaderboard import main

    spread = [(i * 7) % 11 for i in range(30)]
    files = [results_file(tmp_path, "a.json", "twin-a", spread), results_file(tmp_path, "b.json", "twin-b", spread),
             results_file(tmp_path, "c.json", "weaker", [max(0, k - 6) for k in spread])]
    out, merged = tmp_path / "RESULTS.md", tmp_path / "merged.json"
    assert main([*map(str, files), "-o", str(out), "--json", str(merged)]) == 0
    data = json.loads(merged.read_text(), parse_constant=lambda name: pytest.fail(f"not strict JSON: {name}"))
    rates = {(e["a"], e["b"]): e for e in data["pairwise"] if e["metric"] == "pass_rate"}
    assert rates[("twin-a", "twin-b")]["significant"] is False
    assert rates[("twin-a", "weaker")]["significant"] is True and rates[("twin-b", "weaker")]["significant"] is True
    text = out.read_text()
    assert "Cannot be told apart on pass rate (paired over tasks, Holm-adjusted" in text
    assert "twin-a ~ twin-b." in text and "~ weaker" not in text


def test_the_leaderboard_says_when_older_files_lack_tallies_and_skips_them(tmp_path):
    from pytest_hypeedit.report.leaderboard import main

    spread = [(i * 7) % 11 for i in range(30)]
    files = [results_file(tmp_path, "a.json", "new", spread), results_file(tmp_path, "old.json", "old", None)]
    out, merged = tmp_path / "RESULTS.md", tmp_path / "merged.json"
    assert main([*map(str, files), "-o", str(out), "--json", str(merged)]) == 0
    data = json.loads(merged.read_text())
    assert "pairwise" not in data
    assert data["pairwise_skipped"] == [{"split": "public", "model": "old", "reason":
                                         "no per-task tallies (results written by an older version), so not in "
                                         "the pairwise comparison; rerun it to compare"}]
    assert "- old: no per-task tallies (results written by an older version)" in out.read_text()


def test_a_combined_row_rebuilt_from_several_files_is_compared_on_its_pooled_tasks(tmp_path):
    from pytest_hypeedit.report.leaderboard import main

    spread = [(i * 7) % 11 for i in range(30)]
    worse = [max(0, k - 6) for k in spread]
    files = [results_file(tmp_path, f"{model}-{split}.json", model, passes, split)
             for model, passes in (("good", spread), ("bad", worse)) for split in ("public", "private")]
    merged = tmp_path / "merged.json"
    assert main([*map(str, files), "-o", str(tmp_path / "RESULTS.md"), "--json", str(merged)]) == 0
    data = json.loads(merged.read_text())
    combined = next(r for r in data["rows"] if r["split"] == "combined" and r["model"] == "good")
    assert len(combined["task_tallies"]) == 60 and combined["task_tallies"][0]["task_id"] == "public/t00"
    rate = next(e for e in data["pairwise"] if e["split"] == "combined" and e["metric"] == "pass_rate")
    assert rate["tasks"] == 60 and rate["significant"] is True


def test_a_malformed_tally_in_a_merged_file_is_a_clear_error(tmp_path, capsys):
    from pytest_hypeedit.report.leaderboard import main

    spread = [(i * 7) % 11 for i in range(30)]
    broken = results_file(tmp_path, "b.json", "broken", spread)
    data = json.loads(broken.read_text())
    data["rows"][0]["task_tallies"][3]["passes"] = 99  # more PASS than judged candidates
    broken.write_text(json.dumps(data))
    assert main([str(results_file(tmp_path, "a.json", "fine", spread)), str(broken)]) == 2
    error = capsys.readouterr().err
    assert "hypeedit-leaderboard: error: the per-task tallies or settings of the results files cannot be compared" in error
    assert "t03" in error and "Traceback" not in error
