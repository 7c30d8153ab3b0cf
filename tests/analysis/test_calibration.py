"""Calibrated metrics (analysis/calibration.py) on cases computed by hand, and how the parts behave."""

from __future__ import annotations

import json

import numpy as np
import pytest
from calibration_sim import human_sample, metrics as metrics_of

from pytest_hypeedit.analysis.calibration import (
    CALIBRATED_KEYS,
    ErrorCounts,
    TaskEvidence,
    Unit,
    calibrate,
    error_counts,
    task_evidence,
)
from pytest_hypeedit.analysis.calibration_paired import paired_calibrated

#: The judge's error known for certain: sensitivity 0.8, specificity 0.9 from millions of labels.
KNOWN = ErrorCounts(true_pass=8_000_000, false_fail=2_000_000, false_pass=1_000_000, true_fail=9_000_000)


def test_a_task_s_evidence_by_hand():
    # 4 candidates: judge PASS (labelled PASS, pi 1/2), judge PASS, judge FAIL (labelled PASS, pi 1/2), refused
    units = [Unit("a", 1, True, True, 0.5), Unit("a", 2, True), Unit("a", 3, False, True, 0.5), Unit("a", 4, None)]
    (task,) = task_evidence(units)
    assert (task.judge_pass, task.judge_fail, task.confusion, task.refused) == (1, 0, (1, 1, 0, 0), 1)
    # PPI: (sum J = 2, + (1 - 1)/.5 + (1 - 0)/.5 = 2) / 4 candidates; labels alone: (1/.5 + 1/.5) / 4
    assert task.ppi == pytest.approx(1.0) and task.ht == pytest.approx(1.0)
    assert task.first == 1  # repeat 1 is labelled PASS
    assert TaskEvidence.from_json(task.to_json()) == task


@pytest.mark.parametrize("unit, message", [
    (Unit("a", 1, None, True, 0.5), "a refusal has no image to label"),
    (Unit("a", 1, True, True, None), "needs an inclusion probability"),
    (Unit("a", 1, True, False, 1.5), "needs an inclusion probability"),
])
def test_bad_units_are_not_accepted_by_name(unit, message):
    with pytest.raises(ValueError, match=message):
        task_evidence([unit])


def test_the_pass_rate_is_the_judge_s_plus_the_sample_s_correction_by_hand():
    # task a: judge PASS, PASS; the second labelled FAIL (pi .25).  task b: judge FAIL, FAIL; the first labelled
    # PASS (pi .25).  PPI per task: a (2 + (0 - 1)/.25) / 2 = -1; b (0 + (1 - 0)/.25) / 2 = 2; mean 0.5.
    units = [Unit("a", 1, True), Unit("a", 2, True, False, 0.25), Unit("b", 1, False, True, 0.25), Unit("b", 2, False)]
    result = calibrate(task_evidence(units), 0.04, n_resamples=0)
    assert result.calibrated["pass_rate"] == {"value": pytest.approx(0.5), "low": None, "high": None, "level": 0.95,
                                              "target": "population"}
    assert result.human_sample["pass_rate"]["value"] == pytest.approx(((1 / 0.25) / 2) / 2)  # labels alone: b's
    assert result.pass_rate_method == "prediction-powered"


