"""Simulated runs for --sequential (analysis/sequential.py): shared by the tests and bench/bench_sequential.py.

A run: T tasks x R repeats; each candidate passes with its task's pass rate; the values taken in a buying order
``interleaving`` gives.  Two kinds of task set:

- drawn per run (``simulated_runs``): each task's rate from a Beta distribution with mean ``rate`` and
  concentration ``spread`` (small: tasks very unlike each other; large: alike).  A wrong-decision rate here is
  averaged over task sets, which no team has: a team runs one task set, again and again.
- fixed (``fixed_set_runs``): the same per-task rates in every run, as a team's task file.  The guarantee is
  for any such set, the chance taken over the buying order (and the candidates' own randomness) alone.

Orders: ``drawn`` (a fresh seed per run, as the plugin draws one per outputs folder) or ``constant`` (the seed
every run of the plugin used before: the same order in every run).
"""

from __future__ import annotations

import numpy as np

from pytest_hypeedit.analysis.sequential import decide_many, interleaving, per_gate_alpha

#: The seed the plugin's order came from before it was drawn per outputs folder (the same in every run).
CONSTANT_SEED = "hypeedit-sequential"


def flat_order(tasks: int, repeats: int, seed: str) -> list[int]:
    """``interleaving`` as indices into a run's outcomes flattened task-major (task * repeats + repeat - 1)."""
    return [task * repeats + repeat - 1 for task, repeat in interleaving(range(tasks), repeats, seed)]


def orders(rng, runs: int, tasks: int, repeats: int, order: str = "drawn"):
    """One buying order per run: drawn afresh (a seed per run, from ``rng``) or the constant one."""
    if order == "constant":
        return np.tile(flat_order(tasks, repeats, CONSTANT_SEED), (runs, 1))
    return np.array([flat_order(tasks, repeats, rng.bytes(16).hex()) for _ in range(runs)])


def in_order(outcomes, order):
    """(runs x tasks x repeats) outcomes -> (runs x N) values in each run's buying order."""
    runs = outcomes.shape[0]
    return np.take_along_axis(outcomes.reshape(runs, -1), order, axis=1)


def simulated_runs(rng, runs: int, rate: float, spread: float, tasks: int = 50, repeats: int = 10):
    """(values in buying order, runs x tasks*repeats; the full run's pass rate of each run): a task set drawn
    per run, an order drawn per run."""
    per_task = rng.beta(rate * spread, (1 - rate) * spread, size=(runs, tasks))
    outcomes = (rng.random((runs, tasks, repeats)) < per_task[:, :, None]).astype(float)
    values = in_order(outcomes, orders(rng, runs, tasks, repeats))
    return values, values.mean(axis=1)


def wrong_decisions_on_threshold(rng, runs: int, rate: float, spread: float, op: str, alpha: float = 0.05) -> float:
    """The share of runs decided the wrong way when the full run sits exactly on the gate's threshold (the
    threshold of each run is its own full pass rate): FAIL for >= and <= (which hold there), PASS for > and <."""
    values, full = simulated_runs(rng, runs, rate, spread)
    return wrong_share(values, full, op, alpha)


def wrong_share(values, full, op: str, alpha: float) -> float:
    return float(np.mean(wrong_on_threshold(values, full, op, alpha)))


def wrong_on_threshold(values, full, op: str, alpha: float):
    """Per run: decided early the other way than the full run, whose figure is the threshold (a tie: ``>=`` and
    ``<=`` hold there, ``>`` and ``<`` do not)."""
    decisions, _ = decide_many(values, full, op, alpha)
    return decisions == (-1 if op in (">=", "<=") else 1)


def fixed_set_runs(rng, rates, runs: int, repeats: int = 10, order: str = "drawn"):
    """(values in buying order, the full run's pass rate) of ``runs`` runs of ONE task set (``rates``, a pass
    rate per task, in the task file's order): fresh candidates each run, the order drawn or constant."""
    rates = np.asarray(rates, dtype=float)
    outcomes = (rng.random((runs, len(rates), repeats)) < rates[None, :, None]).astype(float)
    values = in_order(outcomes, orders(rng, runs, len(rates), repeats, order))
    return values, values.mean(axis=1)


def hardest_bought_first(rates, repeats: int = 10):
    """``rates`` placed so the constant order buys the hardest tasks first: what a team whose task file happens to
    line up with it gets (any fixed order has such task files)."""
    rates = np.sort(np.asarray(rates, dtype=float))
    first_turns = list(dict.fromkeys(task for task, _ in interleaving(range(len(rates)), repeats, CONSTANT_SEED)))
    placed = np.empty_like(rates)
    placed[first_turns] = rates  # the i-th task the order comes to gets the i-th hardest rate
    return placed


def wrong_on_fixed_set(rng, rates, runs: int, op: str = ">=", alpha: float = 0.05, order: str = "drawn",
                       repeats: int = 10) -> float:
    """The wrong-decision share of one fixed task set, the full run exactly on the threshold in every run."""
    values, full = fixed_set_runs(rng, rates, runs, repeats, order)
    return wrong_share(values, full, op, alpha)


def wrong_in_any_gate(rng, task_sets, runs: int, alpha: float = 0.05, split: bool = True, repeats: int = 10) -> float:
    """Several gates in one run, each on one row (a model's fixed task set) with the full run on its threshold:
    the share of runs with at least one wrong early decision, alpha split over the gates (the plugin) or not."""
    each = per_gate_alpha(alpha, len(task_sets)) if split else alpha
    return wrong_in_any_gate_at(rng, task_sets, runs, (each,), repeats)[0]


def wrong_in_any_gate_at(rng, task_sets, runs: int, alphas, repeats: int = 10) -> list[float]:
    """``wrong_in_any_gate`` at each of ``alphas`` (each gate's), on the SAME runs: one draw of the candidates and
    orders judged at every level (what separate calls given equally seeded generators compute, for one draw)."""
    wrong = np.zeros((len(alphas), runs), dtype=bool)
    for rates in task_sets:
        values, full = fixed_set_runs(rng, rates, runs, repeats)
        for row, each in enumerate(alphas):
            wrong[row] |= wrong_on_threshold(values, full, ">=", each)
    return [float(share) for share in wrong.mean(axis=1)]


def decisive_case(rng, runs: int, rate: float = 0.3, threshold: float = 0.78, alpha: float = 0.05):
    """A release plainly worse than its gate: (share decided FAIL, median and largest candidates bought)."""
    values, _ = simulated_runs(rng, runs, rate, 5.0)
    decisions, bought = decide_many(values, threshold, ">=", alpha)
    return float(np.mean(decisions == -1)), float(np.median(bought)), int(bought.max()), values.shape[1]


def task_sets(rng, count: int, tasks: int = 50):
    """Fixed task sets as teams have them: per-task rates drawn once, from tasks unlike each other (Beta
    concentration 0.5) to alike (50), means from 10% to 90%; and the starkest, tasks that always fail or always
    pass, half and half."""
    sets = []
    for index in range(count - 1):
        mean, spread = (0.1, 0.3, 0.5, 0.7, 0.9)[index % 5], (0.5, 5.0, 50.0)[index % 3]
        sets.append(rng.beta(mean * spread, (1 - mean) * spread, size=tasks))
    sets.append(np.repeat([0.0, 1.0], tasks // 2))
    return sets
