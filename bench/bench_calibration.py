"""How many human labels buy how much interval width: calibrated 95% intervals against the human sample's size.

    python bench/bench_calibration.py [--runs 20] [--resamples 400] [--sizes 25,50,100,200,500]
    python bench/bench_calibration.py --cases [--runs 200] [--resamples 200]
    python bench/bench_calibration.py --acceptance [--runs 150] [--resamples 200]

Simulated runs of tests/support/calibration_sim.py (50 tasks x 10 repeats per model, task rates spread like the
published table, a judge whose error differs by model).  For each sample size (labels per model, of its 500
candidates) prints the median width of the 95% interval of pass rate, Pass@4 and effective cost: judge only (the
task bootstrap, blind to the judge's error), the human sample alone, and calibrated; then the mean bias of the
judge's figures and of the calibrated ones against the population truth.  Also the CPU time of one row's
calibration (both estimates, all replicates).

``--cases``: the off-the-happy-path cases of tests/analysis/test_calibration_simulation.py, each run ``--runs`` times (200
for the figures in docs/explanation/statistics.md): coverage and bias of the calibrated pass rate, Pass@4 and
effective cost against the population truth (the target), and how often each was withheld.

``--acceptance``: the calibration's acceptance simulation (``--runs`` runs x 3 models, a 10-20% sample; 150 runs
and 200 replicates for the figures in docs/explanation/statistics.md): coverage of the calibrated 95% intervals
against the population truth with its band, calibrated and judge bias per model, and whether each is within its
tolerance.  tests/analysis/test_calibration_simulation.py runs its first 40 runs.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from calibration_sim import COST, MODELS, NEAR_ONE, NEAR_ZERO, population_truth, run_case, simulated_run

from pytest_hypeedit.analysis.calibration import calibrate
from pytest_hypeedit.analysis.enrich import AnalysisSettings, intervals_json
from pytest_hypeedit.analysis.metrics import MetricSettings, TaskTally

KEYS = (("pass_rate", "pass rate", 100, "pts"), ("pass_at_4", "Pass@4", 100, "pts"),
        ("effective_cost", "effective cost", 1, "USD"))


def judge_interval_widths(evidence, resamples: int) -> dict[str, float]:
    """The judge-only intervals of today's table, from the same run's judge verdicts."""
    tallies = [TaskTally(t.task_id, t.judge_pass + t.confusion[0] + t.confusion[2], t.judged, t.first in (1, 3))
               for t in evidence]
    found = intervals_json(tallies, COST, AnalysisSettings(MetricSettings(), bootstrap=resamples))
    return {key: found[key][1] - found[key][0] for key, *_ in KEYS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, help="default 20; 150 with --acceptance")
    parser.add_argument("--resamples", type=int, help="default 400; 200 with --acceptance")
    parser.add_argument("--sizes", default="25,50,100,200,500")
    parser.add_argument("--cases", action="store_true", help="the off-the-happy-path cases instead of the widths")
    parser.add_argument("--acceptance", action="store_true", help="the acceptance simulation instead of the widths")
    args = parser.parse_args()
    if args.acceptance:
        return acceptance_figures(args.runs or 150, args.resamples or 200)
    args.runs, args.resamples = args.runs or 20, args.resamples or 400
    if args.cases:
        return cases(args.runs, args.resamples)
    sizes = [int(x) for x in args.sizes.split(",")]
    rng = np.random.default_rng(7)
    truths = {m.name: population_truth(m) for m in MODELS}
    print(f"{args.runs} runs x {len(MODELS)} models per size, {args.resamples} bootstrap replicates; widths are "
          "medians of the 95% intervals (pass rate, Pass@4 in points; effective cost in USD)")
    print(f"{'labels/model':>12} {'share':>6} | " + " | ".join(f"{title:^26}" for _, title, _, _ in KEYS))
    print(f"{'':>12} {'':>6} | " + " | ".join(f"{'judge':>8}{'human':>9}{'calib.':>9}" for _ in KEYS))
    cpu = []
    for size in sizes:
        widths = {(key, kind): [] for key, *_ in KEYS for kind in ("judge", "human", "calibrated")}
        for run in range(args.runs):
            for model in MODELS:
                evidence, judge, people = simulated_run(model, size, rng)
                started = time.process_time()
                result = calibrate(evidence, COST, n_resamples=args.resamples, seed=run)
                cpu.append(time.process_time() - started)
                judged = judge_interval_widths(evidence, args.resamples)
                for key, *_ in KEYS:
                    widths[(key, "judge")].append(judged[key])
                    for kind, figures in (("human", result.human_sample), ("calibrated", result.calibrated)):
                        entry = figures[key]
                        if entry.get("low") is not None:  # withheld (too few labels) rows give no width
                            high = math.inf if entry["high"] is None else entry["high"]
                            widths[(key, kind)].append(high - entry["low"])
        cells = ["".join(_median_cell(widths[(key, kind)], scale, 8 if kind == "judge" else 9)
                         for kind in ("judge", "human", "calibrated")) for key, _, scale, _ in KEYS]
        print(f"{size:>12} {size / 500:>6.0%} | " + " | ".join(f"{c:>26}" for c in cells))
    print(f"CPU per row (calibrated and human-sample figures, {args.resamples} replicates): median "
          f"{statistics.median(cpu):.2f} s, max {max(cpu):.2f} s")
    print("population truth: " + "; ".join(
        f"{m.name} pass rate {truths[m.name]['pass_rate']:.3f}, Pass@4 {truths[m.name]['pass_at_4']:.3f}, "
        f"effective cost ${truths[m.name]['effective_cost']:.2f}" for m in MODELS))


def _median_cell(widths: list[float], scale: float, size: int) -> str:
    """The median width, or "-" when no row gave one (every calibrated figure withheld for too few labels)."""
    return f"{scale * statistics.median(widths):{size}.2f}" if widths else f"{'-':>{size}}"


def acceptance_figures(runs: int, resamples: int) -> None:
    """The acceptance simulation's report, and whether every figure is within its tolerance."""
    from calibration_sim import acceptance

    started = time.process_time()
    found = acceptance(runs, resamples)
    print(f"{runs} runs x {len(MODELS)} models, {resamples} replicates; target: the population truth; 95% intervals")
    print("\n".join(found.report))
    print("judge's own pass rate minus the truth: " + ", ".join(f"{name} {offset:+.3f}"
                                                               for name, offset in found.judge_offset.items()))
    print(f"outside the tolerance: {len(found.problems)}; CPU {time.process_time() - started:.0f} s")