def test_imputation_of_two_tasks_by_hand():
    # The judge's error is known (se .8, sp .9).  Task a: two judge PASS; task b: two judge FAIL; no label.
    # Likelihoods: a (.1 + .7p)^2, b (.9 - .7p)^2: .64 and .01 at p = 1 and 0, b .04 and .81.  The ML mixing
    # distribution sits on p = 0 and 1, with weight w on 1 maximising (.01 + .63w)(.81 - .77w): w = .5026/.9702.
    # a: P(p = 1) = .64w / (.64w + .01(1-w)); at p = 1 both are PASS (q1 = 1), at p = 0 both FAIL (q1 = 0).
    # b: P(p = 1) = .04w / (.04w + .81(1-w)); at p = 1 a judge FAIL is a true PASS (q0 = 1).
    # Every per-task quantity is 0 or 1 with k = 0 or 2, so pass rate = Pass@4 = Pass@10 = mean P(p = 1).
    units = [Unit("a", 1, True), Unit("a", 2, True), Unit("b", 1, False), Unit("b", 2, False)]
    result = calibrate(task_evidence(units), 0.04, pooled=KNOWN, n_resamples=0)
    w = 0.5026 / 0.9702
    expected = (0.64 * w / (0.64 * w + 0.01 * (1 - w)) + 0.04 * w / (0.04 * w + 0.81 * (1 - w))) / 2
    for key in ("pass_rate", "pass_at_4", "pass_at_10", "first_attempt_pass_rate"):
        assert result.calibrated[key]["value"] == pytest.approx(expected, abs=1e-4), key
    assert result.calibrated["hype_gap"]["value"] == pytest.approx(0, abs=2e-3)
    assert result.pass_rate_method == "imputation"  # no label of its own: nothing to correct the mean with
    assert {key: result.judge_error[key] for key in ("n_human", "sensitivity", "specificity", "pooled")} == {
        "n_human": 0, "sensitivity": pytest.approx(0.8), "specificity": pytest.approx(0.9), "pooled": True}
    assert all(v["value"] is None for v in result.human_sample.values())


def simulated(seed: int, tasks=40, repeats=10, se=0.75, sp=0.9, labelled=80):
    rng = np.random.default_rng(seed)
    rates = rng.beta(0.6, 0.8, tasks)
    truth = rng.random((tasks, repeats)) < rates[:, None]
    judge = np.where(truth, rng.random((tasks, repeats)) < se, rng.random((tasks, repeats)) > sp)
    return human_sample(rng, truth, judge, labelled), truth, judge


def test_a_judge_that_agrees_with_every_label_changes_nothing():
    units, truth, _ = simulated(1)
    perfect = [Unit(u.task_id, u.repeat, bool(truth[int(u.task_id[1:]), u.repeat - 1]), u.human_pass, u.inclusion)
               for u in units]
    result = calibrate(task_evidence(perfect), 0.04, n_resamples=0)
    judge = metrics_of(truth)
    for key in CALIBRATED_KEYS:
        assert result.calibrated[key]["value"] == pytest.approx(judge[key], rel=0.01, abs=0.005), key
    assert result.judge_error["sensitivity"] > 0.99 and result.judge_error["specificity"] > 0.99


def test_a_judge_that_says_pass_to_everything_leaves_only_the_sample():
    units, truth, _ = simulated(2)
    blind = [Unit(u.task_id, u.repeat, True, u.human_pass, u.inclusion) for u in units]
    result = calibrate(task_evidence(blind), 0.04, n_resamples=0)
    for key in CALIBRATED_KEYS:
        assert result.calibrated[key]["value"] == pytest.approx(result.human_sample[key]["value"], abs=0.01), key
    assert result.judge_error["specificity"] < 0.01


def test_a_sample_without_a_human_pass_says_the_sensitivity_is_unknown():
    # Every label FAIL: nothing measures how the judge treats a true PASS, so no sensitivity is reported (the
    # imputation still runs, on its smoothed value), while the specificity is measured.
    units, _, _ = simulated(3)
    all_fail = [Unit(u.task_id, u.repeat, u.judge_pass, False if u.human_pass is not None else None, u.inclusion)
                for u in units]
    result = calibrate(task_evidence(all_fail), 0.04, n_resamples=0)
    assert result.judge_error["sensitivity"] is None and 0 <= result.judge_error["specificity"] <= 1


def test_the_calibrated_figures_move_towards_the_truth_and_carry_the_sample_s_uncertainty():
    units, truth, judge = simulated(3, se=0.7, sp=0.97, labelled=60)
    evidence = task_evidence(units)
    sampled = calibrate(evidence, 0.04, n_resamples=300, seed=1)
    people, machine = metrics_of(truth), metrics_of(judge)
    for key in ("pass_rate", "pass_at_4", "effective_cost"):
        entry = sampled.calibrated[key]
        assert entry["low"] <= people[key] <= entry["high"], key
    # this judge misses 30% of the good images: its pass rate is far too low, the calibrated one much less so
    assert machine["pass_rate"] < people["pass_rate"] - 0.08
    assert abs(sampled.calibrated["pass_rate"]["value"] - people["pass_rate"]) < 0.05


