"""The pool alone, without pytest, HTTP or images: how far its dispatch and the handoff of a candidate's slot
from its generation to its verdict keep a run from the ideal.

    python bench/bench_pool_engine.py [--candidates 320] [--concurrency 64] [--generate 3] [--verdict 3]

Each step sleeps (a call waiting on the network takes no CPU), so what the wall time adds to the ideal
(candidates x (generation + verdict) / concurrency) is the pool's own: dispatch latency, slot handoffs, the
main thread asking for results in order.  bench_providers.py measures the whole run, servers included.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pytest_hypeedit.engine.limits import SlotSet  # noqa: E402
from pytest_hypeedit.engine.pool import CandidatePool  # noqa: E402
from pytest_hypeedit.engine.records import Record  # noqa: E402
from pytest_hypeedit.engine.routes import RouteAdmission  # noqa: E402
from pytest_hypeedit.engine.runner import Plan  # noqa: E402
from pytest_hypeedit.registry import ModelSpec  # noqa: E402
from pytest_hypeedit.tasks import Task  # noqa: E402


class SleepingRunner:
    """Steps that wait like calls do; records when each step started, to see the dispatch gaps."""

    def __init__(self, generate: float, verdict: float):
        self.generate, self.verdict = generate, verdict
        self.judge = SimpleNamespace(routes=("judge",))
        self.run_id = None  # what the run bought is counted under its id (its ledger entries name it): nothing here
        self.starts: list[float] = []
        self.lock = threading.Lock()

    def plan(self, task, spec, repeat):
        return Plan(task, spec, repeat, Record(task.split, spec.name, task.task_id, repeat), None,
                    needs_generation=True)

    def _wait(self, seconds: float) -> None:
        with self.lock:
            self.starts.append(time.monotonic())
        time.sleep(seconds)

    def generate_step(self, plan):
        self._wait(self.generate)
        plan.needs_generation, plan.needs_verdict = False, True
        return plan

    def judge_step(self, plan):
        self._wait(self.verdict)
        plan.record.outcome = "pass"
        return plan.record

    def finish(self, plan):
        return plan.record

    def calls_in_flight(self):
        return 0, 0, 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=320)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--generate", type=float, default=3.0)
    parser.add_argument("--verdict", type=float, default=3.0)
    args = parser.parse_args()
    runner = SleepingRunner(args.generate, args.verdict)
    spec = ModelSpec("m", "route-m", "m", 0.01)
    tasks = [Task(f"task-{i:03d}", ("001.png",), ("edit",), "Edit.", 64, 64, "bench") for i in range(args.candidates)]
    entries = [(task, spec, 1) for task in tasks]
    admissions = {route: RouteAdmission(route, None, ceiling=args.concurrency) for route in ("route-m", "judge")}
    with tempfile.TemporaryDirectory() as tmp:
        pool = CandidatePool(runner, concurrency=args.concurrency, admission_for=lambda s: admissions[s.route],
                             judge_admissions=lambda: [admissions["judge"]],
                             slots=SlotSet(Path(tmp), "candidates", args.concurrency), source=lambda: entries)
        started = time.monotonic()
        pool.start()
        for entry in entries:
            pool.result(*entry)
        wall = time.monotonic() - started
        pool.shutdown()
    ideal = args.candidates * (args.generate + args.verdict) / args.concurrency
    print(f"pool alone: {args.candidates} candidates at {args.concurrency} in flight: wall {wall:.2f} s, "
          f"ideal {ideal:.2f} s, ratio {wall / ideal:.3f}; last step started {runner.starts[-1] - started:.2f} s in")


if __name__ == "__main__":
    main()
