"""Which differences are real, by simulation: the family-wise error of ``pairwise`` with equal models.

    python bench/bench_pairwise.py [--pairs 2000] [--families 400] [--models 3 7 10] [--rates 0.1 0.5 0.9]

Simulated families of tests/support/pairwise_sim.py: 3, 7 and 10 copies of one model, 50 tasks x 10 repeats,
task pass rates drawn from a Beta distribution (concentration 2: tasks very unlike) with mean 10%, 50% or 90%,
each family at one price drawn from $0.01-$0.20.  Every significant entry is a false discovery; prints, per
regime and number of models, the share of families with one (the family-wise error, at most 5% is the claim)
with its 95% Monte Carlo (Wilson) interval, the share per metric, and the smallest ``p_adjusted`` seen (never
0).  First, for pairs of two equal models, the share of each metric's raw p-values at or below 5% and 1% (an exact
test: at most that; effective cost's test is an approximation).  The figures in docs/explanation/statistics.md
come from the defaults.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from pairwise_sim import Regime, false_discoveries, null_p_values

from pytest_hypeedit.analysis.pairwise import PAIRWISE_METRICS

RATES = (0.1, 0.5, 0.9)
SPREAD = 2.0
SHORT = {"pass_rate": "rate", "pass_at_4": "@4", "pass_at_10": "@10", "expected_attempts": "attempts",
         "effective_cost": "eff.cost", "hype_gap": "hype"}


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a share (Monte Carlo error of the estimate)."""
    share = hits / n
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--families", type=int, default=400)
    parser.add_argument("--models", type=int, nargs="+", default=[3, 7, 10])
    parser.add_argument("--rates", type=float, nargs="+", default=list(RATES))
    options = parser.parse_args()
    started = time.perf_counter()
    # each table and each cell its own seed: any of them can run alone (or in parallel) and print what the
    # default run prints
    if options.pairs:
        calibration(options.pairs, options.rates)
    if options.families:
        family_wise_error(options.families, options.models, options.rates)
    print(f"({time.perf_counter() - started:.0f} s)")


def calibration(pairs: int, rates: list[float]) -> None:
    print(f"raw p-values of two equal models ({pairs} pairs each): share <= 5% / share <= 1%, smallest")
    print(f"{'pass rate':>9} " + " ".join(f"{SHORT[m]:>20}" for m in PAIRWISE_METRICS))
    for rate in rates:
        found = null_p_values(np.random.default_rng([2025, round(rate * 100)]), pairs, Regime(rate, SPREAD))
        cells = [f"{np.mean(v <= 0.05) * 100:5.2f}/{np.mean(v <= 0.01) * 100:4.2f}% {v.min():.4f}"
                 for v in (found[m] for m in PAIRWISE_METRICS)]
        print(f"{rate * 100:8.0f}% " + " ".join(f"{c:>20}" for c in cells), flush=True)


def family_wise_error(families: int, model_counts: list[int], rates: list[float]) -> None:
    print(f"family-wise error with equal models ({families} families each; 50 tasks x 10 repeats, "
          f"task pass rates Beta(concentration {SPREAD:g}), prices $0.01-$0.20)")
    print(f"{'pass rate':>9} {'models':>6} {'FWER':>6}  {'95% MC interval':<16} "
          + " ".join(f"{SHORT[m]:>8}" for m in PAIRWISE_METRICS) + "  smallest p_adjusted")
    worst = 0.0
    for models in model_counts:
        for rate in rates:
            rng = np.random.default_rng([2026, models, round(rate * 100)])
            tally = false_discoveries(rng, families, models, Regime(rate, SPREAD))
            low, high = wilson(tally.any_false, tally.families)
            share = tally.any_false / tally.families
            worst = max(worst, share)
            per_metric = " ".join(f"{100 * tally.by_metric[m] / tally.families:7.2f}%" for m in PAIRWISE_METRICS)
            print(f"{rate * 100:8.0f}% {models:6d} {share * 100:5.2f}%  [{low * 100:5.2f}%, {high * 100:5.2f}%]  "
                  f"{per_metric}  {tally.smallest_p:.4g}", flush=True)
    print(f"worst family-wise error: {worst * 100:.2f}% (the claim: at most 5%)")


if __name__ == "__main__":
    main()
