"""Every gate operator at its threshold and just beyond it on either side.

A gate ``pass_rate>0.5`` on a pass rate of exactly 0.5 must fail: ``>`` read as
``>=`` lets a release through that did not improve.  0.5 and 50% are exact in
binary floating point, so "equal" below really is equal.
"""

from __future__ import annotations

import pytest

from pytest_hypeedit.analysis.gates import evaluate, parse_gate

EPSILON = 1e-9
BELOW, AT, ABOVE = 0.5 - EPSILON, 0.5, 0.5 + EPSILON

CASES = [
    (">=", AT, True), (">=", ABOVE, True), (">=", BELOW, False),
    ("<=", AT, True), ("<=", BELOW, True), ("<=", ABOVE, False),
    (">", AT, False), (">", ABOVE, True), (">", BELOW, False),
    ("<", AT, False), ("<", BELOW, True), ("<", ABOVE, False),
]


def row(value: float) -> dict:
    return {"model": "m", "split": "public", "tasks": 2, "candidates": 20, "judged": 20, "errors": 0,
            "skipped": 0, "pass_rate": value, "hype_gap": value, "expected_attempts": value * 4}


def holds(text: str, value: float) -> bool:
    [result] = evaluate([parse_gate(text)], {"rows": [row(value)]})
    return result.passed


@pytest.mark.parametrize("op, value, expected", CASES)
@pytest.mark.parametrize("threshold", ["0.5", "50%"])
def test_each_operator_at_and_beyond_its_threshold(op, value, expected, threshold):
    assert holds(f"pass_rate{op}{threshold}", value) is expected


@pytest.mark.parametrize("op, value, expected", CASES)
def test_each_operator_on_a_metric_that_is_not_a_fraction(op, value, expected):
    # expected_attempts = 4 x value: 2.0 at the threshold
    assert holds(f"expected_attempts {op} 2", value) is expected


@pytest.mark.parametrize("op, value, expected", CASES)
def test_each_operator_against_the_baseline(op, value, expected):
    [result] = evaluate([parse_gate(f"pass_rate{op}baseline")], {"rows": [row(value)]}, baseline_rows=[row(0.5)])
    assert result.passed is expected


@pytest.mark.parametrize("op", [">=", "<=", ">", "<"])
def test_the_margin_is_positive_on_the_side_that_holds(op):
    inside = {">=": ABOVE, ">": ABOVE, "<=": BELOW, "<": BELOW}[op]
    [held] = evaluate([parse_gate(f"pass_rate{op}0.5")], {"rows": [row(inside)]})
    assert held.passed and held.margin == pytest.approx(EPSILON, abs=1e-12)
    assert f"threshold {op} 50.0%" in held.line()
