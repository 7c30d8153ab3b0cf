"""The acceptance test of the calibration: on simulated runs with a known truth, the calibrated 95% intervals of
pass rate, Pass@4 and effective cost cover it 93-97% of the time, and the calibrated estimates are unbiased,
while the judge's own are not (see tests/calibration_sim.py for the runs: 3 models x 50 tasks x 10 repeats, a
judge whose sensitivity and specificity differ by model, a 10-20% human sample).

Cost: RUNS runs x 3 models, each calibrated with RESAMPLES bootstrap replicates (BCa), about 40 s of CPU.  That
is fewer replicates and runs than a paper would use, so the tolerances come from the simulation's own error:
with N intervals, a method whose true coverage lies in [93%, 97%] shows a coverage within 2.5 binomial standard
errors of that band with probability above 99%, and a mean bias within 1 point (Pass rate, Pass@4; 5% of the
truth for effective cost) plus 2.5 standard errors of the mean.  The seed is fixed, so the outcome is
reproducible; a broken estimator (a biased correction, an interval without the sample's uncertainty) lands far
outside these bands, as the plants in the session report show.
"""

from __future__ import annotations

import math

import numpy as np

from calibration_sim import MODELS, calibrated_figures, population_truth, simulated_run

RUNS, RESAMPLES = 150, 200
METRICS = ("pass_rate", "pass_at_4", "effective_cost")


def simulate():
    rng = np.random.default_rng(20261123)
    found = {(m.name, key): [] for m in MODELS for key in METRICS}
    close = []  # |calibrated - all-human pass rate of the same run| <= 3 points, runs with a ~20% sample
    for run in range(RUNS):
        share = rng.uniform(0.10, 0.20)
        for model in MODELS:
            evidence, judge, people = simulated_run(model, round(share * 500), rng)
            figures = calibrated_figures(evidence, RESAMPLES, seed=run)
            for key in METRICS:
                found[(model.name, key)].append((figures[key]["value"], figures[key]["low"], figures[key]["high"],
                                                 judge[key]))
            if share >= 0.18:
                close.append(abs(figures["pass_rate"]["value"] - people["pass_rate"]) <= 0.03)
    return found, close


def test_calibrated_intervals_cover_the_truth_and_the_estimates_are_unbiased():
    found, close = simulate()
    truths = {m.name: population_truth(m) for m in MODELS}
    report, problems = [], []
    for key in METRICS:
        rows = np.array([row for m in MODELS for row in found[(m.name, key)]], dtype=float)
        truth = np.repeat([truths[m.name][key] for m in MODELS], RUNS)
        covered = np.mean((rows[:, 1] <= truth) & (truth <= rows[:, 2]))
        se = math.sqrt(0.95 * 0.05 / len(rows))
        report.append(f"{key}: coverage {covered:.3f} of {len(rows)} (band {0.93 - 2.5 * se:.3f}-{0.97 + 2.5 * se:.3f})")
        if not 0.93 - 2.5 * se <= covered <= 0.97 + 2.5 * se:
            problems.append(report[-1])
        for model in MODELS:
            values = np.array(found[(model.name, key)], dtype=float)
            truth_m = truths[model.name][key]
            scale = truth_m if key == "effective_cost" else 1.0  # dollars: relative to the truth
            bias, judge_bias = (values[:, 0].mean() - truth_m) / scale, (values[:, 3].mean() - truth_m) / scale
            error = values[:, 0].std() / math.sqrt(RUNS) / scale
            allowed = (0.05 if key == "effective_cost" else 0.01) + 2.5 * error
            report.append(f"  {model.name}: calibrated bias {bias:+.4f} (allowed {allowed:.4f}), judge bias {judge_bias:+.4f}")
            if abs(bias) > allowed:
                problems.append(report[-1])
    report.append(f"runs with an 18-20% sample whose calibrated pass rate is within 3 points of the all-human one: "
                  f"{np.mean(close):.2f}")
    print("\n".join(report))
    assert not problems, "\n".join(problems + ["", *report])
    # the judge is far off where the calibrated figures are not: the test would notice a calibration that did nothing
    flux = np.array(found[("flux-2-max", "pass_rate")], dtype=float)
    assert flux[:, 3].mean() - truths["flux-2-max"]["pass_rate"] < -0.10
