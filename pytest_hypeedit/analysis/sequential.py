"""Anytime-valid gate decisions (``--sequential``): stop buying once a pass-rate gate is decided.

What is decided.  A row of the run plans N items (task x repeat).  Each item, once bought and judged, has a
value x in [0, 1]: 1 for PASS, 0 for FAIL or a refusal; for a gate against a baseline, paired over tasks,
x = (outcome - b_t + 1) / 2 with b_t the baseline's pass rate on the item's task.  M, the mean of the N
values, is what the full run would report (its pass rate, or (pass rate - baseline's + 1) / 2 on the shared
tasks, every task with all its repeats; with b_t the baseline's mean on the shared tasks for every task when the
run has tasks the baseline lacks, as the full run's gate compares: glue/early_stop.py like_the_full_run).  A gate ``pass_rate >= c`` is decided PASS once the run is sure at
level alpha that M >= c, and FAIL once it is sure that M < c.

The guarantee, exactly: for any fixed task set and model (any N values the full run would see), the early
decision differs from the one the full run's gate makes on those values in at most alpha of runs, the chance
taken over the buying order alone, however early it comes.  It is agreement with the full run, not a test of
the model's true pass rate: a release whose full run lands exactly on the threshold passes about half the time,
as the full run itself would.  alpha here is one gate's (``per_gate_alpha``): the run's ``--gate-alpha`` split
evenly (Bonferroni) over every gate and row decided early, so that the chance of any wrong early decision in a
run is at most ``--gate-alpha`` however the gates depend on each other.

Order and assumptions (each one the guarantee rests on):

1. The items are bought in a uniformly random interleaving of the tasks (``interleaving``), in which the j-th
   time a task comes up buys its repeat j, from a seed drawn at random for the run's outputs folder and
   identity before any outcome is seen (glue/sequential_order.py), and kept for its reruns.  A constant seed
   gives every run the same order: averaged over task sets it errs at most alpha, but for the task sets it
   happens to buy hardest-first it errs nearly always.
2. A task's repeats are exchangeable (independent draws from the same model on the same task, whenever
   bought): then buying repeat j at the task's j-th turn has the same law as drawing the N items uniformly
   at random without replacement, which is what the test below needs.  Round robin (repeat 1 of every task,
   then repeat 2) is not used: it visits tasks in a pattern, and its error would rest on a model of how pass
   rates vary between tasks, not on the order alone.
3. Outcomes are consumed in the planned order (the longest complete prefix), never in the order they come
   back (a refusal comes back faster than a judged image: arrival order depends on the outcome).  An item
   that ended in an error or a budget skip is left out, which assumes that missing is unrelated to outcome.

Method: betting for sampling without replacement (Waudby-Smith and Ramdas 2020, "Confidence sequences for
sampling without replacement"; bets as in their 2023 JRSS-B paper, "Estimating means of bounded random
variables by betting").  Before the i-th value, were M = c the N - i + 1 items left would have the mean
m_i = (N c - S_{i-1}) / (N - i + 1).  Two capital processes bet on the next value against it:

    K+_n = prod (1 + l_i (x_i - m_i))   grows when M > c;  a supermartingale when M <= c
    K-_n = prod (1 - l_i (x_i - m_i))   grows when M < c;  a supermartingale when M >= c

with predictable bets l_i >= 0 (aGRAPA: the growth-optimal bet for the mean and variance seen so far,
capped at half the bet that could lose everything).  By Ville's inequality a capital process reaches 1/alpha
with probability at most alpha under its null, at any time, however the run stops.  ``>=`` and ``>`` gates
PASS when K+ reaches 1/alpha and FAIL when K- does (``<=``, ``<``: the other way round); only one of the two
nulls is true, so the chance of a wrong decision is at most alpha.  Once the values bought pin M to one side
of c whatever the rest would be (``forced``), the decision is certain; M on c within the gates' tie tolerance
(analysis/gates.py TIE_TOLERANCE) counts as on it, as in the full run.

Pure: no I/O; ``decide_many`` is the vectorised (numpy) twin of ``BettingTest`` for the simulations.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Sequence

from .gates import OPERATORS, TIE_TOLERANCE

METHOD = "betting confidence sequence, sampling without replacement (Waudby-Smith & Ramdas)"
PASS, FAIL = "PASS", "FAIL"
#: Bets are capped at this share of the largest bet that keeps the capital positive.
CAP = 0.5
#: Before a variance is seen: the prior mean and variance of a value in [0, 1].
PRIOR_MEAN, PRIOR_VARIANCE = 0.5, 0.25
#: Gate operators whose PASS side is "M above c".
ABOVE = (">=", ">")
#: How a stop by a sequential decision starts its reason (the stop file, the skipped items, the coverage).
STOP_PREFIX = "sequential: "


def is_sequential_stop(reason: object) -> bool:
    return isinstance(reason, str) and reason.startswith(STOP_PREFIX)


def interleaving(task_keys: Sequence[object], repeats: int, seed: str) -> list[tuple[int, int]]:
    """The buying order: (task index, repeat) pairs, a uniformly random permutation of every task taken
    ``repeats`` times, in which a task's j-th turn is its repeat j.  The seed is a string drawn for the run
    (glue/sequential_order.py); ``random`` hashes it with SHA-512, never with the per-process hash seed, so every
    xdist worker given it draws the same order."""
    turns = [index for index in range(len(task_keys)) for _ in range(repeats)]
    random.Random(f"{seed}:{len(task_keys)}:{repeats}").shuffle(turns)
    seen = [0] * len(task_keys)
    order = []
    for index in turns:
        seen[index] += 1
        order.append((index, seen[index]))
    return order


def per_gate_alpha(alpha: float, gates: int) -> float:
    """Each of ``gates`` early decisions at this level keeps the chance of any wrong one in the run at most
    ``alpha`` (Bonferroni: the union bound, whatever the dependence between gates)."""
    return alpha / max(1, gates)


def paired_value(outcome: float, baseline_rate: float) -> float:
    """A value in [0, 1] whose mean moves with (pass rate - baseline's), for a gate against a baseline."""
    return (outcome - baseline_rate + 1.0) / 2.0


def paired_threshold(offset: float) -> float:
    """``pass_rate OP baseline + offset`` on the paired values' scale."""
    return (offset + 1.0) / 2.0


def passes(op: str, value: float, threshold: float) -> bool:
    """As the full run's gate compares (analysis/gates.py, ties within TIE_TOLERANCE on the threshold)."""
    return bool(OPERATORS[op](value, threshold))


@dataclass
class BettingTest:
    """One gate on one row, fed its values in the planned order; ``decision`` is None until decided.

    ``low``/``high`` give, per planned item, the least and most its value can be (0 and 1 for a pass rate;
    shifted by the baseline when paired): they tell when the values bought already force the answer.  An item
    that gives no value (an error, a budget skip) is ``skip``-ped: it leaves the population (assumption 3)."""

    threshold: float
    op: str
    alpha: float
    low: Sequence[float]
    high: Sequence[float]
    seen: int = 0
    skipped: int = 0
    total: float = 0.0
    decision: str | None = None
    decided_at: int | None = None  # the items of the plan consumed (values and skips) when decided
    _log_up: float = 0.0
    _log_down: float = 0.0
    _squares: float = 0.0  # sum of (x_j - running mean_j)^2, the variance's numerator
    _rest_low: float = field(init=False)
    _rest_high: float = field(init=False)

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha {self.alpha} must be in (0, 1)")
        self._rest_low, self._rest_high = math.fsum(self.low), math.fsum(self.high)

    @property
    def planned(self) -> int:
        """The items of the plan that give (or will give) a value."""
        return len(self.low) - self.skipped

    @property
    def position(self) -> int:
        return self.seen + self.skipped

    def update(self, value: float) -> str | None:
        """Take the next value of the planned order (once decided, the decision stays)."""
        if self.position >= len(self.low):
            raise ValueError("more values than planned items")
        null_mean = (self.planned * self.threshold - self.total) / (self.planned - self.seen)
        up, down = bets(self.total, self._squares, self.seen, null_mean)
        self._log_up += _log_factor(1.0 + up * (value - null_mean))
        self._log_down += _log_factor(1.0 - down * (value - null_mean))
        self._leave(self.position)
        self.seen += 1
        self.total += value
        self._squares += (value - (PRIOR_MEAN + self.total) / (self.seen + 1)) ** 2
        return self._settle()

    def skip(self) -> str | None:
        """The next planned item gives no value."""
        if self.position >= len(self.low):
            raise ValueError("more items than planned")
        self._leave(self.position)
        self.skipped += 1
        return self._settle()

    def _leave(self, index: int) -> None:
        self._rest_low -= self.low[index]
        self._rest_high -= self.high[index]

    def _settle(self) -> str | None:
        if self.decision is None and self.planned > 0:
            self.decision = self._decide()
            self.decided_at = self.position if self.decision else None
        return self.decision

    def _decide(self) -> str | None:
        forced = forced_decision(self.op, self.threshold, self.total + self._rest_low, self.total + self._rest_high,
                                 self.planned)
        if forced:
            return forced
        bar = math.log(1.0 / self.alpha)
        above, below = self._log_up >= bar, self._log_down >= bar
        if above or below:
            return PASS if above == (self.op in ABOVE) else FAIL
        return None


def forced_decision(op: str, threshold: float, least: float, most: float, planned: int) -> str | None:
    """PASS (FAIL) when the full mean passes (fails) the gate however the items not bought yet turn out."""
    if passes(op, least / planned, threshold) and passes(op, most / planned, threshold):
        return PASS
    if not passes(op, least / planned, threshold) and not passes(op, most / planned, threshold):
        return FAIL
    return None


def bets(total: float, squares: float, seen: int, null_mean: float) -> tuple[float, float]:
    """(bet for K+, bet for K-) before the next value: aGRAPA from the values seen, capped (module docstring).
    A null mean outside [0, 1] means the remaining items cannot average c: the forced decision settles it, so
    no bet is needed on that side."""
    mean = (PRIOR_MEAN + total) / (seen + 1)
    variance = (PRIOR_VARIANCE + squares) / (seen + 1)
    gap = mean - null_mean
    growth = gap / (variance + gap * gap)
    up = min(max(growth, 0.0), CAP / null_mean) if null_mean > 0 else 0.0
    down = min(max(-growth, 0.0), CAP / (1.0 - null_mean)) if null_mean < 1 else 0.0
    return up, down


def _log_factor(factor: float) -> float:
    return math.log(factor) if factor > 0 else -math.inf


# --------------------------------------------------------------------------- vectorised twin (simulations)


def decide_many(values: Any, threshold: Any, op: str, alpha: float, low: Any = None, high: Any = None) -> Any:
    """``BettingTest`` on many runs at once: ``values`` (runs x N, in planned order) -> (decision per run: +1
    PASS, -1 FAIL, 0 undecided after all N; the number of values bought when decided, N when undecided).
    ``threshold``: one, or one per run; ``low``/``high`` (runs x N or None: 0 and 1) as in BettingTest."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    runs, planned = x.shape
    threshold = np.broadcast_to(np.asarray(threshold, dtype=float), (runs,))[:, None]
    low = np.zeros_like(x) if low is None else np.broadcast_to(np.asarray(low, dtype=float), x.shape)
    high = np.ones_like(x) if high is None else np.broadcast_to(np.asarray(high, dtype=float), x.shape)
    seen = np.arange(planned)
    before = np.concatenate([np.zeros((runs, 1)), np.cumsum(x, axis=1)[:, :-1]], axis=1)
    after = before + x
    running_mean = (PRIOR_MEAN + after) / (seen + 2)
    squares = np.cumsum((x - running_mean) ** 2, axis=1)
    squares_before = np.concatenate([np.zeros((runs, 1)), squares[:, :-1]], axis=1)
    null_mean = (planned * threshold - before) / (planned - seen)
    mean = (PRIOR_MEAN + before) / (seen + 1)
    variance = (PRIOR_VARIANCE + squares_before) / (seen + 1)
    gap = mean - null_mean
    growth = gap / (variance + gap * gap)
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.where(null_mean > 0, np.minimum(np.maximum(growth, 0), CAP / null_mean), 0.0)
        down = np.where(null_mean < 1, np.minimum(np.maximum(-growth, 0), CAP / (1 - null_mean)), 0.0)
        log_up = np.cumsum(np.log(np.maximum(1 + up * (x - null_mean), 0)), axis=1)
        log_down = np.cumsum(np.log(np.maximum(1 - down * (x - null_mean), 0)), axis=1)
    least = after + (low.sum(axis=1, keepdims=True) - np.cumsum(low, axis=1))
    most = after + (high.sum(axis=1, keepdims=True) - np.cumsum(high, axis=1))
    tolerance = TIE_TOLERANCE * np.maximum(1.0, np.abs(threshold))  # as analysis/gates.py tie_tolerance
    shifted = {">=": -tolerance, "<=": tolerance, ">": tolerance, "<": -tolerance}[op]
    strict = {">=": np.greater_equal, "<=": np.less_equal, ">": np.greater, "<": np.less}[op]

    def compare(value: Any, threshold: Any) -> Any:
        return strict(value, threshold + shifted)

    sure_pass = compare(least / planned, threshold) & compare(most / planned, threshold)
    sure_fail = ~compare(least / planned, threshold) & ~compare(most / planned, threshold)
    bar = math.log(1 / alpha)
    above, below = log_up >= bar, log_down >= bar
    passes = sure_pass | (~sure_fail & (above if op in ABOVE else below))
    fails = sure_fail | (~sure_pass & (below if op in ABOVE else above))
    return _first_decisions(passes, fails, planned)


def _first_decisions(passes: Any, fails: Any, planned: int) -> Any:
    import numpy as np

    either = passes | fails
    first = np.where(either.any(axis=1), either.argmax(axis=1), planned - 1)
    rows = np.arange(len(first))
    decided = either[rows, first]
    sign = np.where(passes[rows, first], 1, -1)
    # when both sides cross at once (cannot happen for a valid run), PASS's side wins, as in BettingTest
    return np.where(decided, sign, 0), np.where(decided, first + 1, planned)
