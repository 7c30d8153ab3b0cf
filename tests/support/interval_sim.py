"""Simulated runs with a known truth for the judge-only intervals (analysis/task_intervals.py): their test and bench.

A model is a population of tasks whose pass rates follow a Beta distribution with a given mean and concentration
(0.5: most tasks always or never pass, tasks very unlike each other; 5: spread; 50: alike).  A run is TASKS tasks
drawn from it x REPEATS independent repeats.  The truth is each metric over the whole population, measured as the
benchmark measures it (with REPEATS repeats per task): the target the intervals state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pytest_hypeedit.analysis.metrics import TaskTally, expected_attempts_for, review_cost, success_probability

TASKS, REPEATS, COST = 50, 10, 0.04
UNIT_COST = COST + review_cost()
#: The metrics whose coverage is checked (the table's, and the first-attempt pass rate the hype gap rests on).
KEYS = ("pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "effective_cost", "hype_gap")


@dataclass(frozen=True)
class Population:
    mean: float
    concentration: float

    @property
    def name(self) -> str:
        return f"{self.mean:.0%} (Beta concentration {self.concentration:g})"

    def rates(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        a, b = self.mean * self.concentration, (1 - self.mean) * self.concentration
        return rng.beta(a, b, size)


def population_truth(population: Population, draws: int = 400_000) -> dict[str, float]:
    """Every metric of KEYS over the population, with REPEATS repeats per task (seeded Monte Carlo over rates,
    exact over PASS counts)."""
    rates = population.rates(np.random.default_rng(12345), draws)
    counts = np.arange(REPEATS + 1)
    chance = np.array([math.comb(REPEATS, k) for k in counts]) * rates[:, None] ** counts * (1 - rates[:, None]) ** (
        REPEATS - counts)
    success = float((chance @ success_probability(counts / REPEATS)).mean())
    attempts = float((chance @ expected_attempts_for(counts / REPEATS)).mean())
    any_pass = float((1 - (1 - rates) ** REPEATS).mean())
    return {"pass_rate": float(rates.mean()), "pass_at_4": success, "pass_at_10": any_pass,
            "expected_attempts": attempts, "effective_cost": attempts * UNIT_COST / success,
            "hype_gap": any_pass - float(rates.mean())}


def simulated_runs(population: Population, runs: int, rng: np.random.Generator) -> list[list[TaskTally]]:
    """``runs`` runs of TASKS tasks x REPEATS repeats each."""
    rates = population.rates(rng, (runs, TASKS))
    verdicts = rng.random((runs, TASKS, REPEATS)) < rates[..., None]
    return [[TaskTally(f"t{t:02d}", int(run[t].sum()), REPEATS, bool(run[t, 0])) for t in range(TASKS)]
            for run in verdicts]


@dataclass
class Coverage:
    """Per metric: the runs whose interval held the truth, the runs with an interval, and with a note instead."""

    covered: dict
    given: dict
    noted: dict
    runs: int

    def share(self, key: str) -> float:
        """Coverage over every run: a run with no interval counts as not covering (a run whose only bound is the
        lower one in the note counts as covering when that bound is below the truth)."""
        return self.covered[key] / self.runs

    def monte_carlo_interval(self, key: str) -> tuple[float, float]:
        """The 95% Wilson interval of the coverage itself (the simulation's own error)."""
        share, n, z = self.share(key), self.runs, 1.959964
        centre = (share + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return centre - half, centre + half


def coverage(population: Population, runs: int, seed: int, intervals) -> Coverage:
    """Coverage of ``intervals(tallies, cost) -> (bounds, lower bounds without an upper one)`` over ``runs``
    simulated runs."""
    truth = population_truth(population)
    rng = np.random.default_rng(seed)
    covered, given, noted = dict.fromkeys(KEYS, 0), dict.fromkeys(KEYS, 0), dict.fromkeys(KEYS, 0)
    for tallies in simulated_runs(population, runs, rng):
        bounds, lower_only = intervals(tallies, COST)
        for key in KEYS:
            found = bounds.get(key)
            if found is not None:
                given[key] += 1
                covered[key] += found[0] - 1e-12 <= truth[key] <= found[1] + 1e-12
            elif key in lower_only:
                noted[key] += 1
                covered[key] += lower_only[key] <= truth[key]
    return Coverage(covered, given, noted, runs)
