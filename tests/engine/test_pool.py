"""The pool: many candidates in flight from one process, limits that hold, and stops that stop.

A loopback server stands in for the providers and the judge; it counts the
requests it is serving at once, per path, so the tests see what a provider
would see: how many calls are in flight, across every process of the run.

The scheduling tests assert counts and order, never wall-clock gaps: where a test needs calls to overlap, the
server *holds* them (``SlowServer.holds``) until the state it waits for is reached (say, 8 calls in flight),
so a loaded machine makes the test slower, never wrong; a hold that is never released is a failure, named.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest
from benchdata import FileServer, make_tasks, png_bytes, write_labels, write_split
from fake_judges import judges_conftest
from fake_models import models_conftest
from providers_fakes import FakeServer, Reply

#: Two models on two routes of the pool's provider (fake_models.SlowProvider: each call a request to the SlowServer
#: and a line in $CALL_LOG) and its judge (fake_judges.SlowJudge: each verdict a request too, PASS on even repeats).
CONFTEST = models_conftest("SlowProvider", ({"name": "slow-a", "route": "route-a", "price": 0.01},
                                            {"name": "slow-b", "route": "route-b", "price": 0.01})) + judges_conftest("SlowJudge")


#: The longest a held request waits for what it waits for (a scheduling bug would make it wait for ever).
HOLD_MAX = 120.0
#: The longest a run in a subprocess, or anything else the tests wait for, may take: a bound that fails named
#: when something hangs, never a gap a test relies on (two cores at load 40 make a 24-item run take minutes).
BOUND = 300.0


class SlowServer(FakeServer):
    """Answers every GET after ``delay`` seconds; counts requests in flight per path (peak and total)."""

    def __init__(self, delay: float = 0.3):
        super().__init__()
        self.delay = delay
        self.delays: dict[str, float] = {}  # per path, instead of ``delay``
        self.arrivals: dict[str, list[float]] = {}
        self.active: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.total_peak = 0
        self.throttle_above: dict[str, int] = {}  # path -> answer 429 past this many in flight
        self.throttled = 0
        self.finished: dict[str, int] = {}  # path -> requests answered
        #: path -> hold each of its requests (before its delay) until this is true (read under the server's
        #: lock); a hold still waiting after HOLD_MAX seconds lets go and is listed in ``held_too_long``
        self.holds: dict[str, Callable[[], bool]] = {}
        self.held_too_long: list[str] = []
        self._count_lock = threading.Lock()
        self._changed = threading.Condition(self._count_lock)
        self.route("GET", r"/[a-z-]+", self.slow)

    def slow(self, seen) -> Reply:
        path = seen.path
        with self._changed:
            self.arrivals.setdefault(path, []).append(time.monotonic())
            self.active[path] = self.active.get(path, 0) + 1
            over = self.active[path] > self.throttle_above.get(path, 10 ** 6)
            if over:
                self.throttled += 1
            self.peak[path] = max(self.peak.get(path, 0), self.active[path])
            self.total_peak = max(self.total_peak, sum(self.active.values()))
            self._changed.notify_all()
            hold = self.holds.get(path)
            if hold is not None and not over and not self._changed.wait_for(hold, timeout=HOLD_MAX):
                self.held_too_long.append(path)
        try:
            if over:
                return Reply(429, {"error": {"code": "rate_limited", "message": "slow down"}})
            time.sleep(self.delays.get(path, self.delay))
            return Reply(200, {"ok": True})
        finally:
            with self._changed:
                self.active[path] -= 1
                self.finished[path] = self.finished.get(path, 0) + 1
                self._changed.notify_all()


@pytest.fixture
def server():
    with SlowServer() as slow:
        yield slow


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path, server):
    pytester.makeconftest(CONFTEST)
    write_split(pytester.path, "mini", make_tasks(6), pytester.path / "images")
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("SLOW_URL", server.url)
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    return pytester


def labels(path: Path, models=("slow-a", "slow-b"), tasks: int = 6, repeats: int = 4) -> str:
    write_labels(path, {(f"task-{t:02d}", m, r): r % 2 == 0 for t in range(tasks) for m in models
                        for r in range(1, repeats + 1)})
    return f"labels:{path.name}"


def args(*extra: str, repeats: int = 4) -> list[str]:
    return ["-p", "no:cacheprovider", "--tasks", "mini.json", "--images-base", "images", "--repeats", str(repeats),
            "--outputs", "out", *extra]


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


# --------------------------------------------------------------------------- in flight


def hold_until_peak(server: SlowServer, path: str, peak: int) -> None:
    """Hold ``path``'s requests until ``peak`` of them were in flight at once (then a moment more, in which a
    pool sending past its limit shows it)."""
    server.delay = 0.1
    server.holds[path] = lambda: server.peak.get(path, 0) >= peak


def test_calls_in_flight_reach_the_concurrency_and_never_pass_it(bench, server, tmp_path):
    hold_until_peak(server, "/route-a", 8)
    result = bench.runpytest(*args("--model", "slow-a", "--judge", labels(bench.path / "r.json"), "--concurrency", "8"))
    result.assert_outcomes(passed=12, failed=12)
    assert not server.held_too_long, "8 calls were never in flight at once"  # one at a time without the pool
    assert server.peak["/route-a"] == 8  # never more than asked
    assert len(calls(tmp_path)) == 24


def test_the_total_holds_across_xdist_workers(bench, server, tmp_path):
    hold_until_peak(server, "/route-a", 6)
    result = bench.runpytest(*args("--model", "slow-a", "--judge", labels(bench.path / "r.json"),
                                   "--concurrency", "6", "-n", "2"))
    result.assert_outcomes(passed=12, failed=12)
    assert not server.held_too_long, "6 calls were never in flight at once"
    assert server.peak["/route-a"] == 6  # 3 per worker would also give 6: see the next test
    assert len(calls(tmp_path)) == 24


def test_one_worker_may_use_the_whole_concurrency_when_the_other_is_done(bench, server, tmp_path):
    # One repeat of two models: items alternate slow-a, slow-b, so the round-robin deal gives worker gw0
    # every slow-a (slow) and gw1 every slow-b (fast). Once gw1 is done, gw0 may use every slot: the slots
    # are one pool for the run, not a fixed share per worker.
    hold_until_peak(server, "/route-a", 6)
    result = bench.runpytest(*args("--model", "slow-a", "--model", "slow-b", "--judge", labels(bench.path / "r.json"),
                                   "--concurrency", "6", "-n", "2", "--repeats", "1"))
    result.assert_outcomes(passed=0, failed=12)
    assert not server.held_too_long, "gw0 never had the 6 slots once gw1 was done"
    assert server.peak["/route-a"] == 6


def test_a_route_at_its_limit_leaves_the_slots_to_the_others(bench, server, tmp_path):
    # route-a's calls are held until every route-b call is answered: route-a's waiting candidates must hold no
    # slot, so route-b gets the other two (a candidate waiting for route-a while holding a slot would starve it).
    # route-b's calls are held until two are in flight at once: they overlap by the test's say, not because a
    # 0.02 s reply outlasted the next dispatch (under load it did not: a peak of 1); with one slot it waits for ever
    hold_until_peak(server, "/route-b", 2)
    server.holds["/route-a"] = lambda: server.finished.get("/route-b", 0) >= 6
    result = bench.runpytest(*args("--model", "slow-a", "--model", "slow-b", "--judge", labels(bench.path / "r.json"),
                                   "--concurrency", "4", "--rate-limit", "route-a=/2", "--repeats", "1"))
    result.assert_outcomes(passed=0, failed=12)
    assert not server.held_too_long, "route-b never finished while route-a was at its limit"
    assert server.peak["/route-a"] == 2
    assert server.peak["/route-b"] == 2


def test_a_slow_route_is_never_kept_waiting_for_a_slot_by_a_fast_one(bench, server, tmp_path):
    # route-a takes one call at a time; every candidate keeps its slot while it is judged. Were the fast
    # route to take every free slot, route-a's next call would wait for its previous candidate's verdict.
    # So route-b's calls and route-a's verdicts are held until route-a's second call has started: only a
    # slot left to route-a (its fair share: one generating, one being judged) lets it start.
    server.delay = 0.02
    route_a_went_on = lambda: len(server.arrivals.get("/route-a", ())) >= 2  # noqa: E731
    server.holds.update({"/route-b": route_a_went_on, "/judge-route-of-slow-a": route_a_went_on})
    result = bench.runpytest(*args("--model", "slow-a", "--model", "slow-b", "--judge", "slowjudge",
                                   "--concurrency", "4", "--rate-limit", "route-a=/1", "--repeats", "2"))
    result.assert_outcomes(passed=12, failed=12)
    assert not server.held_too_long, "route-a waited for a slot while route-b held the others"
    assert server.total_peak <= 4


def test_one_slot_for_two_routes_is_taken_not_reserved(bench, server, tmp_path):
    # fewer slots than routes: were the slot owed to the other route, each would wait for the other forever
    server.delay = 0.05
    result = bench.runpytest_subprocess(*args("--model", "slow-a", "--model", "slow-b", "--judge", "slowjudge",
                                              "--concurrency", "1", "--repeats", "1"), timeout=BOUND)
    result.assert_outcomes(passed=0, failed=12)
    assert server.total_peak == 1


def test_paid_verdicts_share_the_slots_and_come_before_new_generations(bench, server, tmp_path):
    server.delay = 0.05
    five = lambda: server.total_peak >= 5  # noqa: E731
    server.holds.update({"/route-a": five, "/judge-route-of-slow-a": five})
    result = bench.runpytest(*args("--model", "slow-a", "--judge", "slowjudge", "--concurrency", "5"))
    result.assert_outcomes(passed=12, failed=12)
    assert not server.held_too_long, "5 calls were never in flight at once"
    assert server.total_peak == 5
    # a generated candidate is judged before new ones are generated: verdicts start while generations go on
    assert min(server.arrivals["/judge-route-of-slow-a"]) < max(server.arrivals["/route-a"])
    assert len(calls(tmp_path)) == 24


def test_only_selected_items_are_bought(bench, server, tmp_path):
    result = bench.runpytest(*args("--model", "slow-a", "--judge", labels(bench.path / "r.json"), "-k", "r002"))
    result.assert_outcomes(passed=6)
    assert sorted(calls(tmp_path)) == sorted(f"task-{t:02d} slow-a 2" for t in range(6))


def test_the_record_rides_on_the_report_and_ids_are_unchanged(bench, server, tmp_path):
    result = bench.runpytest(*args("--model", "slow-a", "--judge", labels(bench.path / "r.json"), "-v",
                                   "--repeats", "1"))
    result.stdout.fnmatch_lines(["hypeedit::mini::task-00[[]slow-a-r001] FAILED*"])
    rows = json.loads((bench.path / "out" / "results.json").read_text())["rows"]
    assert rows[0]["candidates"] == 6 and rows[0]["judged"] == 6


# --------------------------------------------------------------------------- an item run twice


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize("on_disk", [False, True], ids=["fresh", "on-disk"])
def test_a_result_asked_for_again_is_the_same_record(bench, server, tmp_path, workers, on_disk):
    """pytest-rerunfailures runs a failed item again (setup included): the pool gives the record it settled,
    never a second purchase, a hang (a signal nobody sets) or an empty record."""
    server.delay = 0.05
    run = args("--model", "slow-a", "--judge", labels(bench.path / "r.json"), "--concurrency", "4", *workers)
    if on_disk:  # a plain run: in-process (the subprocess with a deadline is for the reruns, which could hang)
        bench.runpytest(*run).assert_outcomes(passed=12, failed=12)
    bought = len(calls(tmp_path))
    result = bench.runpytest_subprocess(*run, "-p", "rerunfailures", "--reruns", "2", timeout=BOUND)
    outcomes = result.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("failed"), outcomes.get("rerun")) == (12, 12, 24), outcomes
    assert "AttributeError" not in result.stdout.str()
    assert len(calls(tmp_path)) == 24, "a rerun bought its candidate again"
    assert bought == (24 if on_disk else 0)
    rows = json.loads((bench.path / "out" / "results.json").read_text())["rows"]
    assert rows[0]["candidates"] == 24 and rows[0]["judged"] == 24


# --------------------------------------------------------------------------- -W error


class SlowImages(FileServer):
    """The reference images, each after ``delay`` seconds: the start-up's progress line gets drawn."""

    def __init__(self, files: dict[str, bytes], delay: float):
        super().__init__(files, delay=delay)


