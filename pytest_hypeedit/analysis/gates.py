"""Metric gates: ``--gate "pass_rate>=0.6"`` turns a benchmark run into a CI answer.

Pure: parse the option text, evaluate against the results dict (the results
JSON contract), say per gate what was measured.  No I/O, no pytest.

Syntax: ``[MODEL[@SPLIT]:][calibrated.]METRIC[.low|.high] OP THRESHOLD`` where OP is one of
``>= <= > <`` and THRESHOLD is a number (``0.6``), a percentage (``60%``), or
``baseline``, ``baseline-0.02``, ``baseline+2%`` (needs ``--baseline``).
``.low`` / ``.high`` gate on the bound of the 95% bootstrap interval.
``calibrated.`` gates on the figure corrected with a human sample (``--calibrate``), and against a
baseline on the baseline's calibrated figure (paired over the shared tasks when both carry their
evidence); a row without calibrated figures fails such a gate and says why.

Without MODEL a gate applies to every model of the run; without SPLIT it is
checked on the ``combined`` row when the run has one, else on every split.
A row from an incomplete run (errors, budget skips, missing verdicts) fails
every gate unless ``allow_incomplete`` is set: an unfinished run must never
pass CI by accident.  A gate that cannot apply to the run (a model, split or
metric it does not have) is not accepted before anything is bought
(``check_gates_apply``, called at configure time).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from ..errors import ConfigError
from ..finite import finite_number, format_metric

if TYPE_CHECKING:
    from ..report.results_model import ControlShare, JudgeControls, Results, ResultsRow

#: Gate-able metrics and how their values print.
METRIC_KINDS = {
    "pass_rate": "percent",
    "pass_at_4": "percent",
    "pass_at_10": "percent",
    "expected_attempts": "attempts",
    "effective_cost": "dollars",
    "first_attempt_pass_rate": "percent",
    "hype_gap": "percent",
    "judge_false_pass": "percent",
    "judge_false_fail": "percent",
    "judge_drift": "count",
}
#: The figures of the judge's controls (--judge-controls, analysis/judge_controls.py): one value per judge, read
#: from the results' ``judge_controls``, not from a model's row.
JUDGE_METRICS = ("judge_false_pass", "judge_false_fail", "judge_drift")
#: A value within this of its threshold (relative to the threshold, absolute below 1) is on it: ``>=`` and ``<=``
#: hold there, ``>`` and ``<`` do not.  Without it a tie was decided by floating-point error: 0.78 (156 of 200)
#: against baseline 0.8 - 0.02 (0.7800000000000001) failed ``pass_rate>=baseline-0.02``.  The full run's gates and
#: --sequential's early decisions (analysis/sequential.py) compare with it alike.
TIE_TOLERANCE = 1e-9


def tie_tolerance(threshold: float) -> float:
    return TIE_TOLERANCE * max(1.0, abs(threshold)) if math.isfinite(threshold) else 0.0


OPERATORS = {
    ">=": lambda value, threshold: value >= threshold - tie_tolerance(threshold),
    "<=": lambda value, threshold: value <= threshold + tie_tolerance(threshold),
    ">": lambda value, threshold: value > threshold + tie_tolerance(threshold),
    "<": lambda value, threshold: value < threshold - tie_tolerance(threshold),
}
BOUNDS = {"low": 0, "high": 1}
_GATE = re.compile(r"^\s*(?:(?P<scope>[^:<>=]+):)?\s*(?P<calibrated>calibrated\.)?(?P<metric>[a-z_0-9]+)(?:\.(?P<bound>low|high))?\s*(?P<op>>=|<=|>|<)\s*(?P<threshold>\S.*?)\s*$")
_THRESHOLD = re.compile(r"^(?P<number>[-+]?(?:\d+\.?\d*|\.\d+))(?P<percent>%?)$")
_BASELINE = re.compile(r"^baseline\s*(?:(?P<sign>[-+])\s*(?P<offset>(?:\d+\.?\d*|\.\d+))(?P<percent>%?))?$")


@dataclass(frozen=True)
class Gate:
    text: str  # as the user wrote it, for messages
    metric: str
    op: str
    threshold: float  # absolute threshold, or the offset from the baseline when relative
    relative_to_baseline: bool = False
    bound: str | None = None  # "low"/"high": gate on an interval bound
    model: str | None = None
    split: str | None = None
    calibrated: bool = False  # the figure corrected with a human sample (row["calibrated"])

    @property
    def measured(self) -> str:
        name = f"calibrated.{self.metric}" if self.calibrated else self.metric
        return f"{name}.{self.bound}" if self.bound else name


@dataclass(frozen=True)
class GateResult:
    gate: Gate
    model: str | None
    split: str | None
    value: float | None
    threshold: float | None
    passed: bool
    note: str = ""  # why a gate failed regardless of its value, or the baseline comparison

    @property
    def margin(self) -> float | None:
        """How far the value is on the right side of the threshold (negative: the wrong side)."""
        if not finite_number(self.value) or not finite_number(self.threshold):
            return None
        return self.value - self.threshold if self.gate.op in (">=", ">") else self.threshold - self.value

    def line(self) -> str:
        kind = METRIC_KINDS[self.gate.metric]
        where = f"{self.model} ({self.split})" if self.model else "the run"
        text = (
            f"{'PASS' if self.passed else 'FAIL'} gate {self.gate.text!r} on {where}: "
            f"{self.gate.measured} = {format_value(self.value, kind)}, "
            f"threshold {self.gate.op} {format_value(self.threshold, kind)}, "
            f"margin {format_margin(self.margin, kind)}"
        )
        return f"{text}; {self.note}" if self.note else text


def format_value(value: float | None, kind: str) -> str:
    """As in the leaderboard, but an infinite value (no success at all) says so."""
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return format_metric(value, kind)


def format_margin(margin: float | None, kind: str) -> str:
    if margin is None:
        return "n/a"
    if kind == "percent":
        return f"{margin * 100:+.1f} points"
    if kind == "dollars":
        return f"{'+' if margin >= 0 else '-'}${abs(margin):.2f}"
    return f"{margin:+.2f}"


# --------------------------------------------------------------------------- parsing


def parse_gate(text: str) -> Gate:
    """Parse one ``--gate`` value; a ConfigError names the option, the value and what is allowed."""
    match = _GATE.match(text or "")
    if not match:
        raise _usage(text, "expected [MODEL[@SPLIT]:]METRIC OP THRESHOLD, e.g. 'pass_rate>=0.6'")
    metric = match["metric"]
    if metric not in METRIC_KINDS:
        close = _closest(metric, list(METRIC_KINDS))
        raise _usage(text, f"unknown metric {metric!r}" + (f" (did you mean {close!r}?)" if close else ""))
    model, split = _parse_scope(match["scope"], text)
    relative, threshold = _parse_threshold(match["threshold"], text, METRIC_KINDS[metric])
    return Gate(text.strip(), metric, match["op"], threshold, relative, match["bound"], model, split,
                bool(match["calibrated"]))


def parse_gates(texts: Iterable[str] | None) -> list[Gate]:
    return [parse_gate(text) for text in texts or ()]


def _usage(text: str, problem: str) -> ConfigError:
    return ConfigError(
        f"--gate {text!r}: {problem}. Allowed metrics: {', '.join(METRIC_KINDS)} "
        f"(optionally .low/.high for an interval bound, and calibrated. before the metric for the figure "
        f"corrected with a human sample); operators: {' '.join(OPERATORS)}; "
        "threshold: a number, a percentage (60%), or baseline[+-offset] with --baseline"
    )


def _parse_scope(scope: str | None, text: str) -> tuple[str | None, str | None]:
    if scope is None:
        return None, None
    # MODEL@ROUTE@SPLIT: a model on another of its routes (--model NAME@ROUTE) on one split; MODEL@ROUTE alone
    # reads as MODEL@SPLIT here and is read again as the model when the run has it (route_scoped)
    model, at, split = scope.strip().rpartition("@") if scope.count("@") > 1 else scope.strip().partition("@")
    if not model.strip() or (at and not split.strip()):
        raise _usage(text, f"the scope {scope!r} must be MODEL or MODEL@SPLIT (MODEL@ROUTE or "
                                 "MODEL@ROUTE@SPLIT for a model on another of its routes)")
    return model.strip(), (split.strip() or None)


def route_scoped(gate: Gate, models: Iterable[str]) -> Gate:
    """A gate whose scope ``NAME@ROUTE`` was read as model NAME on split ROUTE, read as the model ``NAME@ROUTE`` (all
    its rows) when that is a model of the run (a split of that name too is written ``NAME@ROUTE@SPLIT``); any other
    gate as it is."""
    joined = f"{gate.model}@{gate.split}"
    if gate.model is not None and gate.split is not None and joined in set(models):
        return replace(gate, model=joined, split=None)
    return gate


def _parse_threshold(raw: str, text: str, kind: str) -> tuple[bool, float]:
    baseline = _BASELINE.match(raw)
    if baseline:
        offset = _number(baseline["offset"] or "0", baseline["percent"], text, kind)
        return True, -offset if baseline["sign"] == "-" else offset
    number = _THRESHOLD.match(raw)
    if not number:
        raise _usage(text, f"threshold {raw!r} is not a number, a percentage or baseline[+-offset]")
    return False, _number(number["number"], number["percent"], text, kind)


def _number(digits: str, percent: str, text: str, kind: str) -> float:
    value = float(digits) / (100 if percent else 1)
    if kind == "percent" and not percent and abs(value) > 1:
        # 'pass_rate>=60' would never hold: fractions are stored in [0, 1]
        raise _usage(text, f"{digits} is out of range for a fraction; write {digits}% or {float(digits) / 100:g}")
    return value


# --------------------------------------------------------------------------- does a gate apply to the run?

#: The metrics whose name says 10 images per task: at another number of repeats they measure Pass@k (k the repeats).
TEN_REPEAT_METRICS = ("pass_at_10", "hype_gap")


@dataclass(frozen=True)
class RunScope:
    """What a run will measure, known before anything is bought: its models, its splits (``combined`` is one when
    there are several), its repeats, whether it has calibrated figures and bootstrap intervals."""

    models: tuple[str, ...]
    splits: tuple[str, ...]
    repeats: int
    calibrated: bool = False
    intervals: bool = True
    judge_controls: bool = False  # --judge-controls
    baseline: bool = False  # --baseline
    labels: bool = False  # human labels: --agreement or --calibrate

    @property
    def rows(self) -> tuple[str, ...]:
        """The split names a results row of this run can have."""
        return self.splits + (("combined",) if len(self.splits) > 1 else ())


def check_gates_apply(gates: Sequence[Gate], scope: RunScope) -> None:
    """A ConfigError naming every gate that cannot apply to the run (a model, split or metric it does not have),
    so that a typo is a usage error before anything is bought, not a failed gate after paying for everything."""
    problems = [problem for gate in gates if (problem := _not_in_run(route_scoped(gate, scope.models), scope))]
    if problems:
        raise ConfigError(" ".join(problems) + " Nothing was bought.")


def _not_in_run(gate: Gate, scope: RunScope) -> str | None:
    head = f"--gate {gate.text!r}"
    if gate.metric in JUDGE_METRICS:
        return _judge_gate_not_in_run(gate, scope, head)
    if gate.model is not None and gate.model not in scope.models:
        return (f"{head} names model {gate.model!r}, which this run does not measure (its models: "
                f"{', '.join(scope.models)}){_did_you_mean(gate.model, scope.models) or '.'} Fix the name, add "
                f"--model {gate.model} to measure it, or drop the gate.")
    if gate.split is not None and gate.split not in scope.rows:
        return (f"{head} names split {gate.split!r}, which this run does not have (its splits: "
                f"{', '.join(scope.rows)}){_did_you_mean(gate.split, scope.rows) or '.'} Fix the name, or add its "
                "task file with --tasks.")
    if gate.metric in TEN_REPEAT_METRICS and scope.repeats != 10:
        return (f"{head}: {gate.metric} is defined on 10 images per task, and with --repeats {scope.repeats} this "
                f"run would measure it on Pass@{scope.repeats} instead. Run --repeats 10 (the paper's) to gate "
                "on it, or gate on pass_rate, pass_at_4, expected_attempts, effective_cost or first_attempt_pass_rate.")
    if gate.calibrated and not scope.calibrated:
        return (f"{head} gates on a calibrated figure, which only a run with --calibrate labels:PATH has (a human "
                f"sample: hypeedit-review --sample draws one): add --calibrate, or gate on {gate.metric}.")
    if gate.bound is not None and not gate.calibrated and not scope.intervals:
        return (f"{head} gates on an interval bound, and --bootstrap 0 computes no interval: drop --bootstrap 0, "
                f"or gate on {gate.metric}.")
    return None


def _judge_gate_not_in_run(gate: Gate, scope: RunScope, head: str) -> str | None:
    if gate.model is not None or gate.split is not None or gate.calibrated or gate.relative_to_baseline:
        return (f"{head}: {gate.metric} is a figure of the run's judge, not of a model: write it without "
                f"MODEL@SPLIT, calibrated. or baseline, e.g. '{gate.metric}<=0.05'.")
    if not scope.judge_controls:
        return (f"{head} gates on the judge's controls, which only a run with --judge-controls judges: add "
                "--judge-controls, or drop the gate.")
    if gate.metric == "judge_false_fail" and not scope.labels:
        return (f"{head}: judge_false_fail is read on the positive controls, candidates people passed, which only "
                "a run with human labels has: add --agreement labels:PATH or --calibrate labels:PATH, or drop the "
                "gate.")
    if gate.metric == "judge_drift" and (not scope.baseline or gate.bound is not None):
        return (f"{head}: judge_drift compares the judge's controls with those of --baseline RESULTS.json (a run "
                "with --judge-controls), and has no interval: pass --baseline, and write 'judge_drift<=0'.")
    return None


def _did_you_mean(name: str, known: Sequence[str]) -> str:
    close = _closest(name, known)
    return f"; did you mean {close!r}?" if close else ""


def _closest(name: str, known: Sequence[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return close[0] if close else None


# --------------------------------------------------------------------------- evaluation


def evaluate(
    gates: Sequence[Gate],
    results: Results,
    baseline_rows: Sequence[ResultsRow] | None = None,
    allow_incomplete: bool = False,
    incomplete_reasons: Sequence[str] = (),
) -> list[GateResult]:
    """Check every gate on the rows it applies to; one GateResult per (gate, row).

    ``incomplete_reasons`` are run-level problems the rows cannot show (e.g.
    items that crashed without a record); they fail every gate like row errors.
    """
    rows = list(results.get("rows") or [])
    outcome = []
    for gate in gates:
        if gate.metric in JUDGE_METRICS:
            outcome.extend(_judge_checks(gate, results.get("judge_controls"), allow_incomplete))
            continue
        scoped = route_scoped(gate, [str(row.get("model")) for row in rows])
        targets = _target_rows(scoped, rows)
        if not targets:
            outcome.append(_missing(gate, rows))
        for row in targets:  # each result names the gate as given (the junit XML and --sequential match on it)
            outcome.append(replace(_check(scoped, row, baseline_rows, allow_incomplete, incomplete_reasons), gate=gate))
    return outcome


def all_pass(results: Sequence[GateResult]) -> bool:
    return all(result.passed for result in results)


def _target_rows(gate: Gate, rows: list[ResultsRow]) -> list[ResultsRow]:
    chosen = [r for r in rows if gate.model in (None, r.get("model"))]
    if gate.split:
        return [r for r in chosen if r.get("split") == gate.split]
    combined = [r for r in chosen if r.get("split") == "combined"]
    return combined or chosen


def _missing(gate: Gate, rows: list[ResultsRow]) -> GateResult:
    available = sorted({f"{r.get('model')}@{r.get('split')}" for r in rows}) or ["none: no candidate was judged"]
    note = f"no results row matches (rows in this run: {', '.join(available)})"
    return GateResult(gate, gate.model, gate.split, None, None, False, note)


def _check(gate: Gate, row: ResultsRow, baseline_rows: Sequence[ResultsRow] | None,
           allow_incomplete: bool, incomplete_reasons: Iterable[str]) -> GateResult:
    value = _value(row, gate.metric, gate.bound, gate.calibrated)
    threshold, note = _threshold(gate, row, baseline_rows)
    passed = finite_number(value) and threshold is not None and OPERATORS[gate.op](value, threshold)
    if value is None and gate.calibrated and not row.get("calibrated"):
        note = _join(note, "this row has no calibrated figures: give the run a human sample with --calibrate "
                           "labels:PATH (hypeedit-review --sample draws one)")
    elif value is None:
        note = _join(note, f"{gate.measured} is not defined for this row{_why_not_given(row, gate)}")
    problems = [] if allow_incomplete else list(incomplete_reasons) + incompleteness(row)
    if problems:
        passed = False
        note = _join(note, f"incomplete run ({'; '.join(problems)}): rerun to finish it, or pass --allow-incomplete")
    return GateResult(gate, row.get("model"), row.get("split"), value, threshold, bool(passed), note)


def _why_not_given(row: ResultsRow, gate: Gate) -> str:
    """Why a calibrated figure is not given (too few human labels of the model's own), when it says."""
    entry = (row.get("calibrated") or {}).get(gate.metric) if gate.calibrated else None
    reason = entry.get("reason") if isinstance(entry, Mapping) else None
    return f" ({reason})" if isinstance(reason, str) and reason else ""


def _value(row: ResultsRow, metric: str, bound: str | None, calibrated: bool = False) -> float | None:
    if calibrated:
        entry = (row.get("calibrated") or {}).get(metric) or {}
        value = entry.get(bound or "value") if isinstance(entry, Mapping) else None
    elif bound is None:
        value = row.get(metric)
    else:
        interval = (row.get("intervals") or {}).get(metric)
        value = interval[BOUNDS[bound]] if interval else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _threshold(gate: Gate, row: ResultsRow, baseline_rows: Sequence[ResultsRow] | None
               ) -> tuple[float | None, str]:
    if not gate.relative_to_baseline:
        return gate.threshold, ""
    old, note = _baseline_value(gate, row, baseline_rows)
    if old is None:
        return None, note
    return old + gate.threshold, note


def _baseline_value(gate: Gate, row: ResultsRow, baseline_rows: Sequence[ResultsRow] | None
                    ) -> tuple[float | None, str]:
    """The baseline's value of the metric: the paired one (same tasks) when the row carries it."""
    kind = METRIC_KINDS[gate.metric]
    comparison = row.get("calibrated_baseline") if gate.calibrated else row.get("baseline")
    paired = (comparison or {}).get(gate.metric) if gate.bound is None else None
    # a calibrated comparison not made (a CalibratedFigure: its reason) has no baseline figure: the rows are read
    if isinstance(paired, Mapping) and finite_number(baseline := paired.get("baseline")):
        # Compare like with like: the current value on the shared tasks, not on all tasks.
        tasks = paired.get("tasks")
        note = f"baseline {format_value(baseline, kind)} on {tasks} shared tasks"
        current = paired.get("current")
        if finite_number(current) and current != _value(row, gate.metric, None, gate.calibrated):
            note += f" (current on those tasks {format_value(current, kind)})"
        return float(baseline), note
    for old in baseline_rows or ():
        if old.get("model") == row.get("model") and old.get("split") == row.get("split"):
            value = _value(old, gate.metric, gate.bound, gate.calibrated)
            return value, f"baseline {format_value(value, kind)}"
    return None, f"no baseline row for {row.get('model')} ({row.get('split')}); pass --baseline with a results JSON of that model"


def incompleteness(row: ResultsRow) -> list[str]:
    """What makes a results row unfinished: errors, skipped items, candidates without a verdict."""
    problems = []
    for key, what in (("errors", "errors"), ("skipped", "skipped (budget)"), ("budget_skips", "skipped (budget)")):
        if finite_number(count := row.get(key)) and count > 0:
            problems.append(f"{int(count)} {what}")
    judged, candidates = row.get("judged"), row.get("candidates")
    if finite_number(judged) and finite_number(candidates) and judged < candidates and not problems:
        problems.append(f"{int(candidates - judged)} of {int(candidates)} candidates without a verdict")
    return problems


def _join(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


def _judge_checks(gate: Gate, controls: JudgeControls | None, allow_incomplete: bool) -> list[GateResult]:
    """One result per judge of the run's controls: its false-PASS share on the negative controls or false-FAIL
    share on the positive ones (or a bound of its exact interval), or whether it drifted since the baseline (1) or
    not (0)."""
    if not isinstance(controls, Mapping) or not isinstance(judges := controls.get("judges"), Mapping) or not judges:
        problem = controls.get("problem") if isinstance(controls, Mapping) else None
        return [GateResult(gate, None, None, None, None, False,
                           f"no judge controls were judged{f' ({problem})' if problem else ''}")]
    drifts = controls.get("drift") if isinstance(controls.get("drift"), Mapping) else {}
    out = []
    for judge, entry in judges.items():
        value, note = None, ""
        if gate.metric != "judge_drift":
            passing = gate.metric == "judge_false_pass"
            pooled: ControlShare | dict[str, None] = (entry.get("false_pass") if passing
                                                      else entry.get("false_fail")) or {}
            value = pooled.get("rate") if gate.bound is None else (pooled.get("interval") or (None, None))[
                BOUNDS[gate.bound]]
            note = (f"{pooled.get('wrong')} false {'PASS' if passing else 'FAIL'} of {pooled.get('judged')} "
                    f"{'negative' if passing else 'positive'} controls" if pooled else
                    "no positive controls: they need human labels (--agreement or --calibrate)")
            if entry.get("errors") and not allow_incomplete:
                note = _join(note, f"incomplete controls ({entry['errors']} without a verdict): rerun to finish "
                                   "them, or pass --allow-incomplete")
                value = None
        else:
            drifted = drifts.get(judge) if isinstance(drifts, Mapping) else None
            if isinstance(drifted, Mapping) and drifted.get("compared"):
                value = 1.0 if drifted.get("drifted") else 0.0
                note = "; ".join(drifted.get("reasons") or []) or "no drift since the baseline"
            else:
                note = "the baseline has no judge controls of this judge to compare with"
        value = float(value) if finite_number(value) else None
        passed = value is not None and OPERATORS[gate.op](value, gate.threshold)
        out.append(GateResult(gate, f"judge {judge}", "controls", value, gate.threshold, bool(passed), note))
    return out
