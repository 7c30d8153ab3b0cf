"""The shape a results file from outside must have before anything reads it (``--baseline``, ``hypeedit-leaderboard``).

A results file is written by a run with ``allow_nan=False`` (report/results.py): no honest one holds ``NaN``,
``Infinity`` or a number past a float (``1e999``, which Python's ``json`` reads as infinity).  Its readers (the
merge, the Markdown and HTML tables, the baseline comparison, the gates) take a row's metrics as figures: a rate
of ``Infinity`` printed ``inf%``, ``rows: [1]`` was a traceback with no results written.  So every value is
checked here once, where it is read, and what is not a results file's is one InputError naming the file, the row
and the field.  Only what a reader uses is checked by type; fields it does not read pass as they are (a newer
version's additions), but none of them may hold a number that is not finite either.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from ..finite import finite_number

#: Fractions of tasks or candidates: a figure from 0 to 1.
FRACTIONS = ("pass_rate", "pass_at_4", "pass_at_10", "first_attempt_pass_rate", "pass_at_4_unbiased",
             "pass_at_10_unbiased")
#: The pass@10 minus the first-attempt pass rate: from -1 to 1.
SIGNED_FRACTIONS = ("hype_gap",)
#: Figures that are never negative: attempts and dollars.
AMOUNTS = ("expected_attempts", "effective_cost", "effective_cost_list", "cost_per_candidate",
           "cost_per_candidate_paid", "spent", "possibly_paid_cost")
#: Counts: whole numbers, never negative.
COUNTS = ("tasks", "candidates", "judged", "errors", "refusals", "skipped", "resubmitted", "possibly_paid")
#: Fields that hold an object, and fields that hold a list, when present.
OBJECTS = ("intervals", "calibration", "calibrated", "baseline", "spent_breakdown", "by_task_type")
LISTS = ("task_tallies", "baseline_tasks")
#: The top level's objects and lists, when present.
TOP_OBJECTS = ("settings", "coverage")


class NotResults(ValueError):
    """What makes a value no results file: the message names where (``rows[3].pass_rate``) and why."""


def check_results_shape(data: Any, schema: str) -> None:
    """Raise NotResults unless ``data`` is a results file of ``schema`` whose readers can take every figure."""
    _check_finite(data)
    if not isinstance(data, dict) or data.get("schema") != schema or not isinstance(data.get("rows"), list):
        raise NotResults(f"not a results file (expected schema {schema!r} with a 'rows' list)")
    for key in TOP_OBJECTS:
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise NotResults(f"{key} is a {_kind(data[key])}, not an object")
    for index, row in enumerate(data["rows"]):
        _check_row(index, row)


def _check_row(index: int, row: Any) -> None:
    where = f"rows[{index}]"
    if not isinstance(row, dict):
        raise NotResults(f"{where} is a {_kind(row)}, not a row object (with model, split and its figures)")
    for key in ("model", "split"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise NotResults(f"{where}.{key} is {_shown(row.get(key))}, not a name")
    where = f"{where} ({row['model']}, {row['split']})"
    for key, low, high in ([(k, 0.0, 1.0) for k in FRACTIONS] + [(k, -1.0, 1.0) for k in SIGNED_FRACTIONS]
                           + [(k, 0.0, math.inf) for k in AMOUNTS]):
        _check_figure(where, key, row.get(key), low, high)
    for key in COUNTS:
        value = row.get(key)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            raise NotResults(f"{where}.{key} is {_shown(value)}, not a count (a whole number, 0 or more)")
    for key in OBJECTS:
        if row.get(key) is not None and not isinstance(row[key], dict):
            raise NotResults(f"{where}.{key} is a {_kind(row[key])}, not an object")
    for key in LISTS:
        if row.get(key) is not None and not (isinstance(row[key], list) and all(isinstance(e, dict) for e in row[key])):
            raise NotResults(f"{where}.{key} is not a list of objects")
    _check_intervals(where, row.get("intervals") or {})
    _check_calibration(where, row.get("calibration") or {}, row.get("calibrated") or {})


def _check_figure(where: str, key: str, value: Any, low: float, high: float) -> None:
    if value is not None and not (finite_number(value) and low <= value <= high):
        span = f"from {low:g} to {high:g}" if math.isfinite(high) else f"of {low:g} or more"
        raise NotResults(f"{where}.{key} is {_shown(value)}, not a figure {span}")


def _check_intervals(where: str, intervals: Mapping[str, Any]) -> None:
    """Each interval as the tables print it: two figures (or null), or null."""
    for key, bounds in intervals.items():
        if bounds is None:
            continue
        if not (isinstance(bounds, list) and len(bounds) == 2
                and all(b is None or finite_number(b) for b in bounds)):
            raise NotResults(f"{where}.intervals.{key} is {_shown(bounds)}, not [low, high]")


def _check_calibration(where: str, calibration: Mapping[str, Any], calibrated: Mapping[str, Any]) -> None:
    level = calibration.get("level")
    if level is not None and not (finite_number(level) and 0 < level <= 1):
        raise NotResults(f"{where}.calibration.level is {_shown(level)}, not a level from 0 to 1")
    problems = calibration.get("problems")
    if problems is not None and not isinstance(problems, list):
        raise NotResults(f"{where}.calibration.problems is a {_kind(problems)}, not a list")
    for key, entry in calibrated.items():
        if entry is not None and not isinstance(entry, dict):
            raise NotResults(f"{where}.calibrated.{key} is a {_kind(entry)}, not an object")


def _check_finite(data: Any) -> None:
    """No number anywhere that is not finite (``NaN``, ``Infinity``, ``1e999``): walked without recursion (the
    depth is bounded already: untrusted.py)."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise NotResults(f"it holds the number {value!r}, which no results file holds (a run writes none)")
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(value), "number" if isinstance(value, (int, float)) else type(value).__name__)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."
