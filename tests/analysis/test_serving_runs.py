"""analysis/serving.py between runs: one model's PASS rate in this run against the baseline run (or two files of a
leaderboard merge) on the same tasks, paired over tasks with pairwise.py's sign-flip test and Holm's correction;
how analysis/enrich.py pairs a run's rows with the baseline's; simulations of its error rates (bounded here;
bench/bench_serving.py runs the bigger ones and prints them)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from serving_sim import run_rows

from pytest_hypeedit.analysis.enrich import AnalysisSettings, enrich_results, run_dates, run_pairs, tally_to_json
from pytest_hypeedit.analysis.metrics import MetricSettings, TaskTally
from pytest_hypeedit.analysis.pairwise import Entrant, holm, paired_comparison, pairwise, sign_flip
from pytest_hypeedit.analysis.serving import THIS_RUN, RunRow, between_runs, serving

SETTINGS = MetricSettings(retry_cap=4, review_cost=0.0)


def tallies(passes, judged=10, prefix="t"):
    return tuple(TaskTally(f"{prefix}{i:02d}", int(k), judged, bool(k)) for i, k in enumerate(passes))


def row(model, found, run, phrase=None, **others):
    return RunRow(Entrant(model, tuple(found), 0.04), "s", run, phrase or run, **others)


# --- the test ------------------------------------------------------------------------------


def test_the_difference_is_paired_over_the_tasks_both_runs_judged_whatever_their_order():
    """Pairing is by task id: the baseline's tallies in another order, with a task this run did not judge, give the
    same comparison as the aligned ones (a comparison pairing by position would not)."""
    now = tallies([9, 1, 5, 7, 3, 8])
    before = tallies([8, 0, 4, 7, 1, 7])
    aligned = between_runs([(row("m", now, THIS_RUN), row("m", before, "b.json"))], SETTINGS)
    shuffled = list(reversed(before)) + [TaskTally("extra", 10, 10, True)]
    paired = between_runs([(row("m", now, THIS_RUN), row("m", shuffled, "b.json"))], SETTINGS)
    assert aligned == paired
    entry = paired[0]
    assert entry["difference"] == pytest.approx(np.mean([1, 1, 1, 0, 2, 1]) / 10)
    assert (entry["tasks"], entry["judged_a"], entry["judged_b"]) == (6, 60, 60)
    assert (entry["model"], entry["run_a"], entry["run_b"], entry["metric"]) == ("m", THIS_RUN, "b.json", "pass_rate")
    # the row's baseline comparison (pairwise.py paired_comparison) is the same test: with one model on the split
    # (a family of one, tested at 95%) it gives the same difference and the same interval
    compared = paired_comparison(now, shuffled, 0.04, 0.04, SETTINGS)["pass_rate"]
    assert entry["difference"] == pytest.approx(compared["difference"])
    assert entry["interval"] == pytest.approx([compared["low"], compared["high"]])


def test_the_p_value_is_the_exact_sign_flip_test_of_the_per_task_differences():
    """Six tasks: every one of the 64 sign vectors enumerated by hand; the run's p is that fraction, and
    scipy.stats.permutation_test's exact paired p."""
    now, before = tallies([9, 2, 5, 7, 3, 8]), tallies([8, 4, 4, 5, 1, 7])
    values = np.array([1, -2, 1, 2, 2, 1]) / 10
    extreme = sum(abs(np.dot(signs, values)) >= abs(values.sum()) - 1e-12
                  for signs in itertools.product((1, -1), repeat=6))
    entry = between_runs([(row("m", now, THIS_RUN), row("m", before, "b"))], SETTINGS)[0]
    assert entry["p_adjusted"] == pytest.approx(extreme / 64)
    assert entry["p_adjusted"] == pytest.approx(float(sign_flip(values).p_value()))
    from scipy import stats  # the reference: a paired permutation test swaps each task's two runs

    reference = stats.permutation_test(([t.passes / 10 for t in now], [t.passes / 10 for t in before]),
                                       lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
                                       n_resamples=np.inf, alternative="two-sided")
    assert entry["p_adjusted"] == pytest.approx(reference.pvalue)


