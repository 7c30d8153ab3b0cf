"""Simulated benchmark runs with a known truth, for the calibration's acceptance test and its bench.

Three models whose task pass rates are spread like the published public table (a Beta distribution per model
matching the paper's pass rate and Pass@10: most tasks near 0 or 1, as there), each judged by a judge whose
sensitivity and specificity differ by model (a strict judge, a lenient one, one in between).  A run is 50 tasks
x 10 repeats per model, with a random human sample of every model's candidates (stratified by model, a simple
random sample within it).  The truth is the population's: what the benchmark's formulas give on infinitely many
tasks like these, with people's verdicts (as tests/analysis/test_stats.py defines it for the judge-only intervals).
"""

from __future__ import annotations

import functools
import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from pytest_hypeedit.analysis.calibration import Unit, task_evidence
from pytest_hypeedit.analysis.metrics import (
    compute_metrics,
    expected_attempts_for,
    review_cost,
    success_probability,
    tally_tasks,
)

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
    return dict(_population_truth(model, draws))


@functools.cache
def _population_truth(model: SimModel, draws: int) -> dict[str, float]:
    # computed once per model and process (a fixed seed: the same figures every time; ~0.3 s of CPU each, and a
    # test module asks for the same model's several times)
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
    evidence, judge, truth = _drawn_run(model, labelled, rng)
    return evidence, metrics(judge), metrics(truth)


def simulated_evidence(model: SimModel, labelled: int, rng: np.random.Generator):
    """The evidence of ``simulated_run`` alone, from the same draws (the same ``rng`` gives the same evidence and
    leaves it in the same state), without the two metric tables the callers of this one do not read."""
    return _drawn_run(model, labelled, rng)[0]


def _drawn_run(model: SimModel, labelled: int, rng: np.random.Generator):
    rates = rng.beta(*model.beta(), TASKS)
    truth = rng.random((TASKS, REPEATS)) < rates[:, None]
    noise = rng.random((TASKS, REPEATS))
    judge = np.where(truth, noise < model.sensitivity, noise > model.specificity)
    return task_evidence(human_sample(rng, truth, judge, labelled)), judge, truth


def human_sample(rng: np.random.Generator, truth: np.ndarray, judge: np.ndarray, labelled: int) -> list[Unit]:
    """A unit per candidate (task x repeat) with the judge's verdict, and the truth of ``labelled`` of them drawn
    by simple random sampling (each with inclusion probability labelled / all)."""
    tasks, repeats = truth.shape
    chosen = np.zeros(tasks * repeats, bool)
    chosen[rng.choice(tasks * repeats, labelled, replace=False)] = True
    chosen = chosen.reshape(tasks, repeats)
    pi = labelled / (tasks * repeats)
    return [Unit(f"t{t:02d}", r + 1, bool(judge[t, r]), bool(truth[t, r]) if chosen[t, r] else None,
                 pi if chosen[t, r] else None) for t in range(tasks) for r in range(repeats)]


def metrics(verdicts: np.ndarray) -> dict:
    """The benchmark's metrics of one model whose verdicts (tasks x repeats) are these, at COST a candidate."""
    tasks, repeats = verdicts.shape
    return compute_metrics(tally_tasks([(f"t{t:02d}", r + 1, bool(verdicts[t, r]), ())
                                        for t in range(tasks) for r in range(repeats)]), COST)


def calibrated_figures(evidence, n_resamples: int, seed: int) -> dict:
    """The calibrated figures exactly as analysis.calibration.calibrate computes them for a row with its own
    labels, without the human-sample-alone figures it computes beside them (half the time, not needed here)."""
    from pytest_hypeedit.analysis import calibration
    from pytest_hypeedit.analysis.metrics import MetricSettings

    setup = calibration._Setup(calibration._Columns.of(evidence), calibration.ErrorSource(), COST, MetricSettings())
    return calibration._figures(setup, n_resamples, seed, 0.95, prefer_ppi=True)


