"""Stopping never costs money: SIGTERM, a second Ctrl-C or SIGKILL mid-run, then reruns to completion.

Real runs of the plugin in subprocesses (serial and ``-n 2``) against loopback fakes of two async routes (bfl,
fal: submit, then poll) and two synchronous ones (ark, openai).  Each fake bills a paid request the moment it
receives it and answers only after ``latency`` seconds, as a provider generating an image does, so a run that
leaves early loses replies the provider has billed.  The fakes' ledgers say what each candidate was billed;
the records and results say what the plugin counts as possibly paid.

- SIGTERM (and a first Ctrl-C): the calls in flight finish within the grace and are saved: after the reruns,
  no candidate was billed twice, and nothing is possibly paid.
- A second signal, or SIGKILL: the calls in flight are left; every candidate billed twice is one the results
  count as possibly paid (a count may be higher: a call journaled but killed before it left).
- A blackholed or slow-then-dropped synchronous endpoint receives exactly one request per candidate.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest
from benchdata import make_tasks, write_run_folder
from fake_models import fast_retries_conftest
from ledger_view import open_call
from providers_fakes.ark import FakeArk
from providers_fakes.bfl import FakeBfl
from providers_fakes.chaos import JobLedger
from providers_fakes.fal import FakeFal
from providers_fakes.openai import FakeOpenAI
from terminal_text import said

from pytest_hypeedit.glue.stopping import STOP_FILE

MODELS = ("flux-2-max", "qwen-image-edit-2511", "seedream-4.5", "gpt-image-1.5")
TASKS, REPEATS = 2, 3
FAST_RETRIES = fast_retries_conftest(max_attempts=5)
MODELS_FILE = """
models:
  flux-2-max: {options: {poll_s: 0.02, poll_max_s: 0.05, max_wait_s: 60}}
  qwen-image-edit-2511: {options: {poll_s: 0.02, poll_max_s: 0.05, max_wait_s: 60}}
  seedream-4.5: {options: {timeout_s: %(timeout)s}}
  gpt-image-1.5: {options: {timeout_s: %(timeout)s}}
routes:
  bfl: {rpm: 100000, inflight: 24}
  fal: {rpm: 100000, inflight: 24}
  ark: {rpm: 100000, inflight: 24}
  openai: {rpm: 100000, inflight: 24}
"""


#: The longest a run, or a held call, may take: a bound that fails named when something hangs, never a gap a test
#: relies on (beside six busy loops on two cores, a SIGTERM'd -n 2 run took 32 s to leave).
BOUND = 120.0


# --------------------------------------------------------------------------- fakes that bill on receipt


class Slow:
    """Bill on receipt (the fake's ledger), answer ``latency`` seconds later: the provider is generating."""

    latency = 0.0
    blackhole = False  # never answer in time (longer than any client waits)
    #: when given, answer only once it is true (say, once the run was stopped, or has left), whatever the latency
    held: Callable[[], bool] | None = None

    def wait(self) -> None:
        held = self.held  # read once: a test lets go (held = None) while calls still wait here
        if held is None:
            time.sleep(30 if self.blackhole else self.latency)
            return
        deadline = time.monotonic() + BOUND  # a test that failed before letting go must not hold for ever
        while not held() and time.monotonic() < deadline:
            time.sleep(0.01)


class BillingBfl(Slow, FakeBfl):
    def submit(self, seen):
        reply = super().submit(seen)  # billed: the ledger counts the submit
        self.wait()
        return reply


class BillingFal(Slow, FakeFal):
    def submit(self, seen):
        reply = super().submit(seen)
        self.wait()
        return reply


class BillingArk(Slow, FakeArk):
    def __init__(self):
        super().__init__()
        self.ledger = JobLedger()

    def generate(self, seen):
        body = seen.json()
        self.ledger.submit((body.get("prompt"), body.get("seed")))
        self.wait()
        return super().generate(seen)


class BillingOpenAI(Slow, FakeOpenAI):
    """The edits API takes no seed: the repeats of a task are told apart by nothing, so the ledger counts per
    task (its prompt)."""

    def __init__(self):
        super().__init__()
        self.ledger = JobLedger()

    def edit(self, seen):
        fields = {name: content.decode() for name, filename, content in seen.form() if filename is None}
        self.ledger.submit(fields.get("prompt"))
        self.wait()
        return super().edit(seen)


@pytest.fixture
def fakes(monkeypatch, tmp_path):
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    with BillingBfl(pending_polls=1) as bfl, BillingFal(queued_polls=1) as fal, BillingArk() as ark, \
            BillingOpenAI() as openai:
        for fake in (bfl, fal, ark, openai):
            monkeypatch.setenv(fake.env, fake.base)
            monkeypatch.setenv(fake.key_env, fake.key)
            fake.latency = 1.2
        yield {"flux-2-max": bfl, "qwen-image-edit-2511": fal, "seedream-4.5": ark, "gpt-image-1.5": openai}
        for fake in (bfl, fal, ark, openai):  # let go of the calls of a test that failed before answering them
            fake.held = lambda: True


def prepare(folder: Path, models=MODELS, *, timeout: float = 30) -> list[str]:
    tasks = make_tasks(TASKS)
    run = write_run_folder(folder, conftest=FAST_RETRIES, models_file=MODELS_FILE % {"timeout": timeout}, tasks=tasks,
                           labels={(t["task_id"], model, r): r % 2 == 1 for t in tasks for model in models
                                   for r in range(1, REPEATS + 1)}, repeats=REPEATS)
    return [*run, "--concurrency", "16", *(arg for model in models for arg in ("--model", model))]


def launch(folder: Path, args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=folder, env={**os.environ},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, text=True)


def billed(fakes: dict) -> int:
    return sum(sum(fake.ledger.submitted.values()) for fake in fakes.values())


def wait_until(process: subprocess.Popen, ready, timeout: float = BOUND) -> None:
    deadline = time.monotonic() + timeout
    while not ready() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.01)
    assert process.poll() is None, "the run ended before the signal:\n" + process.communicate()[0][-3000:]