def test_the_intervals_carry_the_uncertainty_of_the_judge_s_error():
    # 200 tasks (little task uncertainty) and 80 labels (much uncertainty about se and sp): with the error
    # re-estimated in every resample the intervals are more than twice as wide as with the same error held
    # fixed at its estimate; an interval that forgot the sample would be the narrow one.
    from pytest_hypeedit.analysis import calibration as C
    from pytest_hypeedit.analysis.metrics import MetricSettings

    units, _, _ = simulated(3, tasks=200, se=0.7, sp=0.97, labelled=80)
    columns = C._Columns.of(task_evidence(units))
    counts = error_counts(task_evidence(units))
    fixed = ErrorCounts(*(round(1e7 * x) for x in (counts.sensitivity, 1 - counts.sensitivity,
                                                   1 - counts.specificity, counts.specificity)))
    widths = []
    for source in (C.ErrorSource(), C.ErrorSource(pooled=fixed)):
        figures = C._figures(C._Setup(columns, source, 0.04, MetricSettings()), 200, 1, 0.95, prefer_ppi=True)
        widths.append({key: figures[key]["high"] - figures[key]["low"] for key in CALIBRATED_KEYS})
    for key in ("pass_at_4", "pass_at_10", "expected_attempts", "effective_cost"):
        assert widths[0][key] > 1.8 * widths[1][key], (key, widths[0][key], widths[1][key])


def test_more_labels_buy_narrower_intervals():
    widths = []
    for labelled in (40, 120, 400):
        units, _, _ = simulated(4, labelled=labelled)
        entry = calibrate(task_evidence(units), 0.04, n_resamples=300, seed=2).calibrated["pass_rate"]
        widths.append(entry["high"] - entry["low"])
    assert widths[0] > widths[1] > widths[2]


def test_few_labels_of_a_model_borrow_the_pooled_error_and_say_so():
    units, _, _ = simulated(5, labelled=6)
    result = calibrate(task_evidence(units), 0.04, pooled=KNOWN, n_resamples=0)
    assert result.judge_error["pooled"] is True and result.judge_error["n_human"] == 6
    assert result.judge_error["sensitivity"] == pytest.approx(0.8)
    assert calibrate(task_evidence(units), 0.04, n_resamples=0).judge_error["pooled"] is False  # nothing to pool
    assert calibrate(task_evidence([Unit("a", 1, True)]), 0.04, n_resamples=0) is None  # no label, no pool


def test_intervals_are_seeded():
    units, _, _ = simulated(6)
    evidence = task_evidence(units)
    first = calibrate(evidence, 0.04, n_resamples=100, seed=3)
    assert first == calibrate(evidence, 0.04, n_resamples=100, seed=3)
    assert first.calibrated != calibrate(evidence, 0.04, n_resamples=100, seed=4).calibrated


def test_a_release_compared_with_itself_differs_by_exactly_nothing():
    units, _, _ = simulated(7)
    evidence = task_evidence(units)
    comparison = paired_calibrated(evidence, evidence, 0.04, 0.04, n_resamples=100, seed=1)
    for key in CALIBRATED_KEYS:
        assert comparison[key]["difference"] == pytest.approx(0) and comparison[key]["tasks"] == 40
        assert comparison[key]["low"] == pytest.approx(0) and comparison[key]["high"] == pytest.approx(0)


