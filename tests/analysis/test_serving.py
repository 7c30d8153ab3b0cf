"""analysis/serving.py: the routes of one model compared as pairwise.py compares models, and PASS against purchase
time and latency within tasks.  Checked against scipy.stats.permutation_test and an exact enumeration; simulations
of its error rates (bounded here; bench/bench_serving.py runs the bigger ones and prints them)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from serving_sim import drifting_candidates, route_rows

from pytest_hypeedit.analysis.metrics import MetricSettings
from pytest_hypeedit.analysis.pairwise import Entrant
from pytest_hypeedit.analysis.serving import (
    LIMITS,
    MIN_CANDIDATES,
    Candidate,
    RouteRow,
    candidates_of,
    drift,
    drift_entry,
    model_drift,
    route_comparisons,
    stratified_p,
    thirds,
)

SETTINGS = MetricSettings(retry_cap=4, review_cost=0.0)


# --- thirds and the statistic --------------------------------------------------------------


def test_thirds_cut_by_rank_into_near_equal_parts():
    assert thirds(np.array([5.0, 1.0, 3.0, 2.0, 4.0, 6.0])).tolist() == [2, 0, 1, 0, 1, 2]
    assert np.bincount(thirds(np.arange(10.0))).tolist() == [4, 3, 3]


def _one_task(passed, values):
    return [Candidate("s", "t", p, float(i), v) for i, (p, v) in enumerate(zip(passed, values))]


def test_the_estimate_is_the_last_third_minus_the_first_within_tasks():
    # task a: the slow third fails, the fast passes; task b (all PASS) adds nothing within its task
    fast_pass = [Candidate("s", "a", i < 15, float(i), float(i)) for i in range(45)]
    flat = [Candidate("s", "b", True, float(i), float(i) + 0.5) for i in range(45)]
    entry = drift_entry("m", "latency", fast_pass + flat, permutations=999)
    assert entry["candidates"] == 90 and entry["tasks"] == 2
    # each third is half a's, half b's; a's residuals are +2/3 (PASS) and -1/3 (FAIL), b's 0: (-1/6) - (+1/3)
    assert entry["difference"] == pytest.approx(-0.5)
    assert entry["p_value"] < 0.01
    low, high = entry["interval"]
    assert low <= entry["difference"] <= high


def test_a_hard_task_bought_late_is_no_drift():
    """The task held fixed: task b always fails and was bought last, task a always passes and was bought first.
    A comparison of thirds that ignores tasks would see a 100-point fall; within each task nothing moves.
    (Planted: the residual taken against the model's overall rate instead of the task's: caught.)"""
    early = [Candidate("s", "a", True, float(i), None) for i in range(30)]
    late = [Candidate("s", "b", False, float(100 + i), None) for i in range(30)]
    entry = drift_entry("m", "time", early + late, permutations=999)
    assert entry["difference"] == pytest.approx(0.0, abs=1e-12)
    assert entry["p_value"] == 1.0


def test_too_few_candidates_is_said_and_not_tested():
    few = [Candidate("s", f"t{i % 3}", i % 2 == 0, float(i), 1.0) for i in range(MIN_CANDIDATES - 1)]
    lone = [Candidate("s", f"u{i}", True, float(i), 1.0) for i in range(100)]  # one per task: nothing within a task
    for candidates in (few, lone):
        entry = drift_entry("m", "latency", candidates)
        assert "p_value" not in entry and entry["note"].startswith("not enough data")
        assert entry["limits"] == LIMITS["latency"]
    entries = drift({"m": few})
    assert [e.get("significant") for e in entries] == [None, None]


def test_candidates_without_a_value_are_left_out():
    candidates = [Candidate("s", f"t{i % 4}", i % 3 == 0, None if i % 5 == 0 else float(i), None) for i in range(60)]
    assert drift_entry("m", "time", candidates, permutations=99)["candidates"] == 48
    assert "note" in drift_entry("m", "latency", candidates)


def test_the_p_value_is_scipys_permutation_test_on_one_task():
    """One task: permuting the thirds within it is scipy's independent-samples permutation of the three thirds."""
    for seed in range(4):
        rng = np.random.default_rng(seed)
        x = rng.uniform(0, 1, 36)
        y = (rng.random(36) < 0.3 + 0.4 * x).astype(float)
        third = thirds(x)
        mine = stratified_p(np.zeros(36, dtype=np.int64), third, y - y.mean(), permutations=19999, seed=seed)

        def statistic(first, middle, last, axis=-1):
            return np.mean(last, axis=axis) - np.mean(first, axis=axis)

        reference = stats.permutation_test((y[third == 0], y[third == 1], y[third == 2]), statistic,
                                           permutation_type="independent", n_resamples=19999, random_state=seed,
                                           vectorized=True)
        assert mine == pytest.approx(reference.pvalue, abs=0.02), seed


