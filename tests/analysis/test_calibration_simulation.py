"""The acceptance test of the calibration: on simulated runs with a known truth, the calibrated 95% intervals of
pass rate, Pass@4 and effective cost cover it 93-97% of the time, and the calibrated estimates are unbiased,
while the judge's own are not (see tests/support/calibration_sim.py for the runs: 3 models x 50 tasks x 10 repeats, a
judge whose sensitivity and specificity differ by model, a 10-20% human sample).

The figures of the docs come from ``python bench/bench_calibration.py --acceptance`` (150 runs x 3 models, 200
bootstrap replicates, about 40 s of CPU); the suite runs the first RUNS of the same runs (about 10 s), which holds
the same bands, computed from its own number of intervals (calibration_sim.acceptance): a broken estimator (a
biased correction, an interval without the sample's uncertainty) lands far outside them, as the plants in the
session report show.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from calibration_sim import MODELS, acceptance

RUNS, RESAMPLES = 40, 200


def test_calibrated_intervals_cover_the_truth_and_the_estimates_are_unbiased():
    found = acceptance(RUNS, RESAMPLES)
    print("\n".join(found.report))
    assert not found.problems, "\n".join(found.problems + ["", *found.report])
    # the judge is far off where the calibrated figures are not: the test would notice a calibration that did nothing
    assert found.judge_offset["flux-2-max"] < -0.10


# --------------------------------------------------------------------------- off the happy path (issue 25)
#
# Each case: its target (the population truth of tests/support/calibration_sim.py: the metric over infinitely many
# tasks like these, with people's verdicts, 10 repeats), RUNS_OFF runs, and a tolerance from the simulation's
# own error: a 95% interval that truly covers 95% shows a coverage below 88% in fewer than 1% of 100 runs.
# bench/bench_calibration.py --cases runs the same cases 200 times each and prints them.

from calibration_sim import NEAR_ONE, NEAR_ZERO, run_case  # noqa: E402

RUNS_OFF = 100


def _report(name: str, result, keys) -> str:
    return "; ".join(f"{name} {key}: coverage {result.coverage(key):.3f} of {len(result.found[key])}, bias "
                     f"{result.bias(key):+.4f} (target {result.target[key]:.4f}), refused {result.refused[key]}"
                     for key in keys)


def test_a_verdict_stratified_sample_weighted_by_its_design_covers_and_is_unbiased():
    # Target: the population.  The sample draws the judge's FAILs twice as often as its PASSes (100 labels of
    # 500), each label weighted by its stratum's inclusion probability.  Weighting sensitivity and specificity
    # too matters: from unweighted counts Pass@4 was +8.2 points off and effective cost -21%.
    result = run_case(MODELS[0], 80, 200, seed=2511, labelled=100, fail_ratio=2.0)
    report = _report("stratified", result, ("pass_rate", "pass_at_4", "effective_cost"))
    print(report)
    assert result.coverage("pass_rate") >= 0.88, report
    assert abs(result.bias("pass_at_4")) <= 0.03, report
    assert abs(result.bias("effective_cost")) <= 0.08 * result.target["effective_cost"], report
    assert result.coverage("pass_at_4") >= 0.88 and result.coverage("effective_cost") >= 0.88, report


@pytest.mark.parametrize("labelled", [10, 20, 30])
def test_tiny_samples_cover_the_pass_rate_and_keep_their_bounds_in_range(labelled):
    # Target: the population pass rate.  The bootstrap covered 79/84/86.5% with 10/20/30 labels; the cluster t
    # interval is what holds.  The other metrics are refused with so few labels of each kind, or widened.  The
    # pass rate's cluster t interval needs no resample (the same figures with 2 replicates as with 20): the
    # bootstrap here only fed the other metrics, which this case does not read.
    result = run_case(MODELS[0], RUNS_OFF, 2, seed=labelled, labelled=labelled, keys=("pass_rate",))
    report = _report(f"{labelled} labels", result, ("pass_rate",))
    print(report)
    rows = np.array(result.found["pass_rate"], dtype=float)
    assert result.coverage("pass_rate") >= 0.88, report
    assert abs(result.bias("pass_rate")) <= 0.01 + 2.5 * result.standard_error("pass_rate"), report
    assert rows[:, 1].min() >= 0 and rows[:, 2].max() <= 1, report


@pytest.mark.parametrize("model", [NEAR_ZERO, NEAR_ONE], ids=["near-zero", "near-one"])
def test_near_zero_and_near_one_pass_rates_never_crash_and_never_borrow(model):
    # Target: the population.  With 100 labels a 2% (98%) model has about 2 human PASS (FAIL): its judge error
    # cannot be estimated, so Pass@4 and effective cost are refused in (almost) every run, not borrowed from
    # another model (which gave coverage 47.5%) and not computed into $1e116; the pass rate still covers.
    result = run_case(model, 60, 50, seed=7, labelled=100)
    report = _report(model.name, result, ("pass_rate",))
    print(report, result.refused)
    assert result.coverage("pass_rate") >= 0.88, report
    assert abs(result.bias("pass_rate")) <= 0.01 + 2.5 * result.standard_error("pass_rate"), report
    assert result.refused["pass_at_4"] >= 55 and result.refused["effective_cost"] >= 55, result.refused
    for key in ("pass_at_4", "effective_cost"):  # the few runs that hold enough labels give figures in range
        for value, low, high in result.found[key]:
            assert low >= 0 and (key != "pass_at_4" or high <= 1) and math.isfinite(value)


def test_a_model_with_no_label_of_its_own_gets_no_calibrated_figure():
    from calibration_sim import simulated_run

    from pytest_hypeedit.analysis.calibration import calibrate

    rng = np.random.default_rng(3)
    for _ in range(3):
        evidence, _, _ = simulated_run(MODELS[1], 0, rng)
        assert calibrate(evidence, 0.04, n_resamples=20) is None


def test_this_run_s_all_human_pass_rate_covers_the_run_s_own_figure():
    # Target: this run's all-human pass rate (what a full review of the same candidates would give), not the
    # population's: only the labels' draw varies.  100 labels of 500, 150 runs over the three models.
    from calibration_sim import REPEATS, TASKS

    from pytest_hypeedit.analysis.calibration import Unit
    from pytest_hypeedit.analysis.calibration_evidence import this_run_pass_rate

    rng = np.random.default_rng(99)
    covered, errors = [], []
    for run in range(150):
        model = MODELS[run % 3]
        truth = rng.random((TASKS, REPEATS)) < rng.beta(*model.beta(), TASKS)[:, None]
        noise = rng.random((TASKS, REPEATS))
        judge = np.where(truth, noise < model.sensitivity, noise > model.specificity)
        chosen = np.zeros(TASKS * REPEATS, bool)
        chosen[rng.choice(TASKS * REPEATS, 100, replace=False)] = True
        chosen = chosen.reshape(TASKS, REPEATS)
        units = [Unit(f"t{t:02d}", r + 1, bool(judge[t, r]), bool(truth[t, r]) if chosen[t, r] else None,
                      0.2 if chosen[t, r] else None) for t in range(TASKS) for r in range(REPEATS)]
        entry = this_run_pass_rate(units)
        covered.append(entry["low"] <= truth.mean() <= entry["high"])
        errors.append(entry["value"] - truth.mean())
    print(f"this run: coverage {np.mean(covered):.3f} of 150, bias {np.mean(errors):+.4f}")
    assert np.mean(covered) >= 0.90 and abs(np.mean(errors)) <= 0.01