def test_a_clearly_better_release_is_better_calibrated_too():
    worse, _, _ = simulated(8)
    better = [Unit(u.task_id, u.repeat, True if u.human_pass is None else u.judge_pass or u.human_pass,
                   True if u.human_pass is not None else None, u.inclusion) for u in worse]
    comparison = paired_calibrated(task_evidence(better), task_evidence(worse), 0.04, 0.04, n_resamples=200, seed=1)
    assert comparison["pass_rate"]["low"] > 0
    with pytest.raises(ValueError, match="no task has calibration evidence in both runs"):
        paired_calibrated(task_evidence([Unit("x", 1, True)]), task_evidence(worse), 0.04, 0.04, n_resamples=10)


# --------------------------------------------------------------------------- off the happy path (issue 25)


def near_zero(seed: int = 1):
    """A 2% model: of 50 tasks x 10 repeats only task t00 holds true PASS (5 of them), 41 labels, a 90% judge."""
    rng = np.random.default_rng(seed)
    labelled = set(rng.choice(500, 40, replace=False).tolist()) | {3}
    units = []
    for t in range(50):
        for r in range(10):
            truth = t == 0 and r < 5
            judge = truth if rng.random() < 0.9 else not truth
            i = t * 10 + r
            units.append(Unit(f"t{t:02d}", r + 1, bool(judge), bool(truth) if i in labelled else None,
                              41 / 500 if i in labelled else None))
    return task_evidence(units)


def test_leave_one_out_values_near_1e116_do_not_overflow_the_bca_interval():
    # Leaving out the one task with a human PASS makes effective cost ~1e116: cubing it overflowed (a raw
    # OverflowError that aborted the run, 7 of 200 simulated runs of a 2% model).
    from pytest_hypeedit.analysis.stats import bca_interval

    jack = np.full(50, 46.0)
    jack[0] = 1e116
    boot = np.random.default_rng(0).lognormal(3.8, 0.3, 200)
    boot[:5] = 1e116
    low, high = bca_interval(46.0, boot, jack)
    assert 0 < low < 46 < high


def test_a_near_zero_model_gets_no_absurd_bound_and_an_unbounded_cost_says_so():
    # With a known judge error the imputation runs on a near-zero model: bootstrap resamples without task t00
    # put Pass@4 near 1e-117 and effective cost near 1e116.  The cost's upper bound is then "unbounded" (null,
    # high_unbounded), never $1e116, and every bound lies in its metric's range.
    result = calibrate(near_zero(), 0.04, pooled=KNOWN, n_resamples=200, seed=5)
    cost = result.calibrated["effective_cost"]
    assert cost["high"] is None and cost["high_unbounded"] is True and 0 < cost["low"] < cost["value"]
    for key, (low, high) in {"pass_rate": (0, 1), "pass_at_4": (0, 1), "pass_at_10": (0, 1),
                             "expected_attempts": (1, 4), "hype_gap": (-1, 1)}.items():
        entry = result.calibrated[key]
        assert low <= entry["low"] <= entry["value"] <= entry["high"] <= high, (key, entry)
    json.dumps(result.calibrated, allow_nan=False)  # finite JSON: no inf, no NaN


def test_a_near_zero_model_s_own_few_labels_calibrate_its_pass_rate_only_and_say_why():
    result = calibrate(near_zero(), 0.04, n_resamples=200, seed=5)
    assert result.calibrated["pass_rate"]["value"] is not None
    assert 0 <= result.calibrated["pass_rate"]["low"] <= result.calibrated["pass_rate"]["high"] <= 1
    for key in CALIBRATED_KEYS[1:]:
        entry = result.calibrated[key]
        assert entry["value"] is None and "at least 8 human PASS and 8 human FAIL" in entry["reason"], key
        assert "1 PASS and 40 FAIL" in entry["reason"]
    assert any("fewer than 30" not in p and "8 human PASS" in p for p in result.problems)
    assert result.judge_error["pooled"] is False and result.judge_error["human_pass"] == 1


