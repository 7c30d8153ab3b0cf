"""Simulated runs for the serving analysis (analysis/serving.py), shared by tests/analysis/test_serving.py and
bench/bench_serving.py.

* ``drifting_candidates``: one model's candidates on ``tasks`` x ``repeats``.  Task t's PASS rate is drawn from
  Beta(2, 2) (tasks unlike); its replies' latency scales with the task's difficulty (a hard task is slow: a test
  that ignored tasks would see a drift that is not there) times a log-normal draw.  The candidates in the slowest
  third of latency pass ``effect`` / 2 less than their task's rate, those in the fastest third ``effect`` / 2 more
  (a drift of ``effect`` between the thirds; 0: none), clipped to [0, 1].  Purchase time is the buying order, drawn
  at random.
* ``route_rows``: one model on two routes (``m`` on ``main``, ``m@other`` on ``other``) on the same tasks, the
  second passing ``difference`` less on every task (clipped at 0), its replies ``latency_gap`` seconds slower (with
  ``latency_noise``: each route's per-task mean latency drawn around that).
* ``run_rows``: one model in two runs on the same tasks (this run ``a``, the baseline ``b``), task PASS rates from
  Beta(2, 2), the first run passing ``difference`` less on every task (clipped at 0); each run's PASS count per
  task is binomial over ``repeats``, as ``task_tallies`` keep it.
"""

from __future__ import annotations

import numpy as np

from pytest_hypeedit.analysis.metrics import TaskTally
from pytest_hypeedit.analysis.pairwise import Entrant
from pytest_hypeedit.analysis.serving import THIS_RUN, Candidate, RouteRow, RunRow, thirds


def drifting_candidates(tasks: int, repeats: int, effect: float, seed: int) -> list[Candidate]:
    rng = np.random.default_rng(seed)
    rates = rng.beta(2, 2, size=tasks)
    task_of = np.repeat(np.arange(tasks), repeats)
    latency = (1 + 3 * (1 - rates[task_of])) * rng.lognormal(0, 0.3, size=task_of.size)
    third = thirds(latency)
    chance = np.clip(rates[task_of] + np.where(third == 0, effect / 2, np.where(third == 2, -effect / 2, 0.0)), 0, 1)
    passed = rng.random(task_of.size) < chance
    bought = rng.permutation(task_of.size).astype(float)
    return [Candidate("sim", f"t{t:03d}", bool(p), float(b), float(lat))
            for t, p, b, lat in zip(task_of, passed, bought, latency)]


def route_rows(tasks: int, repeats: int, difference: float, seed: int, *, latency_gap: float = 1.0,
               latency_noise: float = 0.0, price: float = 0.04) -> list[RouteRow]:
    rng = np.random.default_rng(seed)
    rates = rng.beta(2, 2, size=tasks)
    rows = []
    for name, route, rate, slower in (("m", "main", rates, 0.0), ("m@other", "other", np.clip(rates - difference, 0, 1),
                                                                  latency_gap)):
        passes = rng.binomial(repeats, rate)
        first = rng.random(tasks) < passes / repeats
        tallies = tuple(TaskTally(f"t{t:03d}", int(k), repeats, bool(f)) for t, (k, f) in enumerate(zip(passes, first)))
        latency = {f"t{t:03d}": float(2.0 + slower + (rng.normal(0, latency_noise) if latency_noise else 0.0))
                   for t in range(tasks)}
        rows.append(RouteRow(Entrant(name, tallies, price), "s", "m", route, latency))
    return rows


def run_rows(tasks: int, repeats: int, difference: float, seed: int, *, price: float = 0.04) -> tuple[RunRow, RunRow]:
    rng = np.random.default_rng(seed)
    rates = rng.beta(2, 2, size=tasks)
    rows = []
    for run, rate in ((THIS_RUN, np.clip(rates - difference, 0, 1)), ("base.json", rates)):
        passes = rng.binomial(repeats, rate)
        first = rng.random(tasks) < passes / repeats
        tallies = tuple(TaskTally(f"t{t:03d}", int(k), repeats, bool(f)) for t, (k, f) in enumerate(zip(passes, first)))
        rows.append(RunRow(Entrant("m", tallies, price), "s", run, run))
    return rows[0], rows[1]
