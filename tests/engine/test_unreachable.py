"""Fail fast on an unreachable provider: when the first calls to a route all fail to connect, no more calls start
on it within seconds, its remaining candidates ERROR with one line (the URL, the variable that moves it, nothing
paid), and the other routes go on.

The run's test points ModelArk at a closed loopback port, with the default retry policy (1, 2, 4, 8 s backoffs):
without the breaker its 20 candidates took about a minute of retries before the run said what was wrong.
"""

from __future__ import annotations

import socket

import httpx
import pytest
from benchdata import make_tasks, write_labels, write_split
from providers_fakes.openai import FakeOpenAI
from terminal_text import said

from pytest_hypeedit.engine.routes import OPEN_AFTER, Breaker, RouteAdmission
from pytest_hypeedit.errors import RouteUnreachable

TASKS, REPEATS = 5, 4
#: Counts the connection attempts to the dead port (the real transport, wrapped), into ATTEMPT_LOG.
COUNT_ATTEMPTS = """
import os, httpx

_send = httpx.HTTPTransport.handle_request

def counting(self, request):
    if request.url.port == int(os.environ["DEAD_PORT"]):
        with open(os.environ["ATTEMPT_LOG"], "a") as log:
            log.write("x\\n")
    return _send(self, request)

httpx.HTTPTransport.handle_request = counting
"""


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def two_routes(pytester: pytest.Pytester, monkeypatch, tmp_path):
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    write_labels(pytester.path / "r1.json", {(f"task-{t:02d}", model, r): True for t in range(TASKS)
                                             for model in ("seedream-4.5", "gpt-image-1.5") for r in range(1, REPEATS + 1)})
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    pytester.makeconftest(COUNT_ATTEMPTS)
    port = closed_port()
    monkeypatch.setenv("DEAD_PORT", str(port))
    monkeypatch.setenv("ATTEMPT_LOG", str(tmp_path / "attempts.log"))
    dead = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("HYPEEDIT_ARK_BASE_URL", dead + "/api/v3")
    monkeypatch.setenv("ARK_API_KEY", "ark-key-0123456789")
    with FakeOpenAI() as openai:
        monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", openai.base)
        monkeypatch.setenv("OPENAI_API_KEY", openai.key)
        yield pytester, dead, openai


def test_an_unreachable_route_ends_within_seconds_and_the_other_route_goes_on(two_routes, tmp_path):
    pytester, dead, openai = two_routes
    # in a subprocess with a deadline: a route left waiting forever must fail the test, not hang it
    result = pytester.runpytest_subprocess("--tasks", "mini.json", "--images-base", "images", "--repeats", str(REPEATS),
                                "--outputs", "out", "--model", "seedream-4.5", "--model", "gpt-image-1.5",
                                "--judge", "labels:r1.json", "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=TASKS * REPEATS, errors=TASKS * REPEATS)
    assert len(openai.seen("/images/edits")) == TASKS * REPEATS  # the reachable route bought all of its own
    # the calls in flight when it opened (ark's 8) tried at most once more each; no other call started: the run
    # ends within seconds because it makes no more attempts (counted, not timed: a loaded machine is slower)
    attempts = len((tmp_path / "attempts.log").read_text().splitlines())
    assert OPEN_AFTER <= attempts <= 2 * 8, attempts
    line = (f"*seedream-4.5 r00?: route ark: nothing answers at {dead}/api/v3 (ConnectError*); its first * connection "
            "attempts all failed, so no more calls start on it in this run, and nothing was paid for them. Check "
            "the network or proxy, or HYPEEDIT_ARK_BASE_URL if the provider's address was moved, then rerun*")
    said(result, line)
    assert "Traceback" not in result.stdout.str()


# --------------------------------------------------------------------------- the breaker's rules


def failure(kind=httpx.ConnectError, url: str = "http://127.0.0.1:9/v1/x") -> BaseException:
    return kind("[Errno 111] Connection refused", request=httpx.Request("POST", url))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("kind", [httpx.ConnectError, httpx.ConnectTimeout, httpx.ProxyError])
def test_the_breaker_opens_after_a_burst_of_failed_connections(kind):
    breaker = Breaker("ark", Clock())
    for _ in range(OPEN_AFTER - 1):
        breaker.observe(None, failure(kind))
    assert breaker.reason is None
    with pytest.raises(RouteUnreachable, match=r"route ark: nothing answers at http://127.0.0.1:9 .*HYPEEDIT_ARK_BASE_URL"):
        breaker.observe(None, failure(kind))


def test_the_breaker_opens_when_a_retry_after_its_backoff_fails_too():
    clock = Clock()
    breaker = Breaker("gemini-judge", clock)
    breaker.observe(None, failure())
    clock.now += 0.2
    breaker.observe(None, failure())
    assert breaker.reason is None  # two failures at once may be a blip
    clock.now += 0.5
    with pytest.raises(RouteUnreachable, match="HYPEEDIT_GEMINI_BASE_URL"):
        breaker.observe(None, failure())


def test_a_route_that_answered_once_never_opens_and_other_errors_do_not_count():
    breaker = Breaker("ark", Clock())
    breaker.observe(None, httpx.ReadTimeout("slow", request=httpx.Request("GET", "http://x")))
    breaker.observe(503, None)
    for _ in range(3 * OPEN_AFTER):
        breaker.observe(None, failure())
    assert breaker.reason is None and breaker.failures == 0


def test_an_open_gate_admits_no_call_and_tells_why():
    admission = RouteAdmission("openai-judge", None, ceiling=4)
    assert admission.try_enter() is not None
    for _ in range(OPEN_AFTER):
        try:
            raise failure()
        except httpx.ConnectError:
            try:
                admission.observe(None)  # the transport tells from inside its except block
            except RouteUnreachable:
                pass
    assert admission.try_enter() is None
    assert "HYPEEDIT_OPENAI_BASE_URL (or --judge-base-url)" in admission.unreachable
