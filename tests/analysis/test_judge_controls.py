"""The judge controls' statistics (analysis/judge_controls.py): counts, exact intervals, Fisher's exact test against
scipy, the drift decision and its error rate when nothing changed (a bounded simulation)."""

from __future__ import annotations

import random

import pytest

from pytest_hypeedit.analysis.gates import RunScope, check_gates_apply, evaluate, parse_gate
from pytest_hypeedit.analysis.judge_controls import (
    NEGATIVE_KINDS,
    ControlVerdict,
    drift,
    drift_count,
    drift_warnings,
    fisher_exact,
    summarize,
    table_lines,
)
from pytest_hypeedit.errors import ConfigError


def controls(wrong: dict[str, int], judged: int = 20, version: str = "v1", judge: str = "j") -> list[ControlVerdict]:
    return [ControlVerdict(judge, kind, "s", f"t{i:02d}", "PASS" if i < wrong.get(kind, 0) else "FAIL", version)
            for kind in NEGATIVE_KINDS for i in range(judged)]


def test_counts_rates_intervals_and_the_wrong_tasks_per_kind():
    entry = summarize(controls({"unchanged": 3}))["judges"]["j"]
    unchanged = entry["kinds"]["unchanged"]
    assert (unchanged["wrong"], unchanged["judged"], unchanged["rate"]) == (3, 20, 0.15)
    stats = pytest.importorskip("statsmodels.stats.proportion")
    low, high = stats.proportion_confint(3, 20, alpha=0.05, method="beta")
    assert unchanged["interval"] == pytest.approx([low, high], abs=1e-9)
    assert unchanged["wrong_tasks"] == ["s/t00", "s/t01", "s/t02"]
    assert entry["false_pass"]["wrong"] == 3 and entry["false_pass"]["judged"] == 80
    assert entry["versions"] == {"v1": 80}
    assert any("unchanged" in line and "3 of 20" in line for line in table_lines({"judges": {"j": entry}}))


def test_a_control_without_a_verdict_is_counted_apart_not_as_right():
    rows = controls({}) + [ControlVerdict("j", "flat", "s", "t99", None)]
    entry = summarize(rows)["judges"]["j"]
    assert entry["kinds"]["flat"]["judged"] == 20 and entry["kinds"]["flat"]["errors"] == 1 and entry["errors"] == 1


@pytest.mark.parametrize("table", [(3, 17, 9, 11), (0, 20, 0, 20), (20, 0, 0, 20), (1, 49, 6, 44), (5, 5, 5, 5),
                                   (0, 1, 1, 0), (12, 188, 30, 170)])
def test_fisher_exact_matches_scipy(table):
    scipy_stats = pytest.importorskip("scipy.stats")
    a, b, c, d = table
    assert fisher_exact(a, b, c, d) == pytest.approx(scipy_stats.fisher_exact([[a, b], [c, d]]).pvalue, rel=1e-9)


def test_a_new_served_version_is_drift_whatever_the_counts_and_names_both():
    base = summarize(controls({"unchanged": 3}, version="v1"))
    now = summarize(controls({"unchanged": 3}, version="v2"))
    found = drift(now, base)["j"]
    assert found["drifted"] and found["versions"] == ["v2"] and found["baseline_versions"] == ["v1"]
    now["drift"] = drift(now, base)
    assert drift_count(now) == 1
    assert "judge j drifted since the baseline (served v2; baseline v1)" in drift_warnings(now)[0]


def test_a_change_beyond_chance_is_drift_and_the_same_counts_are_not():
    base = summarize(controls({"unchanged": 2}, judged=60))
    assert not drift(summarize(controls({"unchanged": 2}, judged=60)), base)["j"]["drifted"]
    moved = drift(summarize(controls({"unchanged": 25}, judged=60)), base)["j"]
    assert moved["drifted"] and moved["kinds"]["unchanged"]["significant"]
    assert "unchanged: wrong on 25 of 60 against 2 of 60" in moved["reasons"][0]


def test_a_baseline_without_controls_is_no_comparison():
    found = drift(summarize(controls({})), None)["j"]
    assert found == {"drifted": False, "compared": False, "reasons": ["the baseline has no controls of judge j"]}


def simulated_drift_rate(rates, tasks, runs, shift=0.0, seed=20261129) -> float:
    """Share of simulated run pairs whose drift test fires: both runs' controls drawn with ``rates`` per kind (the
    second's first kind moved by ``shift``), the same served version."""
    rng = random.Random(seed)
    fired = 0
    for _ in range(runs):
        pair = []
        for moved in (0.0, shift):
            wrong = {kind: sum(rng.random() < rate + (moved if i == 0 else 0.0) for _ in range(tasks))
                     for i, (kind, rate) in enumerate(zip(NEGATIVE_KINDS, rates))}
            pair.append(summarize(controls(wrong, judged=tasks)))
        fired += drift(pair[1], pair[0])["j"]["drifted"]
    return fired / runs


