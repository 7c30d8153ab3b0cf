"""One admission per route in a process: how many of the route's calls may be in flight right now.

The pool asks a route's admission before it starts a call on it (``try_enter``):
the admission says no while the route is at its level, while its requests-per-minute
window is full, or while every one of its cross-process in-flight slots is
held (by this process or another).  So a route at its limit never holds a pool
slot that another route could use.

The level is the route's configured calls in flight (``models.yaml`` routes,
``--rate-limit``), or, with ``--concurrency auto``, an adaptive level below
that ceiling: additive increase while the provider keeps up, multiplicative
decrease when it answers 429, as inspect_ai's adaptive connections and TCP do.
It starts with a slow start (one more per success) until the first 429, then
grows by one per level's worth of successes; a 429 halves it.  The replies to
requests that were already in flight when it was cut say nothing new, so the
next ``in flight`` replies after a cut cannot cut again: one burst of 429s is
one cut, as TCP cuts once per window.

Each admission also has a ``Breaker``: when the first calls to a route all fail to
connect (connection refused, a name that does not resolve, a proxy that fails,
a connect timeout) and nothing on the route has answered yet, it opens within
seconds.  Then the calls in flight stop retrying (their next failed attempt
raises ``RouteUnreachable``), the admission admits no new call, and the pool ends the
route's remaining candidates with the same one line: which URL, which variable
moves it, and that nothing was paid.  Without it every candidate was retried
with backoff (131 s for 50 items) before the run said what was wrong.  Once the
route has answered anything, it never opens: later failures are the retries'.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable

import httpx

from ..errors import RouteUnreachable
from .limits import InFlightSlot, RouteLimiter

#: The adaptive level's starting point: a few calls, so a provider with a low quota is not flooded.
START_LEVEL = 4
DECREASE = 0.5


@dataclass(frozen=True)
class AdmissionState:
    """What the live line shows of a route."""

    route: str
    in_flight: int
    level: int
    ceiling: int
    adaptive: bool
    throttled: int  # 429s seen


#: Transport errors that mean the request never reached the provider: nothing answers at that address.
NOT_CONNECTED = (httpx.ConnectError, httpx.ConnectTimeout, httpx.ProxyError)
#: The breaker opens after this many failed connections with no answer, or after two of them this far apart
#: (seconds): a retry after its backoff failed too, so the first failure was no blip.
OPEN_AFTER, OPEN_AFTER_SPAN = 5, 0.5


class Breaker:
    """Fail fast on a route that nothing answers (see the module docstring)."""

    def __init__(self, route: str, clock: Callable[[], float] = time.monotonic):
        self.route, self.clock = route, clock
        self.answered = False
        self.failures = 0
        self.first_failure: float | None = None
        self.reason: str | None = None  # the one line every candidate of the route ends with, once open
        self._lock = threading.Lock()

    def observe(self, status: int | None, error: BaseException | None) -> None:
        """A reply (``status``) or a failed attempt (``error``) on the route; raises RouteUnreachable once open."""
        with self._lock:
            if status is not None:
                self.answered = True
                return
            if self.reason is None and not self.answered and isinstance(error, NOT_CONNECTED):
                self._count(error)
            reason = self.reason
        if reason is not None and isinstance(error, NOT_CONNECTED):
            raise RouteUnreachable(reason, retryable=True) from error

    def _count(self, error: BaseException) -> None:
        now = self.clock()
        self.failures += 1
        self.first_failure = now if self.first_failure is None else self.first_failure
        if self.failures >= OPEN_AFTER or (self.failures >= 2 and now - self.first_failure >= OPEN_AFTER_SPAN):
            self.reason = unreachable_message(self.route, error, self.failures)


def unreachable_message(route: str, error: BaseException, failures: int) -> str:
    """One line: the route, the URL nothing answers at, why, the variable that moves it, nothing paid."""
    provider = route.removesuffix("-judge")
    variable = f"HYPEEDIT_{re.sub(r'[^A-Za-z0-9]', '_', provider).upper()}_BASE_URL"
    moved = f"{variable} (or --judge-base-url)" if route == "openai-judge" else variable
    where = _origin(error) or os.environ.get(variable, "").strip() or "the provider's default address"
    detail = str(error).splitlines()[0][:160] if str(error) else ""
    return (f"route {route}: nothing answers at {where} ({type(error).__name__}{': ' + detail if detail else ''}); "
            f"its first {failures} connection attempts all failed, so no more calls start on it in this run, and "
            f"nothing was paid for them. Check the network or proxy, or {moved} if the provider's address was "
            "moved, then rerun: only what is missing is done.")


def _origin(error: BaseException) -> str | None:
    """scheme://host:port of the request that failed: httpx sets ``error.request`` only once the error has left
    the transport, so the URL may not be known yet when the transport tells the admission (then the variable's value
    is named instead)."""
    try:
        url = error.request.url  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):
        return None
    return f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}"


class RouteAdmission:
    def __init__(self, route: str, limiter: RouteLimiter | None, *, ceiling: int, adaptive: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        self.route, self.limiter, self.adaptive, self.clock = route, limiter, adaptive, clock
        self.breaker = Breaker(route, clock)
        self.ceiling = max(1, min(ceiling, limiter.inflight) if limiter and limiter.inflight else ceiling)
        self.level = float(min(START_LEVEL, self.ceiling) if adaptive else self.ceiling)
        self.in_flight = 0
        self.throttled = 0
        self.blocked_until = 0.0  # the requests-per-minute window is full until then
        self._slow_start = True
        self._stale_replies = 0  # replies still due from requests sent before the last cut
        self._successes = 0  # since the level last grew (congestion avoidance)
        self._lock = threading.Lock()
        if limiter is not None:
            limiter.listener = self.observe

    @property
    def unreachable(self) -> str | None:
        """Why no call starts on this route any more (its breaker is open), else None."""
        return self.breaker.reason

    # ------------------------------------------------------------------ admission
    def try_enter(self) -> InFlightSlot | None:
        """A slot for one call on this route now, or None (the route is at its limit, or unreachable).  The
        slot is the limiter's (so the call's requests take no second one) and counts in this admission until it
        is given back."""
        if self.breaker.reason is not None:
            return None
        now = self.clock()
        with self._lock:
            if self.in_flight >= int(self.level) or now < self.blocked_until:
                return None
        inner: InFlightSlot | None = None
        if self.limiter is not None:
            wait = self.limiter.rpm_wait()
            if wait > 0:
                self.blocked_until = now + wait
                return None
            inner = self.limiter.try_call_slot()
            if inner is None:
                return None
        with self._lock:
            self.in_flight += 1
        return self._leaving(inner)

    def _leaving(self, inner: InFlightSlot | None) -> InFlightSlot:
        def leave() -> None:
            with self._lock:
                self.in_flight -= 1
            if inner is not None:
                inner.release()
        owner = self.limiter if self.limiter is not None else self
        return InFlightSlot(owner, self.route, inner.index if inner is not None else None, leave)

    def wait_hint(self, now: float) -> float | None:
        """Seconds until this route's per-minute window opens, when that is what holds it."""
        return self.blocked_until - now if self.blocked_until > now else None

    # ------------------------------------------------------------------ the adaptive level
    def observe(self, status: int | None) -> None:
        """A reply on this route, or ``None`` for a failed attempt: the breaker hears both; 429 cuts the level and
        a success raises it (only with --concurrency auto).  The transport tells of a failed attempt from inside
        its ``except`` block (transport/http.py), so the error is the one being handled."""
        self.breaker.observe(status, sys.exc_info()[1] if status is None else None)
        if not self.adaptive:
            return
        with self._lock:
            stale = self._stale_replies > 0
            self._stale_replies = max(0, self._stale_replies - 1)
            if status == 429:
                self.throttled += 1
                if not stale:
                    self._cut()
            elif status is not None and 200 <= status < 300:
                self._grow()

    def _cut(self) -> None:
        self._slow_start, self._successes = False, 0
        self.level = max(1.0, float(int(self.level * DECREASE)))
        self._stale_replies = max(0, self.in_flight - 1)  # the others in flight, sent at the old level

    def _grow(self) -> None:
        self._successes += 1
        if self._slow_start or self._successes >= int(self.level):
            self.level, self._successes = min(float(self.ceiling), self.level + 1), 0

    def state(self) -> AdmissionState:
        with self._lock:
            return AdmissionState(self.route, self.in_flight, int(self.level), self.ceiling, self.adaptive,
                             self.throttled)

