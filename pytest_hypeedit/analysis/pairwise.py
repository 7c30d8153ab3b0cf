"""Which differences between models are real: paired sign-flip tests over tasks, Holm-corrected.

For each split with two or more models, every pair (a, b) and every headline metric gets the difference
a - b on the tasks both judged, a p-value, and an interval; the p-values of all pairs x metrics of one
split are one family, adjusted with Holm's step-down method.  ``significant``: adjusted p < 0.05.

The test, for every metric: a paired sign-flip (permutation) test on per-task values whose mean is the
difference.  Under "no difference" the two models are exchangeable within a task, so each task's value is
as likely negative as positive; flipping signs at random gives the null distribution of the mean without
assuming normality, and stays valid with few tasks (where a t-test on 0/1-like differences does not).

* Pass rate, Pass@4, Pass@10, expected attempts are means of a per-task value: the per-task values are the
  two models' per-task differences, and the test is exact when the models are exchangeable within tasks.
* Effective cost (a ratio of means) and hype gap (a mean minus a ratio) are not: their per-task values are
  linearised, their mean the difference exactly (``task_differences``).  Effective cost's are centred on the
  two models' pooled cost per success, so for two models at one price a sign flip is exactly a swap of the
  models' outcomes on that task and the test is exact; the hype gap's test is exact whenever every task's
  first candidate was judged (it is then a mean).  bench/bench_pairwise.py measures both.

The p-value is never 0: with random flips it is (1 + as extreme) / (1 + flips), the observed signs counting
as one of them; with few tasks every sign vector is enumerated (exact, and again never 0, since all signs
+1 is always as extreme).  An earlier version took the p of effective cost and hype gap from the paired
bootstrap, where all resamples on one side of 0 gave p = 0, which survives any Holm factor.

The interval: the differences d the same test would not reject at the level Holm's procedure tested this
comparison (the values minus d flipped).  So an interval excludes 0 exactly when the pair is significant,
and a pair shown as indistinguishable never has an interval that excludes 0.

"Not significant" means not shown different at 5% after the correction, not shown equal.

``paired_comparison``: one release against its baseline (``--baseline``, each row's ``baseline``), every metric,
the same test inverted at 95% for that one comparison (no correction).
Pure: numpy only, no I/O.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np

from .metrics import (
    MetricSettings,
    TaskColumns,
    TaskTally,
    finite_or_none,
    judged_tallies,
    metric_names,
    metric_table,
    task_columns,
)
from .stats import shared_task_ids

if TYPE_CHECKING:
    from ..report.results_model import PairedDifference, PairwiseEntry

#: The metrics compared, in the order reports list them.
PAIRWISE_METRICS = ("pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "effective_cost", "hype_gap")
#: Per metric that is a mean over tasks, the per-task column of ``metrics.TaskColumns`` it is the mean of.
TASK_MEAN_COLUMNS = {"pass_rate": "pass_rate", "pass_at_4": "success_at_4", "pass_at_10": "any_pass",
                     "expected_attempts": "attempts_at_cap"}
ALPHA = 0.05
#: Random sign flips per test at least; a family of m tests gets at least 2m / alpha, so that its smallest
#: possible p, 1 / (1 + flips), can pass Holm's first step (alpha / m).
PERMUTATIONS = 9999
_CHUNK = 1000  # sign-flip resamples per matrix: bounded memory with hundreds of tasks
#: Two sums of flipped values closer than this (relative to the largest value) are a tie: as extreme.
_TIE = 1e-9


@dataclass(frozen=True)
class Entrant:
    """One model's row on one split: its name, per-task tallies and price per candidate."""

    model: str
    tallies: tuple[TaskTally, ...]
    cost: float


