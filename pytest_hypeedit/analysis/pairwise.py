"""Which differences between models are real: paired comparisons over tasks, Holm-corrected.

For each split with two or more models, every pair (a, b) and every headline metric gets the
difference a - b on the tasks both judged, its 95% BCa interval (``stats.paired_comparison``, the
machinery ``--baseline`` uses) and a p-value; the p-values of all pairs x metrics of one split are one
family, adjusted with Holm's step-down method.  ``significant``: adjusted p < 0.05.

The p-value:

* Metrics that are means of a per-task value (pass rate, Pass@4, Pass@10, expected attempts): a paired
  sign-flip (permutation) test on the per-task differences.  Under "no difference" the two models are
  exchangeable within a task, so each task's difference is as likely negative as positive; flipping
  signs at random gives the null distribution of the mean difference without assuming normality,
  and stays valid with few tasks (where a t-test on 0/1-like differences does not).
* Effective cost (a ratio of means, each model at its own price) and hype gap (a difference of a mean
  and a ratio): swapping models within a task is not a null there, so the p-value comes from the paired
  bootstrap of the difference (twice the share of resamples on the far side of 0).

"Not significant" means not shown different at 5% after the correction, not shown equal.
Pure: numpy only, no I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from .metrics import (
    MetricSettings,
    TaskColumns,
    TaskTally,
    judged_tallies,
    metric_table,
    task_columns,
)
from .stats import paired_comparison, resample_index, shared_task_ids

#: The metrics compared, in the order reports list them.
PAIRWISE_METRICS = ("pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "effective_cost", "hype_gap")
#: Per metric that is a mean over tasks, the per-task column of ``metrics.TaskColumns`` it is the mean of.
TASK_MEAN_COLUMNS = {"pass_rate": "pass_rate", "pass_at_4": "success_at_4", "pass_at_10": "any_pass",
                     "expected_attempts": "attempts_at_cap"}
ALPHA = 0.05
PERMUTATIONS = 9999
_CHUNK = 1000  # sign-flip resamples per matrix: bounded memory with hundreds of tasks


@dataclass(frozen=True)
class Entrant:
    """One model's row on one split: its name, per-task tallies and price per candidate."""

    model: str
    tallies: tuple[TaskTally, ...]
    cost: float


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the order given: the i-th smallest p times (m - i + 1), kept monotone
    (an adjusted p is never below the one of a smaller raw p) and capped at 1."""
    m = len(p_values)
    adjusted = [1.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def sign_flip_p(differences: np.ndarray, n_resamples: int = PERMUTATIONS, seed: int = 0) -> float:
    """Two-sided p of a mean per-task difference under random sign flips: (1 + extreme) / (1 + resamples).

    All differences 0 gives 1 (every flip is as extreme as nothing at all)."""
    observed = abs(float(differences.mean())) if differences.size else 0.0
    tolerance = 1e-12 * max(1.0, observed)
    if not differences.size:
        return 1.0
    extreme = 0
    for signs in _sign_flips(differences.size, n_resamples, seed):
        flipped = np.abs(signs @ differences) / differences.size
        extreme += int(np.count_nonzero(flipped >= observed - tolerance))
    return (1 + extreme) / (1 + n_resamples)


@functools.lru_cache(maxsize=8)
def _sign_flips(tasks: int, n_resamples: int, seed: int) -> tuple[np.ndarray, ...]:
    """The random signs (+1 or -1) of ``n_resamples`` flips of ``tasks`` differences, in chunks of ``_CHUNK`` rows
    (bounded memory with hundreds of tasks).  They depend on nothing else, so every pair and metric of a split
    shares them: drawn once, not once per comparison (a 7-model table makes 63 of them per split)."""
    rng = np.random.default_rng(seed)
    chunks = []
    for start in range(0, n_resamples, _CHUNK):
        size = min(_CHUNK, n_resamples - start)
        signs = rng.integers(0, 2, size=(size, tasks), dtype=np.int8) * np.int8(2) - np.int8(1)
        signs.setflags(write=False)  # shared by every caller
        chunks.append(signs)
    return tuple(chunks)


def bootstrap_p(replicates: np.ndarray) -> float:
    """Two-sided p from paired bootstrap replicates of a difference: twice the smaller share on one side
    of 0 (0 counting on both), at most 1; the percentile interval excludes 0 exactly when it is small."""
    values = replicates[np.isfinite(replicates)]
    if values.size == 0:
        return 1.0
    below = np.count_nonzero(values <= 0) / values.size
    above = np.count_nonzero(values >= 0) / values.size
    return float(min(1.0, 2.0 * min(below, above)))


def compare_pair(a: Entrant, b: Entrant, settings: MetricSettings, metrics: Sequence[str] = PAIRWISE_METRICS, *,
                 n_resamples: int = 2000, seed: int = 0, level: float = 0.95) -> list[dict[str, Any]]:
    """a - b per metric on the shared tasks: ``metric``, ``difference``, ``interval``, ``p`` (raw), ``tasks``.

    A metric whose difference or interval is undefined (no success on a side, fewer than 2 shared
    tasks) is left out: it has nothing to test."""
    comparison = paired_comparison(a.tallies, b.tallies, a.cost, b.cost, settings, n_resamples=n_resamples,
                                   seed=seed, level=level)
    shared = shared_task_ids(a.tallies, b.tallies)
    columns_a, columns_b = (_columns(entrant.tallies, shared, settings) for entrant in (a, b))
    boot = None
    found = []
    for metric in metrics:
        entry = comparison[metric]
        if entry["difference"] is None or entry["low"] is None or entry["high"] is None:
            continue
        if metric in TASK_MEAN_COLUMNS:
            column = TASK_MEAN_COLUMNS[metric]
            p = sign_flip_p(getattr(columns_a, column) - getattr(columns_b, column), seed=seed)
        else:
            if boot is None:
                index = resample_index(len(shared), n_resamples, seed)
                boot = (metric_table(columns_a, index, a.cost, settings), metric_table(columns_b, index, b.cost, settings))
            with np.errstate(invalid="ignore"):
                p = bootstrap_p(boot[0][metric] - boot[1][metric])
        found.append({"metric": metric, "difference": float(entry["difference"]),
                      "interval": [float(entry["low"]), float(entry["high"])], "p": p, "tasks": len(shared)})
    return found


def _columns(tallies: Sequence[TaskTally], task_ids: list[str], settings: MetricSettings) -> TaskColumns:
    by_id = {t.task_id: t for t in judged_tallies(tallies)}
    return task_columns([by_id[task_id] for task_id in task_ids], settings.retry_cap)


def pairwise(splits: Mapping[str, Sequence[Entrant]], settings: MetricSettings,
             metrics: Sequence[str] = PAIRWISE_METRICS, *, n_resamples: int = 2000, seed: int = 0,
             level: float = 0.95, alpha: float = ALPHA) -> list[dict[str, Any]]:
    """Every pair x metric of every split with 2+ models, Holm-adjusted per split (one family per split).

    Entries: ``split``, ``a``, ``b``, ``metric``, ``difference`` (a - b), ``interval``, ``p_adjusted``,
    ``significant``, ``tasks``.  Pairs sharing no judged task are left out."""
    found = []
    for split, entrants in splits.items():
        family = []
        for a, b in combinations([e for e in entrants if judged_tallies(e.tallies)], 2):
            try:
                entries = compare_pair(a, b, settings, metrics, n_resamples=n_resamples, seed=seed, level=level)
            except ValueError:  # no shared task: nothing to pair on
                continue
            family += [{"split": split, "a": a.model, "b": b.model, **entry} for entry in entries]
        for entry, adjusted in zip(family, holm([entry.pop("p") for entry in family])):
            entry["p_adjusted"] = float(adjusted)
            entry["significant"] = bool(adjusted < alpha)
        found += [_ordered(entry) for entry in family]
    return found


def _ordered(entry: dict[str, Any]) -> dict[str, Any]:
    keys = ("split", "a", "b", "metric", "difference", "interval", "p_adjusted", "significant", "tasks")
    return {key: entry[key] for key in keys}


def indistinguishable(entries: Sequence[Mapping[str, Any]], split: str, metric: str = "pass_rate") -> list[tuple[str, str]]:
    """The pairs of a split not shown different on ``metric``, in the order of ``entries``."""
    return [(e["a"], e["b"]) for e in entries
            if e.get("split") == split and e.get("metric") == metric and not e.get("significant")]