def test_no_warning_of_ours_becomes_an_error_under_w_error(bench, server, tmp_path):
    """``-W error`` (or ``filterwarnings = error``): a file handle left open by the reference images' progress
    line (a ResourceWarning) turned a PASS into an ERROR."""
    tasks = make_tasks(12)
    write_split(bench.path, "slow", tasks, bench.path / "unused")
    files = {f"/{t['task_id']}/001.png": png_bytes((i * 20, 9, 9)) for i, t in enumerate(tasks)}
    with SlowImages(files, delay=0.35) as images:
        result = bench.runpytest_subprocess(
            "-W", "error", "-p", "no:cacheprovider", "--tasks", "slow.json", "--images-base", images.url,
            "--repeats", "2", "--outputs", "out", "--model", "slow-a",
            "--judge", labels(bench.path / "r.json", models=("slow-a",), tasks=12, repeats=2), timeout=BOUND)
    assert "reference images of 12/12 tasks ready" in result.stdout.str()  # the line the leak came from
    result.assert_outcomes(passed=12, failed=12, errors=0)


# --------------------------------------------------------------------------- stopping


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_maxfail_stops_new_calls(bench, server, tmp_path, monkeypatch, workers):
    monkeypatch.setenv("REFUSE_ROUTE", "all")
    result = bench.runpytest(*args("--model", "slow-a", "--judge", labels(bench.path / "r.json"), "--concurrency", "4",
                                   "--repeats", "10", "-x", *workers))
    # pytest-xdist ends a -x run as "Interrupted: stopping after 1 failures" (exit 2); serial pytest exits 1
    assert result.ret == (pytest.ExitCode.INTERRUPTED if workers else pytest.ExitCode.TESTS_FAILED)
    bought = len(calls(tmp_path))
    # 60 candidates; the first failure comes after one call's time, when 4 are in flight
    assert bought <= 12, bought
    assert result.parseoutcomes()["failed"] >= 1


