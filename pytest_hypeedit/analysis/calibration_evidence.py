"""The evidence a row's judged candidates give the calibration: per task, the judge's verdicts, the human
sample's labels (each weighted by its inclusion probability) and the judge's error counts.  Pure, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .calibration_intervals import SMALL_SAMPLE
from .calibration_model import SMOOTH

if TYPE_CHECKING:
    from ..report.results_model import CalibratedFigure, TaskEvidenceEntry

#: Fewer human PASS (or FAIL) labels than this in a row's sample: no figure that needs the judge's error.
MIN_PER_CLASS = 8

# The first candidate (repeat 1) of a task, as the hype gap needs it.
FIRST_NONE, FIRST_PASS, FIRST_FAIL, FIRST_JUDGE_PASS, FIRST_JUDGE_FAIL = range(5)


@dataclass(frozen=True)
class Unit:
    """One judged candidate of a row."""

    task_id: str
    repeat: int
    judge_pass: bool | None  # None: refused (no image): a FAIL for the judge and for people alike
    human_pass: bool | None = None  # the panel's majority, when the candidate is in the human sample
    inclusion: float | None = None  # its inclusion probability in the sample (0 < pi <= 1), when labelled


@dataclass(frozen=True)
class TaskEvidence:
    """What one task contributes: counts, its repeat 1, and its prediction-powered and human-only pass rates."""

    task_id: str
    judge_pass: int  # unlabelled candidates the judge passed
    judge_fail: int  # unlabelled candidates the judge failed
    confusion: tuple[int, int, int, int]  # labelled: (Y PASS J PASS, Y PASS J FAIL, Y FAIL J PASS, Y FAIL J FAIL)
    refused: int
    first: int  # FIRST_* code of repeat 1
    ppi: float  # (sum J + sum over the sample of (Y - J) / pi) / n_t
    ht: float  # (sum over the sample of Y / pi) / n_t
    # the confusion's cells weighted by 1 / pi: what the judge's error is estimated from, so that a sample drawn
    # more often from the judge's FAILs than its PASSes does not bias sensitivity and specificity
    weighted: tuple[float, float, float, float] | None = None

    @property
    def weights(self) -> tuple[float, float, float, float]:
        return self.weighted if self.weighted is not None else tuple(float(x) for x in self.confusion)  # type: ignore[return-value]

    @property
    def judged(self) -> int:
        return self.judge_pass + self.judge_fail + sum(self.confusion) + self.refused

    def to_json(self) -> TaskEvidenceEntry:
        return {"task_id": self.task_id, "judge_pass": self.judge_pass, "judge_fail": self.judge_fail,
                "confusion": list(self.confusion), "refused": self.refused, "first": self.first,
                "ppi": self.ppi, "ht": self.ht, "weighted": list(self.weights)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "TaskEvidence":
        confusion = tuple(int(x) for x in data["confusion"])
        if len(confusion) != 4 or min(confusion) < 0:
            raise ValueError(f"task {data.get('task_id')!r}: 'confusion' must be four counts >= 0")
        weighted = data.get("weighted")  # absent in evidence written before it was recorded: a simple random sample
        weighted = tuple(float(x) for x in weighted) if weighted is not None else None
        if weighted is not None and (len(weighted) != 4 or not all(math.isfinite(x) and x >= 0 for x in weighted)):
            raise ValueError(f"task {data.get('task_id')!r}: 'weighted' must be four finite weights >= 0")
        return cls(str(data["task_id"]), int(data["judge_pass"]), int(data["judge_fail"]), confusion,
                   int(data["refused"]), int(data["first"]), float(data["ppi"]), float(data["ht"]), weighted)


@dataclass(frozen=True)
class ErrorCounts:
    """Labelled candidates of a row (or a pool of rows) by human label and judge verdict."""

    true_pass: int = 0  # Y PASS, J PASS
    false_fail: int = 0  # Y PASS, J FAIL
    false_pass: int = 0  # Y FAIL, J PASS
    true_fail: int = 0  # Y FAIL, J FAIL

    @property
    def n(self) -> int:
        return self.true_pass + self.false_fail + self.false_pass + self.true_fail

    @property
    def sensitivity(self) -> float:
        return (self.true_pass + SMOOTH) / (self.true_pass + self.false_fail + 2 * SMOOTH)

    @property
    def specificity(self) -> float:
        return (self.true_fail + SMOOTH) / (self.true_fail + self.false_pass + 2 * SMOOTH)

    @property
    def enough(self) -> bool:
        """Enough labels for the row's own judge error (else the metrics that need it are withheld)."""
        # and SMALL_SAMPLE labels in all: below it the non-linear metrics' intervals fell short in simulation
        # (Pass@4 covered 84% of runs with 20 labels) even widened to the jackknife t interval
        classes = min(self.true_pass + self.false_fail, self.false_pass + self.true_fail)
        return classes >= MIN_PER_CLASS and self.n >= SMALL_SAMPLE

    def __add__(self, other: "ErrorCounts") -> "ErrorCounts":
        return ErrorCounts(*(a + b for a, b in zip(self.astuple(), other.astuple())))

    def astuple(self) -> tuple[int, int, int, int]:
        return (self.true_pass, self.false_fail, self.false_pass, self.true_fail)