def test_a_consistent_change_on_unlike_tasks_is_found_because_tasks_are_paired():
    """Tasks from 10% to 100% in the baseline, about 10 points lower now: a comparison of the runs' candidates pooled
    (tasks ignored) would drown 10 points in the spread between tasks; paired over tasks every task says -10."""
    before = tallies([1, 2, 3, 4, 5, 6, 7, 8, 9, 10] * 2)
    now = tallies([0, 1, 2, 3, 4, 5, 6, 7, 8, 9] + [0, 0, 2, 3, 4, 5, 6, 7, 8, 10])
    entry = between_runs([(row("m", now, THIS_RUN), row("m", before, "b", "the baseline run of 2026-11-20",
                                                      judge="gemini:gemini-2.5-flash",
                                                      judge_versions=("gemini-2.5-flash-001",)))], SETTINGS)[0]
    assert entry["difference"] == pytest.approx(-0.1)
    assert entry["significant"] and entry["interval"][1] < 0
    # a two-sample test of the per-task rates, tasks not paired, sees nothing of it
    from scipy import stats

    unpaired = stats.ttest_ind([t.passes / 10 for t in now],
                               [k / 10 for k in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] * 2])
    assert unpaired.pvalue > 0.2
    assert entry["sentence"].startswith("m passed 10.0 points less in this run than in the baseline run of "
                                        "2026-11-20 (paired over 20 tasks, p = ")
    assert entry["judge_changed"] is False  # this run's judge was not recorded: nothing to compare


def test_the_runs_of_every_model_on_a_split_are_one_holm_family():
    """Two models on one split: each p_adjusted is Holm's of the two sign-flip p-values; a second split is a
    family of its own."""
    a_now, a_before = tallies([5, 6, 4, 7, 5, 6, 5, 4]), tallies([4, 4, 4, 5, 5, 4, 3, 4])
    b_now, b_before = tallies([5, 6, 4, 7, 5, 6, 5, 4]), tallies([4, 5, 3, 5, 4, 6, 3, 3])
    pairs = [(row("a", a_now, THIS_RUN), row("a", a_before, "b")), (row("b", b_now, THIS_RUN), row("b", b_before, "b"))]
    raw = [float(sign_flip(np.array([x.passes - y.passes for x, y in zip(now, before)]) / 10).p_value())
           for now, before in ((a_now, a_before), (b_now, b_before))]
    found = between_runs(pairs, SETTINGS)
    assert [e["p_adjusted"] for e in found] == pytest.approx(holm(raw))
    assert found[0]["p_adjusted"] > raw[0] or found[1]["p_adjusted"] > raw[1]
    other = RunRow(Entrant("a", a_now, 0.04), "other", THIS_RUN, THIS_RUN)
    alone = between_runs([*pairs, (other, RunRow(Entrant("a", a_before, 0.04), "other", "b", "b"))], SETTINGS)
    assert alone[2]["p_adjusted"] == pytest.approx(raw[0])  # its own family of one
    # the same machinery as pairwise.py: the models' pairwise comparison of these tallies has the same p
    compared = pairwise({"s": [Entrant("now", a_now, 0.04), Entrant("before", a_before, 0.04)]}, SETTINGS,
                        ("pass_rate",))
    assert compared[0]["p_adjusted"] == pytest.approx(raw[0])


def test_equal_runs_are_not_significant_and_a_lone_shared_task_is_left_out():
    same = tallies([5, 6, 4, 7])
    entry = between_runs([(row("m", same, THIS_RUN), row("m", same, "b"))], SETTINGS)[0]
    assert entry["difference"] == 0 and not entry["significant"] and "sentence" not in entry
    assert between_runs([(row("m", same[:1], THIS_RUN), row("m", same, "b"))], SETTINGS) == []
    assert between_runs([(row("m", tallies([1, 2], prefix="x"), THIS_RUN), row("m", same, "b"))], SETTINGS) == []


def test_a_judge_answered_by_another_version_is_named_in_the_sentence():
    now, before = tallies([0, 1, 2, 3, 4, 5, 6, 7, 8, 9] * 2), tallies([1, 2, 3, 4, 5, 6, 7, 8, 9, 10] * 2)
    entry = between_runs([(row("m", now, THIS_RUN, judge="gemini:g", judge_versions=("g-002",)),
                           row("m", before, "b", "the baseline run of 2026-11-20", judge="gemini:g",
                               judge_versions=("g-001",)))], SETTINGS)[0]
    assert entry["judge_changed"] is True
    assert entry["judges"] == {"a": {"judge": "gemini:g", "versions": ["g-002"]},
                               "b": {"judge": "gemini:g", "versions": ["g-001"]}}
    assert entry["sentence"].endswith("the judge differs: gemini:g answered by g-002 in this run, gemini:g answered "
                                      "by g-001 in the baseline run of 2026-11-20)")


# --- error rates, by simulation (bench/bench_serving.py prints the bigger runs) ---------------


def wilson_low(hits: int, n: int, z: float = 2.58) -> float:
    share = hits / n
    return (share + z * z / (2 * n) - z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))) / (1 + z * z / n)


def test_no_difference_between_runs_is_significant_in_at_most_5_percent_of_simulated_pairs():
    """150 simulated pairs of runs, 50 tasks x 10 repeats, the same task rates: significant in at most 5% plus the
    simulation's margin (the 99% Wilson interval of the share must reach 5%)."""
    runs = 150
    hits = sum(between_runs([run_rows(50, 10, 0.0, seed)], SETTINGS, seed=seed)[0]["significant"]
               for seed in range(runs))
    assert wilson_low(hits, runs) <= 0.05, f"{hits} of {runs} significant"