def cases(runs: int, resamples: int) -> None:
    """Coverage and bias per case; target: the population truth (calibration_sim.population_truth)."""
    keys = ("pass_rate", "pass_at_4", "effective_cost")
    table = [
        ("verdict-stratified (FAILs x2, 100 labels, design)", MODELS[0], dict(labelled=100, fail_ratio=2.0)),
        ("10 labels", MODELS[0], dict(labelled=10)),
        ("20 labels", MODELS[0], dict(labelled=20)),
        ("30 labels", MODELS[0], dict(labelled=30)),
        ("near zero (2%), 100 labels", NEAR_ZERO, dict(labelled=100)),
        ("near one (98%), 100 labels", NEAR_ONE, dict(labelled=100)),
    ]
    print(f"{runs} runs per case, {resamples} replicates; target: the population truth; 95% intervals")
    print(f"{'case':<52} {'metric':<15} {'coverage':>8} {'bias':>9} {'truth':>8} {'withheld':>8}")
    for name, model, options in table:
        found = run_case(model, runs, resamples, seed=2511, keys=keys, **options)
        for key in keys:
            given = len(found.found[key])
            scale = found.target[key] if key == "effective_cost" else 1.0
            coverage = f"{found.coverage(key):8.3f}" if given else f"{'-':>8}"
            bias = f"{found.bias(key) / scale:+9.4f}" if given else f"{'-':>9}"
            print(f"{name:<52} {key:<15} {coverage} {bias} {found.target[key]:8.3f} {found.refused[key]:>8}")
    print("bias: points for rates, relative to the truth for effective cost")


if __name__ == "__main__":
    main()