def test_a_failure_on_one_worker_stops_the_calls_of_the_others(bench, server, tmp_path, monkeypatch):
    # One repeat of two models on 20 tasks: items alternate slow-a, slow-b, so gw0 is dealt every slow-a
    # (refused at once) and gw1 every slow-b (slow, never failing). Only the controller's stop signal can
    # stop gw1, which holds its 20 items from the start.
    write_split(bench.path, "wide", make_tasks(20), bench.path / "images")
    monkeypatch.setenv("REFUSE_ROUTE", "route-a")
    # slow-b's calls take 3 s: however long a loaded machine takes to carry the stop from gw0 to gw1 (seconds
    # under -n 2 beside other tests), few of gw1's calls can end, and let another start, before it arrives
    server.delays = {"/route-a": 0.05, "/route-b": 3.0}
    write_labels(bench.path / "r.json", {(f"task-{t:02d}", m, 1): m == "slow-b" for t in range(20)
                                         for m in ("slow-a", "slow-b")})  # gw1's items all pass
    result = bench.runpytest("-p", "no:cacheprovider", "--tasks", "wide.json", "--images-base", "images",
                             "--repeats", "1", "--outputs", "out", "--model", "slow-a", "--model", "slow-b",
                             "--judge", "labels:r.json", "--concurrency", "4", "-x", "-n", "2")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    slow_b = [line for line in calls(tmp_path) if "slow-b" in line]
    assert len(slow_b) <= 8, len(slow_b)


