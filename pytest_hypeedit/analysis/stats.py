"""Confidence intervals for the benchmark's metrics: a bootstrap over tasks.

Method: the bias-corrected and accelerated (BCa) bootstrap (Efron 1987;
Efron & Tibshirani, *An Introduction to the Bootstrap*, ch. 14).

* Tasks are resampled with replacement; the repeats of a task stay together
  (a cluster bootstrap), because repeats of one task are not independent
  evidence about the model.
* All resamples are one matrix of task indices, and every metric is computed
  for all of them at once by ``metrics.metric_table``, the same code that
  gives the point estimates.
* BCa, not the plain percentile interval: effective cost is a ratio of means
  and is skewed, so percentile intervals under-cover it; BCa corrects for the
  median bias (z0) and the skewness (acceleration ``a``, from the jackknife
  over tasks).  tests/analysis/test_stats.py checks on 1,000 simulated runs of 50 tasks
  x 10 repeats that the 95% intervals of pass rate and effective cost cover
  the truth 93-97% of the time.

What an interval covers: the metric's value over the whole population of
tasks like these, measured as the benchmark measures it (R repeats per task).
Pass@4, expected attempts and effective cost plug p_t = k_t / R into
non-linear formulas, so with few repeats they are biased against the same
formulas on the tasks' true pass rates; resampling tasks cannot remove that
(more repeats do).  The pass rate is unbiased, so there the two agree.

Pure: numpy only, no I/O, no pytest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from .metrics import (
    MetricSettings,
    TaskTally,
    compute_metrics,
    judged_tallies,
    metric_names,
    metric_table,
    task_columns,
)

_NORMAL = NormalDist()
Interval = tuple[float, float]


# --- index matrices -------------------------------------------------------------


def resample_index(tasks: int, n_resamples: int, seed: int) -> np.ndarray:
    """``n_resamples`` rows of ``tasks`` task positions drawn with replacement (seeded)."""
    return np.random.default_rng(seed).integers(0, tasks, size=(n_resamples, tasks))


def leave_one_out_index(tasks: int) -> np.ndarray:
    """Row i holds every task position but i: the jackknife subsets."""
    everything = np.tile(np.arange(tasks), (tasks, 1))
    return everything[~np.eye(tasks, dtype=bool)].reshape(tasks, tasks - 1)


# --- the interval ---------------------------------------------------------------------


def bca_interval(estimate: float, replicates: np.ndarray, jackknife: np.ndarray,
                 level: float = 0.95) -> Interval | None:
    """The BCa interval from bootstrap replicates and leave-one-out values of one statistic.

    NaN replicates (a resample where the metric is undefined) are dropped;
    None when nothing is left or a bound is infinite (a ratio whose
    denominator is 0 in too many resamples).
    """
    replicates = replicates[~np.isnan(replicates)]
    if replicates.size == 0:
        return None
    z0 = _bias_correction(estimate, replicates)
    a = _acceleration(jackknife)
    tail = (1.0 - level) / 2.0
    low_share, high_share = (_bca_share(z0, a, _NORMAL.inv_cdf(q)) for q in (tail, 1.0 - tail))
    # order statistics, not interpolation: interpolating towards an inf replicate gives NaN
    low = float(np.quantile(replicates, low_share, method="lower"))
    high = float(np.quantile(replicates, high_share, method="higher"))
    return (low, high) if math.isfinite(low) and math.isfinite(high) else None


def _bias_correction(estimate: float, replicates: np.ndarray) -> float:
    """z0: how far the replicates' median sits from the estimate, on the normal scale."""
    ties = np.isclose(replicates, estimate, rtol=1e-12, atol=1e-12)
    share_below = (np.count_nonzero((replicates < estimate) & ~ties) + 0.5 * np.count_nonzero(ties)) / replicates.size
    # keep z0 finite when every replicate lies on one side
    half_step = 0.5 / replicates.size
    return _NORMAL.inv_cdf(min(max(share_below, half_step), 1.0 - half_step))


def _acceleration(jackknife: np.ndarray) -> float:
    """a: the skewness of the leave-one-out values (0 when they cannot say)."""
    values = jackknife[np.isfinite(jackknife)]
    if values.size < 2:
        return 0.0
    spread = values.mean() - values
    # a is scale-free: divide by the largest deviation first, so leave-one-out values near 1e116 (a ratio whose
    # denominator all but vanishes without one task) cannot overflow the cubes
    scale = float(np.abs(spread).max())
    if not math.isfinite(scale) or scale == 0:
        return 0.0
    spread = spread / scale
    denominator = 6.0 * float(np.sum(spread**2)) ** 1.5
    return float(np.sum(spread**3)) / denominator if denominator > 0 else 0.0


def _bca_share(z0: float, a: float, z: float) -> float:
    """The share of replicates below a BCa bound for the normal quantile z."""
    shifted = z0 + z
    denominator = 1.0 - a * shifted
    if denominator <= 0:  # extreme skew: the bound runs to the edge of the replicates
        return 1.0 if shifted > 0 else 0.0
    return _NORMAL.cdf(z0 + shifted / denominator)


# --- intervals of every metric -----------------------------------------------------------


def bootstrap_intervals(tallies: Sequence[TaskTally], cost_per_candidate: float,
                        settings: MetricSettings = MetricSettings(), *, n_resamples: int = 2000,
                        seed: int = 0, level: float = 0.95) -> dict[str, Interval | None]:
    """BCa intervals, resampling tasks, for every metric of ``compute_metrics``.

    None for a metric whose value is None, and for all when fewer than 2 tasks count.
    """
    _check_bootstrap(n_resamples, level)
    point = compute_metrics(tallies, cost_per_candidate, settings)
    columns = task_columns(tallies, settings.retry_cap)
    if columns.tasks < 2:
        return {name: None for name in metric_names(settings)}
    boot = metric_table(columns, resample_index(columns.tasks, n_resamples, seed), cost_per_candidate, settings)
    jack = metric_table(columns, leave_one_out_index(columns.tasks), cost_per_candidate, settings)
    return {
        name: None if (value := point[name]) is None else bca_interval(value, boot[name], jack[name], level)
        for name in metric_names(settings)
    }


def _check_bootstrap(n_resamples: int, level: float) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 2:
        raise ValueError(f"n_resamples must be a whole number >= 2, got {n_resamples!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1 (0.95 for 95%), got {level!r}")


# --- the tasks two runs share (their paired comparison: pairwise.py ``paired_comparison``) -------------


def shared_task_ids(current: Sequence[TaskTally], baseline: Sequence[TaskTally]) -> list[str]:
    """The task ids judged in both runs, sorted; ValueError when there is none."""
    now = {t.task_id for t in judged_tallies(current)}
    before = {t.task_id for t in judged_tallies(baseline)}
    shared = sorted(now & before)
    if not shared:
        raise ValueError(
            f"no task is judged in both runs (current: {len(now)} tasks, baseline: {len(before)} tasks): "
            "a paired comparison needs the same split with the same task ids in both"
        )
    return shared
