"""How a run stops: Ctrl-C and SIGTERM, the grace of the calls in flight, and what leaving costs.

A CI runner cancels a job with SIGINT, then SIGTERM a few seconds later, then
SIGKILL; a person presses Ctrl-C, then again.  Every process of a run (the
serial session, each xdist worker, the xdist controller) takes both signals
alike while its items run:

    first signal    stop: no new paid call starts in any process of the run (the stop file); the calls in
                    flight get the grace (GRACE_SECONDS, or $HYPEEDIT_STOP_GRACE_S) to finish and be saved,
                    and the item waiting for one waits no longer; then the run ends, interrupted
    second signal   leave now (a KeyboardInterrupt here, the leave file for the other processes): a journaled
                    job is resumed by the next run; a call sent whose reply has not come is lost, and the
                    next run counts it as possibly paid and buys it again (engine/journal.py)

Without the handler, SIGTERM ended the process at once.  Nothing journaled is
lost either way (a SIGKILL included): every paid request is in its record before
it is sent; what leaving early costs is replies, which the messages here count.
"""

from __future__ import annotations

import math
import os
import signal
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

from ..errors import ConfigError
from ..files import atomic_write_bytes

#: Seconds a process waits, once stopped, for calls in flight to finish and be saved.
GRACE_SECONDS = 10.0
GRACE_ENV = "HYPEEDIT_STOP_GRACE_S"
LEAVE_FILE = "leave"
SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None)
NAMES = {getattr(signal, "SIGINT", -1): "Ctrl-C", getattr(signal, "SIGTERM", -2): "SIGTERM"}


def grace_seconds() -> float:
    """The grace: $HYPEEDIT_STOP_GRACE_S (a CI runner that kills sooner than 10 s after its first signal, or a
    test), else GRACE_SECONDS."""
    text = os.environ.get(GRACE_ENV, "").strip()
    if not text:
        return GRACE_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{GRACE_ENV}={text!r}: give the seconds calls in flight may take to finish once a run "
                          f"is stopped, a number >= 0 (default {GRACE_SECONDS:g})")
    return value


class Stopper:
    """The SIGINT and SIGTERM handler of one process: ``on_stop(reason)`` the first time, when ``can_wait()``
    (there are calls to wait for, and no stop yet); a KeyboardInterrupt (leave now) otherwise."""

    def __init__(self, on_stop: Callable[[str], None], can_wait: Callable[[], bool]):
        self.on_stop, self.can_wait = on_stop, can_wait
        self.signals = 0
        self.leaving = False
        self._previous: dict[int, Any] = {}  # what signal.signal returned: a handler, SIG_DFL/SIG_IGN or None

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers (an in-process run from another thread)
        for signum in SIGNALS:
            try:
                self._previous[signum] = signal.signal(signum, self._handle)
            except (OSError, ValueError):  # pragma: no cover - a platform without the signal
                continue

    def uninstall(self) -> None:
        for signum, previous in self._previous.items():
            try:
                signal.signal(signum, previous)
            except (OSError, ValueError, TypeError):  # pragma: no cover
                continue
        self._previous.clear()

    def _handle(self, signum: int, frame: Any) -> None:
        self.signals += 1
        name = NAMES.get(signum, f"signal {signum}")
        if self.signals == 1 and not self.leaving and self.can_wait():
            self.on_stop(f"interrupted ({name})")
            return
        self.leaving = True
        raise KeyboardInterrupt(f"{name} again: leaving now")


def write_leave(folder: Path) -> None:
    """Tell every process of the run to stop waiting for its calls in flight."""
    path = folder / LEAVE_FILE
    if not path.exists():
        atomic_write_bytes(path, b"leave")


def leaving(folder: Path) -> bool:
    return (folder / LEAVE_FILE).exists()


# --------------------------------------------------------------------------- what leaving costs


def in_flight(statuses: Iterable[dict[str, Any]]) -> tuple[int, int, int, float]:
    """(calls in flight, journaled jobs a next run resumes, calls waiting for their reply, their worst-case price)
    summed over the processes' status files (glue/pool_plugin.py write_status)."""
    running = jobs = waiting = 0
    cost = 0.0
    for status in statuses:
        running += int(status.get("running") or 0)
        jobs += int(status.get("resumable") or 0)
        waiting += int(status.get("unanswered") or 0)
        cost += float(status.get("unanswered_cost") or 0.0)
    return running, jobs, waiting, cost


def stopping_line(running: int, jobs: int, waiting: int, cost: float, grace: float, where: str = "") -> str:
    """What the first signal does, and what a second one would cost (``where``: e.g. " in the workers")."""
    line = (f"hypeedit: stopping: no new call starts; {_calls(running)} in flight{where} get up to {grace:g} s to "
            "finish and be saved")
    costs = _costs(jobs, waiting, cost, leaving=False)
    return line + (f" (leaving now: {costs})" if costs else "") + "; Ctrl-C again or SIGTERM to leave now"


def left_line(running: int, jobs: int, waiting: int, cost: float) -> str:
    """What leaving cost, once the run leaves with calls in flight."""
    costs = _costs(jobs, waiting, cost, leaving=True)
    return f"hypeedit: left {_calls(running)} in flight" + (f": {costs}" if costs else "") + "; rerun to finish"


def _calls(count: int) -> str:
    return f"{count} call{'s' if count != 1 else ''}"


def _costs(jobs: int, waiting: int, cost: float, *, leaving: bool) -> str:
    parts = []
    if jobs:
        parts.append(f"{jobs} journaled job{'s' if jobs != 1 else ''} the next run resumes, not paid again")
    if waiting:
        would = "were" if leaving else "would be"
        parts.append(f"{_calls(waiting)} sent whose replies {would} lost: they may be paid (up to ${cost:.2f}); "
                     "the next run counts them as possibly paid and buys them again (--possibly-paid review holds "
                     "them)")
    return "; ".join(parts)


# --------------------------------------------------------------------------- the run's stop file
#: Written by the process that stops the run (-x, --maxfail, Ctrl-C, a --sequential decision: glue/early_stop.py),
#: read by every process of the run.
STOP_FILE = "stop"


def state_dir(config: Any) -> Path:
    """The run's state folder, from the run's runtime (glue/startup.py configure_runtime keeps it in the stash)."""
    from .stash import RUNTIME_KEY

    runtime = config.stash.get(RUNTIME_KEY, None)
    folder: Path | None = runtime.state_dir if runtime is not None else None
    if folder is None:  # pragma: no cover - startup always configures it
        raise RuntimeError("the run's state folder is not configured")
    return folder


def write_stop(config: Any, reason: str) -> None:
    """Tell every process of the run to start no new call."""
    path = state_dir(config) / STOP_FILE
    if not path.exists():
        atomic_write_bytes(path, reason.encode("utf-8"))


def read_stop(folder: Path) -> str | None:
    try:
        return (folder / STOP_FILE).read_text(encoding="utf-8") or "stopped"
    except OSError:
        return None
