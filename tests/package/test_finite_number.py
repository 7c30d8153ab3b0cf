"""One test of a number from outside (finite.py), used wherever a results file, a record, YAML or a reply gives
a figure: a bool, nan or inf is never a price, a rate or a limit."""

from __future__ import annotations

import math

import pytest

from pytest_hypeedit.analysis.metrics import format_metric
from pytest_hypeedit.finite import finite_number


@pytest.mark.parametrize("value", [0, 1, -2, 0.25, 1e300])
def test_real_numbers_are_finite(value):
    assert finite_number(value)


@pytest.mark.parametrize("value", [True, False, math.nan, math.inf, -math.inf, "1", None, [1], {"v": 1}])
def test_anything_else_is_not(value):
    assert not finite_number(value)


def test_a_table_prints_no_figure_for_a_bool():
    """true in a results file is no pass rate: the tables (and the charts) show n/a, not 100.0%."""
    assert format_metric(True, "percent") == "n/a"
    assert format_metric(0.5, "percent") == "50.0%"