def after_leaving(process: subprocess.Popen) -> str:
    """The output of a run that was told to stop, once it has left; one still running after BOUND fails, named."""
    try:
        return process.communicate(timeout=BOUND)[0]
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError(f"the run had not left {BOUND:.0f} s after the signal:\n"
                             + process.communicate()[0][-3000:]) from None


def stopped(tmp_path: Path) -> bool:
    """Whether a process of the run took the first signal: it wrote the run's stop file (in the run's state
    folder, under the fixture's cache)."""
    return any((tmp_path / "cache").rglob(STOP_FILE))


def rerun_to_completion(pytester: pytest.Pytester, args: list[str], runs: int = 3) -> str:
    """Rerun the run in pytester's folder until it completes.  In this process: no signal is sent to a rerun,
    and a process of its own cost ~2 s of CPU a run (start-up, imports, collection)."""
    for _ in range(runs):
        out = pytester.runpytest_inprocess(*args).stdout.str()
        if "run complete" in out:
            return out
    raise AssertionError(out[-3000:])


def records(folder: Path) -> list[dict]:
    return [json.loads(path.read_text()) for path in (folder / "out").rglob("[0-9][0-9][0-9].json")]


def rows(folder: Path) -> dict[str, dict]:
    return {row["model"]: row for row in json.loads((folder / "out" / "results.json").read_text())["rows"]}


def billed_twice(fakes: dict, model: str) -> Counter:
    """Candidates (their ledger key) billed more than once, with how many extra times; for openai, per task."""
    fake = fakes[model]
    once = REPEATS if model == "gpt-image-1.5" else 1
    return Counter({key: count - once for key, count in fake.ledger.submitted.items() if count > once})


def lost_calls(record: dict) -> list[dict]:
    """The calls a record (as on disk) counts as possibly paid: the lost entries of its call ledger."""
    return [call for call in record.get("calls", []) if call.get("state") == "lost"]


def possibly_paid(folder: Path, model: str) -> Counter:
    """Candidates the records count as possibly paid, keyed as the model's fake keys them."""
    found = Counter()
    for record in records(folder):
        if record["model"] == model and lost_calls(record):
            task = int(record["task_id"].rsplit("-", 1)[1])
            prompt = make_tasks(TASKS)[task]["instruction"]
            key = prompt if model == "gpt-image-1.5" else (prompt, seed_of(record))
            found[key] += len(lost_calls(record))
    return found


def seed_of(record: dict) -> int:
    from pytest_hypeedit.providers.base import seed_for
    return seed_for(record["task_id"], record["repeat"])