@contextmanager
def calibrated_only() -> Iterator[None]:
    """Within it, analysis.calibration.calibrate computes its calibrated figures (refusals, widening and cautions
    included) as ever, but not the human-sample-alone figures it computes beside them: the cases read only the
    calibrated ones, and the human-only bootstrap was a third of their time.  calibrate's ``human`` entry is
    then all None (read nowhere here)."""
    from pytest_hypeedit.analysis import calibration

    figures = calibration._figures

    def without_human_only(setup, *args, **kwargs):
        return calibration._undefined() if setup.source.ignore_judge else figures(setup, *args, **kwargs)

    calibration._figures = without_human_only
    try:
        yield
    finally:
        calibration._figures = figures


# --------------------------------------------------------------------------- the acceptance simulation

ACCEPTANCE_SEED = 20261123
METRICS = ("pass_rate", "pass_at_4", "effective_cost")


@dataclass
class Acceptance:
    """What the acceptance simulation found: its report lines, the lines outside their band, and per model the
    judge's own pass rate minus the truth (a calibration that did nothing would carry it)."""

    report: list[str]
    problems: list[str]
    judge_offset: dict[str, float]


def acceptance(runs: int, resamples: int) -> Acceptance:
    """``runs`` runs x 3 models, a 10-20% sample, calibrated with ``resamples`` bootstrap replicates (BCa).

    The tolerances come from the simulation's own error: with N intervals, a method whose true coverage lies in
    [93%, 97%] shows a coverage within 2.5 binomial standard errors of that band with probability above 99%, and
    a mean bias within 1 point (pass rate, Pass@4; 5% of the truth for effective cost) plus 2.5 standard errors
    of the mean.  The seed is fixed and the runs are drawn in order, so a shorter simulation is the start of a
    longer one."""
    found, close = _simulate(runs, resamples)
    truths = {m.name: population_truth(m) for m in MODELS}
    report, problems = [], []
    for key in METRICS:
        rows = np.array([row for m in MODELS for row in found[(m.name, key)]], dtype=float)
        truth = np.repeat([truths[m.name][key] for m in MODELS], runs)
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
            error = values[:, 0].std() / math.sqrt(runs) / scale
            allowed = (0.05 if key == "effective_cost" else 0.01) + 2.5 * error
            report.append(f"  {model.name}: calibrated bias {bias:+.4f} (allowed {allowed:.4f}), judge bias {judge_bias:+.4f}")
            if abs(bias) > allowed:
                problems.append(report[-1])
    report.append(f"runs with an 18-20% sample whose calibrated pass rate is within 3 points of the all-human one: "
                  f"{np.mean(close):.2f}")
    judge_offset = {m.name: float(np.mean([row[3] for row in found[(m.name, "pass_rate")]]) - truths[m.name]["pass_rate"])
                    for m in MODELS}
    return Acceptance(report, problems, judge_offset)


def _simulate(runs: int, resamples: int) -> tuple[dict, list[bool]]:
    rng = np.random.default_rng(ACCEPTANCE_SEED)
    found: dict = {(m.name, key): [] for m in MODELS for key in METRICS}
    close = []  # |calibrated - all-human pass rate of the same run| <= 3 points, runs with a ~20% sample
    for run in range(runs):
        share = rng.uniform(0.10, 0.20)
        for model in MODELS:
            evidence, judge, people = simulated_run(model, round(share * 500), rng)
            figures = calibrated_figures(evidence, resamples, seed=run)
            for key in METRICS:
                found[(model.name, key)].append((figures[key]["value"], figures[key]["low"], figures[key]["high"],
                                                 judge[key]))
            if share >= 0.18:
                close.append(abs(figures["pass_rate"]["value"] - people["pass_rate"]) <= 0.03)
    return found, close


# --------------------------------------------------------------------------- off the happy path (issue 25)

#: Models at the edges: a near-zero and a near-one pass rate (judge error like seedream's).
NEAR_ZERO = SimModel("near-zero", 0.02, 0.12, sensitivity=0.80, specificity=0.92)
NEAR_ONE = SimModel("near-one", 0.98, 0.999, sensitivity=0.90, specificity=0.80)