# --- Holm ---------------------------------------------------------------------------------


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the order given: the i-th smallest p times (m - i + 1), kept monotone
    (an adjusted p is never below the one of a smaller raw p) and capped at 1."""
    return [float(p) for p in holm_exact([Fraction(p) for p in p_values])]


def holm_exact(p_values: Sequence[Fraction]) -> list[Fraction]:
    """``holm`` in exact arithmetic: whether p x k is below alpha is never decided by rounding (with 10,800 sign
    vectors, 270 x 2/10800 is 0.05 exactly, and 0.049999999999999996 in floating point)."""
    m = len(p_values)
    adjusted = [Fraction(1)] * m
    running = Fraction(0)
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(Fraction(1), (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def holm_factors(p_values: Sequence[Fraction], alpha: Fraction) -> list[int]:
    """Per p-value, the k with which Holm's procedure tested it (is p < alpha / k?): m - i for the i-th smallest
    (from 0) while the steps reject, then m - r for every p from the first kept one on (r rejected before it).

    A test is significant (its Holm-adjusted p below alpha) exactly when its p < alpha / k."""
    m = len(p_values)
    factors = [0] * m
    stopped = None
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        if stopped is None and p_values[index] * (m - rank) >= alpha:
            stopped = m - rank
        factors[index] = stopped if stopped is not None else m - rank
    return factors


# --- the sign-flip test -----------------------------------------------------------------------


@dataclass(frozen=True)
class SignFlip:
    """The sign-flip test of a mean per-task value, for the null "the values minus d are symmetric about 0",
    at every d at once.

    One set of sign vectors s counts a flip as extreme at d when |mean(s (x - d))| >= |mean(x) - d|.  For each s
    that holds on one closed interval of d, [low, high] (holding mean(x)), so the number of extreme flips at d,
    and the p-value, rise towards mean(x) and fall beyond it: the d kept at a level are one interval, from the
    n-th smallest low to the n-th largest high.  Kept: the smallest ``lows`` (ascending) and the largest
    ``highs`` (descending), as many as the widest interval asked for needs; ``extreme``: the flips as extreme
    at d = 0.  ``observed``: 1 when the flips are random (the observed signs count as one more), 0 when
    ``flips`` is every sign vector."""

    mean: float
    lows: np.ndarray
    highs: np.ndarray
    flips: int
    observed: int
    extreme: int

    def p_value(self) -> Fraction:
        """The p-value at d = 0, exact: (observed + extreme flips) / (observed + flips); never 0."""
        return Fraction(self.observed + self.extreme, self.observed + self.flips)

    def interval(self, alpha: Fraction) -> tuple[float | None, float | None]:
        """The d whose p-value is at least ``alpha`` (not rejected at that level); None for a side with no
        bound (the flips cannot reject at that level however far d goes)."""
        needed = max(0, math.ceil(alpha * (self.observed + self.flips)) - self.observed)
        if needed == 0:
            return None, None
        if needed > self.lows.size:
            raise ValueError(f"an interval at level {1 - alpha} needs more kept bounds than {self.lows.size}: "
                             "test with a larger widest")
        low, high = float(self.lows[needed - 1]) + 0.0, float(self.highs[needed - 1]) + 0.0  # + 0.0: no -0.0
        return (low if math.isfinite(low) else None), (high if math.isfinite(high) else None)


def sign_flip(values: np.ndarray, n_resamples: int = PERMUTATIONS, seed: int = 0, widest: float = 0.1) -> SignFlip:
    """The sign-flip test of the mean of ``values`` (one per task): every sign vector when there are at most
    ``n_resamples`` of them, else ``n_resamples`` seeded random ones; intervals at levels from 1 - ``widest`` up."""
    return sign_flips(np.asarray(values, dtype=float)[:, np.newaxis], n_resamples, seed, widest)[0]


def sign_flips(values: np.ndarray, n_resamples: int = PERMUTATIONS, seed: int = 0,
               widest: float = 0.1) -> list[SignFlip]:
    """``sign_flip`` of each column of ``values`` (tasks x tests), all with the same sign vectors: one matrix
    product per chunk of them for every test of a family on the same tasks.  Memory: per test, the bounds the
    widest interval needs (a share ``widest`` of the flips), not one per flip (20 models make 1,140 tests of
    45,600 flips)."""
    tasks, tests = values.shape
    means = values.mean(axis=0) if tasks else np.zeros(tests)
    exact = tasks <= 30 and 2**tasks <= n_resamples
    flips, observed = (2**tasks, 0) if exact else (n_resamples, 1)
    kept = max(1, min(flips, math.ceil(Fraction(str(widest)) * (observed + flips))))
    extreme = np.zeros(tests, dtype=np.int64)
    lows, highs = np.empty((tests, 0)), np.empty((tests, 0))
    for signs in (_every_sign(tasks) if exact else _sign_flips(tasks, n_resamples, seed)):
        low, high = _extreme_between(signs, values, means)
        extreme += np.count_nonzero((low <= 0) & (high >= 0), axis=1)
        lows = _smallest(np.concatenate([lows, low], axis=1), kept)
        highs = -_smallest(-np.concatenate([highs, high], axis=1), kept)
    lows.sort(axis=1)
    highs = -np.sort(-highs, axis=1)
    return [SignFlip(float(means[j]), lows[j], highs[j], flips, observed, int(extreme[j])) for j in range(tests)]


def _smallest(bounds: np.ndarray, kept: int) -> np.ndarray:
    """The ``kept`` smallest of each row, in no order."""
    if bounds.shape[1] <= kept:
        return bounds
    return np.partition(bounds, kept - 1, axis=1)[:, :kept]


def _extreme_between(signs: np.ndarray, values: np.ndarray, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row s of ``signs`` and column x of ``values``: the d where |A - d c| >= |mean - d| (A = mean(s x),
    c = mean(s)).

    The difference of squares factors as ((A - mean) - d (c - 1)) ((A + mean) - d (c + 1)): a concave quadratic
    in d (|c| < 1) with roots (A - mean) / (c - 1) and (A + mean) / (c + 1), non-negative between them; all
    signs equal (c = +-1) is as extreme everywhere.  |A| within ``_TIE`` of |mean| is set to |mean| exactly,
    so a tie is a root at exactly 0, counted as extreme, whatever the rounding of the sums."""
    tasks = values.shape[0]
    flipped = (values.T @ signs.T) / tasks  # one row per test, one column per sign vector
    c = signs.sum(axis=1) / tasks
    size = np.abs(values).max(axis=0) if tasks else np.zeros(values.shape[1])
    tie = (_TIE * np.maximum(1.0, size))[:, np.newaxis]
    mean, level = means[:, np.newaxis], np.abs(means)[:, np.newaxis]
    flipped = np.where(np.abs(np.abs(flipped) - level) <= tie, np.copysign(level, flipped), flipped)
    with np.errstate(divide="ignore", invalid="ignore"):
        first, second = (flipped - mean) / (c - 1), (flipped + mean) / (c + 1)
    same = np.abs(c) >= 1 - 0.5 / max(tasks, 1)
    low = np.where(same, -np.inf, np.minimum(first, second))
    high = np.where(same, np.inf, np.maximum(first, second))
    # each interval holds the mean (there the inequality reads |...| >= 0); rounding must not move it out
    return np.minimum(low, mean), np.maximum(high, mean)


