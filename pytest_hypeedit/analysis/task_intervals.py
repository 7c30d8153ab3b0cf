"""The intervals of the benchmark's metrics over tasks: valid at 0% and 100%, and saying when they cannot be given.

What an interval covers (its target): the metric as this benchmark measures it, over the population of tasks
like these, with this run's repeats per task (Pass@4, expected attempts and effective cost plug k_t / R into
non-linear formulas, so they are the figures R repeats give, not the same formulas on the tasks' true rates).

Method: Clopper-Pearson with an effective number of trials (Korn & Graubard 1998, the interval of a proportion
from a clustered sample).  Every metric but the hype gap with missing first repeats is a mean over tasks of a
per-task value in a bounded range, or (effective cost) the unit cost over a ratio of such means:

* the value is rescaled to [0, 1] (expected attempts: (E - 1) / (A - 1)) and its mean m gets the
  Clopper-Pearson interval of m x n successes in n trials, n = m (1 - m) / var(m): the binomial sample as
  informative as the tasks are.  Tasks all alike in an all-or-nothing way give n = T (one trial per task),
  tasks whose candidates are independent draws of one rate give n = T x R; n is kept between those two.
* var(m) is the tasks' variance with a quarter of a pseudo-task at each end of the range (PSEUDO_TASKS): with
  50 tasks near 100% a run often holds no failing task at all, and its sample variance then says the mean is
  known to the third decimal when a hopeless task in 50 would move it by two points.  The bootstrap (BCa) had
  that weakness: a 98% model's Pass@10 interval was [100%, 100%], covering 0-27.5% of runs in
  bench/bench_intervals.py (2.6% in the issue's simulation).
* the number of tasks' t quantile replaces the normal one (Korn & Graubard's degrees of freedom).
* effective cost = unit cost x mean E / mean S = unit cost / r, r = sum S / sum E (success per attempt, in
  [0, 1]): r gets the interval above with a ratio's linearised variance, and the bounds are inverted; r's
  fewest effective trials are those of tasks that always or never pass (T x E_b^2 / A, E_b their mean attempts).

A figure with no interval says why in ``notes``: no candidate passed (effective cost has no finite value; its
lower bound is in the note), an upper bound past UNBOUNDED_ATTEMPTS x retry cap attempts per success, fewer than
2 tasks.  ``bench/bench_intervals.py`` prints the coverage at 2%, 50% and 98% pass rates.  Pure: numpy only.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from .metrics import MetricSettings, TaskColumns, TaskTally, compute_metrics, judged_tallies, metric_names, task_columns
from .stats import Interval, bootstrap_intervals

#: Weight of the pseudo-task at each end of a metric's range in the tasks' variance (see the docstring): 0.25
#: covered at least 95% in every regime of bench/bench_intervals.py; 0 covered 70% (Pass@4 of a 98% model).
PSEUDO_TASKS = 0.25
#: Beyond this many attempts per success (x retry cap) an effective cost's upper bound is no figure.
UNBOUNDED_ATTEMPTS = 1000
METHOD = "Clopper-Pearson with effective trials over tasks (Korn-Graubard)"
TARGET_TEXT = ("the metric as this benchmark measures it, over the population of tasks like these, with this "
               "run's repeats per task")
_NORMAL = NormalDist()


@dataclass(frozen=True)
class TaskIntervals:
    """Each metric's interval (None: none given); for a metric without one, why; and the lower bound of an
    effective cost whose upper bound cannot be given."""

    bounds: dict[str, Interval | None]
    notes: dict[str, str] = field(default_factory=dict)
    lower_only: dict[str, float] = field(default_factory=dict)


def task_intervals(tallies: Sequence[TaskTally], cost_per_candidate: float,
                   settings: MetricSettings = MetricSettings(), *, level: float = 0.95, n_resamples: int = 1000,
                   seed: int = 0) -> TaskIntervals:
    """The interval of every metric of ``compute_metrics`` (see the module docstring); ``n_resamples`` and ``seed``
    serve the one metric left to the bootstrap (the hype gap of a run missing some repeat 1)."""
    names = metric_names(settings)
    point = compute_metrics(tallies, cost_per_candidate, settings)
    columns = task_columns(tallies, settings.retry_cap)
    if columns.tasks < 2:
        note = "fewer than 2 tasks: no interval over tasks"
        return TaskIntervals({name: None for name in names}, {name: note for name in names if point[name] is not None})
    candidates = sum(t.judged for t in judged_tallies(tallies))
    found: dict[str, Interval | None] = {}
    notes: dict[str, str] = {}
    lower_only: dict[str, float] = {}
    for name, (values, low_end, high_end) in _bounded_means(columns, settings).items():
        if point.get(name) is None or values is None:
            found[name] = None
            continue
        found[name] = _rescaled(proportion_interval(_unit(values, low_end, high_end), candidates, level),
                                low_end, high_end)
    if "hype_gap" not in found:
        found["hype_gap"] = _bootstrap_hype_gap(tallies, cost_per_candidate, settings, point, level,
                                                n_resamples, seed, notes)
    found["effective_cost"] = _effective_cost(columns, cost_per_candidate + settings.review_cost, settings.retry_cap,
                                              candidates, level, notes, lower_only)
    return TaskIntervals({name: found.get(name) for name in names}, notes, lower_only)


def _bounded_means(columns: TaskColumns, settings: MetricSettings
                   ) -> dict[str, tuple[np.ndarray | None, float, float]]:
    """Per metric that is a mean of a bounded per-task value: (the values, or None when undefined; the range)."""
    cap = float(settings.retry_cap)
    known = columns.first_known > 0
    means: dict[str, tuple[np.ndarray | None, float, float]] = {
        "pass_rate": (columns.pass_rate, 0.0, 1.0),
        "pass_at_4": (columns.success_at_4, 0.0, 1.0),
        "pass_at_10": (columns.any_pass, 0.0, 1.0),
        "expected_attempts": (columns.attempts_at_cap, 1.0, cap),
        "first_attempt_pass_rate": (columns.first_pass[known] if known.sum() >= 2 else None, 0.0, 1.0),
        "pass_at_4_unbiased": (_defined(columns.unbiased_at_4), 0.0, 1.0),
        "pass_at_10_unbiased": (_defined(columns.unbiased_at_10), 0.0, 1.0),
    }
    if known.all():  # a repeat 1 passed only where a repeat passed: the gap is one task's 0 or 1
        means["hype_gap"] = (columns.any_pass - columns.first_pass, 0.0, 1.0)
    if settings.retry_cap != 4:
        means["pass_at_cap"] = (columns.success_at_cap, 0.0, 1.0)
    return means


def _defined(column: np.ndarray) -> np.ndarray | None:
    return None if np.isnan(column).any() else column


def _unit(values: np.ndarray, low_end: float, high_end: float) -> np.ndarray:
    if high_end == low_end:
        return np.zeros_like(values)
    result: np.ndarray = np.clip((values - low_end) / (high_end - low_end), 0.0, 1.0)
    return result


def _rescaled(interval: Interval, low_end: float, high_end: float) -> Interval:
    if high_end == low_end:  # a retry cap of 1: one attempt, always; no uncertainty to state
        return low_end, low_end
    span = high_end - low_end
    return low_end + interval[0] * span, low_end + interval[1] * span


# --------------------------------------------------------------------------- the interval of a mean in [0, 1]


def proportion_interval(values: np.ndarray, candidates: int, level: float) -> Interval:
    """The Clopper-Pearson interval of the mean of per-task ``values`` in [0, 1] with Korn-Graubard trials."""
    tasks = values.size
    mean = float(values.mean())
    pseudo = PSEUDO_TASKS * (mean**2 + (1.0 - mean) ** 2)
    variance = (float(np.sum((values - mean) ** 2)) + pseudo) / (tasks - 1 + PSEUDO_TASKS) / tasks
    return clopper_pearson(mean, _trials(_binomial_trials(mean, variance), tasks, candidates, tasks), level)


def _binomial_trials(mean: float, variance: float) -> float:
    """The trials a binomial share of this mean needs to have this variance (Korn and Graubard's n*)."""
    if variance > 0:
        return mean * (1.0 - mean) / variance
    return math.inf if 0 < mean < 1 else 0.0


def _trials(estimate: float, fewest: float, most: float, tasks: int) -> float:
    """Effective trials kept in [fewest, most], then scaled by (z / t_{T-1})^2 for the number of tasks."""
    kept = min(max(estimate, fewest), max(most, fewest))
    return kept * (_NORMAL.inv_cdf(0.975) / t_quantile(0.95, tasks - 1)) ** 2


def clopper_pearson(share: float, trials: float, level: float) -> Interval:
    """The exact binomial interval of share x trials successes in ``trials`` (both may be fractional)."""
    successes, tail = share * trials, (1.0 - level) / 2.0
    low = beta_quantile(tail, successes, trials - successes + 1) if successes > 0 else 0.0
    high = beta_quantile(1.0 - tail, successes + 1, trials - successes) if successes < trials else 1.0
    return low, high


def beta_quantile(q: float, a: float, b: float) -> float:
    """x with I_x(a, b) = q (the Beta distribution's quantile): Newton's steps on I_x, kept inside a shrinking
    bracket (a bisection where a step would leave it), to 1e-13."""
    low, high, x = 0.0, 1.0, 0.5
    log_norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    for _ in range(400):
        if not 0.0 < x < 1.0:  # the bracket closed on an end: a quantile below the smallest float (a tiny a) is 0
            return x
        gap = regularized_beta(x, a, b) - q
        low, high = (x, high) if gap < 0 else (low, x)
        density = math.exp(log_norm + (a - 1) * math.log(x) + (b - 1) * math.log1p(-x))
        step = x - gap / density if density > 0 else math.nan
        # a bisection near 0 halves on the log scale: a tail quantile can be 1e-80
        middle = math.sqrt(max(low, 1e-300) * high) if high < 1e-3 else (low + high) / 2
        following = step if low < step < high else middle
        if abs(following - x) < 1e-13 * max(x, 1e-300) or high - low < 1e-300:
            return following
        x = following
    return x


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b) by its continued fraction (modified Lentz; Numerical Recipes 6.4)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast on this side only
        return 1.0 - regularized_beta(1.0 - x, b, a)
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    return math.exp(log_front) * _beta_fraction(x, a, b) / a


