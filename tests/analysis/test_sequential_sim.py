"""Proof by simulation that --sequential's early decisions are right (analysis/sequential.py).

Type I error: with the full run exactly on the threshold, the share of runs decided the wrong way stays at or
under alpha (with a margin for the simulation's own noise), across pass rates from 2% to 98% and tasks from
very unlike (Beta concentration 0.5) to alike (50).  And a release plainly worse than its gate is decided
FAIL after a small part of the plan.  bench/bench_sequential.py prints the same with more runs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sequential_sim import decisive_case, simulated_runs, wrong_decisions_on_threshold

from pytest_hypeedit.analysis.sequential import BettingTest, decide_many, interleaving

ALPHA = 0.05
RUNS = 400
#: The share's standard error at alpha with RUNS runs, three of them: a margin for the simulation's noise only.
NOISE = 3 * math.sqrt(ALPHA * (1 - ALPHA) / RUNS)


@pytest.mark.parametrize("rate", [0.02, 0.1, 0.5, 0.9, 0.98])
@pytest.mark.parametrize("spread", [0.5, 50.0])
@pytest.mark.parametrize("op", [">=", "<"])
def test_type_one_error_on_the_threshold_is_at_most_alpha(rate, spread, op):
    rng = np.random.default_rng([int(rate * 100), int(spread * 10), ">=<".index(op[0])])  # stable seeds
    assert wrong_decisions_on_threshold(rng, RUNS, rate, spread, op, ALPHA) <= ALPHA + NOISE


def test_a_plainly_worse_release_is_decided_after_a_small_part_of_the_plan():
    decided_fail, median, most, planned = decisive_case(np.random.default_rng(1), 500)
    assert decided_fail == 1.0
    assert median <= planned / 10 and most <= planned / 4


def test_a_fixed_number_of_looks_would_not_hold():
    """The same data judged by a naive fixed-n z-test at every look goes wrong far more often than alpha: the
    simulation can tell a valid method from an invalid one (what the tests above rely on)."""
    values, full = simulated_runs(np.random.default_rng(3), RUNS, 0.5, 5.0)
    n = np.arange(1, values.shape[1] + 1)
    mean = np.cumsum(values, axis=1) / n
    z = (mean - full[:, None]) / np.sqrt(np.maximum(mean * (1 - mean), 1e-9) / n)
    assert np.mean((z < -1.645).any(axis=1)) > 2 * ALPHA


def test_the_vectorised_twin_decides_as_the_incremental_test():
    rng = np.random.default_rng(5)
    values = (rng.random((30, 120)) < rng.uniform(0.2, 0.8, size=(30, 1))).astype(float)
    decisions, bought = decide_many(values, 0.5, ">=", ALPHA)
    for row, decision, at in zip(values, decisions, bought):
        test = BettingTest(0.5, ">=", ALPHA, [0.0] * 120, [1.0] * 120)
        for value in row:
            test.update(value)
        assert test.decision == {1: "PASS", -1: "FAIL", 0: None}[int(decision)]
        assert (test.decided_at or 120) == at


def test_the_buying_order_is_seeded_and_spreads_repeats_in_order():
    order = interleaving(["a", "b", "c"], 4)
    assert order == interleaving(["a", "b", "c"], 4)  # every process draws the same
    assert sorted(order) == [(t, r) for t in range(3) for r in range(1, 5)]
    for task in range(3):
        assert [r for t, r in order if t == task] == [1, 2, 3, 4]
    assert order != [(t, r) for r in range(1, 5) for t in range(3)]  # not round robin


def test_a_decision_is_forced_once_the_rest_cannot_change_it():
    test = BettingTest(0.5, ">=", 0.001, [0.0] * 4, [1.0] * 4)
    assert test.update(1.0) is None and test.update(1.0) == "PASS"  # 2 of 4 pass whatever the rest
    assert test.decided_at == 2
    failing = BettingTest(0.5, ">", 0.001, [0.0] * 4, [1.0] * 4)
    failing.update(0.0)
    failing.update(0.0)
    assert failing.decision == "FAIL"  # at most 2 of 4: never above one half


def test_a_skipped_item_leaves_the_population():
    test = BettingTest(0.5, ">=", 0.001, [0.0] * 3, [1.0] * 3)
    test.update(1.0)
    assert test.skip() == "PASS"  # 1 of the 2 left with a value passed: at least one half
    assert test.planned == 2 and test.position == 2


@pytest.mark.parametrize(("op", "decision"), [(">=", "PASS"), ("<", "FAIL")])
def test_a_tie_off_by_floating_point_error_is_decided_as_the_full_run_decides_it(op, decision):
    """9 of 50 against 0.2 - 0.02 (0.18000000000000002): the full run's gate holds (analysis/gates.py compares
    within TIE_TOLERANCE), and so must the decision forced once every value is in (a strict comparison failed it)."""
    values = [1.0] * 9 + [0.0] * 41
    test = BettingTest(0.2 - 0.02, op, 1e-6, [0.0] * 50, [1.0] * 50)  # alpha so small only the values decide
    for value in values:
        test.update(value)
    assert test.decision == decision
    [sign], _ = decide_many([values], 0.2 - 0.02, op, 1e-6)
    assert sign == (1 if decision == "PASS" else -1)