# --------------------------------------------------------------------------- evidence from candidates


def task_evidence(units: Iterable[Unit]) -> list[TaskEvidence]:
    """Per-task evidence of a row's judged candidates, sorted by task; bad input is a ValueError naming it."""
    by_task: dict[str, list[Unit]] = {}
    for unit in units:
        _check_unit(unit)
        by_task.setdefault(unit.task_id, []).append(unit)
    return [_evidence(task_id, by_task[task_id]) for task_id in sorted(by_task)]


def _check_unit(unit: Unit) -> None:
    if unit.human_pass is None:
        return
    if unit.judge_pass is None:
        raise ValueError(f"task {unit.task_id!r} repeat {unit.repeat}: a refusal has no image to label")
    if unit.inclusion is None or not 0 < unit.inclusion <= 1 or not math.isfinite(unit.inclusion):
        raise ValueError(f"task {unit.task_id!r} repeat {unit.repeat}: a labelled candidate needs an inclusion "
                         f"probability in (0, 1], got {unit.inclusion!r}")


def _inclusion(unit: Unit) -> float:
    """A labelled unit's inclusion probability: _check_unit has not accepted a labelled unit without one."""
    assert unit.inclusion is not None
    return unit.inclusion


def _evidence(task_id: str, units: list[Unit]) -> TaskEvidence:
    repeats = [u.repeat for u in units]
    if len(set(repeats)) != len(repeats):
        raise ValueError(f"task {task_id!r}: a repeat is given twice; each candidate counts once")
    labelled = [u for u in units if u.human_pass is not None]
    unlabelled = [u for u in units if u.human_pass is None and u.judge_pass is not None]
    cells = [(bool(u.human_pass), bool(u.judge_pass)) for u in labelled]
    confusion = tuple(cells.count(cell) for cell in ((True, True), (True, False), (False, True), (False, False)))
    n = len(units)
    judged_pass = sum(1 for u in units if u.judge_pass)
    correction = sum((int(bool(u.human_pass)) - int(bool(u.judge_pass))) / _inclusion(u) for u in labelled)
    weighted = tuple(sum(1.0 / _inclusion(u) for u in labelled if (bool(u.human_pass), bool(u.judge_pass)) == cell)
                     for cell in ((True, True), (True, False), (False, True), (False, False)))
    return TaskEvidence(
        task_id=task_id,
        judge_pass=sum(1 for u in unlabelled if u.judge_pass),
        judge_fail=sum(1 for u in unlabelled if not u.judge_pass),
        confusion=confusion,  # type: ignore[arg-type]
        refused=sum(1 for u in units if u.judge_pass is None),
        first=_first_code(next((u for u in units if u.repeat == 1), None)),
        ppi=(judged_pass + correction) / n,
        ht=sum(int(bool(u.human_pass)) / _inclusion(u) for u in labelled) / n,
        weighted=weighted,  # type: ignore[arg-type]
    )


def _first_code(unit: Unit | None) -> int:
    if unit is None:
        return FIRST_NONE
    if unit.judge_pass is None:
        return FIRST_FAIL
    if unit.human_pass is not None:
        return FIRST_PASS if unit.human_pass else FIRST_FAIL
    return FIRST_JUDGE_PASS if unit.judge_pass else FIRST_JUDGE_FAIL


def error_counts(evidence: Sequence[TaskEvidence]) -> ErrorCounts:
    return ErrorCounts(*(int(sum(t.confusion[i] for t in evidence)) for i in range(4)))


#: Level of the check that a sample without a recorded design labelled the judge's PASS and FAIL alike.
RATE_CHECK_ALPHA = 0.01


def labelling_rates_differ(labelled_pass: int, judged_pass: int, labelled_fail: int, judged_fail: int,
                           alpha: float = RATE_CHECK_ALPHA) -> tuple[bool, float]:
    """(flagged, p-value): does the share of candidates labelled differ between the judge's PASS and FAIL?

    Pearson's chi-square test of the 2x2 table (labelled or not x judge PASS or FAIL) with Yates' continuity
    correction (conservative with small counts), 1 degree of freedom: p = erfc(sqrt(X^2 / 2)).  A sample
    without a design is taken as a simple random sample; one drawn twice as often from the FAILs biased
    Pass@4 by +7.5 points in simulation, so such a sample is flagged rather than trusted."""
    table = [[labelled_pass, judged_pass - labelled_pass], [labelled_fail, judged_fail - labelled_fail]]
    total = judged_pass + judged_fail
    columns = [labelled_pass + labelled_fail, total - labelled_pass - labelled_fail]
    if min(judged_pass, judged_fail, *columns) <= 0:
        return False, 1.0
    statistic = 0.0
    for i, rows in enumerate((judged_pass, judged_fail)):
        for j in range(2):
            expected = rows * columns[j] / total
            statistic += max(abs(table[i][j] - expected) - 0.5, 0.0) ** 2 / expected
    p_value = math.erfc(math.sqrt(statistic / 2))
    return p_value < alpha, p_value