def sign_flip_p(differences: np.ndarray, n_resamples: int = PERMUTATIONS, seed: int = 0) -> float:
    """Two-sided p of a mean per-task difference under sign flips, never 0 (see ``SignFlip.p_value``)."""
    return float(sign_flip(differences, n_resamples, seed).p_value())


@functools.lru_cache(maxsize=8)
def _sign_flips(tasks: int, n_resamples: int, seed: int) -> tuple[np.ndarray, ...]:
    """The random signs (+1 or -1) of ``n_resamples`` flips of ``tasks`` values, in chunks of ``_CHUNK`` rows
    (bounded memory with hundreds of tasks).  They depend on nothing else, so every pair and metric of a split
    shares them: drawn once, not once per comparison (a 7-model table makes 126 of them per split)."""
    rng = np.random.default_rng(seed)
    chunks = []
    for start in range(0, n_resamples, _CHUNK):
        size = min(_CHUNK, n_resamples - start)
        signs = rng.integers(0, 2, size=(size, tasks), dtype=np.int8) * np.int8(2) - np.int8(1)
        signs.setflags(write=False)  # shared by every caller
        chunks.append(signs)
    return tuple(chunks)


@functools.lru_cache(maxsize=4)
def _every_sign(tasks: int) -> tuple[np.ndarray, ...]:
    """Every one of the 2^tasks sign vectors (tasks small), as one read-only matrix."""
    signs = np.array(list(itertools.product((1, -1), repeat=tasks)), dtype=np.int8).reshape(2**tasks, tasks)
    signs.setflags(write=False)
    return (signs,)


