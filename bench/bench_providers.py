"""Throughput of a paid run: N candidates against a loopback image provider (the fake ModelArk)
and a loopback judge (a fake chat-completions server), each answering after LATENCY seconds,
with -n WORKERS. The ideal wall time is N x 2 x LATENCY / WORKERS; the ratio shows what the
plugin, the HTTP policy, the cross-worker limiter and pytest-xdist add.

    python bench/bench_providers.py [--tasks 50] [--repeats 10] [--latency 2] [--workers 16]

Aim (issue 3): 500 candidates, 2 s each, -n 16: ratio under 1.10.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))
from benchdata import make_tasks, write_split  # noqa: E402
from genai_fakes.chat import FakeChat, verdict_reply  # noqa: E402
from providers_fakes.ark import FakeArk  # noqa: E402


def slow_verdict(latency: float):
    def reply(request):
        answer = verdict_reply("PASS" if len(request.raw) % 2 else "FAIL", "bench verdict")
        answer.delay = latency
        return answer

    return reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--latency", type=float, default=2.0)
    parser.add_argument("--workers", type=int, default=16)
    args = parser.parse_args()
    candidates = args.tasks * args.repeats
    ideal = candidates * 2 * args.latency / args.workers
    with tempfile.TemporaryDirectory() as tmp, FakeArk() as ark, FakeChat() as chat:
        folder = Path(tmp)
        write_split(folder, "bench", make_tasks(args.tasks), folder / "images")
        ark.inject("slow", path="/images/generations", delay=args.latency, count=candidates)
        chat.default = slow_verdict(args.latency)
        env = {**os.environ, "HYPEEDIT_ARK_BASE_URL": ark.base, "ARK_API_KEY": ark.key,
               "HYPEEDIT_CACHE_DIR": str(folder / "cache"), "OPENAI_API_KEY": "bench-judge-key-0123456789"}
        # openai-rubric: the prompt does not matter to a throughput figure, and the upstream judge's
        # script (the openai:MODEL prompt) is not downloadable offline.
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                   "--model", "seedream-4.5", "--tasks", "bench.json", "--images-base", "images",
                   "--repeats", str(args.repeats), "--outputs", "out", "--judge", "openai-rubric:bench-judge",
                   "--judge-base-url", chat.base_url, "--rate-limit", f"ark=100000/{args.workers}",
                   "-n", str(args.workers)]
        started, wall_clock_start = time.perf_counter(), time.time()
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
        arrivals = sorted(seen.at for seen in ark.seen("/images/generations"))
        generated = len(arrivals)
        startup = arrivals[0] - wall_clock_start if arrivals else float("nan")
    print(f"{candidates} candidates, provider and judge {args.latency:g} s each, -n {args.workers}: {summary}")
    print(f"provider calls: {generated}; judge calls: {len(chat.requests)}; "
          f"first provider call {startup:.1f} s after start (worker start-up)")
    print(f"wall time {wall:.1f} s vs ideal {ideal:.1f} s: ratio {wall / ideal:.3f} (aim < 1.10)")
    if done.returncode not in (0, 1):
        sys.exit(f"the benchmark run failed with exit status {done.returncode}")


if __name__ == "__main__":
    main()
