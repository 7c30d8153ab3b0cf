"""--sequential by simulation: how often an early decision is wrong, and what a decisive case saves.

    python bench/bench_sequential.py [--runs 4000] [--alpha 0.05]

Simulated runs of tests/sequential_sim.py (50 tasks x 10 repeats, per-task pass rates from a Beta
distribution, the plugin's seeded buying order).  Prints, for pass rates from 2% to 98% and tasks from very
unlike (Beta concentration 0.5) to alike (50), the share of runs decided the wrong way when the full run
sits exactly on the gate's threshold (at most alpha is the claim), and for a release at 30% gated at 78%
(0.8 minus 2 points) the share decided FAIL and the candidates bought before the decision.  The figures in
docs/explanation/statistics.md come from the default --runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from sequential_sim import decisive_case, wrong_decisions_on_threshold  # noqa: E402

RATES = (0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98)
SPREADS = (0.5, 5.0, 50.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000)
    parser.add_argument("--alpha", type=float, default=0.05)
    options = parser.parse_args()
    rng = np.random.default_rng(2026)
    started = time.perf_counter()
    print(f"wrong early decisions with the full run on the threshold ({options.runs} runs each, alpha "
          f"{options.alpha:g}; gate >= / gate <)")
    print("pass rate  " + "  ".join(f"Beta conc {s:>4g}" for s in SPREADS))
    worst = 0.0
    for rate in RATES:
        cells = []
        for spread in SPREADS:
            shares = [wrong_decisions_on_threshold(rng, options.runs, rate, spread, op, options.alpha)
                      for op in (">=", "<")]
            worst = max(worst, *shares)
            cells.append(f"{shares[0] * 100:5.2f}/{shares[1] * 100:5.2f}%")
        print(f"{rate * 100:8.0f}%  " + "  ".join(f"{c:>14}" for c in cells))
    print(f"worst: {worst * 100:.2f}% (alpha {options.alpha * 100:g}%)")
    decided, median, most, planned = decisive_case(rng, options.runs, alpha=options.alpha)
    print(f"decisive case (release 30%, gate >= 78%): decided FAIL in {decided * 100:.1f}% of runs after a median "
          f"{median:g} of {planned} candidates (at most {most}): saves {(1 - median / planned) * 100:.0f}% "
          "of the candidates, before the look-ahead of --concurrency")
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
