"""The benchmark's numbers: pure functions of per-task PASS counts.

The definitions are the contract in docs/explanation/metrics.md, which the
upstream RESULTS.md follows.  For task t with k_t PASS among n_t judged
candidates, p_t = k_t / n_t and, with retry cap A:

    S_t = 1 - (1 - p_t)^A                 success within A tries (plug-in)
    E_t = S_t / p_t,  E_t = A if p_t = 0  expected tries, stopping at A

    pass_rate               mean p_t
    pass_at_4               mean S_t with A = 4, whatever the retry cap
    pass_at_10              share of tasks with k_t >= 1
    expected_attempts       E = mean E_t (A = retry cap)
    effective_cost          E * (C_model + C_review) / mean S_t (a ratio of means)
    first_attempt_pass_rate share of tasks whose repeat 1 passed
    hype_gap                pass_at_10 - first_attempt_pass_rate

Every metric is a mean of per-task columns, or a ratio/difference of such
means.  ``metric_table`` computes them for many index sets at once (rows of an
index matrix), so the bootstrap in ``stats.py`` resamples tasks through the
very same code that gives the point estimates.  No I/O, no pytest.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, SupportsFloat

import numpy as np
import numpy.typing as npt

# format_metric lives with finite_number (finite.py, no numpy: modules imported at start-up write metrics too); it is
# imported from here as well
from ..finite import format_metric as format_metric

if TYPE_CHECKING:
    from ..report.results_model import SensitivityEntry

DEFAULT_RETRY_CAP = 4
DEFAULT_REVIEW_SECONDS = 20.0
DEFAULT_REVIEW_RATE_PER_HOUR = 50.0

#: The metrics of ``compute_metrics`` that are fractions, attempts or dollars
#: (everything but the task count), in the order reports show them.
METRIC_KEYS = (
    "pass_rate",
    "pass_at_4",
    "pass_at_10",
    "expected_attempts",
    "effective_cost",
    "first_attempt_pass_rate",
    "hype_gap",
    "pass_at_4_unbiased",
    "pass_at_10_unbiased",
)


def review_cost(seconds: float = DEFAULT_REVIEW_SECONDS, rate_per_hour: float = DEFAULT_REVIEW_RATE_PER_HOUR) -> float:
    """USD a person costs to look at one candidate: 50 USD/h * 20 s = 0.27778."""
    if seconds < 0 or rate_per_hour < 0:
        raise ValueError(f"review time ({seconds} s) and rate ({rate_per_hour} USD/h) must not be negative")
    return rate_per_hour * seconds / 3600.0


@dataclass(frozen=True)
class TaskTally:
    """The verdicts of one model on one task, as the metrics need them."""

    task_id: str
    passes: int  # k_t: PASS among judged candidates (a refusal counts as a judged FAIL)
    judged: int  # n_t
    first_passed: bool | None  # verdict of repeat 1; None when repeat 1 has none
    task_types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0 <= self.passes <= self.judged:
            raise ValueError(
                f"task {self.task_id!r}: passes={self.passes} must lie between 0 and judged={self.judged}"
            )
        object.__setattr__(self, "task_types", tuple(self.task_types))

    @property
    def pass_rate(self) -> float | None:
        return self.passes / self.judged if self.judged else None


@dataclass(frozen=True)
class MetricSettings:
    """The knobs of the cost model: retry cap A and review cost per candidate."""

    retry_cap: int = DEFAULT_RETRY_CAP
    review_cost: float = review_cost()

    def __post_init__(self) -> None:
        if isinstance(self.retry_cap, bool) or not isinstance(self.retry_cap, int) or self.retry_cap < 1:
            raise ValueError(f"retry_cap must be a whole number >= 1, got {self.retry_cap!r}")
        if not math.isfinite(self.review_cost) or self.review_cost < 0:
            raise ValueError(f"review_cost must be a finite USD amount >= 0, got {self.review_cost!r}")


# --- per-task quantities (work on floats and on numpy arrays alike) ----------


def success_probability(p: npt.ArrayLike, retry_cap: int = DEFAULT_RETRY_CAP) -> Any:  # p's shape; a scalar p: a numpy scalar
    """S = 1 - (1 - p)^A: the chance that one of A independent tries passes."""
    return 1.0 - (1.0 - np.asarray(p, dtype=float)) ** retry_cap


def expected_attempts_for(p: npt.ArrayLike, retry_cap: int = DEFAULT_RETRY_CAP) -> Any:  # as success_probability
    """E = S / p, the mean tries when stopping at the first PASS or at A; E = A at p = 0."""
    p = np.asarray(p, dtype=float)
    safe_p = np.where(p > 0, p, 1.0)  # avoids 0/0; the p = 0 branch is A (the limit of S/p)
    return np.where(p > 0, success_probability(p, retry_cap) / safe_p, float(retry_cap))


@functools.lru_cache(maxsize=4096)  # a few dozen (n, c, k) make a whole table: each task column, each split
def unbiased_pass_at_k(judged: int, passes: int, k: int) -> float:
    """Chen et al. (2021): 1 - C(n-c, k) / C(n, k), the chance k of the n candidates hold a PASS."""
    if judged < k:
        raise ValueError(f"unbiased pass@{k} needs at least {k} judged candidates, got {judged}")
    if judged - passes < k:
        return 1.0
    # the product form avoids huge binomials: C(n-c,k)/C(n,k) = prod_{i=n-c+1..n} (1 - k/i)
    return 1.0 - float(np.prod(1.0 - k / np.arange(judged - passes + 1, judged + 1)))


# --- tallies ----------------------------------------------------------------


def tally_tasks(candidates: Iterable[tuple[str, int, bool, tuple[str, ...]]]) -> list[TaskTally]:
    """Per-task tallies from judged candidates ``(task_id, repeat, passed, task_types)``, sorted by task."""
    verdicts: dict[str, dict[int, bool]] = {}
    types: dict[str, list[str]] = {}
    for task_id, repeat, passed, task_types in candidates:
        repeats = verdicts.setdefault(task_id, {})
        if repeat in repeats:
            raise ValueError(f"task {task_id!r}: repeat {repeat} is given twice; each candidate counts once")
        repeats[repeat] = bool(passed)
        seen = types.setdefault(task_id, [])
        seen.extend(t for t in task_types if t not in seen)
    return [_tally(task_id, verdicts[task_id], types[task_id]) for task_id in sorted(verdicts)]


def _tally(task_id: str, repeats: dict[int, bool], task_types: list[str]) -> TaskTally:
    return TaskTally(
        task_id=task_id,
        passes=sum(repeats.values()),
        judged=len(repeats),
        first_passed=repeats.get(1),
        task_types=tuple(task_types),
    )


def judged_tallies(tallies: Sequence[TaskTally]) -> list[TaskTally]:
    """The tasks that count: at least one judged candidate, each task once."""
    counted = [t for t in tallies if t.judged > 0]
    ids = [t.task_id for t in counted]
    if len(set(ids)) != len(ids):
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        raise ValueError(f"task ids must be unique in one aggregate; repeated: {', '.join(duplicates)}")
    return counted


# --- columns and the metric table --------------------------------------------


@dataclass(frozen=True)
class TaskColumns:
    """One numpy column per per-task quantity, one row per task (judged > 0)."""

    pass_rate: np.ndarray
    success_at_4: np.ndarray
    success_at_cap: np.ndarray
    attempts_at_cap: np.ndarray
    any_pass: np.ndarray
    first_known: np.ndarray
    first_pass: np.ndarray
    unbiased_at_4: np.ndarray  # NaN where n_t < 4
    unbiased_at_10: np.ndarray  # NaN where n_t < 10

    @property
    def tasks(self) -> int:
        return len(self.pass_rate)


def task_columns(tallies: Sequence[TaskTally], retry_cap: int = DEFAULT_RETRY_CAP) -> TaskColumns:
    """The per-task columns of the tasks that count (see ``judged_tallies``)."""
    counted = judged_tallies(tallies)
    p = np.array([t.passes / t.judged for t in counted], dtype=float)
    return TaskColumns(
        pass_rate=p,
        success_at_4=success_probability(p, 4),
        success_at_cap=success_probability(p, retry_cap),
        attempts_at_cap=expected_attempts_for(p, retry_cap),
        any_pass=np.array([t.passes >= 1 for t in counted], dtype=float),
        first_known=np.array([t.first_passed is not None for t in counted], dtype=float),
        first_pass=np.array([t.first_passed is True for t in counted], dtype=float),
        unbiased_at_4=_unbiased_column(counted, 4),
        unbiased_at_10=_unbiased_column(counted, 10),
    )


def _unbiased_column(counted: Sequence[TaskTally], k: int) -> np.ndarray:
    values = [unbiased_pass_at_k(t.judged, t.passes, k) if t.judged >= k else math.nan for t in counted]
    return np.array(values, dtype=float)


def metric_table(columns: TaskColumns, index: np.ndarray, cost_per_candidate: float,
                 settings: MetricSettings) -> dict[str, np.ndarray]:
    """Every metric for each row of ``index`` (a matrix of task positions), as arrays.

    Row r of ``index`` is a multiset of tasks (a bootstrap resample, a
    jackknife subset, or simply all tasks).  Undefined values are NaN, an
    infinite effective cost (no success at all) is +inf.
    """
    def mean(column: np.ndarray) -> np.ndarray:  # one mean per row of index
        result: np.ndarray = column[index].mean(axis=1)  # numpy types its arithmetic as Any
        return result

    with np.errstate(divide="ignore", invalid="ignore"):
        first_rate = columns.first_pass[index].sum(axis=1) / columns.first_known[index].sum(axis=1)
        attempts, success = mean(columns.attempts_at_cap), mean(columns.success_at_cap)
        effective = np.where(success > 0, attempts * (cost_per_candidate + settings.review_cost) / success, np.inf)
    table = {
        "pass_rate": mean(columns.pass_rate),
        "pass_at_4": mean(columns.success_at_4),
        "pass_at_10": mean(columns.any_pass),
        "expected_attempts": attempts,
        "effective_cost": effective,
        "first_attempt_pass_rate": first_rate,
        "hype_gap": mean(columns.any_pass) - first_rate,
        "pass_at_4_unbiased": mean(columns.unbiased_at_4),
        "pass_at_10_unbiased": mean(columns.unbiased_at_10),
    }
    if settings.retry_cap != DEFAULT_RETRY_CAP:
        table["pass_at_cap"] = success
    return table


def metric_names(settings: MetricSettings) -> tuple[str, ...]:
    """The metric keys ``compute_metrics`` returns besides ``tasks``."""
    extra = ("pass_at_cap",) if settings.retry_cap != DEFAULT_RETRY_CAP else ()
    return METRIC_KEYS + extra


# --- the public aggregates ----------------------------------------------------


def compute_metrics(tallies: Sequence[TaskTally], cost_per_candidate: float,
                    settings: MetricSettings = MetricSettings()) -> dict[str, float | int | None]:
    """The benchmark's metrics over the tasks with a judged candidate; None where undefined."""
    _check_cost(cost_per_candidate)
    columns = task_columns(tallies, settings.retry_cap)
    result: dict[str, float | int | None] = {"tasks": columns.tasks}
    if columns.tasks == 0:
        return result | {name: None for name in metric_names(settings)}
    everything = np.arange(columns.tasks)[np.newaxis, :]
    table = metric_table(columns, everything, cost_per_candidate, settings)
    return result | {name: finite_or_none(values[0]) for name, values in table.items()}


