"""Per-route limits on requests per minute and calls in flight, across processes.

Every xdist worker builds its own ``RouteLimiter`` on the same state directory;
they agree through files in it:

- in flight: ``<route>.slot<i>.lock`` for i < inflight (a ``SlotSet``).  A call
  holds an exclusive OS lock on one of them, so a worker that dies frees its
  slot.  A *call* is one candidate's generation (submit, polls and download
  together: a provider counts a submitted job as active until it is done) or
  one verdict: the pool takes the slot before it starts the call
  (``try_call_slot``) and hands it to the call as an ``InFlightSlot``, which
  the call carries to the HTTP layer explicitly (``GenerationRequest.call.slots``,
  ``JudgeRequest.call.slots``, then ``RequestOptions.slots`` on each request).  A
  request that carries a live slot of its route takes no other, whatever
  thread sends it (an SDK or a panel of jurors may send from helper threads);
  a request without one (a library user calling an adapter directly) takes a
  slot for itself.
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
import itertools
import json
import math
import os
import random
import re
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from ..errors import ConfigError
from ..files import atomic_write_bytes
from ..transport.slots import CallSlots

try:  # POSIX: blocking kernel locks, no polling, freed when a process dies.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
    from filelock import FileLock, Timeout

#: Polling bounds while every in-flight slot is taken (seconds).
MIN_POLL, MAX_POLL = 0.002, 0.025
#: SlotSet.share: a process rewrites its count at least this often (s); a count older than DEMAND_STALE is a
#: process that died (or stalls) and is not waited for; the others' counts are read again after DEMAND_READ_EVERY.
DEMAND_REFRESH, DEMAND_STALE, DEMAND_READ_EVERY = 1.0, 5.0, 0.1


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


Release = Callable[[], None]


class SlotReleasedTwice(RuntimeError):
    """A slot given back a second time: a bug of the pool (it could free a lock another call holds)."""


class InFlightSlot:
    """One in-flight slot held by one call: whose it is (``owner``, the limiter or slot set it came from), its
    route, which of the route's lock files it holds (``index``; None for a route without an in-flight limit),
    and whether it was given back.  ``release`` gives it back exactly once; a second time raises."""

    def __init__(self, owner: object, route: str, index: int | None, give_back: Release):
        self.owner, self.route, self.index = owner, route, index
        self._give_back = give_back
        self._lock = threading.Lock()
        self.released = False

    def release(self) -> None:
        with self._lock:
            if self.released:
                raise SlotReleasedTwice(f"route {self.route}: in-flight slot {self.index} given back twice")
            self.released = True
        self._give_back()

    def covers(self, owner: object) -> bool:
        """Whether a request to ``owner``'s route needs no slot of its own: this slot is ``owner``'s and held."""
        return self.owner is owner and not self.released

    def __repr__(self) -> str:
        state = "released" if self.released else "held"
        return f"InFlightSlot({self.route!r}, {self.index}, {state})"


def covered(slots: CallSlots, owner: object) -> bool:
    """Whether ``slots`` hold a live slot of ``owner`` (then a request of the call takes no second one)."""
    return any(slot.covers(owner) for slot in slots)


class SlotSet:
    """``size`` interchangeable slots shared by every process of a run: one lock file per slot.

    ``try_take`` never blocks (the pool's dispatcher must not wait on one route
    while another could go); ``take`` waits, polling briefly, for callers that
    have nothing else to do.  A process skips the slots it holds itself and tries
    first the ones it gave back last, so finding a free slot among 64 mostly
    taken by this process is one lock attempt, not 64.
    """

    def __init__(self, folder: Path, name: str, size: int, *, sleep: Callable[[float], None] = time.sleep,
                 owner: object = None, clock: Callable[[], float] = time.monotonic):
        if size < 1:
            raise ValueError(f"{name}: a slot set needs at least one slot, got {size}")
        self.size, self.sleep, self.name = size, sleep, name
        self.owner = self if owner is None else owner  # whose slots they are (a route's limiter, or the pool)
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        # each slot's lock file is named when it is tried, never listed: the batch tier's routes have 100,000 slots
        self._folder, self._stem = folder, safe_name(name)
        self._taken: set[int] = set()
        self._given_back: list[int] = []  # most recent last
        self._lock = threading.Lock()
        # What this process has left to settle, for ``share`` (one file per SlotSet, named for this one)
        self.clock = clock
        self._demand_file = folder / f"{safe_name(name)}.demand.{os.getpid()}-{id(self):x}"
        self._published: int | None = None
        self._published_at = 0.0
        self._others: int = 0  # what the other processes have left to settle, as last read
        self._others_at: float | None = None

    def try_take(self) -> InFlightSlot | None:
        with self._lock:
            candidates = list(reversed(self._given_back))
            taken = set(self._taken)
        # Then the rest, from a random start: processes spread over the files instead of all fighting for slot 0.
        start = random.randrange(self.size)
        hinted = set(candidates)  # then the rest walked lazily: a free slot is usually found within a few tries
        rest = (i for i in ((start + k) % self.size for k in range(self.size)) if i not in taken and i not in hinted)
        for index in itertools.chain(candidates, rest):
            release = try_exclusive(self._folder / f"{self._stem}.slot{index}.lock")
            if release is not None:
                return self._taking(index, release)
        return None

    def _taking(self, index: int, release: Release) -> InFlightSlot:
        with self._lock:
            self._taken.add(index)
            if index in self._given_back:
                self._given_back.remove(index)

        def give_back() -> None:
            with self._lock:
                self._taken.discard(index)
                self._given_back.append(index)
                del self._given_back[:-8]  # a few hints are enough
            release()
        return InFlightSlot(self.owner, self.name, index, give_back)

    def taken_here(self) -> int:
        """How many of the slots this process holds now."""
        with self._lock:
            return len(self._taken)

    # ------------------------------------------------------------------ shares between processes
    def publish_demand(self, demand: int) -> None:
        """Say how many candidates this process still has to settle (its ``share`` and every other process's
        read it).  Written when it changes, and at least every DEMAND_REFRESH s so that readers can tell a live
        process from one that died (its file is older than DEMAND_STALE s, and ignored)."""
        now = self.clock()
        if demand == self._published and now - self._published_at < DEMAND_REFRESH:
            return
        self._published, self._published_at = demand, now
        try:
            atomic_write_bytes(self._demand_file, str(max(0, demand)).encode())
        except OSError:  # a full disk: the shares are a refinement, the slots themselves still bound the run
            return

    def withdraw_demand(self) -> None:
        """This process has nothing more to settle: its file goes, and the others share every slot."""
        self._published = None
        with contextlib.suppress(OSError):
            self._demand_file.unlink()

    def share(self) -> int:
        """The slots this process may hold: all of them while no other process of the run has candidates to
        settle; else a share in proportion to its own count, at least one.  Under xdist each worker is dealt
        its items up front, so a worker that took more slots than its part finished first and the other then
        ran on alone, with fewer calls in flight than the run allows (the -n 2 run of bench_providers.py took
        1.35x its ideal time).  In proportion, both finish together."""
        now = self.clock()
        if self._others_at is None or now - self._others_at >= DEMAND_READ_EVERY:
            self._others, self._others_at = self._read_others(), now
        mine = self._published or 0
        if self._others <= 0 or mine <= 0:
            return self.size
        return max(1, math.ceil(self.size * mine / (mine + self._others)))

    def _read_others(self) -> int:
        total, fresh_after = 0, time.time() - DEMAND_STALE
        for path in self._demand_file.parent.glob(f"{safe_name(self.name)}.demand.*"):
            if path == self._demand_file:
                continue
            try:
                if path.stat().st_mtime < fresh_after:
                    continue
                total += max(0, int(path.read_text()[:20] or 0))
            except (OSError, ValueError):  # gone meanwhile, or half-written by a process that died
                continue
        return total

    def take(self) -> InFlightSlot:
        pause = MIN_POLL
        while True:
            slot = self.try_take()
            if slot is not None:
                return slot
            self.sleep(pause * (0.5 + random.random()))
            pause = min(pause * 1.5, MAX_POLL)


class RouteLimiter:
    """A route's calls in flight (``SlotSet``) and requests per minute (a sliding-window log), across processes.

    ``listener``, when set, is told the status of every HTTP reply on the route
    (``None`` for a network error): the adaptive concurrency of ``--concurrency
    auto`` follows it.
    """

    def __init__(self, state_dir: Path, route: str, rpm: float | None, inflight: int | None, *,
                 period: float = 60.0, margin: float | None = None,
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep):
        if (rpm is not None and rpm <= 0) or (inflight is not None and inflight < 1):
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
        self._slots = SlotSet(self.state_dir, name, inflight, sleep=sleep, owner=self) if inflight else None
        self._calls_here = 0  # slots held by this process's calls (``try_call_slot``)
        self._calls_lock = threading.Lock()
        self.listener: Callable[[int | None], None] | None = None

    # ------------------------------------------------------------------ calls (the pool's unit)
    def try_call_slot(self) -> InFlightSlot | None:
        """An in-flight slot for one call if one is free now, else None (never blocks).  A route without an
        in-flight limit gives a slot that holds no file: the call still carries it, so its requests know they
        are part of a call."""
        if self._slots is None:
            return InFlightSlot(self, self.route, None, _nothing)
        taken = self._slots.try_take()
        if taken is None:
            return None
        with self._calls_lock:
            self._calls_here += 1

        def give_back() -> None:
            with self._calls_lock:
                self._calls_here -= 1
            taken.release()
        return InFlightSlot(self, self.route, taken.index, give_back)

    # ------------------------------------------------------------------ requests (the transport's unit)
    @contextlib.contextmanager
    def slot(self, *, rpm: bool = True, taken: CallSlots = ()) -> Iterator[None]:
        """One HTTP request: a request-per-minute token (``rpm=False``: a download of a result file, which is
        not a request to the provider's API), and an in-flight slot unless ``held`` (the slots of the call
        the request is part of) holds one of this route already."""
        own = None
        if self._slots is not None and not covered(taken, self):
            self._check_not_stranded()
            own = self._slots.take()
        try:
            if self.rpm and rpm:
                self._take_rpm_token()
            yield
        finally:
            if own is not None:
                own.release()

    def _check_not_stranded(self) -> None:
        """A request without its call's slot, while this process's calls hold every slot of the route, would
        wait for ever (for a slot its own call holds): said at once, before anything is sent."""
        assert self._slots is not None  # only asked when the route has an in-flight limit
        with self._calls_lock:
            stranded = self._calls_here >= self._slots.size
        if stranded:
            raise ConfigError(
                f"route {self.route}: an HTTP request was sent without the in-flight slot of the call it belongs "
                f"to, while this process's calls hold all {self._slots.size} of the route's slots, so it would "
                "wait for ever. A provider or judge sends each request with its request's slots: "
                "HttpProvider.call(..., request=request), send(..., slots=request.call.slots), or "
                "extensions=with_options(None, slots=request.call.slots) (transport/requestopts.py)")

    def observe(self, status: int | None) -> None:
        """The status of a reply on this route (None: a network error), for the adaptive level."""
        if self.listener is not None:
            self.listener(status)

    # ------------------------------------------------------------------ per minute
    def rpm_wait(self) -> float:
        """Seconds until a request-per-minute token is free (0 when one is free now); takes none."""
        if not self.rpm:
            return 0.0
        with exclusive(self._rpm_lock):
            now = self.clock()
            starts = [t for t in self._read_starts() if t > now - self.window]
        if len(starts) < self.capacity:
            return 0.0
        return max(0.0, starts[len(starts) - self.capacity] + self.window - now)

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


def _nothing() -> None:
    """The release of a slot that was never needed (a route without an in-flight limit)."""


def limiter_for(state_dir: Path, route: str, rpm: float | None, inflight: int | None) -> RouteLimiter | None:
    """A limiter for ``route``, or None when it has no limits at all."""
    if not rpm and not inflight:
        return None
    return RouteLimiter(state_dir, route, rpm, inflight)
