"""The route limiter holds across processes: tested with real processes against a loopback server."""

import json
import threading
import time

import pytest
from forked import killed_when_done, run_forked
from providers_fakes import FakeServer, Reply

from pytest_hypeedit.engine.limits import RouteLimiter, limiter_for
from pytest_hypeedit.transport.http import RetryPolicy, make_http_client

#: The longest anything here waits for an event (a bound that fails, never a gap the test relies on): a loaded
#: machine makes the tests slower, never wrong.
BOUND = 120.0


class FakeClock:
    def __init__(self):
        self.now = 1000.0
        self.slept = []

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds
        if sum(self.slept) > 3600:  # a limiter that never admits fails the test instead of hanging it
            raise AssertionError(f"the limiter kept waiting: {len(self.slept)} sleeps, {sum(self.slept):.0f} s")

    def limiter(self, state_dir, rpm, *, route: str = "r", inflight=None) -> RouteLimiter:
        """A limiter of ``rpm`` starts a minute (no margin) that reads this clock and sleeps on it."""
        return RouteLimiter(state_dir, route, rpm=rpm, inflight=inflight, period=60, margin=0.0,
                            clock=lambda: self.now, sleep=self.sleep)


def test_sliding_window_admits_capacity_then_waits_for_the_oldest(tmp_path):
    clock = FakeClock()
    limiter = clock.limiter(tmp_path, 3)
    for _ in range(3):
        with limiter.slot():
            clock.now += 1
    assert clock.slept == []
    with limiter.slot():
        pass
    # The first start was at 1000; the 4th may start at 1060, i.e. 57 s after 1003.
    assert clock.slept and abs(sum(clock.slept) - 57) < 0.01


def test_fractional_rpm_spreads_one_request_over_the_longer_window(tmp_path):
    clock = FakeClock()
    limiter = clock.limiter(tmp_path, 0.5)
    for _ in range(2):
        with limiter.slot():
            pass
    assert abs(sum(clock.slept) - 120) < 0.01


def test_no_limits_means_no_limiter(tmp_path):
    assert limiter_for(tmp_path, "identity", None, None) is None
    with pytest.raises(ValueError):
        RouteLimiter(tmp_path, "r", rpm=0, inflight=None)


def test_corrupt_state_file_starts_afresh(tmp_path):
    clock = FakeClock()
    limiter = clock.limiter(tmp_path, 2, route="r/x", inflight=1)
    state = tmp_path / "r_x.rpm.json"  # the route's name made safe for a file name
    state.write_text("{torn")
    for _ in range(2):  # a torn file counts as no start: the whole window is free
        with limiter.slot():
            clock.now += 1
    assert clock.slept == []
    assert json.loads(state.read_text()) == [1000.0, 1001.0]  # rewritten whole
    with limiter.slot():  # and it is used again: the 3rd start waits for the 1st to leave the window
        pass
    assert sum(clock.slept) == pytest.approx(58, abs=0.01)


# --------------------------------------------------------------------------- across processes

class LoggedLimiter(RouteLimiter):
    """Appends every start it records (its own event, written under the route's lock) to ``log``."""

    def __init__(self, *args, log, **kwargs):
        super().__init__(*args, **kwargs)
        self.log = log

    def _write_starts(self, starts):
        super()._write_starts(starts)
        with open(self.log, "a") as out:
            out.write(f"{starts[-1]!r}\n")


def _hammer(url, state_dir, rpm, period, count, log):
    limiter = LoggedLimiter(state_dir, "loop", rpm=rpm, inflight=None, period=period, margin=0.05, log=log)
    with make_http_client("loop", limiter=limiter, policy=RetryPolicy(max_attempts=1)) as client:
        for _ in range(count):
            client.get(url)


def max_in_window(times, window):
    times, best, start = sorted(times), 0, 0
    for end, t in enumerate(times):
        while t - times[start] >= window:
            start += 1
        best = max(best, end - start + 1)
    return best


def test_rpm_holds_across_processes(tmp_path):
    # rpm=120 over a 60 s minute, scaled down: the loopback server on a shared
    # CI core cannot take 120 requests per second, so the window is the binding limit here.
    # Counted on the limiter's own starts (what it let through, written under its lock), not on the server's
    # arrival times, which a loaded machine shifts by more than any margin: the test holds under load.
    rpm, period, each = 40, 1.0, 25
    log = tmp_path / "starts.log"
    with FakeServer() as server:
        server.route("GET", "/count", lambda seen: Reply(200, {"ok": True}))
        codes = run_forked(_hammer, (f"{server.url}/count", tmp_path, rpm, period, each, log), 4, BOUND)
        arrived = len(server.seen("/count"))
    assert codes == [0] * 4
    starts = [float(line) for line in log.read_text().split()]
    assert len(starts) == arrived == 4 * each  # every request took a token, and none starved (all went)
    assert max_in_window(starts, period) <= rpm


