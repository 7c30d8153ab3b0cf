"""Do the 95% intervals cover at 2%, 50% and 98% pass rates?  Coverage per regime, with its Monte Carlo interval.

    python bench/bench_intervals.py [--runs 1000] [--compare-bca 0] [--seed 20261129]
    python bench/bench_intervals.py --baseline [--runs 1000] [--seed 20261129]
    python bench/bench_intervals.py --calibrated [--runs 200] [--resamples 200]

Judge-only intervals (analysis/task_intervals.py, results.json ``intervals``): simulated runs of
tests/support/interval_sim.py, 50 tasks x 10 repeats, task pass rates from a Beta distribution with mean 2%, 50%
or 98% and concentration 0.5 (most tasks always or never pass), 5 or 50 (tasks alike).  The target is each
metric over the population of tasks, measured with 10 repeats.  Per regime and metric: the share of runs whose
interval holds the target, with the 95% Wilson interval of that share (the simulation's own error), and how many
runs gave only a lower bound (effective cost when nothing or almost nothing passed: counted as covering when
that bound is below the target).  ``--compare-bca N``: the same for the BCa bootstrap the intervals replaced, on
N runs per regime.

``--baseline``: the paired comparison of ``--baseline`` (analysis/pairwise.py ``paired_comparison``, the paired
sign-flip test over the shared tasks inverted at 95%, results.json ``baseline``) between two releases of one model
(the same task rates, their own repeats): per regime and metric, the share of runs whose 95% interval holds the
true difference, 0, how many runs had no interval (zero width: every shared task moved by the same amount, marked
``degenerate``; or no success on a side), and the median width of the intervals.  For equal releases the test at 0
is exact, so every cell should be at least 95% within its Monte Carlo interval.  ``--runs 1200``: 94.1-100% in
every cell (the lowest Pass@4 at 50% with tasks all or nothing, 94.1 [92.6-95.3]); the paired BCa bootstrap it
replaced gave as little as 66.9% (effective cost at 2%, concentration 0.5) and 74.3% (Pass@4 at 98%), 87-100% at
50%.  Median width of the pass rate's interval at 50%: 0.072, 0.115, 0.125 (concentration 0.5, 5, 50); BCa 0.070,
0.112, 0.120.

``--calibrated``: the calibrated figures (analysis/calibration.py) with the paper's critical judge (sensitivity
0.65, specificity 0.95 on a 50% model: wrong on 20% of candidates, mostly false FAILs), 10, 30, 50 and 100 labels:
coverage of pass rate, Pass@4 and effective cost against the population truth, how many runs had them withheld
(and the coverage split by samples with 10 or more disagreements or fewer), and how many samples held fewer than 5
disagreements (flagged, the pass rate's interval widened), with the coverage in the runs whose sample held none.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from interval_sim import KEYS, Population, coverage

from pytest_hypeedit.analysis.stats import bootstrap_intervals
from pytest_hypeedit.analysis.task_intervals import task_intervals

REGIMES = [Population(mean, concentration) for mean in (0.02, 0.5, 0.98) for concentration in (0.5, 5, 50)]


def ours(tallies, cost):
    found = task_intervals(tallies, cost)
    return found.bounds, found.lower_only


def bca(tallies, cost):
    return bootstrap_intervals(tallies, cost, n_resamples=1000), {}


def wilson(hits: int, n: int) -> tuple[float, float]:
    share, z = hits / n, 1.959964
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def judge_only(runs: int, compare: int, seed: int) -> None:
    print(f"judge-only 95% intervals, {runs} runs per regime (50 tasks x 10 repeats); coverage in % [Monte Carlo "
          "95% interval]")
    methods = [("task intervals", ours, runs)] + ([("BCa (before)", bca, compare)] if compare else [])
    print(f"{'regime':<30} {'method':<15} " + " ".join(f"{key:>18}" for key in KEYS))
    for population in REGIMES:
        for name, method, n in methods:
            started = time.perf_counter()
            found = coverage(population, n, seed, method)
            cells = []
            for key in KEYS:
                low, high = wilson(found.covered[key], n)
                extra = f"*{found.noted[key]}" if found.noted[key] else ""
                cells.append(f"{100 * found.share(key):5.1f} [{100 * low:4.1f}-{100 * high:5.1f}]{extra}")
            print(f"{population.name:<30} {name:<15} " + " ".join(f"{c:>18}" for c in cells)
                  + f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    print("*N: runs with a lower bound only (effective cost, little or no success), counted as covering when below "
          "the target")


def paired(runs: int, seed: int) -> None:
    from interval_sim import COST, REPEATS, TASKS

    from pytest_hypeedit.analysis.enrich import marked_degenerate
    from pytest_hypeedit.analysis.metrics import TaskTally
    from pytest_hypeedit.analysis.pairwise import paired_comparison

    print(f"--baseline: paired 95% sign-flip intervals of two equal releases, {runs} runs per regime (50 tasks x 10 "
          "repeats each); the share holding the true difference 0, in % [Monte Carlo 95% interval], of the runs "
          "with an interval (/N: runs with none, zero width), and the median width of the intervals given")
    print(f"{'regime':<30} " + " ".join(f"{key:>20}" for key in KEYS))
    widths: dict[str, list[str]] = {}
    for population in REGIMES:
        rng = np.random.default_rng([seed, round(population.mean * 100), round(population.concentration * 10)])
        held, given = dict.fromkeys(KEYS, 0), dict.fromkeys(KEYS, 0)
        spans: dict[str, list[float]] = {key: [] for key in KEYS}
        for run in range(runs):
            rates = population.rates(rng, TASKS)
            releases = [[TaskTally(f"t{t:02d}", int(row.sum()), REPEATS, bool(row[0])) for t, row in enumerate(rows)]
                        for rows in (rng.random((2, TASKS, REPEATS)) < rates[None, :, None])]
            found = marked_degenerate(paired_comparison(*releases, COST, COST, seed=run))  # as analysis/enrich.py
            for key in KEYS:
                if found[key].get("low") is not None:
                    given[key] += 1
                    held[key] += found[key]["low"] <= 0 <= found[key]["high"]
                    spans[key].append(found[key]["high"] - found[key]["low"])
        cells = []
        for key in KEYS:
            if given[key]:
                low, high = wilson(held[key], given[key])
                share = f"{100 * held[key] / given[key]:5.1f} [{100 * low:4.1f}-{100 * high:5.1f}]"
            else:
                share = "no interval"
            cells.append(share + (f"/{runs - given[key]}" if given[key] < runs else ""))
        print(f"{population.name:<30} " + " ".join(f"{c:>20}" for c in cells), flush=True)
        widths[population.name] = [f"{np.median(spans[key]):.4g}" if spans[key] else "-" for key in KEYS]
    print("median width (a fraction for the rates, attempts, USD for effective cost)")
    for name, cells in widths.items():
        print(f"{name:<30} " + " ".join(f"{c:>20}" for c in cells))


def calibrated(runs: int, resamples: int, seed: int, sizes: list[int]) -> None:
    from calibration_sim import SimModel, population_truth, simulated_run

    from pytest_hypeedit.analysis.calibration import calibrate

    critical = SimModel("critical judge", 0.502, 0.76, sensitivity=0.65, specificity=0.95)
    truth = population_truth(critical)
    keys = ("pass_rate", "pass_at_4", "effective_cost")
    print(f"calibrated 95% intervals, critical judge (se 0.65, sp 0.95, 50% model), {runs} runs, {resamples} "
          "replicates; coverage [Monte Carlo 95%], withheld")
    for labels in sizes:
        rng = np.random.default_rng(seed + labels)
        hits = dict.fromkeys(keys, 0)
        given = dict.fromkeys(keys, 0)
        many = {key: [0, 0] for key in keys}  # runs whose sample held 10+ disagreements, and those covering
        flagged = none = none_hits = 0
        for run in range(runs):
            evidence, _, _ = simulated_run(critical, labels, rng)
            result = calibrate(evidence, 0.04, n_resamples=resamples, seed=run)
            flagged += result.few_disagreements
            for key in keys:
                entry = result.calibrated[key]
                if entry.get("low") is None:
                    continue
                high = math.inf if entry.get("high") is None else entry["high"]
                inside = entry["low"] <= truth[key] <= high
                given[key] += 1
                hits[key] += inside
                if result.disagreements >= 10:
                    many[key][0] += 1
                    many[key][1] += inside
                if key == "pass_rate" and result.disagreements == 0:
                    none += 1
                    none_hits += inside
        cells = []
        for key in keys:
            if given[key]:
                low, high = wilson(hits[key], given[key])
                cells.append(f"{key} {hits[key] / given[key]:.1%} [{low:.1%},{high:.1%}] withheld {runs - given[key]}")
                count, inside = many[key]
                fewer = given[key] - count
                if key != "pass_rate" and count and fewer:
                    cells[-1] += (f" (10+ disagreements: {count} runs, {inside / count:.1%}; fewer: "
                                  f"{(hits[key] - inside) / fewer:.1%})")
            else:
                cells.append(f"{key} withheld {runs}")
        without = f"{none_hits / none:.1%} of {none}" if none else "none"
        print(f"{labels:>4} labels: " + "; ".join(cells) + f"; fewer than 5 disagreements: {flagged} runs; pass rate "
              f"coverage with no disagreement: {without}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--compare-bca", type=int, default=0)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--calibrated", action="store_true")
    parser.add_argument("--baseline", action="store_true", help="the paired --baseline intervals instead")
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--labels", default="10,30,50,100", help="--calibrated: the sample sizes")
    args = parser.parse_args()
    if args.baseline:
        paired(args.runs or 1000, args.seed)
    elif args.calibrated:
        calibrated(args.runs or 200, args.resamples, args.seed, [int(x) for x in args.labels.split(",")])
    else:
        judge_only(args.runs or 1000, args.compare_bca, args.seed)


if __name__ == "__main__":
    main()