def verdict_stratified_run(model: SimModel, labelled: int, fail_ratio: float, rng: np.random.Generator, *,
                           with_metrics: bool = True):
    """One run whose human sample draws the judge's FAILs ``fail_ratio`` times as often as its PASSes, each
    stratum a simple random sample of fixed size with its true inclusion probability (what a design file with
    verdict strata records).  (evidence, judge metrics, all-human metrics); the metrics None without
    ``with_metrics`` (the draws are the same)."""
    rates = rng.beta(*model.beta(), TASKS)
    truth = rng.random((TASKS, REPEATS)) < rates[:, None]
    noise = rng.random((TASKS, REPEATS))
    judge = np.where(truth, noise < model.sensitivity, noise > model.specificity).ravel()
    passes, fails = np.flatnonzero(judge), np.flatnonzero(~judge)
    # n_p / N_p = pi_p, n_f / N_f = fail_ratio pi_p, n_p + n_f = labelled
    pi_pass = labelled / (len(passes) + fail_ratio * len(fails))
    pi = {True: min(1.0, pi_pass), False: min(1.0, fail_ratio * pi_pass)}
    chosen = np.zeros(TASKS * REPEATS, bool)
    inclusion = np.zeros(TASKS * REPEATS)
    for verdict, members in ((True, passes), (False, fails)):
        size = min(len(members), round(pi[verdict] * len(members)))
        chosen[rng.choice(members, size, replace=False)] = True
        inclusion[members] = size / len(members) if len(members) else 0.0
    flat_truth = truth.ravel()
    units = [Unit(f"t{i // REPEATS:02d}", i % REPEATS + 1, bool(judge[i]), bool(flat_truth[i]) if chosen[i] else None,
                  float(inclusion[i]) if chosen[i] else None) for i in range(TASKS * REPEATS)]
    if not with_metrics:
        return task_evidence(units), None, None
    return task_evidence(units), metrics(judge.reshape(TASKS, REPEATS)), metrics(truth)


@dataclass
class CaseResult:
    """Per metric: (value, low, high) of each run whose figure was given, and the runs refused."""

    found: dict
    refused: dict
    target: dict  # the population truth the intervals are for

    def coverage(self, key: str) -> float:
        rows = np.array(self.found[key], dtype=float)
        high = np.where(np.isnan(rows[:, 2]), np.inf, rows[:, 2])  # an unbounded upper bound covers
        return float(np.mean((rows[:, 1] <= self.target[key]) & (self.target[key] <= high)))

    def bias(self, key: str) -> float:
        return float(np.mean(np.array(self.found[key], dtype=float)[:, 0]) - self.target[key])

    def standard_error(self, key: str) -> float:
        values = np.array(self.found[key], dtype=float)[:, 0]
        return float(values.std() / math.sqrt(len(values)))


def run_case(model: SimModel, runs: int, resamples: int, seed: int, *, labelled: int = 100,
             fail_ratio: float | None = None, keys=("pass_rate", "pass_at_4", "effective_cost")) -> CaseResult:
    """``runs`` simulated runs of one model calibrated as the plugin does (analysis.calibration.calibrate, with
    its refusals): simple random samples of ``labelled`` candidates, or verdict-stratified ones (fail_ratio)."""
    from pytest_hypeedit.analysis.calibration import calibrate

    rng = np.random.default_rng(seed)
    found = {key: [] for key in keys}
    refused = {key: 0 for key in keys}
    for run in range(runs):
        if fail_ratio is None:
            evidence = simulated_evidence(model, labelled, rng)
        else:
            evidence, _, _ = verdict_stratified_run(model, labelled, fail_ratio, rng, with_metrics=False)
        with calibrated_only():
            result = calibrate(evidence, COST, n_resamples=resamples, seed=run)
        for key in keys:
            entry = result.calibrated[key]
            if entry["value"] is None:
                refused[key] += 1
            else:
                found[key].append((entry["value"], entry["low"], np.nan if entry["high"] is None else entry["high"]))
    return CaseResult(found, refused, population_truth(model))