def test_ctrl_c_stops_new_calls_saves_what_was_bought_and_the_rerun_buys_the_rest(bench, server, tmp_path):
    server.delay = 2.0
    command = [sys.executable, "-m", "pytest", *args("--model", "slow-a", "--judge", labels(bench.path / "r.json"),
                                                      "--concurrency", "3", "--repeats", "4")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(bench.path), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen(command, cwd=bench.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    deadline = time.monotonic() + BOUND
    while len(calls(tmp_path)) < 4 and time.monotonic() < deadline:  # the second wave is in flight
        time.sleep(0.05)
    before = len(calls(tmp_path))
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=BOUND)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    first = calls(tmp_path)
    # it stopped: at most the 3 calls that could start between the count above and the signal, no new wave
    # (a count, not the seconds it took: a loaded machine makes those long)
    assert len(first) <= before + 3, (before, len(first))
    saved = sorted(bench.path.glob("out/mini/slow-a/*/*.png"))
    assert len(saved) == len(first)  # every call that started was waited for and saved
    rerun = bench.runpytest(*args("--model", "slow-a", "--judge", labels(bench.path / "r.json")))
    rerun.assert_outcomes(passed=12, failed=12)
    bought = calls(tmp_path)
    assert len(bought) == 24 and len(set(bought)) == 24  # nothing bought twice


# --------------------------------------------------------------------------- adaptive


def status_of(bench) -> list[dict]:
    found = []
    for path in (Path(os.environ["HYPEEDIT_CACHE_DIR"]) / "runs").glob("*/status/*.json"):
        found.append(json.loads(path.read_text()))
    return found


def test_auto_concurrency_backs_off_when_the_provider_throttles(bench, server, tmp_path):
    # The first calls are held until the provider has throttled one: the adaptive level starts at 4, so a third
    # call comes while two are held, and gets its 429 however slow the machine (no race against the delay).
    server.delay, server.throttle_above["/route-a"] = 0.05, 2
    server.holds["/route-a"] = lambda: server.throttled >= 1
    result = bench.runpytest(*args("--model", "slow-a", "--judge", labels(bench.path / "r.json"),
                                   "--concurrency", "auto", "--rate-limit", "route-a=/8"))
    result.assert_outcomes(passed=12, failed=12)
    admissions = [admission for status in status_of(bench) for admission in status["routes"] if admission["route"] == "route-a"]
    assert admissions and admissions[0]["adaptive"] and admissions[0]["ceiling"] == 8
    assert not server.held_too_long, "no call was ever throttled"
    assert admissions[0]["throttled"] > 0
    # Halved at the 429 (4 -> 2), it grows back by one per level's worth of successes: the 23 candidates left
    # cannot bring it back to the ceiling (2 + 3 + ... + 7 = 27 successes), so below it means it backed off.
    assert admissions[0]["level"] < admissions[0]["ceiling"]
    result.stdout.fnmatch_lines(["*route-a */* (max 8, 429 x*"])


def test_fixed_concurrency_ignores_429s(bench, server, tmp_path):
    server.delay, server.throttle_above["/route-a"] = 0.15, 2
    result = bench.runpytest(*args("--model", "slow-a", "--judge", labels(bench.path / "r.json"),
                                   "--concurrency", "8", "--rate-limit", "route-a=/8"))
    result.assert_outcomes(passed=12, failed=12)
    admissions = [admission for status in status_of(bench) for admission in status["routes"] if admission["route"] == "route-a"]
    assert admissions and admissions[0]["level"] == 8 and not admissions[0]["adaptive"]


# --------------------------------------------------------------------------- the live line


def test_the_live_line_replaces_the_dots_and_is_silent_under_q(bench, server, tmp_path):
    judge = labels(bench.path / "r.json")
    shown = bench.runpytest(*args("--model", "slow-a", "--judge", judge, "--repeats", "2"))
    shown.stdout.fnmatch_lines(["hypeedit 12/12 done | in flight route-a 0/32 | $0.12 spent | in *"])
    assert "....." not in shown.stdout.str()
    shown.stdout.fnmatch_lines(["*6 failed, 6 passed*"])
    quiet = bench.runpytest(*args("--model", "slow-a", "--judge", judge, "--repeats", "2", "-q"))
    assert "hypeedit 12/12" not in quiet.stdout.str()


def test_bad_concurrency_is_a_usage_error(bench):
    result = bench.runpytest(*args("--model", "slow-a", "--concurrency", "0"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--concurrency 0: give a whole number >= 1 (e.g. 32), or auto*"])


def test_fair_shares_give_a_small_demand_all_it_wants_and_split_the_rest():
    from pytest_hypeedit.engine.pool import fair_shares

    assert fair_shares({"qwen": 4, "ark": 40, "openai": 40}, 64) == {"qwen": 4, "ark": 30, "openai": 30}
    assert fair_shares({"ark": 100}, 64) == {"ark": 64}
    assert fair_shares({"a": 10, "b": 10}, 64) == {"a": 10, "b": 10}
    assert fair_shares({"bfl": 8, "fal": 8}, 1) == {"bfl": 0, "fal": 0}  # nobody is owed the one slot


# --------------------------------------------------------------------------- xdist's internals, other plugins' order


def test_a_workers_queue_is_read_in_every_tested_xdist_shape():
    """3.7+ holds a worker's dealt items in a TestQueue (``lock()``), 3.6 in a stdlib queue.Queue: both are
    read without taking anything (reading 3.6's as nothing left one call in flight per worker)."""
    import queue

    import execnet
    import xdist.remote

    from pytest_hypeedit.glue.xdist_internals import _queued

    shapes = [queue.Queue()]
    if hasattr(xdist.remote, "TestQueue"):  # 3.7 and later (the suite also runs under 3.6: see pyproject)
        shapes.append(xdist.remote.TestQueue(execnet.gateway_base.get_execmodel("thread")))
    for torun in shapes:
        for index in (4, 7, 9):
            torun.put(index)
        assert _queued(torun) == [4, 7, 9]
        assert _queued(torun) == [4, 7, 9], "reading took items from the queue"
        assert torun.get() == 4


@pytest.mark.parametrize("version, tested", [("3.5.0", False), ("3.6.1", True), ("3.8.0", True),
                                             ("3.9.0", False), ("4.0.0.dev1", False)])
def test_an_untested_xdist_falls_back_to_its_own_behaviour_and_says_so(monkeypatch, version, tested):
    import xdist

    from pytest_hypeedit.glue import xdist_internals

    monkeypatch.setattr(xdist, "__version__", version)
    assert xdist_internals.supported() is tested
    line = xdist_internals.unsupported()
    assert (line is None) is tested
    if not tested:
        assert f"pytest-xdist {version[:3]}" in line and ">=3.6,<3.9" in line
        assert xdist_internals.deal_all_scheduler(None, None) is None


def test_the_pyproject_pins_the_xdist_versions_the_adapter_was_tested_with():
    from pytest_hypeedit.glue.xdist_internals import TESTED

    text = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    low, high = (".".join(map(str, v)) for v in TESTED)
    assert f'"pytest-xdist>={low},<{high}"' in text


REVERSER = """
import pytest

class Reverser:
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items):
        items.reverse()  # what pytest-randomly or pytest-random-order do: a plugin's own order

def pytest_configure(config):
    # registered after every plugin (as an installed plugin may be): among the tryfirst ones, it goes first
    config.pluginmanager.register(Reverser(), "reverser-late")
"""


def test_a_plugin_that_reorders_items_is_obeyed_and_the_pool_buys_in_its_order(bench, server, tmp_path):
    """pytest-randomly printed a seed and never shuffled: the benchmark's items replaced its order afterwards."""
    server.delay = 0.02
    bench.makepyfile(reverser=REVERSER)
    bench.syspathinsert()
    result = bench.runpytest(*args("--model", "slow-a", "--judge", labels(bench.path / "r.json"), "--concurrency", "1",
                                   "--repeats", "1", "-v", "-p", "reverser"))
    result.assert_outcomes(passed=0, failed=6)
    ran = [line.split()[0] for line in result.stdout.lines if line.startswith("hypeedit::mini::")]
    assert ran == [f"hypeedit::mini::task-{t:02d}[slow-a-r001]" for t in reversed(range(6))], ran
    planned = [f"task-{t:02d} slow-a 1" for t in reversed(range(6))]
    # one swap is the pool's own: pytest asking for the first item before the dispatcher reached it reads that
    # item's disk on its own thread, and meanwhile the dispatcher may start the next (seen under -n 2 at load 5)
    assert calls(tmp_path) in (planned, [planned[1], planned[0], *planned[2:]])


# --------------------------------------------------------------------------- the engine alone: states, counts, slots


class FakeRunner:
    """The runner's side of the pool in memory: plans, steps and records, no disk and no network.  Each step
    asks the pool for its broken invariants while it runs (``breaches``), and can be made to wait (``gate``)."""

    def __init__(self, *, on_disk=(), fail_plan=(), fail_finish=(), fail_step=(), verdicts=True):
        from types import SimpleNamespace

        self.judge = SimpleNamespace(routes=("judge-route",) if verdicts else ())
        self.on_disk, self.fail_plan, self.fail_finish = set(on_disk), set(fail_plan), set(fail_finish)
        self.fail_step = set(fail_step)  # (kind, key): the step raises (a bug the pool shows on the item)
        self.carried: list[tuple] = []  # (kind, routes of the slots the step carried, all of them held)
        self.finished: list[tuple] = []
        self.pool = None
        self.run_id = "fake-run"
        self.steps: list[tuple[str, tuple]] = []
        self.breaches: list[str] = []
        self.admission = threading.Event()
        self.admission.set()
        self.lock = threading.Lock()

    def plan(self, task, spec, repeat):
        from pytest_hypeedit.engine.records import Record
        from pytest_hypeedit.engine.runner import Plan

        key = (task.task_id, spec.name, repeat)
        if key in self.fail_plan:
            raise RuntimeError(f"cannot plan {key}")
        record = Record(task.split, spec.name, task.task_id, repeat)
        fresh = key not in self.on_disk
        if not fresh:
            record.outcome = "pass"
        return Plan(task, spec, repeat, record, None, needs_generation=fresh)

    def _step(self, kind, plan):
        self.admission.wait(HOLD_MAX)  # a bound, not a gap: a step let go early beside busy loops broke the counts
        key = (plan.task.task_id, plan.spec.name, plan.repeat)
        with self.lock:
            self.steps.append((kind, key))
            self.breaches += self.pool.breaches()
            self.carried.append((kind, tuple(slot.route for slot in plan.slots),
                                 all(not slot.released for slot in plan.slots)))
        if (kind, key) in self.fail_step:
            raise RuntimeError(f"a bug in the {kind} step of {key}")

    def generate_step(self, plan):
        self._step("generate", plan)
        plan.needs_generation, plan.needs_verdict = False, bool(self.judge.routes)
        return plan

    def judge_step(self, plan):
        self._step("judge", plan)
        plan.record.outcome = "pass" if plan.repeat % 2 else "fail"
        return plan.record

    def pays_to_finish(self, plan):
        return False

    def finish(self, plan):
        key = (plan.task.task_id, plan.spec.name, plan.repeat)
        self.finished.append(key)
        if key in self.fail_finish:
            raise OSError(f"cannot write the record of {key}")
        if plan.record.outcome is None:
            plan.record.outcome = "pass"
        return plan.record

    def calls_in_flight(self):
        return 0, 0, 0.0


def engine_pool(tmp_path, runner, *, concurrency=3, models=("m-a", "m-b"), tasks=4, repeats=2, inflight=None,
                ahead=None):
    """A pool over ``runner``; ``inflight``: each route also has a cross-process limiter with that many slots;
    ``ahead``: --sequential's reach past the item pytest asked for."""
    from pytest_hypeedit.engine.limits import RouteLimiter, SlotSet
    from pytest_hypeedit.engine.pool import CandidatePool
    from pytest_hypeedit.engine.routes import RouteAdmission
    from pytest_hypeedit.registry import ModelSpec
    from pytest_hypeedit.tasks import Task

    admissions: dict[str, RouteAdmission] = {}

    def admission(route):
        if route not in admissions:
            limiter = RouteLimiter(tmp_path / "limits", route, None, inflight) if inflight else None
            admissions[route] = RouteAdmission(route, limiter, ceiling=concurrency)
        return admissions[route]

    specs = [ModelSpec(name, f"route-{name}", name, 0.01) for name in models]
    entries = [(Task(f"task-{t}", ("001.png",), ("edit",), "Edit.", 64, 64, "mini"), spec, r)
               for t in range(tasks) for spec in specs for r in range(1, repeats + 1)]
    pool = CandidatePool(runner, concurrency=concurrency, admission_for=lambda spec: admission(spec.route),
                         judge_admissions=lambda: [admission(route) for route in runner.judge.routes],
                         slots=SlotSet(tmp_path / "slots", "candidates", concurrency), source=lambda: entries,
                         ahead=ahead)
    runner.pool = pool
    return pool, entries


def ask_all(pool, entries, timeout=HOLD_MAX):
    """Every entry's outcome, as pytest asks (in order, on one thread); a hang fails instead of waiting."""
    outcomes = []

    def ask():
        for entry in entries:
            try:
                outcomes.append(pool.result(*entry))
            except Exception as exc:  # noqa: BLE001 - the test looks at what came back
                outcomes.append(exc)
    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    asker.join(timeout)
    assert not asker.is_alive(), f"the pool hung after {len(outcomes)} of {len(entries)} outcomes"
    return outcomes


def test_the_pools_counts_hold_at_every_step_and_every_slot_is_back_at_rest(tmp_path, monkeypatch):
    monkeypatch.setenv("HYPEEDIT_DEBUG_INVARIANTS", "1")
    runner = FakeRunner()
    pool, entries = engine_pool(tmp_path, runner)
    pool.start()
    outcomes = ask_all(pool, entries)
    assert pool.shutdown() == 0
    assert all(getattr(o, "outcome", None) in ("pass", "fail") for o in outcomes), outcomes
    assert runner.breaches == []
    assert pool.at_rest() == [], "a slot was not given back"
    # order, from the pool's own steps: each candidate generated once, then judged once
    generated = [key for kind, key in runner.steps if kind == "generate"]
    judged = [key for kind, key in runner.steps if kind == "judge"]
    assert sorted(generated) == sorted(judged) and len(set(generated)) == len(entries)
    for key in judged:
        assert runner.steps.index(("generate", key)) < runner.steps.index(("judge", key))


def test_a_pool_that_keeps_a_slot_is_caught(tmp_path, monkeypatch):
    """The check the test above relies on: a candidate slot kept after its step (the planted bug of a worker
    that never gives it back) is reported at rest, and a count gone wrong raises in debug mode."""
    from pytest_hypeedit.engine.dispatch import Dispatcher

    monkeypatch.setenv("HYPEEDIT_DEBUG_INVARIANTS", "1")
    monkeypatch.setattr(Dispatcher, "_release", staticmethod(lambda taken: None))  # nothing given back
    runner = FakeRunner(verdicts=False)
    pool, entries = engine_pool(tmp_path, runner, concurrency=8, tasks=1, repeats=1)
    pool.start()
    ask_all(pool, entries)
    pool.shutdown()
    left = pool.at_rest()
    assert any("candidate slots not given back" in line for line in left), left

    board = pool.board
    with board.lock:
        board.running_by_route["route-m-a"] = board.running_by_route.get("route-m-a", 0) + 1  # a count that no step holds
        with pytest.raises(AssertionError, match="does not sum"):
            board.check()
        board.running_by_route["route-m-a"] -= 1


@pytest.fixture
def slot_ledger(monkeypatch):
    """Every in-flight slot made while the test runs, and how often each was given back."""
    from collections import Counter

    from pytest_hypeedit.engine.limits import InFlightSlot

    made: list = []
    given: Counter = Counter()
    init, release = InFlightSlot.__init__, InFlightSlot.release

    def counted_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    def counted_release(self):
        given[id(self)] += 1
        release(self)

    monkeypatch.setattr(InFlightSlot, "__init__", counted_init)
    monkeypatch.setattr(InFlightSlot, "release", counted_release)
    return made, given


def given_back_once(made, given) -> list[str]:
    return [f"{slot!r} given back {given[id(slot)]} times" for slot in made if given[id(slot)] != 1]


def test_every_slot_is_given_back_exactly_once_whatever_way_its_step_ends(tmp_path, monkeypatch, slot_ledger):
    """A step that buys, one that judges, one that raises (a bug: the item shows it), in both kinds of step; each
    step carries its route's slot, held while it runs (``Plan.slots``), and every slot (the route's, the
    limiter's file under it, the candidate slot) is given back once, never twice."""
    monkeypatch.setenv("HYPEEDIT_DEBUG_INVARIANTS", "1")
    made, given = slot_ledger
    runner = FakeRunner(fail_step={("generate", ("task-0", "m-a", 1)), ("judge", ("task-1", "m-b", 2))})
    pool, entries = engine_pool(tmp_path, runner, inflight=2)
    pool.start()
    outcomes = ask_all(pool, entries)
    assert pool.shutdown() == 0
    assert sum(isinstance(o, RuntimeError) for o in outcomes) == 2, outcomes
    assert pool.at_rest() == [], "a slot was not given back"
    assert made and given_back_once(made, given) == []
    generations = [routes for kind, routes, _ in runner.carried if kind == "generate"]
    assert all(len(routes) == 1 and routes[0].startswith("route-m-") for routes in generations), generations
    assert all(routes == ("judge-route",) for kind, routes, _ in runner.carried if kind == "judge")
    assert all(held for _, _, held in runner.carried), "a step ran with a slot already given back"


def test_every_slot_is_given_back_exactly_once_when_the_run_stops_midway(tmp_path, slot_ledger):
    """Stopped while steps are running: the running steps end and give theirs back, the others never start."""
    made, given = slot_ledger
    runner = FakeRunner()
    runner.admission.clear()  # the first steps wait inside their call
    pool, entries = engine_pool(tmp_path, runner, inflight=2)
    pool.start()
    outcomes: list = []
    asker = threading.Thread(target=lambda: outcomes.extend(ask_all(pool, entries)), daemon=True)
    asker.start()
    board = pool.board
    with board.changed:  # the pool's own event: its steps are running (no wall-clock gap)
        assert board.changed.wait_for(lambda: board.running == board.concurrency, timeout=HOLD_MAX)
    pool.stop("the test stops the run")
    runner.admission.set()
    asker.join(HOLD_MAX)
    assert not asker.is_alive()
    pool.shutdown()
    assert any(type(o).__name__ == "NotStarted" for o in outcomes), outcomes
    assert pool.at_rest() == [], "a slot was not given back"
    assert made and given_back_once(made, given) == []


def test_an_outcome_asked_again_is_the_same_and_never_waits(tmp_path):
    """Whatever way a job was settled (bought by the pool, found on disk by the pool or by the main thread, a
    triage that failed), asking again returns the same record or raises the same error, at once."""
    from pytest_hypeedit.engine.pool import CandidatePool  # noqa: F401 - the module under test

    runner = FakeRunner(on_disk={("task-0", "m-a", 1), ("task-2", "m-b", 2), ("task-3", "m-b", 1)},
                        fail_plan={("task-1", "m-a", 2)}, fail_finish={("task-3", "m-b", 1)})
    pool, entries = engine_pool(tmp_path, runner)
    by_main = [e for e in entries if (e[0].task_id, e[1].name, e[2]) in (("task-0", "m-a", 1), ("task-1", "m-a", 2))]
    early = ask_all(pool, by_main)  # before the pool starts: the main thread triages these itself
    pool.start()
    first = ask_all(pool, entries)
    second = ask_all(pool, entries)
    pool.shutdown()
    for a, b in zip(first, second):
        assert a is b, (a, b)
    assert [first[entries.index(e)] for e in by_main] == early
    assert sum(isinstance(o, RuntimeError) for o in first) == 1 and sum(isinstance(o, OSError) for o in first) == 1
    assert len([kind for kind, _ in runner.steps if kind == "generate"]) == len(entries) - 4
    assert sorted(runner.finished) == sorted(set(runner.finished)), "a record was finished twice"


def test_a_move_the_table_does_not_allow_raises():
    from pytest_hypeedit.engine.jobs import DONE, MOVES, READY, RUNNING, IllegalTransition, Job, JobState

    assert set(MOVES) == set(JobState)
    from pytest_hypeedit.registry import ModelSpec
    from pytest_hypeedit.tasks import Task

    job = Job(Task("task-0", ("001.png",), ("edit",), "Edit.", 64, 64, "mini"), ModelSpec("m", "r", "m", 0.0), 1, 0)
    job.move(JobState.MAIN)
    job.move(READY)
    job.move(RUNNING)
    job.settle(record=None)
    assert job.state is DONE and job.settled
    with pytest.raises(IllegalTransition):
        job.move(RUNNING)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_stop_during_a_routes_admission_starts_no_step(tmp_path, monkeypatch, concurrency):
    """Slots are taken without the pool's lock, so a stop can land between the checks and taking the job:
    no step may be taken once the run is stopping (before the check at the moment of taking, a decided
    --sequential run bought a dozen candidates past its decision).  concurrency 1: the next step is mostly
    taken by the thread whose step just ended; 4: by the dispatcher."""
    from pytest_hypeedit.engine.jobs import Job, JobState
    from pytest_hypeedit.engine.routes import RouteAdmission

    runner = FakeRunner(verdicts=False)
    pool, _ = engine_pool(tmp_path, runner, concurrency=concurrency, models=("m-a",), tasks=6)
    admitted, taken_after_stop = [0], []
    real_enter, real_move = RouteAdmission.try_enter, Job.move

    def try_enter(admission):
        slot = real_enter(admission)
        if slot is not None:
            admitted[0] += 1
            if admitted[0] == 3:
                pool.stop("sequential: decided")
        return slot

    def move(job, to):
        if to == JobState.RUNNING and pool.stopping is not None:
            taken_after_stop.append(job.label)
        real_move(job, to)

    monkeypatch.setattr(RouteAdmission, "try_enter", try_enter)
    monkeypatch.setattr(Job, "move", move)
    pool.start()
    _wait_for(lambda: admitted[0] >= 3 and pool.board.running == 0)
    pool.shutdown()
    assert admitted[0] >= 3, "the pool never admitted a third step"
    assert taken_after_stop == [], "steps taken after the run stopped"
    assert pool.at_rest() == [], "the slots of the step that did not start were not given back"


def test_no_generation_starts_past_the_reach_of_the_item_pytest_asked_for(tmp_path):
    """--sequential's ``ahead``: with nothing asked, generations 0 to ahead-1 only; each item asked moves the
    reach by one, however many threads race for the next step."""
    runner = FakeRunner(verdicts=False)
    pool, entries = engine_pool(tmp_path, runner, concurrency=8, models=("m-a", "m-b"), tasks=10, ahead=3)
    pool.start()
    _wait_for(lambda: len(runner.steps) >= 3)
    time.sleep(0.2)  # a generation past the reach would have started by now
    assert len(runner.steps) == 3, runner.steps
    ask_all(pool, entries[:5])  # asked for plan position 4: the reach ends before position 7
    _wait_for(lambda: len(runner.steps) >= 7)
    time.sleep(0.2)
    assert len(runner.steps) == 7, runner.steps
    pool.shutdown()


class FinishRecorder(FakeRunner):
    """Every candidate on disk (nothing to pay): records which thread finished each, and can hold finishes."""

    def __init__(self, entries_on_disk):
        super().__init__(on_disk=entries_on_disk)
        self.threads: dict[tuple, str] = {}
        self.hold = threading.Event()
        self.hold.set()

    def finish(self, plan):
        self.hold.wait(HOLD_MAX)  # a bound, not a gap (10 s let a held finisher write beside busy loops)
        record = super().finish(plan)
        self.threads[(plan.task.task_id, plan.spec.name, plan.repeat)] = threading.current_thread().name
        return record


def _all_on_disk(tasks, models=("m-a", "m-b"), repeats=2):
    return {(f"task-{t}", m, r) for t in range(tasks) for m in models for r in range(1, repeats + 1)}


def test_records_with_nothing_to_pay_are_written_by_finisher_threads_each_once(tmp_path):
    """A replay's writes overlap: the finishers write records ahead of pytest, each exactly once, and the
    outcomes pytest gets are the same records."""
    runner = FinishRecorder(_all_on_disk(30))
    pool, entries = engine_pool(tmp_path, runner, tasks=30)
    pool.start()
    # pytest is busy with something else at first (its collection, an item's report): nothing asked yet, so
    # only a finisher can write a record (asking at once, a test thread with nothing else to do may win
    # every race on a loaded machine)
    _wait_for(lambda: len(runner.threads) >= 8)
    outcomes = ask_all(pool, entries)
    pool.shutdown()
    assert all(not isinstance(o, Exception) for o in outcomes), outcomes
    assert sorted(runner.finished) == sorted(set(runner.finished)) and len(runner.finished) == len(entries)
    by_finishers = [key for key, name in runner.threads.items() if name.startswith("hypeedit-finish-")]
    assert by_finishers, f"every record was written by {set(runner.threads.values())}"


def _wait_for(condition, seconds=HOLD_MAX):
    """Until ``condition`` holds (the test asserts it next); HOLD_MAX is a bound for a hang, never a gap: a 10 s
    wait ran out beside six busy loops, and the state then asserted was read before it was reached."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_finishers_stay_within_the_lookahead_of_what_pytest_asked(tmp_path):
    from pytest_hypeedit.engine.finishing import LOOKAHEAD

    tasks = (LOOKAHEAD + 40) // 4 + 1
    runner = FinishRecorder(_all_on_disk(tasks))
    pool, entries = engine_pool(tmp_path, runner, tasks=tasks)
    pool.start()
    _wait_for(lambda: len(runner.finished) >= LOOKAHEAD + 1)
    time.sleep(0.2)  # a finisher past the lookahead would have written more by now
    assert len(runner.finished) == LOOKAHEAD + 1, "pytest asked for nothing yet: plan positions 0 to LOOKAHEAD only"
    ask_all(pool, entries[:10])
    _wait_for(lambda: len(runner.finished) >= LOOKAHEAD + 10)
    time.sleep(0.2)
    assert len(runner.finished) == LOOKAHEAD + 10, "the lookahead follows the items pytest asked for"
    pool.shutdown()


def test_finishers_start_no_record_once_the_run_is_stopping(tmp_path):
    from pytest_hypeedit.engine.finishing import FINISHERS

    runner = FinishRecorder(_all_on_disk(30))
    runner.hold.clear()  # a slow disk: every finisher is held in its first write
    pool, entries = engine_pool(tmp_path, runner, tasks=30)
    pool.start()
    _wait_for(lambda: len(pool.finishers.threads) == FINISHERS)
    time.sleep(0.2)
    pool.stop("the run is stopping (-x)")
    runner.hold.set()
    time.sleep(0.3)
    pool.shutdown()
    assert len(runner.finished) == FINISHERS, f"{len(runner.finished)} records written after the stop"


def test_idle_finishers_sleep_through_the_pools_other_events(tmp_path):
    """The finishers wait on a condition of their own: an event of the pool that is not theirs (a step done, a
    job triaged, pytest asking) wakes the dispatcher, not four finishers each time.  Woken by every one of
    them, a 7,000-candidate replay spent a quarter of its CPU in the threads' wake-ups."""
    from pytest_hypeedit.engine.finishing import FINISHERS, IDLE, LOOKAHEAD

    tasks = (LOOKAHEAD + 40) // 4 + 1
    runner = FinishRecorder(_all_on_disk(tasks))
    pool, entries = engine_pool(tmp_path, runner, tasks=tasks)
    pool.start()
    _wait_for(lambda: len(runner.finished) >= LOOKAHEAD + 1 and len(pool.finishers.threads) == FINISHERS)
    time.sleep(0.1)  # every finisher back in its wait: nothing more within the lookahead
    looks = []
    real = pool.finishers.next_to_finish
    pool.finishers.next_to_finish = lambda: looks.append(1) or real()
    started = time.monotonic()
    for _ in range(200):  # events of the pool that are not the finishers'
        with pool.board.changed:
            pool.board.changed.notify_all()
        time.sleep(0.0005)
    idle_wakeups = FINISHERS * (int((time.monotonic() - started) / IDLE) + 2)  # each wakes itself every IDLE
    assert len(looks) <= idle_wakeups, f"{len(looks)} looks for work after 200 events that were not the finishers'"
    pool.shutdown()


class SlowTriage(FinishRecorder):
    """Every candidate on disk, each one's finish may call a paid judge (--judge-stability: no finisher takes
    it), and the dispatcher's reading of the disk is slow: pytest asks while a job is still being triaged."""

    def pays_to_finish(self, plan):
        return True

    def plan(self, task, spec, repeat):
        time.sleep(0.05)
        return super().plan(task, spec, repeat)


def test_a_job_only_the_main_thread_may_finish_is_finished_when_its_triage_ends_while_pytest_waits(tmp_path):
    runner = SlowTriage(_all_on_disk(3))
    pool, entries = engine_pool(tmp_path, runner, tasks=3)
    pool.start()
    outcomes = ask_all(pool, entries, timeout=30)  # each triage takes 0.05 s: a hang, not a slow machine
    pool.shutdown()
    assert all(not isinstance(o, Exception) for o in outcomes), outcomes
    assert not any(name.startswith("hypeedit-finish-") for name in runner.threads.values())
    assert len(runner.finished) == len(entries)


def test_the_live_spent_is_what_this_process_bought(tmp_path):
    """The live line's figure (PoolState.spent) counts every paid call the pool's steps sent: a judge call billed
    and then unreadable too, not only the verdicts and images that came of them."""
    from fake_models import FakeProvider

    from pytest_hypeedit.engine.means import Means
    from pytest_hypeedit.engine.runner import Runner
    from pytest_hypeedit.engine.store import Store
    from pytest_hypeedit.errors import JudgeError
    from pytest_hypeedit.judges.base import Judge, Verdict

    class Png(FakeProvider):
        image, log = "png", None

    class HalfRead(Judge):
        name, routes, needs_images = "halfread", ("judge-route",), False

        def __init__(self):
            self.calls, self.billed, self.lock = 0, 0.0, threading.Lock()

        def worst_case_cost(self, request):
            return 0.003

        def judge(self, request):
            with self.lock:
                self.calls, self.billed = self.calls + 1, self.billed + 0.003
                unreadable = self.calls % 2
            if unreadable:
                error = JudgeError("the reply could not be read as a verdict, twice", retryable=True)
                error.cost = 0.003
                raise error
            return Verdict(True, "fine", self.id, cost=0.003)

    judge = HalfRead()
    runner = Runner(Means(store=Store(tmp_path / "out", claims_dir=tmp_path / "claims"), make_provider=Png,
                          make_judge=lambda: judge, references=lambda task: [], signals=False))
    pool, entries = engine_pool(tmp_path, runner, tasks=2, repeats=2)
    pool.start()
    outcomes = ask_all(pool, entries)
    pool.shutdown()
    assert sum(getattr(o, "outcome", None) == "error" for o in outcomes) == len(entries) // 2
    assert pool.state().spent == pytest.approx(len(entries) * 0.01 + judge.billed)


class BrokenCount(RuntimeError):
    """A bug planted in the pool's own bookkeeping (its count of a settled job), not in a step the runner runs."""


def break_the_pools_count(pool, monkeypatch, on_threads: str):
    """The pool's count fails on the threads whose name starts with ``on_threads`` (elsewhere it counts): each
    kind of thread is tested alone, not rescued by another that met the bug first."""
    count = pool.board.count

    def broken(record):
        if threading.current_thread().name.startswith(on_threads):
            raise BrokenCount("a planted bug in the pool's count")
        count(record)

    monkeypatch.setattr(pool.board, "count", broken)


#: the threads the planted bug ends say so on stderr, as a bug should; here that is expected
THREAD_DIES = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


def failed_by_the_bug(outcomes) -> bool:
    """Every item got its outcome: the planted error, or the record of a job settled just before the bug struck
    (the record is true; what failed was the pool's count of it)."""
    from pytest_hypeedit.engine.records import Record

    return any(isinstance(o, BrokenCount) for o in outcomes) and all(isinstance(o, (BrokenCount, Record))
                                                                      for o in outcomes)


@THREAD_DIES
def test_a_bug_in_a_call_threads_bookkeeping_fails_the_items_instead_of_hanging(tmp_path, monkeypatch):
    """A step ended, then the pool's own code failed on the call thread (not the runner's step): the thread dies,
    and the items waiting for it get the error rather than waiting forever (as they do when the dispatcher fails)."""
    runner = FakeRunner()
    pool, entries = engine_pool(tmp_path, runner)
    break_the_pools_count(pool, monkeypatch, "hypeedit-call-")
    pool.start()
    outcomes = ask_all(pool, entries, timeout=30)
    pool.grace = 0.5  # the broken count may leave a step counted as running: shutdown would wait out the 10 s grace
    pool.shutdown()
    assert len(outcomes) == len(entries) and failed_by_the_bug(outcomes), [o for o in outcomes if not isinstance(o, BrokenCount) and not hasattr(o, "outcome")]


@THREAD_DIES
def test_a_bug_in_a_finishers_bookkeeping_fails_the_items_instead_of_hanging(tmp_path, monkeypatch):
    runner = FinishRecorder(_all_on_disk(30))
    pool, entries = engine_pool(tmp_path, runner, tasks=30)
    break_the_pools_count(pool, monkeypatch, "hypeedit-finish-")
    pool.start()
    _wait_for(lambda: runner.threads)  # a finisher, not pytest's thread, met the bug first
    outcomes = ask_all(pool, entries, timeout=30)
    pool.shutdown()
    assert len(outcomes) == len(entries) and failed_by_the_bug(outcomes), [o for o in outcomes if not isinstance(o, BrokenCount) and not hasattr(o, "outcome")]


def test_a_process_takes_no_more_candidate_slots_than_its_share_while_another_has_work(tmp_path):
    """Under xdist each worker is dealt its items up front: a worker that took more slots than its part finished
    first and the other ran on alone with fewer calls in flight (bench_providers.py -n 2: 1.35x the ideal time).
    8 candidates here, 24 in another process of the run, 8 slots: this pool's share is 2 until the other is
    done, then all 8."""
    from pytest_hypeedit.engine.limits import SlotSet

    runner = FakeRunner(verdicts=False)
    runner.admission.clear()  # every step waits: the steps running are the slots taken
    pool, entries = engine_pool(tmp_path, runner, concurrency=8, models=("m-a",), tasks=4, repeats=2)
    other = SlotSet(tmp_path / "slots", "candidates", 8)
    other.publish_demand(24)
    pool.start()
    _wait_for(lambda: pool.board.running >= 2)
    time.sleep(0.3)  # a step past the share would have started by now (the dispatcher polls every 0.2 s)
    assert pool.board.running == 2
    other.withdraw_demand()
    _wait_for(lambda: pool.board.running >= 8)
    assert pool.board.running == 8
    runner.admission.set()
    assert all(not isinstance(outcome, Exception) for outcome in ask_all(pool, entries))
    pool.shutdown()
    assert not list((tmp_path / "slots").glob("candidates.demand.*"))  # both withdrawn: no count outlives its run