def _beta_fraction(x: float, a: float, b: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 10_000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return result


@functools.lru_cache(maxsize=256)
def t_quantile(level: float, dof: int) -> float:
    """Student's t quantile for a two-sided ``level``: bisection on the t distribution's CDF, integrated by
    Simpson's rule (no scipy here; 1e-6 is ample for an interval's half-width).  Cached: every metric of every
    row asks for the same few (level, tasks - 1), and each bisection costs ~5 ms."""
    if dof < 1:
        return math.inf
    target = level / 2  # P(0 < T < t)
    low, high = 0.0, 1.0
    while _t_mass(high, dof) < target:
        high *= 2
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if _t_mass(middle, dof) < target else (low, middle)
    return (low + high) / 2


def _t_mass(x: float, dof: int, steps: int = 400) -> float:
    """P(0 < T < x) for Student's t with ``dof`` degrees of freedom."""
    log_norm = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)
    grid = np.linspace(0.0, x, steps + 1)
    density = np.exp(log_norm - (dof + 1) / 2 * np.log1p(grid * grid / dof))
    weights = np.ones(steps + 1)
    weights[1:-1:2], weights[2:-1:2] = 4, 2
    return float(density @ weights) * x / (3 * steps)


# --------------------------------------------------------------------------- effective cost and the hype gap


