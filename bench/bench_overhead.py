"""Plugin overhead per item: a 50 task x 10 repeat run of `identity` judged by human labels,
minus the same number of empty pytest items, serially and with -n 2.

    python bench/bench_overhead.py [--tasks 50] [--repeats 10] [--rounds 3]

Prints seconds per run (best of --rounds) and the overhead per item in ms. Aim: < 5 ms.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from benchdata import make_tasks, write_labels, write_split

EMPTY_TESTS = """
import pytest

@pytest.mark.parametrize("case", range({n}))
def test_empty(case):
    pass
"""


def prepare(folder: Path, tasks: int, repeats: int) -> None:
    task_list = make_tasks(tasks)
    write_split(folder, "bench", task_list, folder / "images")
    verdicts = {(t["task_id"], "identity", r): (i + r) % 3 == 0 for i, t in enumerate(task_list) for r in range(1, repeats + 1)}
    write_labels(folder / "labels.json", verdicts)
    (folder / "test_empty.py").write_text(EMPTY_TESTS.format(n=tasks * repeats))


def timed(command: list[str], folder: Path, fresh_outputs: bool) -> float:
    if fresh_outputs:
        shutil.rmtree(folder / "out", ignore_errors=True)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        sys.exit(f"benchmark run failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return elapsed


def best(command, folder, rounds, fresh_outputs=True) -> float:
    return min(timed(command, folder, fresh_outputs) for _ in range(rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    items = args.tasks * args.repeats
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        prepare(folder, args.tasks, args.repeats)
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
        bench = base + ["--model", "identity", "--tasks", "bench.json", "--images-base", "images",
                        "--repeats", str(args.repeats), "--judge", "labels:labels.json", "--outputs", "out"]
        print(f"{items} items ({args.tasks} tasks x {args.repeats} repeats), best of {args.rounds} rounds")
        report = {}
        for label, extra in (("serial", []), ("-n 2", ["-n", "2"])):
            empty = best(base + ["test_empty.py"] + extra, folder, args.rounds)
            cold = best(bench + extra, folder, args.rounds)
            warm = best(bench + extra, folder, args.rounds, fresh_outputs=False)
            report[label] = {"empty_s": empty, "cold_s": cold, "resumed_s": warm,
                             "overhead_ms_per_item": (cold - empty) / items * 1000,
                             "resumed_overhead_ms_per_item": (warm - empty) / items * 1000}
            print(f"{label:>6}: empty items {empty:.2f} s | benchmark {cold:.2f} s (resumed from disk {warm:.2f} s) "
                  f"| overhead {report[label]['overhead_ms_per_item']:.2f} ms/item "
                  f"(resumed {report[label]['resumed_overhead_ms_per_item']:.2f} ms/item)")
        print(json.dumps(report))


if __name__ == "__main__":
    main()
