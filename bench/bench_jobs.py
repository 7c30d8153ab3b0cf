"""The run that paid twice, replayed: flux-2-max (BFL) and qwen-image-edit-2511 (fal) against loopback fakes
that put a fault in every EVERY-th call (429, 503, 500, a malformed body, a truncated image, a refusal, a job
ending Failed, a lost task, an expired result URL), killed once midway (while a job is polled), then rerun
until complete.  Prints how many jobs were submitted again without having failed or expired (the figure that
was 74 of 197 before jobs were journaled), the errors left and the wall time.

    python bench/bench_jobs.py [--tasks 10] [--repeats 10] [--every 30] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS / "support"), str(TESTS / "engine")]  # the fakes; test_job_journal
from providers_fakes.bfl import FakeBfl  # noqa: E402
from providers_fakes.chaos import Chaos  # noqa: E402
from providers_fakes.fal import FakeFal  # noqa: E402
from test_job_journal import BFL_FAULTS, FAL_FAULTS, MODELS, latest_request_is_a_poll, launch, prepare  # noqa: E402


def totals(fakes) -> dict:
    ledgers = [fake.ledger for fake in fakes]
    return {
        "candidates submitted": sum(len(ledger.submitted) for ledger in ledgers),
        "submissions": sum(sum(ledger.submitted.values()) for ledger in ledgers),
        "jobs that failed": sum(sum(ledger.failed.values()) for ledger in ledgers),
        "jobs that expired": sum(sum(ledger.expired.values()) for ledger in ledgers),
        "candidates paid twice without cause": sum(len(ledger.paid_twice()) for ledger in ledgers),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--every", type=int, default=30, help="a fault every N calls to each fake")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    candidates = args.tasks * args.repeats * len(MODELS)
    with tempfile.TemporaryDirectory() as tmp, FakeBfl(pending_polls=2) as bfl, FakeFal(queued_polls=2) as fal:
        folder = Path(tmp) / "run"
        command = prepare(folder, args.tasks, args.repeats, max_wait=10) + [
            "--model", MODELS[0], "--model", MODELS[1], "-n", str(args.workers)]
        env = {**os.environ, "HYPEEDIT_CACHE_DIR": str(Path(tmp) / "cache")}
        for fake in (bfl, fal):
            env[fake.env], env[fake.key_env] = fake.base, fake.key
        bfl.chaos, fal.chaos = Chaos(BFL_FAULTS, every=args.every), Chaos(FAL_FAULTS, every=args.every)
        started = time.perf_counter()
        process = launch(folder, command, env)
        while process.poll() is None and not (
                sum(bfl.ledger.submitted.values()) + sum(fal.ledger.submitted.values()) >= candidates // 2
                and latest_request_is_a_poll(bfl, fal)):
            time.sleep(0.01)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # the run and its xdist workers
        process.wait()
        killed_at = totals((bfl, fal))["submissions"]
        runs = 1
        while runs < 8:
            runs += 1
            done = subprocess.run([sys.executable, "-m", "pytest", "-q", *command], cwd=folder, env=env,
                                  capture_output=True, text=True)
            if "run complete" in done.stdout:
                break
        wall = time.perf_counter() - started
        rows = json.loads((folder / "out" / "results.json").read_text())["rows"]
    print(f"{candidates} candidates, a fault every {args.every} calls per provider, killed after "
          f"{killed_at} submissions, {runs} runs in all, {wall:.1f} s")
    for name, value in totals((bfl, fal)).items():
        print(f"  {name}: {value}")
    print(f"  faults met: bfl {sum(bfl.chaos.taken().values())}, fal {sum(fal.chaos.taken().values())}")
    print(f"  errors left: {sum(row['errors'] for row in rows)}, refusals: {sum(row['refusals'] for row in rows)}, "
          f"resubmitted (expired): {sum(row['resubmitted'] for row in rows)}")


if __name__ == "__main__":
    main()
