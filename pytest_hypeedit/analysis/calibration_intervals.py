"""The intervals of the calibrated figures: which method, on which scale, inside which range, saying what they cover.

Pure: numpy only, no I/O.  analysis/calibration.py computes each metric's point estimate, its bootstrap
replicates and its leave-one-task-out (jackknife) values; this module turns them into an interval entry.

* **Pass rate: a cluster t interval** on the per-task values whose mean the estimate is (prediction-powered:
  the judge's share plus the sample's weighted correction, per task).  Those values are skewed with a small
  human sample (most tasks hold no label, a few hold a large correction), so the bootstrap's percentiles fall
  short: in the issue's simulation 79/84/86.5% coverage with 10/20/30 labels, against 97/94/92.5% for the t
  interval on the same values.  For a mean the jackknife pseudo-values are the per-task values themselves, so
  the t interval is computed from the jackknife values (one code path for both estimators).
* **Every other metric: BCa** (the task bootstrap re-estimating the judge's error, stats.py), and with fewer
  than SMALL_SAMPLE labels in the row the hull of it and the jackknife t interval (the wider of the two on
  each side): the same small-sample weakness, and the t interval is the one shown to hold for the mean.
* **Effective cost** is attempts x unit cost / success: its interval is computed for success per attempt,
  bounded in [0, 1], and inverted.  An upper bound above UNBOUNDED_ATTEMPTS_PER_SUCCESS x retry cap attempts
  per success (a success rate the interval cannot tell from 0) is ``None`` with ``high_unbounded: true``: a
  bound of $1e76 is not a figure, and JSON has no infinity.
* Every bound is kept inside the metric's range: [0, 1] for rates, [-1, 1] for the hype gap, [1, retry cap]
  for expected attempts, >= 0 for cost.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np

from .stats import bca_interval
from .task_intervals import t_quantile

#: Fewer human labels than this in a row: the intervals widen (see above) and the output warns.
SMALL_SAMPLE = 30
#: Beyond this many attempts per success (x retry cap) an effective cost's upper bound is "unbounded".
UNBOUNDED_ATTEMPTS_PER_SUCCESS = 1000
#: What an interval of the calibrated (and human-sample) figures covers.
TARGET = "population"
TARGET_TEXT = ("the metric over the population of tasks like these, with the human panel's verdicts, measured "
               "with this run's repeats")
T_METHOD = "cluster t over tasks"
BCA_METHOD = "BCa task bootstrap"
HULL_METHOD = "BCa task bootstrap widened to the cluster t (jackknife) interval (small sample)"

_NORMAL = NormalDist()
_RATES = ("pass_rate", "pass_at_4", "pass_at_10", "first_attempt_pass_rate")


def expanded_level(level: float, tasks: int) -> float:
    """The bootstrap's level widened for a small number of tasks (Hesterberg's expanded percentile interval,
    2015): the normal quantile z becomes sqrt(n / (n - 1)) t_{n-1}, since resampling n tasks understates the
    spread by about that.  With 50 tasks, 95% becomes 95.8%."""
    if tasks < 3:
        return level
    return 2 * _NORMAL.cdf(math.sqrt(tasks / (tasks - 1)) * t_quantile(level, tasks - 1)) - 1


def cluster_t(estimate: float, jack: np.ndarray, level: float) -> tuple[float, float] | None:
    """estimate -/+ t_{n-1} x the jackknife standard error sqrt((n-1)/n sum (theta_(i) - mean)^2).

    For a mean over tasks that standard error is exactly s / sqrt(n) of the per-task values: the cluster t
    interval.  Scaled by the largest deviation first, so values near 1e116 cannot overflow."""
    values = jack[np.isfinite(jack)]
    n = values.size
    if n < 3 or not math.isfinite(estimate):
        return None
    deviations = values - values.mean()
    scale = float(np.abs(deviations).max())
    if scale == 0:
        return estimate, estimate
    error = scale * math.sqrt((n - 1) / n * float(np.sum((deviations / scale) ** 2)))
    half = t_quantile(level, n - 1) * error
    return estimate - half, estimate + half


def metric_range(key: str, retry_cap: int) -> tuple[float, float]:
    if key in _RATES:
        return 0.0, 1.0
    if key == "hype_gap":
        return -1.0, 1.0
    if key == "expected_attempts":
        return 1.0, float(retry_cap)
    return 0.0, math.inf


def clipped(interval: tuple[float, float] | None, key: str, retry_cap: int) -> tuple[float, float] | None:
    if interval is None:
        return None
    low, high = metric_range(key, retry_cap)
    return min(max(interval[0], low), high), max(min(interval[1], high), low)


def hull(first: tuple[float, float] | None, second: tuple[float, float] | None) -> tuple[float, float] | None:
    """The smallest interval holding both (either may be None)."""
    if first is None or second is None:
        return first or second
    return min(first[0], second[0]), max(first[1], second[1])


def entry(value: float, interval: tuple[float, float] | None, level: float, method: str | None, *, key: str,
          retry_cap: int, **extra: Any) -> dict[str, Any]:
    """A metric's JSON entry: finite values or null, the level and target it is stated for.

    The value is kept in the metric's range too: the prediction-powered pass rate is unbiased but can fall
    below 0 (a judge PASS people failed, on a model that almost never passes); a pass rate of -2% is no figure."""
    low_end, high_end = metric_range(key, retry_cap)
    value = min(max(float(value), low_end), high_end) if math.isfinite(float(value)) else float(value)
    low, high = interval if interval else (None, None)
    found = {"value": value if math.isfinite(value) else None, "low": _finite(low), "high": _finite(high),
             "level": level, "target": TARGET}
    if method and interval:
        found["interval_method"] = method
    found.update(extra)
    return found


def refused(reason: str) -> dict[str, Any]:
    """A metric the sample cannot calibrate soundly: no figure, and why."""
    return {"value": None, "low": None, "high": None, "reason": reason}


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def cost_from_success_rate(rate_interval: tuple[float, float] | None, unit_cost: float, retry_cap: int) -> tuple[tuple[float, float] | None, bool]:
    """Effective cost's interval from the interval of success per attempt: (interval, upper bound unbounded).

    cost = unit cost / (success per attempt), so the bounds swap; below 1 success per
    UNBOUNDED_ATTEMPTS_PER_SUCCESS x retry cap attempts the upper bound is unbounded (None)."""
    if rate_interval is None:
        return None, False
    low_rate, high_rate = (min(max(x, 0.0), 1.0) for x in rate_interval)
    floor = 1.0 / (UNBOUNDED_ATTEMPTS_PER_SUCCESS * retry_cap)
    unbounded = low_rate < floor
    if unit_cost == 0:
        return (0.0, 0.0), False
    low = unit_cost / high_rate if high_rate > 0 else math.inf
    high = math.inf if unbounded else unit_cost / low_rate
    return (low, high), unbounded


def interval_of(key: str, estimate: float, boot: np.ndarray, jack: np.ndarray, level: float, *, labels: int,
                tasks: int, linear: bool) -> tuple[tuple[float, float] | None, str]:
    """A metric's interval before clipping, and the method that made it (see the module docstring)."""
    if linear:
        return cluster_t(estimate, jack, level), T_METHOD
    with np.errstate(invalid="ignore", over="ignore"):
        bca = bca_interval(estimate, boot, jack, expanded_level(level, tasks))
    if labels >= SMALL_SAMPLE:
        return bca, BCA_METHOD
    return hull(bca, cluster_t(estimate, jack, level)), HULL_METHOD


__all__ = ["SMALL_SAMPLE", "TARGET", "TARGET_TEXT", "t_quantile", "expanded_level", "cluster_t", "metric_range",
           "clipped", "hull", "entry", "refused", "cost_from_success_rate", "interval_of"]
