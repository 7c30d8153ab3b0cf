"""The paired comparison of two releases' calibrated figures over the tasks both have (``--baseline`` with
``--calibrate``).  Pure numpy, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .calibration import (
    CALIBRATED_KEYS,
    ErrorCounts,
    TaskEvidence,
    _Columns,
    _replicates,
    _Setup,
    _too_few,
    _with_pass_rate,
    error_counts,
)
from .calibration_intervals import expanded_level, withheld
from .calibration_model import ErrorSource
from .metrics import MetricSettings
from .stats import bca_interval, leave_one_out_index, resample_index

if TYPE_CHECKING:
    from ..report.results_model import CalibratedFigure, PairedDifference


def paired_calibrated(current: Sequence[TaskEvidence], baseline: Sequence[TaskEvidence], cost_current: float,
                      cost_baseline: float, settings: MetricSettings = MetricSettings(), *,
                      pooled_current: ErrorCounts | None = None, pooled_baseline: ErrorCounts | None = None,
                      n_resamples: int = 1000, seed: int = 0, level: float = 0.95
                      ) -> dict[str, PairedDifference | CalibratedFigure]:
    """Calibrated current minus calibrated baseline per metric, on the tasks both have: each resample draws one
    set of tasks for both releases, and each re-estimates its own judge error from its own labels in it.  A
    metric needing the judge's error is withheld (a reason, no figure) when either side has too few labels."""
    before = {t.task_id: t for t in baseline}
    shared = [t.task_id for t in current if t.task_id in before]
    if not shared:
        raise ValueError("no task has calibration evidence in both runs: a paired comparison needs the same tasks")
    now_evidence = [t for t in current if t.task_id in before]
    sides = [_side(now_evidence, cost_current, settings, pooled_current),
             _side([before[i] for i in shared], cost_baseline, settings, pooled_baseline)]
    index_sets = (np.arange(len(shared))[None, :], resample_index(len(shared), n_resamples or 1000, seed),
                  leave_one_out_index(len(shared)) if len(shared) > 1 else None)
    tables = [_paired_tables(side, index_sets, seed) for side, _ in sides]
    reasons = [reason for _, reason in sides if reason]
    return {key: withheld("; ".join(reasons)) if reasons and key != "pass_rate"
            else _paired_entry(tables, key, level, len(shared)) for key in CALIBRATED_KEYS}


def _side(evidence: Sequence[TaskEvidence], cost: float, settings: MetricSettings, pooled: ErrorCounts | None
          ) -> tuple[_Setup, str | None]:
    own = error_counts(evidence)
    use_pool = not own.enough and pooled is not None and pooled.n > own.n
    reason = None if own.enough or use_pool else _too_few(own)
    return _Setup(_Columns.of(evidence), ErrorSource(pooled=pooled if use_pool else None), cost, settings), reason


def _paired_tables(setup: _Setup, index_sets: tuple[np.ndarray, np.ndarray, np.ndarray | None], seed: int
                   ) -> list[dict[str, np.ndarray] | None]:
    point = _replicates(setup, index_sets[0], None)[0]
    prefer_ppi = error_counts_of(setup.columns).n > 0
    rng = np.random.default_rng([seed, 0xCA11B])
    boot = _replicates(setup, index_sets[1], rng)[0]
    jack = _replicates(setup, index_sets[2], None)[0] if index_sets[2] is not None else None
    return [_with_pass_rate(t, prefer_ppi) if t is not None else None for t in (point, boot, jack)]


def error_counts_of(columns: _Columns) -> ErrorCounts:
    return ErrorCounts(*(int(x) for x in columns.confusion.sum(axis=0)))


def _paired_entry(tables: Sequence[Sequence[Any]], key: str, level: float, tasks: int) -> PairedDifference:
    """``tables``: each side's (point, bootstrap, jackknife) from _paired_tables; the jackknife None under 2 tasks."""
    (now, now_boot, now_jack), (before, before_boot, before_jack) = tables
    current, baseline = float(now[key][0]), float(before[key][0])
    entry: PairedDifference = {"current": _finite(current), "baseline": _finite(baseline), "difference": None,
                               "low": None, "high": None, "tasks": tasks}
    if not (math.isfinite(current) and math.isfinite(baseline)):
        return entry
    entry["difference"] = current - baseline
    if now_jack is not None:
        with np.errstate(invalid="ignore"):
            interval = bca_interval(current - baseline, now_boot[key] - before_boot[key],
                                    now_jack[key] - before_jack[key], expanded_level(level, tasks))
        if interval:
            entry["low"], entry["high"] = interval
    return entry


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


__all__ = ["paired_calibrated"]
