"""Proof by simulation that --sequential's early decisions are right (analysis/sequential.py).

Type I error: with the full run exactly on the threshold, the share of runs decided the wrong way stays at or
under alpha (with a margin for the simulation's own noise): for task sets drawn per run, across pass rates from
2% to 98% and tasks from very unlike (Beta concentration 0.5) to alike (50); for FIXED task sets, the one a team
runs again and again, whatever their order in the task file (hardest first, or lined up with any one order); and
for several gates in one run, the chance of any wrong decision (alpha split over them).  An exact count over
every arrangement of a small task set is the reference the simulation agrees with.  And a release plainly worse
than its gate is decided FAIL after a small part of the plan.  bench/bench_sequential.py prints the same with
more runs.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sequential_sim import (
    decisive_case,
    hardest_bought_first,
    simulated_runs,
    task_sets,
    wrong_decisions_on_threshold,
    wrong_in_any_gate_at,
    wrong_on_fixed_set,
)

from pytest_hypeedit.analysis.sequential import BettingTest, decide_many, interleaving, per_gate_alpha

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
    order = interleaving(["a", "b", "c"], 4, "0f" * 16)
    assert order == interleaving(["a", "b", "c"], 4, "0f" * 16)  # every process given the seed draws the same
    assert sorted(order) == [(t, r) for t in range(3) for r in range(1, 5)]
    for task in range(3):
        assert [r for t, r in order if t == task] == [1, 2, 3, 4]
    assert order != [(t, r) for r in range(1, 5) for t in range(3)]  # not round robin
    assert len({tuple(interleaving(range(6), 10, f"{seed:032x}")) for seed in range(20)}) == 20  # seeds differ


FIXED = task_sets(np.random.default_rng(2026), 6)


@pytest.mark.parametrize("rates", FIXED, ids=[f"set{i}" for i in range(len(FIXED))])
@pytest.mark.parametrize("arrangement", ["hardest-first", "lined-up"])
def test_a_fixed_task_set_is_decided_wrong_at_most_alpha_whatever_its_order_in_the_task_file(rates, arrangement):
    """The guarantee a team needs: its own task set, run again and again, each run on its own drawn order.
    "lined-up": the task file places the hardest tasks where the constant order of before bought first (with
    it, a task set so placed is decided wrong far more often than alpha: the next test, and the bench)."""
    placed = np.sort(rates) if arrangement == "hardest-first" else hardest_bought_first(rates)
    rng = np.random.default_rng(7)
    assert wrong_on_fixed_set(rng, placed, RUNS) <= ALPHA + NOISE


def test_a_constant_order_decides_the_task_sets_it_buys_hardest_first_wrong():
    """Why the order is drawn per outputs folder: averaged over task sets a constant order errs at most alpha,
    yet for a task set it buys hardest first it errs nearly every time (the simulation tells them apart)."""
    stark = FIXED[-1]  # tasks that always fail or always pass
    assert wrong_on_fixed_set(np.random.default_rng(8), hardest_bought_first(stark), 100, order="constant") > 0.9


def test_several_gates_in_one_run_are_wrong_together_at_most_alpha():
    """Seven gates on their thresholds in one run: at alpha each, some gate is wrong in about a fifth of runs;
    at the per-gate alpha (alpha / 7) in at most alpha."""
    seven = FIXED + FIXED[:1]
    # the same runs judged both ways (what two calls with equally seeded generators gave, drawn once)
    split, each = wrong_in_any_gate_at(np.random.default_rng(9), seven, RUNS, (per_gate_alpha(ALPHA, 7), ALPHA))
    assert split <= ALPHA + NOISE
    assert each > 2 * ALPHA
    assert per_gate_alpha(0.05, 7) == pytest.approx(0.05 / 7) and per_gate_alpha(0.05, 0) == 0.05


@pytest.mark.parametrize(("items", "passing"), [(16, 8), (20, 5)])
def test_the_exact_error_over_every_arrangement_is_at_most_alpha_and_the_simulation_agrees(items, passing):
    """The reference: a task set whose tasks always pass or always fail is a fixed population of 0s and 1s, and
    a uniformly random order makes every arrangement of it equally likely.  Counting the wrong decisions over all
    C(N, K) arrangements (the full run on the threshold: K / N) gives the error exactly, no simulation; the
    simulated runs through ``interleaving`` must agree with it within their noise."""
    arrangements = np.zeros((math.comb(items, passing), items))
    for row, ones in enumerate(itertools.combinations(range(items), passing)):
        arrangements[row, list(ones)] = 1.0
    decisions, _ = decide_many(arrangements, passing / items, ">=", ALPHA)
    exact = float(np.mean(decisions == -1))
    assert exact <= ALPHA
    repeats = 4
    tasks = np.array([1.0] * (passing // repeats) + [0.0] * ((items - passing) // repeats))
    simulated = wrong_on_fixed_set(np.random.default_rng(10), tasks, 2000, repeats=repeats)
    assert abs(simulated - exact) <= 4 * math.sqrt(max(exact, 1e-3) * (1 - exact) / 2000)


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
    """9 of 50 against 0.2 - 0.02 (0.18000000000000002): the full run's gate passes (analysis/gates.py compares
    within TIE_TOLERANCE), and so must the decision forced once every value is in (a strict comparison failed it)."""
    values = [1.0] * 9 + [0.0] * 41
    test = BettingTest(0.2 - 0.02, op, 1e-6, [0.0] * 50, [1.0] * 50)  # alpha so small only the values decide
    for value in values:
        test.update(value)
    assert test.decision == decision
    [sign], _ = decide_many([values], 0.2 - 0.02, op, 1e-6)
    assert sign == (1 if decision == "PASS" else -1)