# --- per-task values ----------------------------------------------------------------------


def task_differences(a: TaskColumns, b: TaskColumns, cost_a: float, cost_b: float,
                     settings: MetricSettings) -> dict[str, np.ndarray | None]:
    """Per metric, one value per shared task whose mean is the metric's a - b exactly (None when the metric is
    undefined on a side).

    A mean metric: the two models' per-task values subtracted.  Effective cost (a ratio of means, see
    ``_effective_cost_differences``) and hype gap (a mean minus a ratio): linearised.  Hype gap: each model's
    figure plus each task's influence on its ratio F / K ((f_t - (F / K) k_t) / K, summing to 0 over the
    tasks); when every first candidate was judged (K = 1) that is the per-task any-pass minus first-pass,
    a mean, and the test is exact."""
    found: dict[str, np.ndarray | None] = {metric: getattr(a, column) - getattr(b, column)
                                           for metric, column in TASK_MEAN_COLUMNS.items()}
    found["effective_cost"] = _effective_cost_differences(a, b, cost_a + settings.review_cost,
                                                          cost_b + settings.review_cost)
    gaps = [_hype_gap_values(columns) for columns in (a, b)]
    found["hype_gap"] = None if gaps[0] is None or gaps[1] is None else gaps[0] - gaps[1]
    return found


def _effective_cost_differences(a: TaskColumns, b: TaskColumns, price_a: float, price_b: float) -> np.ndarray | None:
    """Per task, with u the spend (price x expected attempts) and s the success at the cap, U and S their means:
    ((u_a - L s_a) - (u_b - L s_b)) (S_a + S_b) / (2 S_a S_b), L = (U_a + U_b) / (S_a + S_b) the pooled cost per
    success.  Its mean is U_a / S_a - U_b / S_b exactly.  Pooled, not each model's own L and S: swapping the two
    models' outcomes on a task leaves L and S_a + S_b as they are and only negates that task's value, so for two
    models at one price the sign flips are exactly the swaps, and the test exact (the positive factor changes
    no p-value).  None when a side has no success (infinite effective cost)."""
    success_a, success_b = float(a.success_at_cap.mean()), float(b.success_at_cap.mean())
    if success_a <= 0 or success_b <= 0:
        return None
    spend_a, spend_b = price_a * a.attempts_at_cap, price_b * b.attempts_at_cap
    pooled = (float(spend_a.mean()) + float(spend_b.mean())) / (success_a + success_b)
    centred = (spend_a - pooled * a.success_at_cap) - (spend_b - pooled * b.success_at_cap)
    result: np.ndarray = centred * (success_a + success_b) / (2 * success_a * success_b)
    return result


def _hype_gap_values(columns: TaskColumns) -> np.ndarray | None:
    first = _first_attempt_values(columns)
    if first is None:
        return None  # no first candidate judged: no hype gap
    result: np.ndarray = columns.any_pass - first
    return result