def assert_every_double_charge_is_counted(folder: Path, fakes: dict) -> int:
    """Every candidate billed twice is counted possibly paid (at least as often); returns the double charges."""
    doubles = 0
    final = rows(folder)
    for model in MODELS:
        twice, counted = billed_twice(fakes, model), possibly_paid(folder, model)
        for key, extra in twice.items():
            assert counted[key] >= extra, f"{model}: {key} billed {extra} extra time(s), counted {counted[key]}"
        assert final[model]["possibly_paid"] == sum(1 for r in records(folder)
                                                    if r["model"] == model and lost_calls(r))
        assert final[model]["spent_breakdown"]["possibly_paid"] == pytest.approx(
            sum(e["price"] for r in records(folder) if r["model"] == model for e in lost_calls(r)))
        doubles += sum(twice.values())
    return doubles


def assert_complete(folder: Path) -> None:
    final = rows(folder)
    assert all(final[m]["judged"] == TASKS * REPEATS and final[m]["errors"] == 0 for m in MODELS), final


def signal_group(process: subprocess.Popen, signum: int) -> None:
    os.killpg(process.pid, signum)  # a terminal's Ctrl-C, or `kill -TERM -PGID`: every process of the run


def signal_main(process: subprocess.Popen, signum: int) -> None:
    process.send_signal(signum)  # a CI runner signalling the pytest process it started


# --------------------------------------------------------------------------- SIGTERM: nothing paid twice


@pytest.mark.parametrize("workers, send", [([], signal_main), (["-n", "2"], signal_main),
                                           (["-n", "2"], signal_group)],
                         ids=["serial", "xdist-controller", "xdist-group"])
def test_sigterm_lets_the_calls_in_flight_finish_and_nothing_is_paid_twice(pytester, fakes, workers, send):
    folder = pytester.path  # the reruns run in this process (pytester's folder); the signalled run in its own
    args = prepare(folder)
    process = launch(folder, [*args, *workers])
    wait_until(process, lambda: billed(fakes) >= 6)  # the first calls are billed, their replies not yet sent
    send(process, signal.SIGTERM)
    # The calls' own 1.2 s, a wait the run must sit out: answered the moment the stop is taken, they would finish
    # while a run without the grace is still leaving, and it would pass.  The grace's bound, the workers' shutdown:
    # a hang fails.
    out = after_leaving(process)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert "hypeedit: stopping: no new call starts" in out
    assert billed(fakes) < len(MODELS) * TASKS * REPEATS  # it stopped
    left = [(r["model"], r["task_id"], r["repeat"], open_call(r)) for r in records(folder) if open_call(r)]
    assert not left, f"calls left without their reply: {left}\n{out[-3000:]}"

    for fake in fakes.values():
        fake.latency = 0.2  # the reruns only complete the run
    rerun_to_completion(pytester, args)
    assert_complete(folder)
    for model in MODELS:
        assert not billed_twice(fakes, model), f"{model} paid twice after a SIGTERM"
        assert rows(folder)[model]["possibly_paid"] == 0


# --------------------------------------------------------------------------- a second signal, SIGKILL


@pytest.mark.parametrize("workers, second", [([], signal.SIGINT), (["-n", "2"], signal.SIGINT),
                                             (["-n", "2"], signal.SIGTERM)],
                         ids=["serial-ctrl-c-twice", "xdist-ctrl-c-twice", "xdist-ctrl-c-then-sigterm"])
def test_a_second_signal_leaves_at_once_and_every_double_charge_is_counted(tmp_path, pytester, fakes, workers,
                                                                          second, monkeypatch):
    monkeypatch.setenv("HYPEEDIT_STOP_GRACE_S", "3600")  # only the second signal can end the wait: after_leaving() fails
    answer = threading.Event()
    for fake in fakes.values():
        fake.held = answer.is_set  # answered only once the run has left: the second signal left them in flight
    folder = pytester.path  # the reruns run in this process (pytester's folder); the signalled run in its own
    args = prepare(folder)
    process = launch(folder, [*args, *workers])
    wait_until(process, lambda: billed(fakes) >= 6)
    signal_group(process, signal.SIGINT)
    wait_until(process, lambda: stopped(tmp_path))  # the first signal was taken
    time.sleep(0.5)  # the workers' own handlers too, mostly (one that is late leaves by the controller's word)
    signal_group(process, second)
    out = after_leaving(process)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert "hypeedit: left " in out and "sent whose replies were lost" in out
    assert any(open_call(r) for r in records(folder)), "no call was left in flight: nothing was tested"

    answer.set()
    for fake in fakes.values():
        fake.held, fake.latency = None, 0.2
    rerun_to_completion(pytester, args)
    assert_complete(folder)
    assert assert_every_double_charge_is_counted(folder, fakes) >= 1, "the fakes saw no double charge"


