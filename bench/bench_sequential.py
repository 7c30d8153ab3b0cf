"""--sequential by simulation: how often an early decision is wrong, for the task set a team runs, and what it saves.

    python bench/bench_sequential.py [--runs 4000] [--sets 20] [--alpha 0.05]

Simulated runs of tests/support/sequential_sim.py (50 tasks x 10 repeats, each run buying in an order drawn
afresh, as the plugin draws one per outputs folder).  Prints:

1. task sets drawn per run (pass rates 2% to 98%, tasks from very unlike, Beta concentration 0.5, to alike, 50):
   the share of runs decided the wrong way with the full run exactly on the gate's threshold;
2. FIXED task sets (the one a team runs, again and again), each placed hardest first in its task file: the
   share decided wrong per set with the order drawn per run, against the constant order of before with the
   hardest tasks where it buys first;
3. seven gates in one run, each on its threshold: the share of runs with any wrong decision, alpha split over
   them (the plugin) or at alpha each;
4. the reference: the exact error over every arrangement of a 20-item task set (no simulation), beside the
   simulated share;
5. what the guarantee is not: the share of runs whose gate passes for a release whose true pass rate is on the
   threshold, or a point below (agreement with the full run, not a test of the true rate);
6. a decisive case: a release at 30% gated at 78%, the share decided FAIL and the candidates bought.

The figures in README.md and docs/explanation/statistics.md come from the defaults.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from sequential_sim import (
    decisive_case,
    hardest_bought_first,
    simulated_runs,
    task_sets,
    wrong_decisions_on_threshold,
    wrong_in_any_gate,
    wrong_on_fixed_set,
)

from pytest_hypeedit.analysis.sequential import decide_many

RATES = (0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98)
SPREADS = (0.5, 5.0, 50.0)


def drawn_sets(rng, runs: int, alpha: float) -> float:
    print(f"1. task sets drawn per run: wrong early decisions with the full run on the threshold ({runs} runs "
          f"each, alpha {alpha:g}; gate >= / gate <)")
    print("pass rate  " + "  ".join(f"Beta conc {s:>4g}" for s in SPREADS))
    worst = 0.0
    for rate in RATES:
        cells = []
        for spread in SPREADS:
            shares = [wrong_decisions_on_threshold(rng, runs, rate, spread, op, alpha) for op in (">=", "<")]
            worst = max(worst, *shares)
            cells.append(f"{shares[0] * 100:5.2f}/{shares[1] * 100:5.2f}%")
        print(f"{rate * 100:8.0f}%  " + "  ".join(f"{c:>14}" for c in cells))
    print(f"   worst: {worst * 100:.2f}% (alpha {alpha * 100:g}%)")
    return worst


def fixed_sets(rng, runs: int, count: int, alpha: float) -> float:
    print(f"2. {count} fixed task sets (the last: tasks that always fail or always pass), {runs} runs each, the "
          "full run on the threshold, gate >=: wrong early decisions per set")
    drawn, constant = [], []
    for rates in task_sets(rng, count):
        drawn.append(wrong_on_fixed_set(rng, np.sort(rates), runs, alpha=alpha))
        constant.append(wrong_on_fixed_set(rng, hardest_bought_first(rates), runs, alpha=alpha, order="constant"))
    for name, shares in (("order drawn per run, hardest first in the task file", drawn),
                         ("constant order, hardest tasks where it buys first", constant)):
        print(f"   {name}: worst {max(shares) * 100:.2f}%, median {np.median(shares) * 100:.2f}%, over 10% in "
              f"{np.mean(np.array(shares) > 0.1) * 100:.0f}% of sets")
    return max(drawn)


def several_gates(rng, runs: int, alpha: float) -> float:
    seven = task_sets(rng, 7)
    split = wrong_in_any_gate(rng, seven, runs, alpha)
    each = wrong_in_any_gate(rng, seven, runs, alpha, split=False)
    print(f"3. seven gates in one run, each on its threshold ({runs} runs): some gate wrong in {split * 100:.2f}% "
          f"of runs at alpha/7 each (the plugin), {each * 100:.2f}% at alpha each")
    return split


def exact_reference(rng, alpha: float, items: int = 20, passing: int = 10, runs: int = 20000) -> None:
    arrangements = np.zeros((math.comb(items, passing), items))
    for row, ones in enumerate(itertools.combinations(range(items), passing)):
        arrangements[row, list(ones)] = 1.0
    decisions, _ = decide_many(arrangements, passing / items, ">=", alpha)
    tasks = np.array([1.0] * (passing // 5) + [0.0] * ((items - passing) // 5))
    simulated = wrong_on_fixed_set(rng, tasks, runs, alpha=alpha, repeats=5)
    print(f"4. reference: {items} items, {passing} passing, on the threshold: exact error over all "
          f"{len(arrangements)} arrangements {np.mean(decisions == -1) * 100:.3f}%, simulated ({runs} runs) "
          f"{simulated * 100:.3f}%")


def not_a_test_of_the_true_rate(rng, runs: int, alpha: float) -> None:
    cells = []
    for below in (0.0, 0.01):
        values, full = simulated_runs(rng, runs, 0.5 - below, 5.0)
        decisions, _ = decide_many(values, 0.5, ">=", alpha)
        passes = np.where(decisions == 0, full >= 0.5, decisions == 1)
        cells.append(f"{passes.mean() * 100:.1f}%")
    print(f"5. a release whose true pass rate is on the threshold (50%) passes `pass_rate>=0.5` in {cells[0]} of "
          f"runs, a point below in {cells[1]}: the early decision agrees with the full run, it does not test the "
          "true rate")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000)
    parser.add_argument("--sets", type=int, default=20)
    parser.add_argument("--alpha", type=float, default=0.05)
    options = parser.parse_args()
    rng = np.random.default_rng(2026)
    started = time.perf_counter()
    drawn_sets(rng, options.runs, options.alpha)
    fixed_sets(rng, options.runs, options.sets, options.alpha)
    several_gates(rng, options.runs, options.alpha)
    exact_reference(rng, options.alpha)
    not_a_test_of_the_true_rate(rng, options.runs, options.alpha)
    decided, median, most, planned = decisive_case(rng, options.runs, alpha=options.alpha)
    print(f"6. decisive case (release 30%, gate >= 78%): decided FAIL in {decided * 100:.1f}% of runs after a "
          f"median {median:g} of {planned} candidates (at most {most}): saves {(1 - median / planned) * 100:.0f}% "
          "of the candidates, before the look-ahead of --concurrency")
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