def _first_attempt_values(columns: TaskColumns) -> np.ndarray | None:
    """Per task, the first-attempt pass rate F / K (first PASSes over first candidates judged) plus the task's
    influence on it, (f_t - (F / K) k_t) / K: their mean is F / K exactly.  None when no first candidate was judged."""
    known = float(columns.first_known.mean())
    if known <= 0:
        return None
    first = float(columns.first_pass.mean()) / known
    result: np.ndarray = first + (columns.first_pass - first * columns.first_known) / known
    return result


# --- the family ---------------------------------------------------------------------------


def compare_pair(a: Entrant, b: Entrant, settings: MetricSettings,
                 metrics: Sequence[str] = PAIRWISE_METRICS) -> list[dict[str, Any]]:
    """a - b per metric on the shared tasks: ``metric``, ``difference``, ``values`` (per task, their mean the
    difference), ``tasks`` (how many), ``task_ids``.  A metric undefined on a side (an effective cost with no
    success), or fewer than 2 shared tasks, is left out: it has nothing to test.  ValueError when no task is
    shared."""
    shared = shared_task_ids(a.tallies, b.tallies)
    if len(shared) < 2:
        return []
    columns_a, columns_b = (_columns(entrant.tallies, shared, settings) for entrant in (a, b))
    differences = task_differences(columns_a, columns_b, a.cost, b.cost, settings)
    found = []
    for metric in metrics:
        values = differences.get(metric)
        if values is None:
            continue
        found.append({"metric": metric, "difference": float(values.mean()), "values": values, "tasks": len(shared),
                      "task_ids": tuple(shared)})
    return found


def _columns(tallies: Sequence[TaskTally], task_ids: list[str], settings: MetricSettings) -> TaskColumns:
    by_id = {t.task_id: t for t in judged_tallies(tallies)}
    return task_columns([by_id[task_id] for task_id in task_ids], settings.retry_cap)


def flips_for(tests: int, alpha: float = ALPHA) -> int:
    """Random sign flips per test in a family of ``tests``: at least ``PERMUTATIONS``, and enough that the smallest
    p, 1 / (1 + flips), is at most half of Holm's first threshold alpha / tests."""
    return max(PERMUTATIONS, math.ceil(2 * tests / alpha) - 1)


def pairwise(splits: Mapping[str, Sequence[Entrant]], settings: MetricSettings,
             metrics: Sequence[str] = PAIRWISE_METRICS, *, seed: int = 0, alpha: float = ALPHA) -> list[PairwiseEntry]:
    """Every pair x metric of every split with 2+ models, Holm-adjusted per split (one family per split).

    Entries: ``split``, ``a``, ``b``, ``metric``, ``difference`` (a - b), ``interval`` (at ``level``),
    ``level``, ``p_adjusted``, ``significant``, ``tasks``.  Pairs sharing no judged task are left out."""
    found = []
    for split, entrants in splits.items():
        family = []
        for a, b in combinations([e for e in entrants if judged_tallies(e.tallies)], 2):
            try:
                entries = compare_pair(a, b, settings, metrics)
            except ValueError:  # no shared task: nothing to pair on
                continue
            family += [{"split": split, "a": a.model, "b": b.model, **entry} for entry in entries]
        holm_family(family, seed=seed, alpha=alpha)
        found += [_ordered(entry) for entry in family]
    return found


def holm_family(family: list[dict[str, Any]], *, seed: int = 0, alpha: float = ALPHA) -> None:
    """Test one Holm family in place: each entry's ``values`` (per task, their mean the difference) and
    ``task_ids`` are taken out, and ``interval``, ``level``, ``p_adjusted`` and ``significant`` put in.  Also the
    family of analysis/serving.py (the routes of one model), so both are tested alike."""
    level_alpha = Fraction(str(alpha))  # 0.05 as 1/20, not as its binary float
    tests = _tests(family, flips_for(len(family), alpha), seed, alpha)
    p_values = [test.p_value() for test in tests]
    factors = holm_factors(p_values, level_alpha)
    for entry, test, adjusted, factor in zip(family, tests, holm_exact(p_values), factors):
        entry["interval"] = list(test.interval(level_alpha / factor))
        entry["level"] = float(1 - level_alpha / factor)
        entry["p_adjusted"] = float(adjusted)
        entry["significant"] = bool(adjusted < level_alpha)