def test_sigkill_mid_call_then_rerun_counts_every_double_charge(pytester, fakes):
    answer = threading.Event()
    for fake in fakes.values():
        fake.held = answer.is_set  # answered only after the kill: the calls billed are in flight when it lands
    folder = pytester.path  # the rerun runs in this process (pytester's folder); the killed run in its own
    args = prepare(folder)
    process = launch(folder, args)
    wait_until(process, lambda: billed(fakes) >= 6)
    signal_group(process, signal.SIGKILL)
    process.communicate(timeout=60)
    assert any(open_call(r) for r in records(folder))
    answer.set()
    for fake in fakes.values():
        fake.held, fake.latency = None, 0.2  # the rerun only completes the run
    out = rerun_to_completion(pytester, args)
    assert_complete(folder)
    assert assert_every_double_charge_is_counted(folder, fakes) >= 1
    assert "possibly paid: " in out and "whose paid call was abandoned without its reply" in out


# --------------------------------------------------------------------------- pytest-timeout


def test_pytest_timeouts_thread_method_loses_no_paid_call(pytester, fakes):
    """pytest-timeout's thread method dumps the stacks and calls os._exit: whatever was only in memory is gone.
    Every paid call is journaled on disk before it is sent, so the next run knows each one left without its
    reply: with --possibly-paid review it buys none of them again and counts them; it buys only the rest."""
    answer = threading.Event()
    for fake in fakes.values():
        fake.held = answer.is_set  # the first item's setup waits until the timeout kills the run with calls in flight
    folder = pytester.path  # the later runs run in this process (pytester's folder); the timed-out run in its own
    args = prepare(folder)
    process = launch(folder, [*args, "-p", "timeout", "--timeout", "4", "--timeout-method", "thread"])
    out = after_leaving(process)
    assert "Timeout" in out and process.returncode != 0, out[-3000:]
    first = billed(fakes)
    pending = [r for r in records(folder) if open_call(r)]
    kept = [r for r in records(folder) if not open_call(r) and r.get("outcome") not in (None, "error")]
    assert first >= 6 and pending, f"{first} billed, {len(pending)} pending: nothing was left in flight"
    assert first <= len(pending) + len(kept), "a billed call is neither saved nor journaled as pending on disk"

    answer.set()
    for fake in fakes.values():
        fake.held, fake.latency = None, 0.2
    review = pytester.runpytest_inprocess(*args, "--possibly-paid", "review").stdout.str()
    total = len(MODELS) * TASKS * REPEATS
    assert billed(fakes) - first == total - len(pending) - len(kept), review[-3000:]
    for model in MODELS:
        assert not billed_twice(fakes, model), f"{model}: a possibly paid call was bought again blindly"
        assert rows(folder)[model]["possibly_paid"] == sum(r["model"] == model for r in pending), review[-3000:]
    assert "held for review" in review

    rerun_to_completion(pytester, args)  # rebuy: what was held is bought again, and counted
    assert_complete(folder)
    assert_every_double_charge_is_counted(folder, fakes)


def test_pytest_timeouts_signal_method_with_x_gives_the_calls_their_grace(pytester, fakes):
    """The signal method fails the item that waited too long; -x then stops the run: no new call starts, the
    calls in flight finish within the grace and are saved, and the rerun buys only the rest."""
    for fake in fakes.values():
        fake.latency = 5.0  # longer than the timeout, well within the grace
    folder = pytester.path  # the rerun runs in this process (pytester's folder); the timed-out run in its own
    args = prepare(folder)
    done = subprocess.run([sys.executable, "-m", "pytest", *args, "-p", "timeout", "--timeout", "2",
                           "--timeout-method", "signal", "-x"], cwd=folder, env={**os.environ},
                          capture_output=True, text=True, timeout=120)
    assert "Timeout" in done.stdout and done.returncode != 0, done.stdout[-3000:]
    assert billed(fakes) < len(MODELS) * TASKS * REPEATS  # it stopped buying
    left = [(r["model"], r["task_id"], r["repeat"]) for r in records(folder) if open_call(r)]
    assert not left, f"calls left without their reply: {left}\n{done.stdout[-3000:]}"

    for fake in fakes.values():
        fake.latency = 0.2
    rerun_to_completion(pytester, args)
    assert_complete(folder)
    for model in MODELS:
        assert not billed_twice(fakes, model), f"{model} paid twice after a timeout and -x"
        assert rows(folder)[model]["possibly_paid"] == 0


