"""Faults on a schedule, and a ledger of what each candidate's jobs cost, for the job fakes.

``Chaos(plan, every=N)`` queues the next fault of ``plan`` every N requests a
fake receives (deterministic: no randomness, so a failing run can be
replayed).  Each plan step is a label and the ``inject`` arguments, e.g.
``("503 on a poll", "status", {"status": 503, "path": "get_result"})``.  A
queued fault waits for the first request it matches, so ``taken()`` tells
which kinds really happened.

``JobLedger`` is what a fake knows about money: how many jobs each candidate
submitted, and which of them ended failed or expired (the only reasons a
candidate may be submitted again).  Candidates are keyed by what the request
carries (prompt and seed, or an input field).
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Hashable

from .base import Fault


@dataclass
class Chaos:
    plan: list[tuple[str, str, dict[str, Any]]]
    every: int
    requests: int = 0
    queued: list[tuple[str, Fault]] = field(default_factory=list)
    server: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def on_request(self, server, path: str) -> None:
        self.server = server
        with self._lock:
            self.requests += 1
            if self.requests % self.every:
                return
            label, kind, kwargs = self.plan[(self.requests // self.every - 1) % len(self.plan)]
        self.queued.append((label, server.inject(kind, **kwargs)))

    def taken(self) -> Counter:
        """How many faults of each label a request actually met."""
        return Counter(label for label, fault in self.queued if fault.count == 0)

    def stop(self) -> None:
        """No new faults, and the queued ones that no request met are dropped (a rerun should finish)."""
        self.every = 10 ** 9
        if self.server is not None:
            pending = [fault for _, fault in self.queued if fault.count > 0]
            with self.server._lock:
                self.server.faults = [f for f in self.server.faults if all(f is not p for p in pending)]


class JobLedger:
    """Submissions per candidate, and the jobs that ended failed or expired."""

    def __init__(self) -> None:
        self.submitted: Counter = Counter()
        self.failed: Counter = Counter()
        self.expired: Counter = Counter()
        self._lock = threading.Lock()

    def submit(self, candidate: Hashable) -> None:
        with self._lock:
            self.submitted[candidate] += 1

    def fail(self, candidate: Hashable) -> None:
        with self._lock:
            self.failed[candidate] += 1

    def expire(self, candidate: Hashable) -> None:
        with self._lock:
            self.expired[candidate] += 1

    def paid_twice(self) -> dict[Hashable, int]:
        """Candidates submitted more often than 1 + their failed and expired jobs explain."""
        return {key: count for key, count in self.submitted.items()
                if count > 1 + self.failed[key] + self.expired[key]}
