"""Per-route limits on requests per minute and requests in flight, across processes.

Every xdist worker builds its own ``RouteLimiter`` on the same state directory;
they agree through files in it:

- in flight: ``<route>.slot<i>.lock`` for i < inflight.  A request holds an
  exclusive OS lock on one of them, so a worker that dies frees its slot.
- per minute: ``<route>.rpm.json`` holds the start times of the last N
  requests (a sliding-window log, not a token bucket: a bucket lets 2N through
  in one window after an idle spell).  A request may start when fewer than N
  started in the last window; otherwise it sleeps exactly until the oldest
  leaves the window.  The file is read and written under a short OS lock.

A small margin is added to the window because the server counts arrivals, not
our start stamps, and a process can be descheduled between the two.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import re
import time
from pathlib import Path
from typing import Callable, Iterator

from ..files import atomic_write_bytes

try:  # POSIX: blocking kernel locks, no polling, freed when a process dies.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
    from filelock import FileLock, Timeout

#: Polling bounds while every in-flight slot is taken (seconds).
MIN_POLL, MAX_POLL = 0.002, 0.025


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` held for the ``with`` block, across processes and threads."""
    if fcntl is None:  # pragma: no cover
        with FileLock(str(path), poll_interval=0.001, thread_local=False):
            yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor drops the lock


def try_exclusive(path: Path) -> Callable[[], None] | None:
    """Take the lock on ``path`` if free, returning its release function; None when it is held."""
    if fcntl is None:  # pragma: no cover
        lock = FileLock(str(path), timeout=0, thread_local=False)
        try:
            lock.acquire()
        except Timeout:
            return None
        return lock.release
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return lambda: os.close(fd)


def safe_name(route: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", route) or "_"


class RouteLimiter:
    """Blocks each request until its route has a free in-flight slot and a request-per-minute token."""

    def __init__(self, state_dir: Path, route: str, rpm: float | None, inflight: int | None, *,
                 period: float = 60.0, margin: float | None = None,
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep):
        if rpm is not None and rpm <= 0 or inflight is not None and inflight < 1:
            raise ValueError(f"route {route}: rpm must be > 0 and inflight >= 1, got rpm={rpm} inflight={inflight}")
        self.route, self.rpm, self.inflight = route, rpm, inflight
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.clock, self.sleep = clock, sleep
        # rpm 0.5 means 1 request per 2 minutes: a window of N = max(1, floor(rpm))
        # requests lasting N / rpm minutes keeps the rate exact for any rpm.
        self.capacity = max(1, math.floor(rpm)) if rpm else 0
        base_window = period * self.capacity / rpm if rpm else 0.0
        self.window = base_window + (margin if margin is not None else max(0.01 * period, 0.05))
        name = safe_name(route)
        self._rpm_file = self.state_dir / f"{name}.rpm.json"
        self._rpm_lock = self.state_dir / f"{name}.rpm.lock"
        self._slot_files = [self.state_dir / f"{name}.slot{i}.lock" for i in range(inflight or 0)]

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        release = self._take_inflight_slot() if self.inflight else None
        try:
            if self.rpm:
                self._take_rpm_token()
            yield
        finally:
            if release is not None:
                release()

    # ------------------------------------------------------------------ in flight
    def _take_inflight_slot(self) -> Callable[[], None]:
        pause = MIN_POLL
        while True:
            # A random starting slot spreads workers over the files instead of all fighting for slot 0.
            start = random.randrange(len(self._slot_files))
            for index in range(len(self._slot_files)):
                release = try_exclusive(self._slot_files[(start + index) % len(self._slot_files)])
                if release is not None:
                    return release
            self.sleep(pause * (0.5 + random.random()))
            pause = min(pause * 1.5, MAX_POLL)

    # ------------------------------------------------------------------ per minute
    def _take_rpm_token(self) -> None:
        while True:
            wait = self._try_rpm_token()
            if wait <= 0:
                return
            self.sleep(wait)

    def _try_rpm_token(self) -> float:
        """Record a start and return 0, or return how long to wait for the oldest start to age out."""
        with exclusive(self._rpm_lock):
            now = self.clock()
            starts = [t for t in self._read_starts() if t > now - self.window]
            if len(starts) < self.capacity:
                starts.append(now)
                self._write_starts(starts)
                return 0.0
        return starts[len(starts) - self.capacity] + self.window - now + 0.0005

    def _read_starts(self) -> list[float]:
        try:
            starts = json.loads(self._rpm_file.read_text() or "[]")
        except (OSError, ValueError):
            return []  # no file yet, or a torn write by a killed process: start afresh
        return sorted(float(t) for t in starts) if isinstance(starts, list) else []

    def _write_starts(self, starts: list[float]) -> None:
        atomic_write_bytes(self._rpm_file, json.dumps(starts[-self.capacity:]).encode("utf-8"))


def limiter_for(state_dir: Path, route: str, rpm: float | None, inflight: int | None) -> RouteLimiter | None:
    """A limiter for ``route``, or None when it has no limits at all."""
    if not rpm and not inflight:
        return None
    return RouteLimiter(state_dir, route, rpm, inflight)
