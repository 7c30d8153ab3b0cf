"""The in-flight slot a call holds reaches the HTTP layer explicitly (engine/limits.py ``InFlightSlot``,
transport/requestopts.py): a request sent for the call takes no second slot, from whatever thread it is sent,
and a request sent for no call takes its own.

Counted, never timed: the slots held are read from the limiter's own slot set while the server holds the
request, and where requests must overlap the server holds them until they do (with a bound that fails, named).
"""

from __future__ import annotations

import threading

import pytest
from benchdata import make_tasks, write_split
from fake_models import models_conftest
from genai_fakes.chat import FakeChat, verdict_reply
from helper_thread import on_a_helper_thread
from providers_fakes import FakeServer, Reply

from pytest_hypeedit.engine.limits import InFlightSlot, RouteLimiter, SlotReleasedTwice
from pytest_hypeedit.errors import ConfigError
from pytest_hypeedit.transport.http import RetryPolicy, make_http_client, send

#: The longest a held request waits for its partner (a request that took a second slot never comes).
HOLD_MAX = 20.0


def in_thread(fn):
    """``fn()`` on a helper thread, as an SDK or a panel of jurors sends; its result or its error."""
    return on_a_helper_thread(fn, HOLD_MAX, "the request never ended: it waited for a second slot")


@pytest.fixture
def counted(tmp_path):
    """(limiter with 2 slots, client, server URL, slots held here while each request was served)."""
    limiter = RouteLimiter(tmp_path, "r", rpm=None, inflight=2)
    seen: list[int] = []

    def reply(_request):
        seen.append(limiter._slots.taken_here())  # the limiter's own count, read while the request is served
        return Reply(200, {"ok": True})

    with FakeServer() as server, make_http_client("r", limiter=limiter, policy=RetryPolicy(max_attempts=1)) as client:
        server.route("GET", "/x", reply)
        yield limiter, client, f"{server.url}/x", seen


def test_a_request_sent_from_a_helper_thread_under_the_calls_slot_takes_no_second_one(counted):
    limiter, client, url, seen = counted
    slot = limiter.try_call_slot()
    assert isinstance(slot, InFlightSlot) and slot.route == "r" and slot.index in (0, 1)
    in_thread(lambda: send(client, "GET", url, route="r", model="m", slots=(slot,)))
    in_thread(lambda: send(client, "GET", url, route="r", model="m", slots=(slot,), download=True))
    assert seen == [1, 1]  # the call's slot only
    slot.release()
    assert limiter._slots.taken_here() == 0


def test_a_request_of_no_call_or_of_a_finished_one_or_of_another_route_takes_its_own(counted, tmp_path):
    limiter, client, url, seen = counted
    slot = limiter.try_call_slot()
    other = RouteLimiter(tmp_path / "other", "r2", rpm=None, inflight=1).try_call_slot()
    send(client, "GET", url, route="r", model="m")  # a library user: no call
    send(client, "GET", url, route="r", model="m", slots=(other,))  # another route's slot is not this one's
    slot.release()
    leftover = limiter.try_call_slot()
    send(client, "GET", url, route="r", model="m", slots=(slot,))  # the call is over: its slot is no cover
    assert seen == [2, 2, 2]
    leftover.release()
    assert limiter._slots.taken_here() == 0


def test_a_slot_is_given_back_once_and_a_second_time_raises(tmp_path):
    limiter = RouteLimiter(tmp_path, "r", rpm=None, inflight=1)
    slot = limiter.try_call_slot()
    assert limiter.try_call_slot() is None
    slot.release()
    assert slot.released and "released" in repr(slot)
    with pytest.raises(SlotReleasedTwice, match="route r"):
        slot.release()
    again = limiter.try_call_slot()  # the lock file was freed once, and is free now
    assert again is not None
    again.release()


def test_a_request_that_forgot_its_calls_slot_is_told_so_instead_of_waiting_for_ever(counted):
    """Every slot of the route held by this process's calls, and a request of no call: it could only wait for
    a slot its own call holds.  It fails at once, before anything is sent, naming the route and the fix."""
    limiter, client, url, seen = counted
    calls = [limiter.try_call_slot(), limiter.try_call_slot()]
    with pytest.raises(ConfigError, match=r"route r: .*without the in-flight slot.*request=request"):
        in_thread(lambda: send(client, "GET", url, route="r", model="m"))
    assert seen == []  # nothing left
    in_thread(lambda: send(client, "GET", url, route="r", model="m", slots=(calls[0],)))  # with it: at once
    for slot in calls:
        slot.release()
    assert seen == [2] and limiter._slots.taken_here() == 0


# --------------------------------------------------------------------------- the pool: a panel asks from threads

#: The candidate at once, free (no HTTP): the test is about the verdicts' slots.
CONFTEST = models_conftest(models=({"name": "instant", "route": "instant", "price": 0.0},), route="instant",
                           cost=0.0, provider_model="instant", log=None)


def test_a_panel_whose_jurors_ask_from_helper_threads_holds_the_verdicts_one_slot(pytester, monkeypatch, tmp_path):
    """A panel of two OpenAI-compatible jurors asks from the panel's helper threads (judges/majority.py).  With
    one verdict in flight on the judge route (``openai-judge=/1``), the pool holds that slot for the verdict;
    both jurors' requests are part of it, so they are in flight together.  A juror that took a slot of its own
    would wait for ever for the one the verdict holds."""
    pytester.makeconftest(CONFTEST)
    write_split(pytester.path, "mini", make_tasks(3), pytester.path / "images")
    arrived, active, peak, changed, lonely = [0], [0], [0], threading.Condition(), []

    def juror(request):
        with changed:
            arrived[0] += 1
            partner = arrived[0] + arrived[0] % 2  # the jurors of a verdict arrive as the 2k+1-th and 2k+2-th
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            changed.notify_all()
            if not changed.wait_for(lambda: arrived[0] >= partner, timeout=HOLD_MAX):  # its partner is in flight
                lonely.append(request.path)
            active[0] -= 1
        return verdict_reply("PASS", "both edits are present")

    with FakeChat() as chat:
        chat.default = juror
        monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-panel-0123456789")
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "--tasks", "mini.json", "--images-base", "images", "--repeats", "1",
            "--outputs", "out", "--model", "instant", "--judge", "openai-rubric:juror-a,openai-rubric:juror-b",
            "--judge-base-url", chat.base_url, "--rate-limit", "openai-judge=/1", "--concurrency", "4",
            timeout=120)
        asked = len(chat.requests)
    result.assert_outcomes(passed=3)
    assert asked == 6  # two jurors per candidate, each asked once
    assert not lonely, "a juror's request was in flight alone: its partner waited for a slot of its own"
    assert peak[0] == 2  # one verdict at a time (the route's one slot), both of its jurors at once
