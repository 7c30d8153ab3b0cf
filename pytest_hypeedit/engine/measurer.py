"""The pixel signals of a candidate just bought, measured on a thread of their own while its verdict is asked.

A paid judge's request does not need the signals (engine/signals.py), and its reply takes seconds, during which
the CPU has nothing to do.  Measured in the call thread, between the generation's answer and the judge's
request, they were the largest part of what the client does there: when 64 calls in flight answer together on
two cores, the last of them asked its judge most of a second late, and every slot left idle meanwhile lengthens
the run (the timeline of bench/bench_providers.py).  So the purchase hands the preview to the ``Measurer`` and the
verdict takes the figures once its judge has answered (engine/verdicts.py ``measure_beside`` and
``measure_signals``).

Memory stays bounded: at most ``BACKLOG`` previews wait for the measurer (each at most 512 x 512 RGB, 0.75 MB);
past that a candidate is measured in its own thread at once, as before.  A preview is let go as soon as it is
measured: a candidate waiting for its judge holds a dictionary, not pixels.  Imports nothing of numpy or Pillow
(engine/means.py makes one at start-up).
"""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

#: Previews waiting to be measured at most; a burst of answers past it is measured in the call threads.
BACKLOG = 32


@dataclass(frozen=True)
class Measuring:
    """Signals being measured for the candidate whose bytes hash to ``of`` (its ``candidate_sha256``): a
    record replaced meanwhile by another process's purchase does not take them."""

    of: str | None
    pending: Future[dict[str, Any]]

    def result(self) -> dict[str, Any] | None:
        """The signals, waiting for them if need be; None when the measurer was shut down first."""
        try:
            return self.pending.result()
        except CancelledError:
            return None


class Measurer:
    """One background thread measuring signals in the order they were handed in (started on first use)."""

    def __init__(self, backlog: int = BACKLOG) -> None:
        self.backlog = backlog
        self._lock = threading.Lock()
        self._waiting = 0
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False

    def submit(self, measure: Callable[[], dict[str, Any]]) -> Future[dict[str, Any]] | None:
        """``measure`` run on the measurer's thread; None (the caller measures at once) when ``backlog`` are
        waiting already or the measurer is shut down."""
        with self._lock:
            if self._closed or self._waiting >= self.backlog:
                return None
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hypeedit-signals")
            self._waiting += 1
            pending = self._executor.submit(measure)
        pending.add_done_callback(self._measured)
        return pending

    def _measured(self, _: Future[dict[str, Any]]) -> None:
        with self._lock:
            self._waiting -= 1

    @property
    def waiting(self) -> int:
        with self._lock:
            return self._waiting

    def close(self) -> None:
        """Nothing more is measured here: what waits is cancelled (its candidates are measured from their files
        if they are judged after all), and the one being measured (milliseconds) is waited for, so no thread
        of the run is left running after it.  One that was, importing a module as a run in the same process
        ended, found ``sys.modules`` emptied for a moment (pytester puts it back that way) and imported the
        io module's C part afresh: every later ``BytesIO`` raised an ``UnsupportedOperation`` that
        ``io.UnsupportedOperation`` no longer caught, and Pillow could not save into memory for the rest of
        that process."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
