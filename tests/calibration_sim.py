"""Simulated benchmark runs with a known truth, for the calibration's acceptance test and its bench.

Three models whose task pass rates are spread like the published public table (a Beta distribution per model
matching the paper's pass rate and Pass@10: most tasks near 0 or 1, as there), each judged by a judge whose
sensitivity and specificity differ by model (a strict judge, a lenient one, one in between).  A run is 50 tasks
x 10 repeats per model, with a random human sample of every model's candidates (stratified by model, a simple
random sample within it).  The truth is the population's: what the benchmark's formulas give on infinitely many
tasks like these, with people's verdicts (as tests/test_stats.py defines it for the judge-only intervals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pytest_hypeedit.analysis.calibration import Unit, task_evidence
from pytest_hypeedit.analysis.metrics import (compute_metrics, expected_attempts_for, review_cost,
                                              success_probability, tally_tasks)

TASKS, REPEATS, COST = 50, 10, 0.04


@dataclass(frozen=True)
class SimModel:
    name: str
    pass_rate: float  # published (public split)
    pass_at_10: float
    sensitivity: float  # the judge's on this model
    specificity: float

    def beta(self) -> tuple[float, float]:
        """Beta(a, b) with the published mean and P(at least one PASS in 10) (bisection on a + b)."""
        none = 1 - self.pass_at_10

        def no_pass(total: float) -> float:
            a, b = self.pass_rate * total, (1 - self.pass_rate) * total
            return math.prod((b + i) / (a + b + i) for i in range(REPEATS))

        low, high = 1e-3, 1e3
        for _ in range(200):
            middle = math.sqrt(low * high)
            low, high = (middle, high) if no_pass(middle) > none else (low, middle)
        total = math.sqrt(low * high)
        return self.pass_rate * total, (1 - self.pass_rate) * total


MODELS = (
    SimModel("seedream-4.5", 0.348, 0.84, sensitivity=0.80, specificity=0.92),
    SimModel("flux-2-max", 0.502, 0.76, sensitivity=0.70, specificity=0.95),  # strict: fails good edits
    SimModel("riverflow-2-b1", 0.848, 0.96, sensitivity=0.90, specificity=0.80),  # lenient
)


def population_truth(model: SimModel, draws: int = 400_000) -> dict[str, float]:
    """Pass rate, Pass@4 and effective cost over the population of tasks, measured with 10 repeats."""
    rates = np.random.default_rng(12345).beta(*model.beta(), draws)
    success = attempts = np.zeros(draws)
    for k in range(REPEATS + 1):
        chance = math.comb(REPEATS, k) * rates**k * (1 - rates) ** (REPEATS - k)
        success = success + chance * success_probability(k / REPEATS)
        attempts = attempts + chance * expected_attempts_for(k / REPEATS)
    return {"pass_rate": float(rates.mean()), "pass_at_4": float(success.mean()),
            "effective_cost": float(attempts.mean() * (COST + review_cost()) / success.mean())}


def simulated_run(model: SimModel, labelled: int, rng: np.random.Generator):
    """(evidence for calibration, judge-only metrics, all-human metrics) of one run of one model."""
    rates = rng.beta(*model.beta(), TASKS)
    truth = rng.random((TASKS, REPEATS)) < rates[:, None]
    noise = rng.random((TASKS, REPEATS))
    judge = np.where(truth, noise < model.sensitivity, noise > model.specificity)
    chosen = np.zeros(TASKS * REPEATS, bool)
    chosen[rng.choice(TASKS * REPEATS, labelled, replace=False)] = True
    chosen = chosen.reshape(TASKS, REPEATS)
    pi = labelled / (TASKS * REPEATS)
    units = [Unit(f"t{t:02d}", r + 1, bool(judge[t, r]), bool(truth[t, r]) if chosen[t, r] else None,
                  pi if chosen[t, r] else None) for t in range(TASKS) for r in range(REPEATS)]
    return task_evidence(units), metrics(judge), metrics(truth)


def metrics(verdicts: np.ndarray) -> dict:
    return compute_metrics(tally_tasks([(f"t{t:02d}", r + 1, bool(verdicts[t, r]), ())
                                        for t in range(TASKS) for r in range(REPEATS)]), COST)


def calibrated_figures(evidence, n_resamples: int, seed: int) -> dict:
    """The calibrated figures exactly as analysis.calibration.calibrate computes them for a row with its own
    labels, without the human-sample-alone figures it computes beside them (half the time, not needed here)."""
    from pytest_hypeedit.analysis import calibration
    from pytest_hypeedit.analysis.metrics import MetricSettings

    setup = calibration._Setup(calibration._Columns.of(evidence), calibration.ErrorSource(), COST, MetricSettings())
    return calibration._figures(setup, n_resamples, seed, 0.95, prefer_ppi=True)