def test_the_p_value_is_the_exact_stratified_one_on_two_small_tasks():
    """Every within-task arrangement enumerated (6! x 6! / symmetries): the random permutations agree."""
    strata = np.array([0] * 6 + [1] * 6)
    passed = np.array([1, 1, 1, 0, 1, 0, 0, 1, 0, 0, 0, 1], dtype=float)
    third = np.array([0, 0, 1, 2, 0, 2, 1, 0, 2, 1, 2, 0])
    residual = passed - np.array([passed[:6].mean()] * 6 + [passed[6:].mean()] * 6)

    def stat(labels):
        return residual[labels == 2].mean() - residual[labels == 0].mean()

    observed = abs(stat(third))
    firsts = {tuple(p) for p in itertools.permutations(third[:6])}
    seconds = {tuple(p) for p in itertools.permutations(third[6:])}
    values = [abs(stat(np.array(a + b))) for a in firsts for b in seconds]
    exact = sum(v >= observed - 1e-9 for v in values) / len(values)
    assert stratified_p(strata, third, residual, permutations=40000, seed=3) == pytest.approx(exact, abs=0.01)


def test_the_permutations_stay_within_each_task():
    """Task a's four PASSes all in the first third, its two FAILs in the middle; task b passes everything.  Within
    tasks only a's first third can change: p = 1 / C(6, 4) = 1/15.  (Planted: the candidates permuted across
    tasks: p 0.25, caught.)"""
    strata = np.array([0] * 6 + [1] * 6)
    third = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    passed = np.array([1, 1, 1, 1, 0, 0] + [1] * 6, dtype=float)
    residual = passed - np.array([4 / 6] * 6 + [1.0] * 6)
    assert stratified_p(strata, third, residual, permutations=20000, seed=1) == pytest.approx(1 / 15, abs=0.01)


# --- simulations (bench/bench_serving.py: more runs, printed) -------------------------------


def test_no_drift_is_significant_in_at_most_5_percent_of_runs():
    """200 runs of 30 tasks x 6 repeats, PASS independent of latency within tasks (tasks of very different
    difficulty, latency depending on the task): at most 5% significant, with room for the simulation's own error."""
    significant = sum(drift_entry("m", "latency", drifting_candidates(30, 6, 0.0, seed), permutations=199,
                                  bootstrap=50, seed=seed)["p_value"] < 0.05 for seed in range(200))
    assert significant / 200 <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 200)


def test_a_15_point_drift_over_50_tasks_x_10_repeats_is_found_in_most_runs():
    found = sum(drift_entry("m", "latency", drifting_candidates(50, 10, 0.15, seed), permutations=199,
                            bootstrap=50, seed=seed)["p_value"] < 0.05 for seed in range(40))
    assert found / 40 >= 0.45  # 60% [55%, 66%] over 300 runs of bench/bench_serving.py


def test_equal_routes_differ_in_at_most_5_percent_of_runs():
    """Two routes of one model at the same per-task rates: any metric significant (Holm over the family) in at most
    5% of 60 runs, with room for the simulation's error."""
    significant = sum(any(e["significant"] for e in route_comparisons(route_rows(40, 10, 0.0, seed, latency_gap=0.0, latency_noise=0.3), SETTINGS,
                                                                       seed=seed))
                      for seed in range(60))
    assert significant / 60 <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 60)


def test_a_15_point_route_difference_over_50_tasks_x_10_repeats_is_found_in_most_runs():
    found = 0
    for seed in range(20):
        entries = route_comparisons(route_rows(50, 10, 0.15, seed), SETTINGS, seed=seed)
        found += next(e for e in entries if e["metric"] == "pass_rate")["significant"]
    assert found / 20 >= 0.9


# --- routes ----------------------------------------------------------------------------------


def test_routes_of_one_model_are_compared_on_every_metric_and_latency():
    rows = route_rows(20, 10, 0.3, 0)
    entries = route_comparisons(rows, SETTINGS)
    assert {(e["a"], e["b"]) for e in entries} == {("m", "m@other")}
    assert [e["metric"] for e in entries] == ["pass_rate", "pass_at_4", "pass_at_10", "expected_attempts",
                                              "effective_cost", "hype_gap", "latency_s"]
    latency = entries[-1]
    assert latency["difference"] == pytest.approx(-1.0) and latency["tasks"] == 20
    assert latency["significant"] and latency["interval"] == [-1.0, -1.0] and "degenerate" in latency
    rate = entries[0]
    assert rate["route_a"] == "main" and rate["route_b"] == "other" and rate["model"] == "m"
    assert rate["difference"] > 0.2 and rate["significant"] and rate["interval"][0] > 0


def test_only_rows_of_one_model_on_different_routes_are_paired():
    rows = route_rows(10, 4, 0.0, 0)
    other = RouteRow(Entrant("n", rows[0].entrant.tallies, 0.04), "s", "n", "third", {})
    same_route = RouteRow(Entrant("m@again", rows[0].entrant.tallies, 0.04), "s", "m", "main", {})
    elsewhere = RouteRow(Entrant("m@far", rows[0].entrant.tallies, 0.04), "t", "m", "far", {})
    pairs = {(e["a"], e["b"]) for e in route_comparisons([*rows, other, same_route, elsewhere], SETTINGS)}
    assert pairs == {("m", "m@other"), ("m@other", "m@again")}