def _tests(family: list[dict[str, Any]], flips: int, seed: int, alpha: float) -> list[SignFlip]:
    """The sign-flip test of each entry (taking its ``values`` and ``task_ids`` out), the entries on the same
    tasks tested together."""
    by_tasks: dict[tuple[str, ...], list[int]] = {}
    for position, entry in enumerate(family):
        by_tasks.setdefault(entry.pop("task_ids"), []).append(position)
    tests: list[SignFlip | None] = [None] * len(family)
    for positions in by_tasks.values():
        values = np.column_stack([family[position].pop("values") for position in positions])
        for position, test in zip(positions, sign_flips(values, flips, seed, widest=alpha)):
            tests[position] = test
    return [test for test in tests if test is not None]


#: Why a comparison's interval is a single point: every shared task differs by the same amount (both models at 100%
#: on every task, say), so no flip of signs moves the mean and the test inverts to that one value.
DEGENERATE = ("every shared task differs by the same amount: the interval is that one value, a statement of these "
              "tasks, not a range that covers at its level")


def _ordered(entry: dict[str, Any]) -> PairwiseEntry:
    ordered: PairwiseEntry = {
        "split": entry["split"], "a": entry["a"], "b": entry["b"], "metric": entry["metric"],
        "difference": entry["difference"], "interval": entry["interval"], "level": entry["level"],
        "p_adjusted": entry["p_adjusted"], "significant": entry["significant"], "tasks": entry["tasks"]}
    low, high = ordered["interval"]
    if low is not None and low == high:  # said, never left to read as certainty (docs/reference/results.md)
        ordered["degenerate"] = DEGENERATE
    return ordered


def indistinguishable(entries: Sequence[Mapping[str, Any]], split: str, metric: str = "pass_rate") -> list[tuple[str, str]]:
    """The pairs of a split not shown different on ``metric``, in the order of ``entries``."""
    return [(e["a"], e["b"]) for e in entries
            if e.get("split") == split and e.get("metric") == metric and not e.get("significant")]


# --- one release against its baseline -------------------------------------------------------------

#: Per metric of ``metrics.compute_metrics`` outside the family that is a mean over tasks, the column it is the
#: mean of (``pass_at_cap`` only with a retry cap other than 4).
_OTHER_MEAN_COLUMNS = {"pass_at_4_unbiased": "unbiased_at_4", "pass_at_10_unbiased": "unbiased_at_10",
                       "pass_at_cap": "success_at_cap"}