def success_per_attempt_interval(columns: TaskColumns, retry_cap: int, candidates: int,
                                 level: float) -> tuple[float, Interval]:
    """r = sum S / sum E over tasks and its interval (see the module docstring)."""
    success, attempts = columns.success_at_cap, columns.attempts_at_cap
    tasks = columns.tasks
    rate = float(success.sum() / attempts.sum())
    residual = success - rate * attempts
    pseudo = PSEUDO_TASKS * ((rate * retry_cap) ** 2 + (1.0 - rate) ** 2)  # a task never, one always passing
    variance = (float(np.sum(residual**2)) + pseudo) / (tasks - 1 + PSEUDO_TASKS) / tasks / float(attempts.mean()) ** 2
    never = (1.0 - rate) / (1.0 + rate * (retry_cap - 1))  # the share of never-passing tasks giving r, all or nothing
    fewest = tasks * (1.0 + (retry_cap - 1) * never) ** 2 / retry_cap
    return rate, clopper_pearson(rate, _trials(_binomial_trials(rate, variance), fewest, candidates, tasks), level)


def _effective_cost(columns: TaskColumns, unit_cost: float, retry_cap: int, candidates: int, level: float,
                    notes: dict[str, str], lower_only: dict[str, float]) -> Interval | None:
    if unit_cost == 0:
        return 0.0, 0.0
    rate, (low_rate, high_rate) = success_per_attempt_interval(columns, retry_cap, candidates, level)
    low = unit_cost / high_rate
    if rate == 0 or low_rate < 1.0 / (UNBOUNDED_ATTEMPTS * retry_cap):
        lower_only["effective_cost"] = low
    if rate == 0:
        notes["effective_cost"] = (f"no candidate passed: no finite effective cost; at {level:.0%} it is at least "
                                   f"${low:.2f} per success")
        return None
    if low_rate < 1.0 / (UNBOUNDED_ATTEMPTS * retry_cap):
        notes["effective_cost"] = (f"too few passes to bound it above (the interval allows almost never "
                                   f"succeeding): at {level:.0%} at least ${low:.2f} per success")
        return None
    return low, unit_cost / low_rate


def _bootstrap_hype_gap(tallies: Sequence[TaskTally], cost: float, settings: MetricSettings,
                        point: dict[str, float | int | None], level: float, n_resamples: int, seed: int,
                        notes: dict[str, str]) -> Interval | None:
    """Some task lacks its repeat 1: the gap mixes two denominators, so the task bootstrap (BCa) gives it; an
    interval of no width (every resample alike) is no interval and is marked."""
    if point.get("hype_gap") is None:
        return None
    interval = bootstrap_intervals(tallies, cost, settings, n_resamples=n_resamples, seed=seed,
                                   level=level)["hype_gap"]
    if interval is not None and interval[0] == interval[1]:
        notes["hype_gap"] = "every resample of the tasks gave the same hype gap: no interval over tasks"
        return None
    return interval


__all__ = ["PSEUDO_TASKS", "METHOD", "TARGET_TEXT", "TaskIntervals", "task_intervals", "proportion_interval",
           "clopper_pearson", "beta_quantile", "t_quantile", "regularized_beta", "success_per_attempt_interval"]