def test_candidates_come_from_judged_records_with_their_times():
    class Record:
        def __init__(self, model, outcome, generated_at, latency, tier="standard"):
            self.model, self.split, self.task_id, self.generated_at, self.latency_s = model, "s", "t", generated_at, latency
            self.judged, self.passed, self.tier = outcome in ("PASS", "FAIL", "REFUSED"), outcome == "PASS", tier

    found = candidates_of([Record("m", "PASS", "2026-11-29T04:00:10+00:00", 1.5),
                           Record("m", "REFUSED", "2026-11-29T04:00:00", None),  # no zone: not a time we can place
                           Record("m", "ERROR", "2026-11-29T04:00:00+00:00", 2.0),
                           Record("n", "FAIL", "garbage", "1.0"),
                           Record("b", "PASS", "2026-11-29T04:00:10+00:00", 900.0, tier="batch")])  # a batch's wait
    assert found["m"] == [Candidate("s", "t", True, 1795924810.0, 1.5), Candidate("s", "t", False, None, None)]
    assert found["n"] == [Candidate("s", "t", False, None, None)]
    assert found["b"] == [Candidate("s", "t", True, 1795924810.0, None)]


def test_after_a_sequential_stop_the_route_comparisons_keep_only_what_was_measured():
    """As pairwise's: the metrics that need every repeat are not compared (planted: without the filter in
    glue/early_stop.not_measured, pass_at_10 stayed)."""
    from pytest_hypeedit.glue.early_stop import not_measured

    results = {"rows": [], "serving": {"routes": [{"metric": metric} for metric in
                                                  ("pass_rate", "pass_at_4", "pass_at_10", "latency_s")]}}
    not_measured(results, "stopped early")
    assert [entry["metric"] for entry in results["serving"]["routes"]] == ["pass_rate", "latency_s"]


def test_rows_of_several_splits_and_their_combined_row_get_their_own_latencies():
    """enrich.serving_of_rows: a split's row keys its tasks' latencies by task id, the combined row (a split no
    candidate is on) by split/task_id over every split, as their tallies are keyed."""
    from pytest_hypeedit.analysis.enrich import AnalysisSettings, serving_of_rows, task_latencies

    found = [Candidate("a", "t1", True, 0.0, 1.0), Candidate("a", "t1", False, 1.0, 3.0),
             Candidate("b", "t1", True, 2.0, 5.0), Candidate("b", "t2", True, 3.0, None)]
    assert task_latencies(found, "a") == {"t1": 2.0}
    assert task_latencies(found, "b") == {"t1": 5.0}
    assert task_latencies(found, "combined") == {"a/t1": 2.0, "b/t1": 5.0}

    def row(model, split, route, task_ids):
        tallies = [{"task_id": task_id, "passes": 1, "judged": 2, "first_passed": True} for task_id in task_ids]
        return {"model": model, "split": split, "release": {"route": route}, "task_tallies": tallies,
                "cost_per_candidate": 0.04}

    rows = [row("m", "a", "x", ["t1", "t2"]), row("m@y", "a", "y", ["t1", "t2"]),
            row("m", "combined", "x", ["a/t1", "b/t1"]), row("m@y", "combined", "y", ["a/t1", "b/t1"]),
            {"model": "old", "split": "a"}]  # no release: an older results row, not compared
    entries = serving_of_rows(rows, {"m": found, "m@y": found}, AnalysisSettings(MetricSettings()))["routes"]
    assert {(e["split"], e["a"], e["b"]) for e in entries} == {("a", "m", "m@y"), ("combined", "m", "m@y")}
    latency = [e for e in entries if e["metric"] == "latency_s"]
    assert [(e["split"], e["tasks"], e["difference"]) for e in latency] == [("combined", 2, 0.0)]


def test_no_bootstrap_asked_is_no_interval_not_an_error():
    entry = drift_entry("m", "latency", drifting_candidates(10, 6, 0.0, 0), permutations=99, bootstrap=0)
    assert entry["interval"] == [None, None] and 0 < entry["p_value"] <= 1


def test_a_models_time_and_latency_entries_share_their_draws_and_each_is_what_it_is_alone():
    """Both entries of a model whose candidates all have a purchase time and a latency are tested on one set of
    permutations and resamples (half the work at the end of a run): each keeps the p-value and interval it gets
    alone.  With some latencies missing the candidates differ, and each entry draws its own."""
    candidates = drifting_candidates(12, 6, 0.3, 4)
    kept = [Candidate(c.split, c.task, c.passed, c.bought_at, c.latency_s if i % 5 else None)
            for i, c in enumerate(candidates)]
    for found in (candidates, kept):
        together = model_drift("m", found, ("time", "latency"), permutations=999, bootstrap=200, seed=2)
        alone = [drift_entry("m", by, found, permutations=999, bootstrap=200, seed=2) for by in ("time", "latency")]
        assert together == alone
        assert together[0]["p_value"] != together[1]["p_value"]  # two statistics, not one twice