def test_the_pass_rate_interval_is_the_cluster_t_interval_of_the_per_task_values():
    # 40 labels, 7 of them disagreements (with fewer than 5 the interval is widened: test_calibration_disagreements.py)
    units, _, _ = simulated(11, labelled=40)
    evidence = task_evidence(units)
    entry = calibrate(evidence, 0.04, n_resamples=100, seed=1).calibrated["pass_rate"]
    values = np.array([t.ppi for t in evidence])
    half = 2.0226909 * values.std(ddof=1) / np.sqrt(values.size)  # t quantile, 39 degrees of freedom, 95%
    assert entry["value"] == pytest.approx(values.mean())
    assert (entry["low"], entry["high"]) == (pytest.approx(max(0, values.mean() - half)),
                                             pytest.approx(min(1, values.mean() + half)))
    assert entry["interval_method"] == "cluster t over tasks" and entry["level"] == 0.95
    assert entry["target"] == "population"


def test_a_tiny_sample_s_bounds_stay_inside_the_metric_s_range_and_it_is_warned_about():
    # 4 labels, all on judge FAILs that people passed: the per-task corrections are huge (1 / pi = 100), and an
    # unclipped t interval ran below 0 and above 1
    units = [Unit(f"t{t:02d}", r + 1, False, True if (t < 4 and r == 0) else None, 0.01 if (t < 4 and r == 0) else None)
             for t in range(40) for r in range(10)]
    result = calibrate(task_evidence(units), 0.04, n_resamples=100, seed=1)
    entry = result.calibrated["pass_rate"]
    assert 0 <= entry["low"] < entry["high"] == 1.0 and entry["value"] == 1.0  # unclipped: up to 1.97
    assert any("only 4 human labels (fewer than 30)" in p for p in result.problems)


def test_sensitivity_and_specificity_are_weighted_by_the_design():
    # The judge is right on 3 of 4 true PASS.  The sample takes every judge FAIL (pi 1) but half the judge
    # PASS (pi 1/2): unweighted, the labels show 3 correct PASS of 5 (se .6) where the candidates hold 6 of 8.
    units = []
    for t in range(8):
        judged_pass = t < 6
        labelled = not judged_pass or t % 2 == 0
        pi = 1.0 if not judged_pass else 0.5
        units.append(Unit(f"t{t}", 1, judged_pass, True if labelled else None, pi if labelled else None))
    units += [Unit(f"f{t}", 1, False, False, 1.0) for t in range(9)]
    result = calibrate(task_evidence(units), 0.04, n_resamples=0)
    assert result.judge_error["human_pass"] == 5
    assert result.judge_error["sensitivity"] == pytest.approx(6 / 8, abs=0.01)


def test_this_run_s_all_human_pass_rate_is_exact_when_everything_is_labelled_and_wider_with_fewer_labels():
    from pytest_hypeedit.analysis.calibration_evidence import this_run_pass_rate

    units, truth, _ = simulated(12, labelled=400)  # every candidate labelled: the all-human figure, no interval
    entry = this_run_pass_rate(units)
    assert entry["value"] == pytest.approx(truth.mean()) and entry["low"] == entry["high"] == pytest.approx(truth.mean())
    assert entry["target"] == "this_run" and entry["level"] == 0.95
    widths = [this_run_pass_rate(simulated(12, labelled=n)[0]) for n in (40, 200)]
    assert widths[0]["high"] - widths[0]["low"] > widths[1]["high"] - widths[1]["low"] > 0
    assert this_run_pass_rate(simulated(12, labelled=0)[0]) is None


def test_twenty_labels_with_ten_of_each_kind_are_still_too_few_for_the_judge_s_error():
    # 8 of each kind but 20 labels in all: in simulation Pass@4 covered 84% of such runs, so it is withheld
    units = [Unit(f"t{t:02d}", r + 1, r % 2 == 0, (t + r) % 2 == 0 if t < 10 and r < 2 else None,
                  20 / 400 if t < 10 and r < 2 else None) for t in range(40) for r in range(10)]
    result = calibrate(task_evidence(units), 0.04, n_resamples=50, seed=1)
    assert result.judge_error["human_pass"] == 10 and result.judge_error["human_fail"] == 10
    assert result.calibrated["pass_at_4"]["value"] is None and "and 30 in all" in result.calibrated["pass_at_4"]["reason"]
    assert result.calibrated["pass_rate"]["value"] is not None
