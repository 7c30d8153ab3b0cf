"""The intervals of the calibrated figures: which method, on which scale, inside which range, saying what they cover.

Pure: numpy only, no I/O.  analysis/calibration.py computes each metric's point estimate, its bootstrap
replicates and its leave-one-task-out (jackknife) values; this module turns them into an interval entry.

* **Pass rate: a cluster t interval** on the per-task values whose mean the estimate is (prediction-powered:
  the judge's share plus the sample's weighted correction, per task).  Those values are skewed with a small
  human sample (most tasks hold no label, a few hold a large correction), so the bootstrap's percentiles fall
  short: in the issue's simulation 79/84/86.5% coverage with 10/20/30 labels, against 97/94/92.5% for the t
  interval on the same values.  For a mean the jackknife pseudo-values are the per-task values themselves, so
  the t interval is computed from the jackknife values (one code path for both estimators).
* **Every other metric: BCa** (the task bootstrap re-estimating the judge's error, stats.py), widened to the
  jackknife t interval (the wider of the two on each side): the same weakness with few labels, and the t
  interval is the one shown to hold for the mean.  With a critical judge (wrong on 20% of candidates, mostly
  false FAILs) BCa alone covered Pass@4 89.8% of 100 runs with 30 labels and 91% with 100 labels; the hull 90.4%
  and 96.0% of 200 (bench/bench_intervals.py, its calibrated case): below TRUSTED_LABELS the figures are marked.
* **Few disagreements** (fewer than MIN_DISAGREEMENTS labels where the judge and people differ): the pass
  rate's t interval rests on two or three corrections (none: it is the judge's own interval), so it is widened
  to ``error_bound_interval``, the judge's interval plus the error the labels cannot rule out.
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
from typing import TYPE_CHECKING

import numpy as np

from .stats import bca_interval
from .task_intervals import clopper_pearson, proportion_interval, t_quantile

if TYPE_CHECKING:
    from ..report.results_model import CalibratedFigure

#: Fewer human labels than this in a row: the intervals widen (see above) and the output warns.
SMALL_SAMPLE = 30
#: Fewer judge/human disagreements than this in a row's sample: the pass rate's t interval rests on too few
#: corrections to be trusted (with 10 labels and a judge wrong 20% of the time it covered 86.7%; with none it is
#: the judge's own interval), so it is widened to the error bound below and the output warns.
MIN_DISAGREEMENTS = 5
#: Fewer labels than this: the non-linear calibrated figures (Pass@4, effective cost...) are marked ``caution``:
#: with the critical judge Pass@4 covered 90.4% of 200 runs with 30 labels (82.6% in the runs with 10 or more
#: disagreements: their count does not tell these runs apart), 92.5% with 50, 96.0% with 100.
TRUSTED_LABELS = 100
BOUND_METHOD = ("widened to the judge's interval plus the judge error the labels cannot rule out (Clopper-Pearson "
                "on the disagreements; few disagreements)")
#: Beyond this many attempts per success (x retry cap) an effective cost's upper bound is "unbounded".
UNBOUNDED_ATTEMPTS_PER_SUCCESS = 1000
#: What an interval of the calibrated (and human-sample) figures covers.
TARGET = "population"
TARGET_TEXT = ("the metric over the population of tasks like these, with the human panel's verdicts, measured "
               "with this run's repeats")
T_METHOD = "cluster t over tasks"
HULL_METHOD = "BCa task bootstrap widened to the cluster t (jackknife) interval"

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
          retry_cap: int, high_unbounded: bool = False) -> CalibratedFigure:
    """A metric's JSON entry: finite values or null, the level and target it is stated for.

    The value is kept in the metric's range too: the prediction-powered pass rate is unbiased but can fall
    below 0 (a judge PASS people failed, on a model that almost never passes); a pass rate of -2% is no figure."""
    low_end, high_end = metric_range(key, retry_cap)
    value = min(max(float(value), low_end), high_end) if math.isfinite(float(value)) else float(value)
    low, high = interval if interval else (None, None)
    found: CalibratedFigure = {"value": value if math.isfinite(value) else None, "low": _finite(low),
                               "high": _finite(high), "level": level, "target": TARGET}
    if method and interval:
        found["interval_method"] = method
    if high_unbounded:
        found["high_unbounded"] = True
    return found


def withheld(reason: str) -> CalibratedFigure:
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


def interval_of(key: str, estimate: float, boot: np.ndarray, jack: np.ndarray, level: float, *, tasks: int,
                linear: bool) -> tuple[tuple[float, float] | None, str]:
    """A metric's interval before clipping, and the method that made it (see the module docstring)."""
    if linear:
        return cluster_t(estimate, jack, level), T_METHOD
    with np.errstate(invalid="ignore", over="ignore"):
        bca = bca_interval(estimate, boot, jack, expanded_level(level, tasks))
    return hull(bca, cluster_t(estimate, jack, level)), HULL_METHOD


def error_bound_interval(judge_shares: np.ndarray, candidates: int, missed: float, wrongly_passed: float,
                         labels: int, level: float) -> tuple[float, float]:
    """The pass rate's interval from the judge's own interval and bounds on its error, for a sample with few
    disagreements (where the t interval cannot be trusted).

    true pass rate = judge pass rate + (share of candidates the judge failed and people passed) - (share it
    passed and people failed).  The judge's pass rate gets its interval over tasks (analysis/task_intervals.py) at
    1 - alpha/2; each error share its Clopper-Pearson interval from the labels at 1 - alpha/4 (``missed`` and
    ``wrongly_passed``: the labels' shares of each kind, weighted by the design): the union bound keeps the sum
    at 1 - alpha, and with no disagreement at all the errors' upper bounds are what the sample cannot rule out
    (1 - (alpha/8)^(1/n): 40% with 10 labels, 16% with 30)."""
    alpha = 1.0 - level
    judge_low, judge_high = proportion_interval(judge_shares, candidates, 1.0 - alpha / 2)
    missed_low, missed_high = clopper_pearson(missed, labels, 1.0 - alpha / 4)
    passed_low, passed_high = clopper_pearson(wrongly_passed, labels, 1.0 - alpha / 4)
    return judge_low + missed_low - passed_high, judge_high + missed_high - passed_low


__all__ = ["SMALL_SAMPLE", "MIN_DISAGREEMENTS", "TRUSTED_LABELS", "error_bound_interval", "TARGET", "TARGET_TEXT", "t_quantile", "expanded_level", "cluster_t", "metric_range",
           "clipped", "hull", "entry", "withheld", "cost_from_success_rate", "interval_of"]
