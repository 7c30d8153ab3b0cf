"""The one test of a number read from outside (a results file, a record, YAML, a reply): is it a real figure?

JSON and YAML carry more than figures: ``true`` is an int to Python, and YAML's ``.nan`` and ``.inf`` (or
Python's ``json`` reading ``NaN`` and ``Infinity``) are floats that no price, limit or rate can be.

``format_metric`` writes such a figure as every report writes a metric.  It lives here, not beside the metrics
(analysis/metrics.py), because that module imports numpy and the modules a run imports before its first call
(the gates checked at start-up, the terminal's tables) must not: numpy is imported while the first calls are in
flight (glue/warm_up.py).
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard


def finite_number(value: Any) -> TypeGuard[float]:
    """A real number: an int or float, not a bool, not nan, not inf."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def format_metric(value: Any, kind: str) -> str:
    """A metric's value as the terminal, the Markdown and the gates' messages write it (``kind``: percent, dollars
    or a plain number); "n/a" when it is not a finite number (not measured, or not computable)."""
    if not finite_number(value):
        return "n/a"
    if kind == "percent":
        return f"{value * 100:.1f}%"
    if kind == "dollars":
        return f"${value:.2f}"
    return f"{value:.2f}"