def finite_or_none(value: SupportsFloat) -> float | None:
    """A plain float for JSON, or None for NaN (undefined) and inf (no success)."""
    value = float(value)
    return value if math.isfinite(value) else None


def _check_cost(cost_per_candidate: float) -> None:
    if not math.isfinite(cost_per_candidate) or cost_per_candidate < 0:
        raise ValueError(f"cost_per_candidate must be a finite USD amount >= 0, got {cost_per_candidate!r}")


def metrics_by_task_type(tallies: Sequence[TaskTally], cost_per_candidate: float,
                         settings: MetricSettings = MetricSettings()) -> dict[str, dict[str, Any]]:
    """``compute_metrics`` per task type, sorted by type; a task of several types counts in each.

    Tasks without a type appear in no group (every upstream task has one).
    """
    groups: dict[str, list[TaskTally]] = {}
    for tally in tallies:
        for task_type in dict.fromkeys(tally.task_types):  # a type listed twice counts once
            groups.setdefault(task_type, []).append(tally)
    return {name: compute_metrics(groups[name], cost_per_candidate, settings) for name in sorted(groups)}


def sensitivity(tallies: Sequence[TaskTally], cost_per_candidate: float, *,
                review_seconds: Sequence[float] = (10, 20, 60, 120),
                retry_caps: Sequence[int] = (1, 2, 4, 10),
                rate_per_hour: float = DEFAULT_REVIEW_RATE_PER_HOUR) -> list[SensitivityEntry]:
    """Effective cost across review times x retry caps: how much the headline rests on the cost model."""
    rows: list[SensitivityEntry] = []
    for seconds in review_seconds:
        for cap in retry_caps:
            settings = MetricSettings(retry_cap=cap, review_cost=review_cost(seconds, rate_per_hour))
            metrics = compute_metrics(tallies, cost_per_candidate, settings)
            rows.append({
                "review_seconds": seconds,
                "retry_cap": cap,
                "effective_cost": metrics["effective_cost"],
                "expected_attempts": metrics["expected_attempts"],
                # with A = 4 the success rate at the cap is Pass@4 itself
                "pass_at_cap": metrics.get("pass_at_cap", metrics["pass_at_4"]),
            })
    return rows
