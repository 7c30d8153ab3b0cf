"""The one test of a number read from outside (a results file, a record, YAML, a reply): is it a real figure?

JSON and YAML carry more than figures: ``true`` is an int to Python, and YAML's ``.nan`` and ``.inf`` (or
Python's ``json`` reading ``NaN`` and ``Infinity``) are floats that no price, limit or rate can be.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard


def finite_number(value: Any) -> TypeGuard[float]:
    """A real number: an int or float, not a bool, not nan, not inf."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
