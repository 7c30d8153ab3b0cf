"""Simulated runs for --sequential (analysis/sequential.py): shared by the test and bench/bench_sequential.py.

A run: T tasks x R repeats; each task's pass rate drawn from a Beta distribution with mean ``rate`` and
concentration ``spread`` (small: tasks very unlike each other; large: alike); each candidate passes with its
task's rate; the values in the seeded buying order of the plugin (``interleaving``).
"""

from __future__ import annotations

import numpy as np

from pytest_hypeedit.analysis.sequential import decide_many, interleaving


def simulated_runs(rng, runs: int, rate: float, spread: float, tasks: int = 50, repeats: int = 10):
    """(values in buying order, runs x tasks*repeats; the full run's pass rate of each run)."""
    per_task = rng.beta(rate * spread, (1 - rate) * spread, size=(runs, tasks))
    outcomes = (rng.random((runs, tasks, repeats)) < per_task[:, :, None]).astype(float)
    order = interleaving(list(range(tasks)), repeats)
    values = outcomes[:, [t for t, _ in order], [r - 1 for _, r in order]]
    return values, values.mean(axis=1)


def wrong_decisions_on_threshold(rng, runs: int, rate: float, spread: float, op: str, alpha: float = 0.05) -> float:
    """The share of runs decided the wrong way when the full run sits exactly on the gate's threshold (the
    threshold of each run is its own full pass rate): FAIL for >= and <= (which hold there), PASS for > and <."""
    values, full = simulated_runs(rng, runs, rate, spread)
    decisions, _ = decide_many(values, full, op, alpha)
    wrong = -1 if op in (">=", "<=") else 1
    return float(np.mean(decisions == wrong))


def decisive_case(rng, runs: int, rate: float = 0.3, threshold: float = 0.78, alpha: float = 0.05):
    """A release plainly worse than its gate: (share decided FAIL, median and largest candidates bought)."""
    values, _ = simulated_runs(rng, runs, rate, 5.0)
    decisions, bought = decide_many(values, threshold, ">=", alpha)
    return float(np.mean(decisions == -1)), float(np.median(bought)), int(bought.max()), values.shape[1]
