"""Every gate operator at its threshold and just beyond it on either side.

A gate ``pass_rate>0.5`` on a pass rate of exactly 0.5 must fail: ``>`` read as
``>=`` lets a release through that did not improve.  0.5 and 50% are exact in
binary floating point, so "equal" below really is equal.  "Just beyond" is 1e-6, well past the tie tolerance
(analysis/gates.py TIE_TOLERANCE, 1e-9): a value within it of the threshold is on it.
"""

from __future__ import annotations

import pytest

from pytest_hypeedit.analysis.gates import TIE_TOLERANCE, evaluate, parse_gate
from pytest_hypeedit.analysis.sequential import passes as passes_early

EPSILON = 1e-6
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


def passes(text: str, value: float) -> bool:
    [result] = evaluate([parse_gate(text)], {"rows": [row(value)]})
    return result.passed


@pytest.mark.parametrize("op, value, expected", CASES)
@pytest.mark.parametrize("threshold", ["0.5", "50%"])
def test_each_operator_at_and_beyond_its_threshold(op, value, expected, threshold):
    assert passes(f"pass_rate{op}{threshold}", value) is expected


@pytest.mark.parametrize("op, value, expected", CASES)
def test_each_operator_on_a_metric_that_is_not_a_fraction(op, value, expected):
    # expected_attempts = 4 x value: 2.0 at the threshold
    assert passes(f"expected_attempts {op} 2", value) is expected


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


@pytest.mark.parametrize("op, expected", [(">=", True), ("<=", True), (">", False), ("<", False)])
def test_a_tie_off_by_floating_point_error_is_a_tie_in_the_full_run_and_the_early_decision(op, expected):
    """9 of 50 (0.18) against a baseline of 0.2 with ``baseline-0.02``: 0.2 - 0.02 is 0.18000000000000002 in
    binary floating point, and a strict comparison failed ``>=`` (and passed ``<``) on what is a tie."""
    assert 0.2 - 0.02 != 9 / 50  # the premise: the tie is off by floating-point error
    [result] = evaluate([parse_gate(f"pass_rate{op}baseline-0.02")], {"rows": [row(9 / 50)]},
                        baseline_rows=[row(0.2)])
    assert result.passed is expected
    assert passes_early(op, (9 / 50 - 0.2 + 1) / 2, (-0.02 + 1) / 2) is expected  # the paired scale


@pytest.mark.parametrize("op, expected", [(">=", True), ("<=", True), (">", False), ("<", False)])
@pytest.mark.parametrize("off", [TIE_TOLERANCE / 2, -TIE_TOLERANCE / 2])
def test_within_the_tie_tolerance_is_on_the_threshold(op, expected, off):
    assert passes(f"pass_rate{op}0.5", 0.5 + off) is expected
    assert passes_early(op, 0.5 + off, 0.5) is expected


def test_an_infinite_value_is_not_within_any_tolerance():
    assert not passes("expected_attempts <= 2", float("inf"))