def this_run_pass_rate(units: Sequence[Unit], level: float = 0.95) -> CalibratedFigure | None:
    """The pass rate a full human review of *this run's* candidates would give: estimate and interval.

    The estimate is the prediction-powered one (the judge's pass rate plus the sample's weighted correction);
    only the drawing of the labels varies for this target, so the interval is the finite-population one of a
    Horvitz-Thompson total, stratum by stratum (candidates sharing an inclusion probability: one cell of the
    design), with its finite-population correction: 0 wide when every candidate is labelled.  None without a
    label; no interval when a partly sampled cell holds a single label (its spread is unknown)."""
    from .calibration_intervals import entry, t_quantile

    by_task: dict[str, int] = {}
    for unit in units:
        by_task[unit.task_id] = by_task.get(unit.task_id, 0) + 1
    tasks = len(by_task)
    labelled = [u for u in units if u.human_pass is not None]
    if not tasks or not labelled:
        return None
    weight = {task: 1.0 / (tasks * n) for task, n in by_task.items()}
    estimate = sum(weight[u.task_id] * bool(u.judge_pass) for u in units)
    cells: dict[float, list[float]] = {}
    for unit in labelled:
        error = weight[unit.task_id] * (int(bool(unit.human_pass)) - int(bool(unit.judge_pass)))
        cells.setdefault(float(unit.inclusion or 1.0), []).append(error)  # a labelled unit has one (_check_unit)
    variance = 0.0
    for inclusion, errors in cells.items():
        estimate += sum(errors) / inclusion
        population = len(errors) / inclusion
        if inclusion < 1 and len(errors) < 2:
            return entry(estimate, None, level, None, key="pass_rate", retry_cap=1) | {"target": "this_run"}
        spread = _sample_variance(errors) if len(errors) > 1 else 0.0
        variance += population**2 * (1 - inclusion) * spread / len(errors)
    half = t_quantile(level, max(1, len(labelled) - len(cells))) * math.sqrt(variance)
    interval = (max(0.0, estimate - half), min(1.0, estimate + half))
    found = entry(estimate, interval, level, "finite-population, the labels' draw only", key="pass_rate",
                  retry_cap=1) | {"target": "this_run"}
    return _widened_this_run(found, units, labelled, weight, level)


def _widened_this_run(found: CalibratedFigure, units: Sequence[Unit], labelled: Sequence[Unit],
                      weight: Mapping[str, float], level: float) -> CalibratedFigure:
    """With fewer than MIN_DISAGREEMENTS disagreements in a partial sample the interval above rests on (almost)
    no spread: with none it has no width at all.  Widened to the judge's pass rate of this run (known exactly)
    plus the error shares' Clopper-Pearson intervals from the labels (each at 1 - alpha/2), as the population
    figure is (calibration_intervals.error_bound_interval)."""
    from .calibration_intervals import MIN_DISAGREEMENTS
    from .task_intervals import clopper_pearson

    missed = sum(1 for u in labelled if u.human_pass and not u.judge_pass)
    wrongly_passed = sum(1 for u in labelled if not u.human_pass and u.judge_pass)
    if missed + wrongly_passed >= MIN_DISAGREEMENTS or all((u.inclusion or 1.0) >= 1 for u in labelled):
        return found
    judge = sum(weight[u.task_id] * bool(u.judge_pass) for u in units)
    alpha, n = 1.0 - level, len(labelled)
    missed_low, missed_high = clopper_pearson(missed / n, n, 1.0 - alpha / 2)
    passed_low, passed_high = clopper_pearson(wrongly_passed / n, n, 1.0 - alpha / 2)
    low, high = judge + missed_low - passed_high, judge + missed_high - passed_low
    known_low, known_high = found.get("low"), found.get("high")
    if known_low is not None:  # an interval has both bounds (calibration_intervals.entry)
        low, high = min(low, known_low), high if known_high is None else max(high, known_high)
    return found | {"low": max(0.0, low), "high": min(1.0, high), "widened": True,
                    "interval_method": "finite-population, widened to the judge error the labels cannot rule out "
                                       "(few disagreements)"}


def _sample_variance(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / (len(values) - 1)