def test_a_15_point_difference_over_50_tasks_x_10_repeats_is_found_in_most_simulated_pairs():
    runs = 60
    hits = sum(between_runs([run_rows(50, 10, 0.15, seed)], SETTINGS, seed=seed)[0]["significant"]
               for seed in range(runs))
    assert hits >= 0.9 * runs, f"{hits} of {runs} found"


# --- enrich: which rows are paired -------------------------------------------------------------


def results_of(model_tallies, judge="pixeljudge", versions=None, bought=None, combined=False):
    rows = [{"model": model, "split": "mini", "task_tallies": [tally_to_json(t) for t in found],
             "release": {"id": f"{model[:1]}00000000000", "route": "r"}, "cost_per_candidate": 0.0}
            for model, found in model_tallies.items()]
    if combined:
        rows.append({**rows[0], "split": "combined"})
    results = {"settings": {"judge": judge}, "rows": rows,
               "judge_versions": {"gemini:g": {"answered": {v: 3 for v in versions or ()}}}}
    if bought:
        results["serving"] = {"bought": bought}
    return results


def test_a_runs_rows_are_paired_with_the_baseline_rows_of_the_same_model_only():
    now = results_of({"m": tallies([5, 6, 4, 7]), "n": tallies([1, 2, 3, 4])}, combined=True)
    before = results_of({"m": tallies([4, 4, 4, 5])}, judge="gemini:g", versions=["g-001", "bad\nversion"],
                        bought={"first": "2026-11-20T08:00:00+00:00", "last": "2026-11-20T09:00:00+00:00"})
    before["source"] = "base/results.json"
    pairs = run_pairs(now, before)
    assert [(a.entrant.model, b.entrant.model, a.split) for a, b in pairs] == [("m", "m", "mini")]
    a, b = pairs[0]
    assert (a.run, a.phrase, a.judge) == (THIS_RUN, THIS_RUN, "pixeljudge")
    assert (b.run, b.phrase, b.judge, b.judge_versions) == ("base/results.json", "the baseline run of 2026-11-20",
                                                            "gemini:g", ("g-001",))
    # the only model of a split stands in for another name in the rows' baseline (a release comparison), not here
    alone = results_of({"other": tallies([4, 4, 4, 5])})
    assert run_pairs(results_of({"m": tallies([5, 6, 4, 7])}), alone) == []


def test_the_baseline_run_is_named_by_the_days_its_candidates_were_bought():
    assert run_dates({"serving": {"bought": {"first": "2026-11-18T23:00:00+00:00",
                                             "last": "2026-11-20T01:00:00+00:00"}}}) == "2026-11-18 to 2026-11-20"
    assert run_dates({"generated_at": "2026-11-21T10:00:00Z"}) == "2026-11-21"
    assert run_dates({"serving": {"bought": {"first": "<b>", "last": None}}}) is None
    assert run_dates({}) is None
    before = results_of({"m": tallies([4, 4, 4, 5])})
    before["source"] = "old.json"
    assert run_pairs(results_of({"m": tallies([5, 6, 4, 7])}), before)[0][1].phrase == "the baseline run (old.json)"


def test_enrich_puts_the_comparison_with_the_baseline_under_serving_runs():
    now = results_of({"m": tallies([0, 1, 2, 3, 4, 5, 6, 7, 8, 9] * 2)})
    before = results_of({"m": tallies([1, 2, 3, 4, 5, 6, 7, 8, 9, 10] * 2)})
    found_tallies = {("m", "mini"): tallies([0, 1, 2, 3, 4, 5, 6, 7, 8, 9] * 2)}
    enrich_results(now, found_tallies, AnalysisSettings(SETTINGS, bootstrap=0), before, {})
    entry = now["serving"]["runs"][0]
    assert entry["significant"] and entry["difference"] == pytest.approx(-0.1)
    assert now["rows"][0]["baseline"]["pass_rate"]["difference"] == pytest.approx(entry["difference"])
    assert now["serving"]["bought"] is None and "runs" in now["serving"]["limits"]
    without = results_of({"m": tallies([0, 1, 2, 3, 4, 5, 6, 7, 8, 9] * 2)})
    enrich_results(without, found_tallies, AnalysisSettings(SETTINGS, bootstrap=0), None, {})
    assert without["serving"]["runs"] == []


def test_the_span_of_purchase_is_kept_for_a_later_runs_comparison():
    from pytest_hypeedit.analysis.serving import Candidate

    found = serving([], {"m": [Candidate("s", "t", True, 1795939200.0, None),
                               Candidate("s", "t", False, 1796025600.0, None)]}, SETTINGS)
    assert found["bought"] == {"first": "2026-11-29T08:00:00+00:00", "last": "2026-11-30T08:00:00+00:00"}
