"""Simulated families of equal models for the pairwise comparison (analysis/pairwise.py).

Each family: ``models`` models that are the same model, on ``tasks`` tasks x ``repeats`` repeats.  Task
difficulty varies: task t's pass rate is drawn from a Beta distribution with mean ``rate`` and concentration
``spread`` (0.5 very unlike tasks, 50 alike); every model draws its PASS count on a task from the same rate,
and its first candidate's verdict is one of those draws.  All models of a family are at one price, drawn per
family (an equal model is equal in price too, or its effective cost differs).  Any significant entry is a
false discovery.  Shared by tests/analysis/test_pairwise.py and bench/bench_pairwise.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_hypeedit.analysis.metrics import MetricSettings, TaskTally
from pytest_hypeedit.analysis.pairwise import PAIRWISE_METRICS, Entrant, compare_pair, pairwise, sign_flips

PRICES = (0.01, 0.04, 0.08, 0.2)


@dataclass(frozen=True)
class Regime:
    rate: float
    spread: float
    tasks: int = 50
    repeats: int = 10


def equal_family(rng: np.random.Generator, models: int, regime: Regime) -> list[Entrant]:
    """``models`` entrants of one model (see the module's docstring)."""
    a, b = regime.rate * regime.spread, (1 - regime.rate) * regime.spread
    rates = rng.beta(a, b, size=regime.tasks)
    price = float(rng.choice(PRICES))
    family = []
    for index in range(models):
        passes = rng.binomial(regime.repeats, rates)
        first = rng.random(regime.tasks) < passes / regime.repeats  # the first of the repeats, one of the draws
        tallies = tuple(TaskTally(f"t{t:03d}", int(k), regime.repeats, bool(f)) for t, (k, f) in enumerate(zip(passes, first)))
        family.append(Entrant(f"m{index}", tallies, price))
    return family


@dataclass
class Tally:
    """False discoveries over simulated families: any metric, per metric, and the smallest adjusted p seen."""

    families: int = 0
    any_false: int = 0
    smallest_p: float = 1.0

    def __post_init__(self) -> None:
        self.by_metric = dict.fromkeys(PAIRWISE_METRICS, 0)


def false_discoveries(rng: np.random.Generator, families: int, models: int, regime: Regime,
                      metrics: Sequence[str] = PAIRWISE_METRICS, settings: MetricSettings = MetricSettings()) -> Tally:
    tally = Tally()
    for family in range(families):
        found = pairwise({"sim": equal_family(rng, models, regime)}, settings, metrics, seed=family)
        tally.families += 1
        tally.any_false += any(e["significant"] for e in found)
        for metric in {e["metric"] for e in found if e["significant"]}:
            tally.by_metric[metric] += 1
        tally.smallest_p = min([tally.smallest_p, *(e["p_adjusted"] for e in found)])
    return tally


def null_p_values(rng: np.random.Generator, pairs: int, regime: Regime, flips: int = 9999,
                  settings: MetricSettings = MetricSettings()) -> dict[str, np.ndarray]:
    """Per metric, the raw sign-flip p-values of ``pairs`` pairs of equal models (each pair its own seed)."""
    found: dict[str, list[float]] = {}
    for pair in range(pairs):
        entries = compare_pair(*equal_family(rng, 2, regime), settings)
        tests = sign_flips(np.column_stack([e["values"] for e in entries]), flips, seed=pair)
        for entry, test in zip(entries, tests):
            found.setdefault(entry["metric"], []).append(float(test.p_value()))
    return {metric: np.array(values) for metric, values in found.items()}