# --------------------------------------------------------------------------- a synchronous endpoint that never answers


def test_a_blackholed_sync_endpoint_is_sent_one_request_per_candidate(pytester, fakes):
    sync = ("seedream-4.5", "gpt-image-1.5")
    args = prepare(pytester.path, sync, timeout=0.5)
    fakes["seedream-4.5"].blackhole = True  # takes the request and never answers in time
    fakes["gpt-image-1.5"].latency = 1.0  # answers too late: the client gave up and dropped the connection
    first = pytester.runpytest(*args)
    first.assert_outcomes(errors=len(sync) * TASKS * REPEATS)
    for model in sync:
        assert sum(fakes[model].ledger.submitted.values()) == TASKS * REPEATS  # one request each, no retry
        assert rows(pytester.path)[model]["possibly_paid"] == TASKS * REPEATS
    first.stdout.fnmatch_lines(["*counted as possibly paid (up to $0.04*"])

    for model in sync:  # the endpoints are well again
        fakes[model].blackhole, fakes[model].latency = False, 0.0
    # and the client waits as long as a loaded machine needs: 0.5 s was a gap a busy machine missed (timeout_s is
    # a transport option, not part of the release: the same release is bought again)
    (pytester.path / "fast.yaml").write_text(MODELS_FILE % {"timeout": 30})
    again = pytester.runpytest(*args)
    again.assert_outcomes(passed=len(sync) * TASKS * 2, failed=len(sync) * TASKS)
    for model in sync:
        row = rows(pytester.path)[model]
        assert sum(fakes[model].ledger.submitted.values()) == 2 * TASKS * REPEATS
        assert (row["possibly_paid"], row["possibly_paid_open"]) == (TASKS * REPEATS, 0)
    said(again, "possibly paid: seedream-4.5 (mini): 6 candidates whose paid call was abandoned without its reply "
                "(up to $0.24, included in spent): 6 bought again")


def test_a_bad_grace_is_a_usage_error_naming_the_variable(pytester, monkeypatch):
    tiny = Path(__file__).resolve().parents[2] / "examples" / "tiny-split"
    monkeypatch.setenv("HYPEEDIT_STOP_GRACE_S", "nan")
    result = pytester.runpytest("--model", "identity", f"--tasks={tiny / 'tiny.json'}",
                                f"--images-base={tiny / 'images'}", "--judge", f"labels:{tiny / 'rater1.json'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*HYPEEDIT_STOP_GRACE_S='nan': give the seconds calls in flight may take*"])


# --------------------------------------------------------------------------- one signal, two ways in


def test_a_workers_first_signal_just_after_the_stop_file_still_gives_the_grace():
    # A signal sent to the process group reaches the controller and each worker together; under load the stop
    # file the controller writes can stop a worker's pool before the worker runs its own handler. That is the
    # same signal, not a second one: leaving would abandon the calls in flight (a flake of the xdist-group run).
    from pytest_hypeedit.glue.pool_plugin import SAME_SIGNAL_S, PoolPlugin
    from pytest_hypeedit.glue.stopping import Stopper

    class StoppedPool:
        def __init__(self, ago):
            self.ago = ago

        def stopped_for(self):
            return self.ago

    plugin = PoolPlugin.__new__(PoolPlugin)
    stops: list[str] = []
    plugin.pool = StoppedPool(0.05)  # stopped by the controller's stop file a moment ago
    just_stopped = Stopper(stops.append, plugin._first_signal_may_wait)
    just_stopped._handle(signal.SIGTERM, None)  # waits: no KeyboardInterrupt
    assert stops == ["interrupted (SIGTERM)"] and not just_stopped.leaving

    plugin.pool = StoppedPool(SAME_SIGNAL_S + 5)  # stopped long ago (the user's first Ctrl-C): this one leaves
    long_stopped = Stopper(stops.append, plugin._first_signal_may_wait)
    with pytest.raises(KeyboardInterrupt):
        long_stopped._handle(signal.SIGINT, None)
    plugin.pool = StoppedPool(None)  # running
    assert plugin._first_signal_may_wait()
