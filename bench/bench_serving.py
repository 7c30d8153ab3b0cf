"""Is a model served the same everywhere, by simulation: the error rates of ``serving`` (analysis/serving.py).

    python bench/bench_serving.py [--runs 1000] [--power-runs 300] [--permutations 999] [--cases routes,drift,runs]

Simulated runs of tests/support/serving_sim.py, 50 tasks x 10 repeats, task PASS rates from Beta(2, 2):

* routes: one model on two routes.  With equal routes (same rates, latency drawn alike), the share of runs where
  any of the family's entries (six headline metrics and latency, Holm-corrected) is significant; with the second
  route 15 points lower on every task, the share of runs where the pass-rate entry is significant (the power).
* drift: one model whose replies' latency grows with its tasks' difficulty.  With no drift, the share of runs
  where the latency drift's raw p-value is below 5%; with a 15-point drift between the fastest and slowest third,
  the share below 5% (the power).  Raw p: a run tests latency and time, and Holm over the two can only lower it.
* runs: one model in two runs on the same tasks (``--baseline``).  With the same task rates in both, the share of
  simulated pairs of runs where the between-runs pass rate is significant; with this run 15 points lower on every
  task, the share where it is found (the power), and with 5 points (what such a run can and cannot see).

Each share with its 95% Monte Carlo (Wilson) interval.  docs/how-to/serving.md quotes the defaults' figures.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from serving_sim import drifting_candidates, route_rows, run_rows

from pytest_hypeedit.analysis.metrics import MetricSettings
from pytest_hypeedit.analysis.serving import between_runs, drift_entry, route_comparisons

TASKS, REPEATS, EFFECT = 50, 10, 0.15
SMALL = 0.05  # between runs: a smaller change, to show what 50 tasks x 10 repeats can see


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    share = hits / n
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def line(what: str, hits: int, n: int, started: float) -> None:
    low, high = wilson(hits, n)
    print(f"{what:<58} {hits:>5}/{n:<5} = {hits / n:6.1%}  [{low:.1%}, {high:.1%}]  ({time.time() - started:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--power-runs", type=int, default=300)
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument("--cases", default="routes,drift,runs", help="which regimes to simulate (comma-separated)")
    args = parser.parse_args()
    cases = set(args.cases.split(","))
    settings = MetricSettings(retry_cap=4, review_cost=0.0)
    print(f"{TASKS} tasks x {REPEATS} repeats; Beta(2, 2) task rates; effect {EFFECT * 100:.0f} points")

    if "routes" in cases:
        routes(args, settings)
    if "drift" in cases:
        drifts(args)
    if "runs" in cases:
        between(args, settings)


def routes(args: argparse.Namespace, settings: MetricSettings) -> None:
    started = time.time()
    hits = sum(any(e["significant"] for e in route_comparisons(
        route_rows(TASKS, REPEATS, 0.0, seed, latency_gap=0.0, latency_noise=0.3), settings, seed=seed))
        for seed in range(args.runs))
    line("routes, equal: any entry significant (family-wise)", hits, args.runs, started)
    started = time.time()
    hits = sum(next(e for e in route_comparisons(route_rows(TASKS, REPEATS, EFFECT, seed, latency_gap=0.0,
                                                            latency_noise=0.3), settings, seed=seed)
                    if e["metric"] == "pass_rate")["significant"] for seed in range(args.power_runs))
    line("routes, 15 points apart: pass rate significant (power)", hits, args.power_runs, started)


def drifts(args: argparse.Namespace) -> None:
    for effect, runs, what in ((0.0, args.runs, "drift, none: latency p < 5%"),
                               (EFFECT, args.power_runs, "drift, 15 points: latency p < 5% (power)")):
        started = time.time()
        hits = sum(drift_entry("m", "latency", drifting_candidates(TASKS, REPEATS, effect, seed),
                               permutations=args.permutations, bootstrap=200, seed=seed)["p_value"] < 0.05
                   for seed in range(runs))
        line(what, hits, runs, started)


def between(args: argparse.Namespace, settings: MetricSettings) -> None:
    for effect, runs, what in ((0.0, args.runs, "runs, equal: pass rate significant"),
                               (EFFECT, args.power_runs, "runs, 15 points apart: pass rate significant (power)"),
                               (SMALL, args.power_runs, "runs, 5 points apart: pass rate significant (power)")):
        started = time.time()
        hits = sum(between_runs([run_rows(TASKS, REPEATS, effect, seed)], settings, seed=seed)[0]["significant"]
                   for seed in range(runs))
        line(what, hits, runs, started)

if __name__ == "__main__":
    main()