def paired_comparison(current: Sequence[TaskTally], baseline: Sequence[TaskTally], cost_current: float,
                      cost_baseline: float, settings: MetricSettings = MetricSettings(), *,
                      n_resamples: int = PERMUTATIONS, seed: int = 0,
                      level: float = 0.95) -> dict[str, PairedDifference]:
    """Current minus baseline for every metric, on the tasks both runs judged (``--baseline``).

    Per metric: ``current``, ``baseline`` (both on the shared tasks), ``difference``, its interval ``low``/``high``
    and ``tasks``.  The interval is the sign-flip test's inversion at ``level`` on the per-task values of
    ``task_differences`` (the d it does not reject, as in the family above, but for this one comparison, so not
    corrected): at d = 0 the test is exact for two releases exchangeable within each task (two runs of one model:
    the interval holds 0 in at least ``level`` of them, whatever the pass rate); for d other than 0 it assumes the
    per-task values are symmetric about d.  An earlier version gave a paired BCa bootstrap, which held 0 in as
    few as 67% of such runs near 0% and 100%.  Both bounds None: the metric is undefined on a side, or the test
    cannot reject at ``level`` however far d goes (5 shared tasks or fewer at 95%).  Every shared task changed by
    the same amount: the interval is that one value (analysis/enrich.py marks it degenerate).  ``n_resamples``
    and ``seed``: the random sign flips (every sign vector when there are fewer), as in ``sign_flip``."""
    alpha = _alpha_of(level, n_resamples)
    shared = shared_task_ids(current, baseline)
    now, before = (_columns(tallies, shared, settings) for tallies in (current, baseline))
    point_now, point_before = _point(now, cost_current, settings), _point(before, cost_baseline, settings)
    intervals = _baseline_intervals(_baseline_values(now, before, cost_current, cost_baseline, settings),
                                    n_resamples, seed, alpha)
    found: dict[str, PairedDifference] = {}
    for name in metric_names(settings):
        low, high = intervals.get(name, (None, None))
        value_now, value_before = point_now[name], point_before[name]
        difference = None if value_now is None or value_before is None else value_now - value_before
        if difference is None:
            low = high = None
        found[name] = {"current": value_now, "baseline": value_before, "difference": difference, "low": low,
                       "high": high, "tasks": len(shared)}
    return found


def _alpha_of(level: float, n_resamples: int) -> Fraction:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a whole number >= 1, got {n_resamples!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1 (0.95 for 95%), got {level!r}")
    return 1 - Fraction(str(level))  # 0.95 as 19/20, not as its binary float


def _point(columns: TaskColumns, cost: float, settings: MetricSettings) -> dict[str, float | None]:
    everything = np.arange(columns.tasks)[np.newaxis, :]
    return {name: finite_or_none(v[0]) for name, v in metric_table(columns, everything, cost, settings).items()}


def _baseline_values(now: TaskColumns, before: TaskColumns, cost_now: float, cost_before: float,
                     settings: MetricSettings) -> dict[str, np.ndarray | None]:
    """``task_differences`` for every metric of ``compute_metrics``: the family's six, the other means, and the
    first-attempt pass rate (a ratio, linearised as the hype gap's second term)."""
    found = task_differences(now, before, cost_now, cost_before, settings)
    found |= {metric: getattr(now, column) - getattr(before, column) for metric, column in _OTHER_MEAN_COLUMNS.items()}
    firsts = [_first_attempt_values(columns) for columns in (now, before)]
    found["first_attempt_pass_rate"] = None if firsts[0] is None or firsts[1] is None else firsts[0] - firsts[1]
    return found


def _baseline_intervals(values: Mapping[str, np.ndarray | None], n_resamples: int, seed: int,
                        alpha: Fraction) -> dict[str, tuple[float | None, float | None]]:
    """Per metric with a finite value on every task (an unbiased Pass@k of a task with fewer judged candidates is
    NaN), the interval at 1 - alpha; every metric tested with the same sign vectors, as a family is."""
    tested = {name: column for name, column in values.items() if column is not None and np.isfinite(column).all()}
    if not tested:
        return {}
    tests = sign_flips(np.column_stack(list(tested.values())), n_resamples, seed, widest=float(alpha))
    return {name: _bounds(column, test, alpha) for (name, column), test in zip(tested.items(), tests)}


def _bounds(column: np.ndarray, test: SignFlip, alpha: Fraction) -> tuple[float | None, float | None]:
    """The test's interval; exactly one value when every task's value is the same (up to rounding: 0.6 - 0.5 and
    0.3 - 0.2 differ in the last bit), so that it reads as degenerate whatever the rounding."""
    spread = float(np.ptp(column))
    if column.size > 1 and spread <= _TIE * max(1.0, float(np.abs(column).max())):
        return test.mean + 0.0, test.mean + 0.0  # + 0.0: no -0.0
    return test.interval(alpha)
