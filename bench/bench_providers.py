"""A paid run at scale against loopback providers and a loopback judge: wall time against the ideal, and the
peak memory of the whole pytest process tree.

    python bench/bench_providers.py                 # every case below
    python bench/bench_providers.py --case small    # one case: small | real | routes
    python bench/bench_providers.py --latency 2 --concurrency 64 --tasks 50 --repeats 10

Cases (issue 8):
- small:  500 candidates (50 tasks x 10), the fake ModelArk and a fake chat-completions judge answering after
          2 s each, --concurrency 64, in one process and with -n 2.  Ideal: 500 x 4 s / 64 = 31.25 s.
          Aim: wall <= 1.10 x ideal; peak RSS of the process tree <= 1 GB.
          The pool at 64 in flight as issue 35 measures it: ``--case small --tasks 32 --repeats 10 --latency 3``
          (320 candidates, 3 s each way; ideal 320 x 6 s / 64 = 30 s).  Aim: <= 1.10 x ideal, 1.15 x with -n 2.
- real:   the same with reference images at the tasks' real size (WebP, 4096 x 4096 and 5504 x 3072) and
          2K outputs (PNG, about 6 MB).  Aim: peak RSS <= 1.5 GB.
- routes: three models on three routes (ModelArk, OpenAI images, DashScope), DashScope limited to 2 calls in
          flight.  Aim: wall within 10% of that route's own ideal (its candidates x latency / 2, plus one
          judge latency for its last candidate).

``--timeline`` also says where a run's seconds over the ideal went: the start-up until the first call, the calls'
window (the ideal plus the slots left idle in the ramp, the steady part and the drain, as the fakes saw the
calls), the tail from the last answer to the end, and when each pytest process reached each phase
(bench/benchclock.py).  ``--workers 0`` or ``2`` runs one way only, ``--runs N`` each case N times; each line
says the load average, as a wall time on a busy machine says little without it.

The fakes run in this process (their CPU is not the plugin's, their memory is not counted); the pytest run is a
subprocess whose tree (controller and xdist workers) is sampled from /proc every 0.1 s, with Python's bytecode
cache on (as a user has it) even where the environment turns it off.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
TESTS = BENCH.parent / "tests"
sys.path.insert(0, str(TESTS / "support"))  # the fakes and helpers
from benchdata import make_tasks, write_split  # noqa: E402
from genai_fakes.chat import FakeChat, verdict_reply  # noqa: E402
from providers_fakes import (  # noqa: E402
    ark as ark_module,
    dashscope as dashscope_module,
    make_image,
    openai as openai_module,
)
from providers_fakes.ark import FakeArk  # noqa: E402
from providers_fakes.dashscope import FakeDashScope  # noqa: E402
from providers_fakes.openai import FakeOpenAI  # noqa: E402

JUDGE_KEY = "bench-judge-key-0123456789"


# --------------------------------------------------------------------------- measuring


class TreeMemory:
    """Peak resident memory of a process and all its descendants, sampled from /proc."""

    def __init__(self, pid: int, every: float = 0.1):
        self.pid, self.every, self.peak = pid, every, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "TreeMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._done.wait(self.every):
            self.peak = max(self.peak, sum(_rss(pid) for pid in _tree(self.pid)))


def _tree(pid: int) -> list[int]:
    pids, stack = [], [pid]
    while stack:
        current = stack.pop()
        pids.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                stack += [int(child) for child in (task / "children").read_text().split()]
            except OSError:
                continue
    return pids


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@dataclass
class Figures:
    wall: float
    ideal: float
    peak_rss: int
    summary: str
    calls: int
    judged: int
    first_call: float = float("nan")  # seconds from the start to the first provider call
    after_last: float = float("nan")  # seconds from the last judge call's answer to the end of the run
    cpu: float = float("nan")  # CPU seconds of the process tree
    timeline: str = ""  # --timeline: where the seconds over the ideal went

    def line(self, name: str) -> str:
        return (f"{name}: wall {self.wall:.1f} s, ideal {self.ideal:.1f} s, ratio {self.wall / self.ideal:.3f}; "
                f"peak RSS of the process tree {self.peak_rss / 2 ** 20:.0f} MB; "
                f"{self.calls} provider calls, {self.judged} judge calls; first call after {self.first_call:.1f} s, "
                f"{self.after_last:.1f} s from the last verdict to the end; CPU {self.cpu:.1f} s; {self.summary}"
                + (f"\n  {self.timeline}" if self.timeline else ""))


def run_pytest(folder: Path, env: dict, args: list[str]) -> tuple[float, int, subprocess.CompletedProcess]:
    # --basetemp in the run's own folder: under -n, xdist's controller makes pytest's numbered temporary folder,
    # and pytest's session finish then deletes the older ones beyond the newest three in /tmp/pytest-of-<user>.
    # On a machine where other pytest runs keep that folder full (1.8 GB of them once), that took the controller
    # 9 to 18 s, in the middle of the measured time: pytest's housekeeping, not the plugin's.
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
               "--basetemp", str(folder / "pytest-tmp"), *args]
    if "HYPEEDIT_BENCH_CLOCK" in env:
        command[4:4] = ["-p", "benchclock"]
    run_pytest.started_at = time.time()
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with TreeMemory(process.pid) as memory:
        out, err = process.communicate()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    run_pytest.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    done = subprocess.CompletedProcess(command, process.returncode, out, err)
    if done.returncode not in (0, 1):
        sys.exit(f"the benchmark run failed with exit status {done.returncode}:\n{out[-3000:]}\n{err[-2000:]}")
    return wall, memory.peak, done


def last_line(done: subprocess.CompletedProcess) -> str:
    """The run's summary line, after the lines of any items that ended in an error (a bench run should have
    none: each is printed so that it is seen)."""
    lines = [line for line in done.stdout.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR") or " ERROR " in line][:10]
    summary = lines[-1] if lines else done.stderr[-300:]
    return "\n".join([*errors, summary]) if errors else summary


# --------------------------------------------------------------------------- --timeline


def idle_by_phase(calls: list[tuple[float, float]], concurrency: int) -> dict[str, float]:
    """Slot-seconds left idle, as the servers saw the calls (``calls``: when each arrived whole and when it was
    answered), in each phase of the run: the ramp (from the first call until ``concurrency`` are in flight),
    the steady part (until the last call arrived) and the drain (until the last answer).  Every second a slot is
    idle between the first call and the last answer adds 1 / concurrency s to the ideal; a slot is busy from a
    call's arrival to its answer, so what the client does between one call's answer and the next call's arrival
    (reading the answer, checking the image, the signals, the record, the next request) counts as idle."""
    changes = sorted([(start, +1) for start, _ in calls] + [(end, -1) for _, end in calls])
    last_start = max(start for start, _ in calls)
    idle = {"ramp": 0.0, "steady": 0.0, "drain": 0.0}
    phase, running, previous = "ramp", 0, changes[0][0]
    for at, change in changes:
        idle[phase] += (concurrency - running) * (at - previous)
        running, previous = running + change, at
        if phase == "ramp" and running >= concurrency:
            phase = "steady"
        if at >= last_start and phase != "drain":
            phase = "drain"
    return idle


def handoffs(generations: list[tuple[int, float]], verdicts: list[tuple[int, float]], latency: float) -> list[float]:
    """Seconds from each generation's answer to its verdict's arrival at the judge: a task's k-th generation
    answered is matched with its k-th verdict (repeats of one task are alike; a mismatch swaps two gaps of a
    task and leaves their sum).  What the client does in them: the image fetched and checked, the signals, the
    record, the judge's request built and sent."""
    gaps = []
    for task in {number for number, _ in generations}:
        answered = sorted(at + latency for number, at in generations if number == task)
        asked = sorted(at for number, at in verdicts if number == task)
        gaps += [judged - made for made, judged in zip(answered, asked)]
    return sorted(gaps)


