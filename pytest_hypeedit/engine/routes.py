"""One gate per route in a process: how many of the route's calls may be in flight right now.

The pool asks a route's gate before it starts a call on it (``try_enter``):
the gate says no while the route is at its level, while its requests-per-minute
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
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from .limits import Release, RouteLimiter

#: The adaptive level's starting point: a few calls, so a provider with a low quota is not flooded.
START_LEVEL = 4
DECREASE = 0.5


@dataclass(frozen=True)
class GateState:
    """What the live line shows of a route."""

    route: str
    in_flight: int
    level: int
    ceiling: int
    adaptive: bool
    throttled: int  # 429s seen


class RouteGate:
    def __init__(self, route: str, limiter: RouteLimiter | None, *, ceiling: int, adaptive: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        self.route, self.limiter, self.adaptive, self.clock = route, limiter, adaptive, clock
        self.ceiling = max(1, min(ceiling, limiter.inflight) if limiter and limiter.inflight else ceiling)
        self.level = float(min(START_LEVEL, self.ceiling) if adaptive else self.ceiling)
        self.in_flight = 0
        self.throttled = 0
        self.blocked_until = 0.0  # the requests-per-minute window is full until then
        self._slow_start = True
        self._stale_replies = 0  # replies still due from requests sent before the last cut
        self._successes = 0  # since the level last grew (congestion avoidance)
        self._lock = threading.Lock()
        if limiter is not None and adaptive:
            limiter.listener = self.observe

    # ------------------------------------------------------------------ admission
    def try_enter(self) -> Release | None:
        """A slot for one call on this route now, or None (the route is at its limit)."""
        now = self.clock()
        with self._lock:
            if self.in_flight >= int(self.level) or now < self.blocked_until:
                return None
        if self.limiter is not None:
            wait = self.limiter.rpm_wait()
            if wait > 0:
                self.blocked_until = now + wait
                return None
            release = self.limiter.try_call_slot()
            if release is None:
                return None
        else:
            release = _nothing
        with self._lock:
            self.in_flight += 1
        return self._leaving(release)

    def _leaving(self, release: Release) -> Release:
        def leave() -> None:
            with self._lock:
                self.in_flight -= 1
            release()
        return leave

    def wait_hint(self, now: float) -> float | None:
        """Seconds until this route's per-minute window opens, when that is what holds it."""
        return self.blocked_until - now if self.blocked_until > now else None

    # ------------------------------------------------------------------ the adaptive level
    def observe(self, status: int | None) -> None:
        """A reply on this route: 429 cuts the level, a success raises it (only with --concurrency auto)."""
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

    def state(self) -> GateState:
        with self._lock:
            return GateState(self.route, self.in_flight, int(self.level), self.ceiling, self.adaptive,
                             self.throttled)


def _nothing() -> None:
    """The release of a route with no limiter: nothing was taken."""