def _hold_slots(url, state_dir, inflight, count):
    limiter = RouteLimiter(state_dir, "slow", rpm=None, inflight=inflight)
    with make_http_client("slow", limiter=limiter, policy=RetryPolicy(max_attempts=1)) as client:
        threads = [threading.Thread(target=lambda: [client.get(url) for _ in range(count)]) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def test_inflight_holds_across_processes(tmp_path):
    active, peak, changed, never = [0], [0], threading.Condition(), []

    def slow(seen):
        with changed:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            changed.notify_all()
            # held until the limit was reached once (a count, not a race against the clock on a loaded machine)
            if not changed.wait_for(lambda: peak[0] >= 3, timeout=BOUND):
                never.append(seen.path)
        time.sleep(0.02)  # a moment in which a fourth call, past the limit, would show
        with changed:
            active[0] -= 1
        return Reply(200, {"ok": True})

    with FakeServer() as server:
        server.route("GET", "/slow", slow)
        codes = run_forked(_hold_slots, (f"{server.url}/slow", tmp_path, 3, 4), 3, BOUND)
        total = len(server.seen("/slow"))
    assert codes == [0] * 3
    assert total == 3 * 3 * 4
    assert not never, "3 calls were never in flight at once"
    assert peak[0] == 3  # never more than the limit, and the limit is used


def _take_slot_and_die(state_dir, ready):
    limiter = RouteLimiter(state_dir, "crash", rpm=None, inflight=1)
    with limiter.slot():
        ready.set()
        time.sleep(60)


def test_a_killed_worker_frees_its_slot(tmp_path):
    taken = threading.Event()
    with killed_when_done(_take_slot_and_die, tmp_path, bound=BOUND):
        limiter = RouteLimiter(tmp_path, "crash", rpm=None, inflight=1)
        assert limiter.try_call_slot() is None  # held by the other process (asked, not waited for)

        def take():
            with limiter.slot():
                taken.set()
        threading.Thread(target=take, daemon=True).start()
    assert taken.wait(BOUND), "the killed process's slot was never freed"


def test_a_download_of_a_result_takes_no_request_per_minute_token(tmp_path):
    """A result file comes from storage, not the provider's API: only API requests count toward its RPM."""
    limiter = RouteLimiter(tmp_path, "ark", rpm=2, inflight=None, period=60, margin=0.0)
    with FakeServer() as server:
        server.route("GET", "/files/1.png", lambda seen: Reply(200, b"png"))
        server.route("POST", "/api", lambda seen: Reply(200, {"ok": True}))
        with make_http_client("ark", limiter=limiter, policy=RetryPolicy(max_attempts=1)) as client:
            from pytest_hypeedit.transport.http import send

            send(client, "POST", f"{server.url}/api", route="ark", model="m")
            for _ in range(3):
                send(client, "GET", f"{server.url}/files/1.png", route="ark", model="m", download=True)
    assert len(json.loads((tmp_path / "ark.rpm.json").read_text())) == 1
    assert limiter.rpm_wait() == 0  # one of two tokens used: the downloads took none


# --------------------------------------------------------------------------- the slots' shares between processes


def test_each_process_may_hold_slots_in_proportion_to_what_it_has_left(tmp_path):
    """Two processes of one run (two SlotSets on one folder): 10 and 30 candidates left of 8 slots give 2 and 6
    (each at least one, rounded up); alone, or once the other has nothing left, a process may hold every slot."""
    from pytest_hypeedit.engine.limits import SlotSet

    clock = [0.0]
    mine = SlotSet(tmp_path, "candidates", 8, clock=lambda: clock[0])
    other = SlotSet(tmp_path, "candidates", 8, clock=lambda: clock[0])
    mine.publish_demand(10)
    assert mine.share() == 8  # nobody else has anything to settle
    other.publish_demand(30)
    clock[0] += 1.0  # the others' counts are read again after a tenth of a second
    assert (mine.share(), other.share()) == (2, 6)
    other.publish_demand(1)
    clock[0] += 1.0
    assert (mine.share(), other.share()) == (8, 1)
    other.withdraw_demand()
    clock[0] += 1.0
    assert mine.share() == 8
    mine.publish_demand(0)
    assert other.share() == 8


def test_a_count_left_by_a_dead_or_broken_process_is_not_waited_for(tmp_path):
    import os

    from pytest_hypeedit.engine.limits import DEMAND_STALE, SlotSet

    clock = [0.0]
    mine = SlotSet(tmp_path, "candidates", 8, clock=lambda: clock[0])
    mine.publish_demand(10)
    stale = tmp_path / "candidates.demand.999999-dead"
    stale.write_text("1000")
    old = time.time() - DEMAND_STALE - 1
    os.utime(stale, (old, old))
    (tmp_path / "candidates.demand.999998-torn").write_text("12x")  # cut mid-write
    (tmp_path / "other-set.demand.1-a").write_text("1000")  # another slot set's count
    assert mine.share() == 8
    stale.touch()  # the same file, fresh: a live process with 1000 candidates left
    clock[0] += 1.0
    assert mine.share() == 1