def clock_line(path: Path, started: float) -> str:
    """benchclock.py's events by process role, in seconds from the bench's start (several processes of a role:
    the first and the last)."""
    times: dict[tuple[str, str], list[float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        _, role, event, at = line.split()
        times.setdefault((role, event), []).append(float(at) - started)
    parts = []
    for (role, event), seen in times.items():
        low, high = min(seen), max(seen)
        parts.append(f"{role} {event} {low:.2f}" + (f"..{high:.2f}" if len(seen) > 1 else ""))
    return "; ".join(parts)


def timeline(calls: list[tuple[float, float]], concurrency: int, ideal: float, started: float, wall: float,
             clock: Path, gaps: list[float]) -> str:
    """Where a run's seconds went: start-up to the first call, the calls (the ideal and each phase's idle
    slots; of them, the gaps from a generation's answer to its verdict's arrival), the tail from the last answer
    to the end; then every event benchclock.py wrote down."""
    idle = idle_by_phase(calls, concurrency)
    first, last = min(s for s, _ in calls) - started, max(e for _, e in calls) - started
    over = {phase: seconds / concurrency for phase, seconds in idle.items()}
    handoff = (f"; generation answered -> verdict asked: {sum(gaps) / concurrency:.2f} s of the idle, per candidate "
               f"median {gaps[len(gaps) // 2]:.3f} s, 90% {gaps[int(len(gaps) * 0.9)]:.3f} s, "
               f"most {gaps[-1]:.3f} s" if gaps else "")
    return (f"timeline: start-up {first:.2f} s; calls {last - first:.2f} s = ideal {ideal:.2f} + ramp "
            f"{over['ramp']:.2f} + steady {over['steady']:.2f} + drain {over['drain']:.2f}{handoff}; "
            f"tail {wall - last:.2f} s\n  events (s from the start): {clock_line(clock, started)}")


# --------------------------------------------------------------------------- fakes for a bench


TASK_IN_TEXT = re.compile(rb"Edit (\d+)\. ")  # benchdata.make_tasks' instructions: each names its task


def lean(fake):
    """Keep each request's arrival and the task it is for, but not its body (a real-size run would hold
    gigabytes of them here)."""
    fake.tasks = []  # (task number, arrival) of every request that names one
    if not hasattr(fake, "dispatch"):  # the chat fake: slow_judge drops what it read
        return fake
    original = fake.dispatch

    def dispatch(seen):
        found = TASK_IN_TEXT.search(seen.body)
        if found:
            fake.tasks.append((int(found[1]), seen.at))
        try:
            return original(seen)
        finally:
            seen.body = b""

    fake.dispatch = dispatch
    return fake


def without_fake_work(output: bytes, *stores) -> None:
    """The fakes' own work (decoding the inputs to check them, drawing an image per request) is not the
    plugin's: a real provider does it on its own machines, not on the 2 cores measured here.  Every fake
    answers ``output`` and checks nothing (``stores``: the fakes that serve their images from a file store)."""
    for fake in stores:
        fake.files.new_image = lambda *a, **k: output
    openai_module.make_image = lambda *a, **k: output
    ark_module._validate = dashscope_module._validate = lambda body: None
    openai_module._validate = lambda fields, images: None


def slow_judge(chat: FakeChat, latency: float) -> None:
    chat.arrivals = []

    def reply(request):
        chat.arrivals.append(time.time())
        found = TASK_IN_TEXT.search(request.raw)
        if found:
            chat.tasks.append((int(found[1]), chat.arrivals[-1]))
        answer = verdict_reply("PASS" if len(request.raw) % 2 else "FAIL", "bench verdict")
        answer.delay = latency
        # The answering model named here: FakeChat.handle reads the asked model from the body otherwise, which
        # is dropped on the next line (a 64-call bench holds no bodies); without it every verdict failed.
        answer.body["model"] = "bench-judge"
        request.raw, request.json, request.parsed = b"", None, {}
        return answer

    chat.default = reply


def photo_like(width: int, height: int, fmt: str, seed: int) -> bytes:
    """An image that compresses like a photograph (smooth areas, some texture), not like a flat colour."""
    from PIL import Image, ImageFilter

    rng = random.Random(seed)
    small = Image.frombytes("RGB", (width // 16, height // 16),
                            bytes(rng.randrange(256) for _ in range(width // 16 * height // 16 * 3)))
    image = small.resize((width, height), Image.Resampling.BICUBIC).filter(ImageFilter.GaussianBlur(2))
    noise = Image.effect_noise((width, height), 24).convert("RGB")
    image = Image.blend(image, noise, 0.08)
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **({"quality": 90} if fmt in ("WEBP", "JPEG") else {"compress_level": 1}))
    return buffer.getvalue()


def real_size_split(folder: Path, tasks: int) -> None:
    """Tasks at the public split's sizes, each with a WebP reference of that size."""
    sizes = [(4096, 4096), (5504, 3072), (3584, 4800), (2048, 2048)]
    made = {size: photo_like(*size, "WEBP", seed=i) for i, size in enumerate(sizes)}
    entries = []
    for index, task in enumerate(make_tasks(tasks)):
        width, height = sizes[index % len(sizes)]
        task.update(width=width, height=height, input_images=["001.webp"])
        target = folder / "images" / task["task_id"] / "001.webp"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(made[(width, height)])
        entries.append(task)
    (folder / "bench.json").write_text(__import__("json").dumps(entries))


# --------------------------------------------------------------------------- cases


def base_env(folder: Path, **extra: str) -> dict:
    env = {**os.environ, "HYPEEDIT_CACHE_DIR": str(folder / "cache"), "OPENAI_API_KEY": JUDGE_KEY, **extra}
    # Bytecode caching as a user has it: a sandbox that sets PYTHONDONTWRITEBYTECODE would have every process
    # (each xdist worker too) compile pytest's and the plugin's sources again at every start.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def common_args(args, judge: FakeChat) -> list[str]:
    return ["--tasks", "bench.json", "--images-base", "images", "--repeats", str(args.repeats), "--outputs", "out",
            "--judge", "openai-rubric:bench-judge", "--judge-base-url", judge.base_url,
            "--concurrency", str(args.concurrency)]


def ark_case(args, workers: int, real: bool) -> Figures:
    candidates = args.tasks * args.repeats
    with tempfile.TemporaryDirectory() as tmp, lean(FakeArk()) as ark, lean(FakeChat()) as chat:
        folder = Path(tmp)
        if real:
            real_size_split(folder, args.tasks)
            output = photo_like(2048, 2048, "PNG", seed=99)  # a 2K PNG for every candidate
        else:
            write_split(folder, "bench", make_tasks(args.tasks), folder / "images")
            output = make_image(64, 48)
        without_fake_work(output, ark)
        ark.inject("slow", path="/images/generations", delay=args.latency, count=candidates)
        slow_judge(chat, args.latency)
        env = base_env(folder, HYPEEDIT_ARK_BASE_URL=ark.base, ARK_API_KEY=ark.key)
        if args.timeline:
            env.update(HYPEEDIT_BENCH_CLOCK=str(folder / "clock.txt"),
                       PYTHONPATH=os.pathsep.join(filter(None, [str(BENCH), env.get("PYTHONPATH")])))
        extra = ["-n", str(workers)] if workers else []
        wall, peak, done = run_pytest(folder, env, ["--model", "seedream-4.5", *common_args(args, chat),
                                                    "--rate-limit", f"ark=/{args.concurrency}", *extra])
        calls = len(ark.seen("/images/generations"))
        judged = len(chat.requests)
        first = min(s.at for s in ark.seen("/images/generations")) - run_pytest.started_at
        after = run_pytest.started_at + wall - (max(chat.arrivals) + args.latency)
        ideal = candidates * 2 * args.latency / args.concurrency
        steps = [(s.at, s.at + args.latency) for s in ark.seen("/images/generations")]
        steps += [(at, at + args.latency) for at in chat.arrivals]
        gaps = handoffs(ark.tasks, chat.tasks, args.latency)
        line = (timeline(steps, args.concurrency, ideal, run_pytest.started_at, wall, folder / "clock.txt", gaps)
                if args.timeline else "")
    return Figures(wall, ideal, peak, last_line(done), calls, judged, first, after, run_pytest.cpu, line)


def routes_case(args) -> Figures:
    tasks, repeats, limited = args.route_tasks, 2, 2
    with tempfile.TemporaryDirectory() as tmp, lean(FakeArk()) as ark, lean(FakeOpenAI()) as openai, \
            lean(FakeDashScope()) as dashscope, lean(FakeChat()) as chat:
        folder = Path(tmp)
        write_split(folder, "bench", make_tasks(tasks), folder / "images")
        (folder / "models.yaml").write_text(
            "models:\n  qwen-image-edit-2511: {route: dashscope, provider_model: qwen-image-edit-plus-2025-12-15}\n")
        per_model = tasks * repeats
        without_fake_work(make_image(64, 48), ark, dashscope)
        ark.inject("slow", path="/images/generations", delay=args.latency, count=per_model)
        openai.inject("slow", path="/images/edits", delay=args.latency, count=per_model)
        dashscope.inject("slow", path="multimodal-generation", delay=args.latency, count=per_model)
        slow_judge(chat, args.latency)
        env = base_env(folder, HYPEEDIT_ARK_BASE_URL=ark.base, ARK_API_KEY=ark.key,
                       HYPEEDIT_OPENAI_BASE_URL=openai.base, HYPEEDIT_DASHSCOPE_BASE_URL=dashscope.base,
                       DASHSCOPE_API_KEY=dashscope.key)
        env["OPENAI_API_KEY"] = openai.key  # the images API and the judge's fake share the variable
        run_args = ["--model", "seedream-4.5", "--model", "gpt-image-2", "--model", "qwen-image-edit-2511",
                    "--models-file", "models.yaml", *common_args(args, chat), "--repeats", str(repeats),
                    "--rate-limit", "ark=/64", "--rate-limit", "openai=/64",
                    "--rate-limit", f"dashscope=/{limited}"]
        wall, peak, done = run_pytest(folder, env, run_args)
        calls = sum(len(f.seen(p)) for f, p in ((ark, "/images/generations"), (openai, "/images/edits"),
                                                 (dashscope, "multimodal-generation")))
        judged = len(chat.requests)
    ideal = per_model * args.latency / limited + args.latency
    return Figures(wall, ideal, peak, last_line(done), calls, judged)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=["all", "small", "real", "routes"], default="all")
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--latency", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--route-tasks", type=int, default=20, help="tasks of the routes case (2 repeats each)")
    parser.add_argument("--workers", choices=["both", "0", "2"], default="both",
                        help="the small and real cases in one process (0), with -n 2 (2) or both")
    parser.add_argument("--runs", type=int, default=1, help="run each case this many times")
    parser.add_argument("--timeline", action="store_true",
                        help="also say where the seconds went: start-up, the calls' idle slots by phase, the tail, "
                             "and when each pytest process reached each phase (bench/benchclock.py)")
    args = parser.parse_args()
    workers = [0, 2] if args.workers == "both" else [int(args.workers)]
    for case, real in (("small", False), ("real", True)):
        if args.case not in ("all", case):
            continue
        for count in workers:
            for _ in range(args.runs):
                name = "small" if not real else "real-size references"
                where = "-n 2" if count else "one process"
                print(ark_case(args, count, real=real).line(f"{name}, {where} (load {os.getloadavg()[0]:.1f})"),
                      flush=True)
    if args.case in ("all", "routes"):
        print(routes_case(args).line("three routes, dashscope at 2 in flight"), flush=True)


if __name__ == "__main__":
    main()