def test_the_drift_test_fires_in_at_most_five_percent_of_runs_when_nothing_changed():
    # the judge's error rates of a critical VLM judge on the four kinds, 50 tasks (the regime of a small split)
    rate = simulated_drift_rate((0.10, 0.02, 0.05, 0.15), tasks=50, runs=400)
    print(f"drift test, nothing changed: significant in {rate:.1%} of 400 simulated run pairs")
    assert rate <= 0.05


def test_the_drift_test_finds_a_fifteen_point_change_over_a_hundred_tasks_most_of_the_time():
    rate = simulated_drift_rate((0.10, 0.02, 0.05, 0.15), tasks=100, runs=200, shift=0.15)
    print(f"drift test, unchanged references +15 points over 100 tasks: found in {rate:.1%} of 200 run pairs")
    assert rate >= 0.5


def test_judge_gates_need_the_controls_and_drift_needs_a_baseline():
    scope = RunScope(models=("m",), splits=("s",), repeats=1)
    with pytest.raises(ConfigError, match="add --judge-controls"):
        check_gates_apply([parse_gate("judge_false_pass<=0.05")], scope)
    with_controls = RunScope(models=("m",), splits=("s",), repeats=1, judge_controls=True)
    check_gates_apply([parse_gate("judge_false_pass.high<=0.2")], with_controls)
    with pytest.raises(ConfigError, match="pass --baseline"):
        check_gates_apply([parse_gate("judge_drift<=0")], with_controls)
    with pytest.raises(ConfigError, match="not of a model"):
        check_gates_apply([parse_gate("m:judge_false_pass<=0.05")], with_controls)


def test_judge_gates_read_the_controls_per_judge():
    entry = summarize(controls({"unchanged": 4}))  # 4 of 80
    results = {"rows": [], "judge_controls": entry}
    (held,) = evaluate([parse_gate("judge_false_pass<=0.05")], results)
    assert held.passed and held.value == 0.05 and held.model == "judge j"
    (failed,) = evaluate([parse_gate("judge_false_pass.high<=0.05")], results)
    assert not failed.passed and failed.value > 0.1
    (nothing,) = evaluate([parse_gate("judge_false_pass<=0.05")], {"rows": []})
    assert not nothing.passed and "no judge controls" in nothing.note
    entry["drift"] = drift(entry, summarize(controls({"unchanged": 4}, version="v0")))
    (drifted,) = evaluate([parse_gate("judge_drift<=0")], results)
    assert not drifted.passed and drifted.value == 1.0 and "v1 now, v0 in the baseline" in drifted.note


def test_a_judge_that_judged_no_control_says_why_once():
    rows = [ControlVerdict("labels", kind, "s", "t00", None, reasoning="no rater labelled this candidate")
            for kind in NEGATIVE_KINDS]
    entry = summarize(rows)
    lines = table_lines(entry)
    assert "4 control(s) without a verdict, first: s/t00 unchanged: no rater labelled this candidate" in lines[1]


@pytest.mark.parametrize("old", [{"judges": {"j": {"kinds": ["x"], "versions": "v1"}}},
                                 {"judges": {"j": {"kinds": {"unchanged": {"judged": True, "wrong": -1}}}}},
                                 {"judges": {"j": {"kinds": {"unchanged": {"judged": 3, "wrong": 9}}}}},
                                 {"judges": ["j"]}, {"judges": None}, "not even a mapping"])
def test_a_baseline_file_of_the_wrong_shape_is_compared_with_nothing_never_crashes(old):
    found = drift(summarize(controls({"unchanged": 3})), old)["j"]
    assert found["drifted"] is False


def test_a_reply_that_names_no_version_is_no_version_drift():
    base = summarize(controls({}, version="v1"))
    now = summarize([ControlVerdict("j", kind, "s", f"t{i}", "FAIL", None) for kind in NEGATIVE_KINDS
                     for i in range(20)])
    assert now["judges"]["j"]["versions"] == {"unnamed": 80}
    assert not drift(now, base)["j"]["drifted"]


def test_controls_answered_by_several_served_versions_are_said_to_be_pooled():
    rows = controls({"unchanged": 1}, version="v1") + [ControlVerdict("j", "flat", "s", "t99", "FAIL", "v2")]
    lines = table_lines(summarize(rows))
    assert "  its controls were answered by 2 served versions: the shares above pool them" in lines
    assert not any("served versions" in line for line in table_lines(summarize(controls({}))))
