"""The batch tier (``--tier batch``): one collector per model and process gathers the candidates in flight into
provider batches, and hands each line's answer back to the candidate waiting for it.  The collectors belong to the
run (``Collectors``, held by the run's ``Runtime``), not to the process: a later run in the same process starts
with none.

An adapter's ``generate()`` builds its candidate's line and calls ``Collector.buy`` (a new candidate) or
``Collector.resume`` (a line journaled by an earlier attempt); either blocks until the line's batch ended and
returns the line's ``Outcome``.  The collector's own thread does the provider calls of a batch, in this order,
so a kill at any point loses nothing and buys nothing twice (docs/reference/providers.md section 11):

    lines gathered for ``linger`` seconds (or until a limit of the input file is reached)
    -> input file uploaded                       (free: nothing is bought yet)
    -> every line journaled with the input file  (``Journal.submitted``: the record says which file holds it)
    -> batch created                             (bought: creating is not idempotent, so never sent twice)
    -> every line journaled with the batch id    (a later run polls this batch instead of creating one)
    -> polled with backoff until a final state, results read, each line handed to its caller

A line journaled with its input file but no batch id (a kill between the two) is *adopted* on resume: the
backend looks for the batch made from that file, and creates it only when there is none (``Backend.adopt``).

Each line ends one of three ways (``Outcome``): the provider's answer for it (an image, a refusal, an error of
that line), or ``missing`` (the batch ended without it: expired, cancelled, failed), with ``billed`` saying
whether the provider charges for it (OpenAI: unfinished requests are not; Gemini: an expired job returns nothing,
so nothing to pay for: the backends cite their rules).  The adapter maps these onto the sync path's outcomes.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from ..engine.journal import Journal
from ..errors import ProviderError

#: A batch route's candidates in flight (RunConfig.limits_for): they wait together for their batch, so the
#: route's usual in-flight limit (8) would make batches of 8.  --concurrency still caps the whole run.
BATCH_INFLIGHT = 100_000
#: Seconds the collector waits after the last line arrived for more to join its batch (``options.batch_linger_s``),
#: at most ten times as long after the first.
DEFAULT_LINGER = 5.0
#: Polls of a pending batch: quick at first, then every few minutes (``options.poll_s``, ``options.poll_max_s``
#: of the batch: ``batch_poll_s``, ``batch_poll_max_s``); the providers aim at hours (24 h window OpenAI, 48 h
#: Gemini), so a patient poll costs nothing and a minute's lag is nothing.
DEFAULT_POLL, DEFAULT_POLL_MAX = 5.0, 120.0
#: How long a candidate waits for its batch in one run (``options.batch_max_wait_s``): past it the line stays
#: journaled, and the next run resumes polling it.  48 h: past every provider's window.
DEFAULT_MAX_WAIT = 48 * 3600.0
SUBMITTED, RUNNING, DONE = "submitted", "running", "done"


@dataclass
class Outcome:
    """One line's end: ``reply`` (the provider's answer for the line, backend-shaped) or ``missing`` (the batch
    ended without it, ``billed`` saying whether it is charged all the same), and the batch it came from."""

    batch_id: str
    reply: Any = None
    missing: str | None = None  # why the batch did not return it ("expired", "cancelled", "failed: ...")
    billed: bool = False
    #: Why the line the batch returned for it cannot be read (too long, not JSON, named twice): it costs only
    #: itself, ``billed`` saying whether the provider charged for it (batch_results.py).
    problem: str | None = None


@dataclass
class Line:
    key: str  # unique within its batch, journaled: custom_id (OpenAI), metadata key (Gemini)
    body: Any  # what the backend writes for it
    size: int  # its bytes in the input file
    journal: Journal
    done: threading.Event = field(default_factory=threading.Event)
    outcome: Outcome | None = None
    error: BaseException | None = None

    def finish(self, outcome: Outcome | None = None, error: BaseException | None = None) -> None:
        self.outcome, self.error = outcome, error
        self.done.set()


@dataclass
class Status:
    state: str  # the provider's own word, for messages
    ended: bool
    running: bool = False


class Backend(Protocol):
    """One provider's batch API (openai_batch.py, gemini_batch.py)."""

    max_requests: int
    max_bytes: int

    def submit(self, lines: list[Line]) -> str:
        """Upload the input, journal every line with it, create the batch, journal the batch id; its id."""

    def adopt(self, job: dict[str, Any]) -> str:
        """The batch made from a journaled input (created now if it can be, else ""); its id."""

    def poll(self, batch_id: str) -> Status: ...

    def results(self, batch_id: str, status: Status) -> dict[str, Outcome]:
        """Every line of an ended batch by key; a line it does not name is missing (``missing_outcome``)."""

    def missing_outcome(self, batch_id: str, status: Status) -> Outcome: ...


@dataclass
class Watched:
    batch_id: str
    lines: dict[str, list[Line]] = field(default_factory=dict)
    state: str = SUBMITTED
    polls: int = 0
    next_poll: float = 0.0
    delays: Any = None


class Collector:
    """Gathers lines into batches and watches the batches until each line's caller has its answer."""

    def __init__(self, backend: Backend, *, what: str, linger: float = DEFAULT_LINGER,
                 poll: float = DEFAULT_POLL, poll_max: float = DEFAULT_POLL_MAX, max_wait: float = DEFAULT_MAX_WAIT,
                 clock: Callable[[], float] = time.monotonic, collectors: Collectors | None = None):
        self.backend, self.what, self.linger, self.clock = backend, what, linger, clock
        self.poll_first, self.poll_max, self.max_wait = poll, poll_max, max_wait
        self._queue: list[tuple[float, Line]] = []
        self._watched: dict[str, Watched] = {}
        self._adopted: dict[str, str] = {}  # journaled input file -> the batch made from it
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.counts = {"batches": 0, "polls": 0, "adopted": 0}
        self.done: list[int] = []  # the candidates of each batch that ended
        # the run's collectors, for its live line (a collector made alone, a unit test's, is in a set of its own)
        self.collectors = collectors if collectors is not None else Collectors()
        self.collectors.add(self)

    # ------------------------------------------------------------------ the callers' side
    def buy(self, line: Line) -> Outcome:
        with self._lock:
            self._queue.append((self.clock(), line))
            self._start()
            self._lock.notify_all()
        return self._wait(line)

    def resume(self, line: Line, job: dict[str, Any]) -> Outcome:
        """A line an earlier attempt journaled: its batch is polled again (adopted first when only its input
        file was journaled), never submitted again."""
        batch_id = job.get("batch_id")
        if not batch_id:
            batch_id = self._adopt(job)
            if not batch_id:  # the batch was never made and cannot be made now: nothing was billed
                return Outcome("", missing="never created", billed=False)
            line.journal.submitted(**{**job, "batch_id": batch_id})
        with self._lock:
            watched = self._watched.setdefault(batch_id, Watched(batch_id))
            watched.lines.setdefault(line.key, []).append(line)
            self._start()
            self._lock.notify_all()
        return self._wait(line)

    def _adopt(self, job: dict[str, Any]) -> str:
        source = str(job.get("display_name") or job.get("input_file_id"))
        with self._lock:  # the lines of one input file resume together: one of them adopts it for all
            if source not in self._adopted:
                self._adopted[source] = self.backend.adopt(job)
                self.counts["adopted"] += 1
            return self._adopted[source]

    def _wait(self, line: Line) -> Outcome:
        if not line.done.wait(self.max_wait):
            raise ProviderError(f"{self.what}: line {line.key} still waits for its batch after {self.max_wait:g} s; "
                                "it stays journaled and the next run polls the batch again", retryable=True)
        if line.error is not None:
            raise line.error
        assert line.outcome is not None
        return line.outcome

    # ------------------------------------------------------------------ the collector's thread
    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name=f"hypeedit-batch {self.what}", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._stopped or (not self._queue and not self._watched):
                    self._thread = None
                    return
                group = self._take_group()
            if group:
                self._submit(group)
            self._poll_due()
            with self._lock:
                self._lock.wait(timeout=self._sleep())

    def _take_group(self) -> list[Line]:
        """(Under the lock.)  The lines to submit now: the oldest has lingered long enough, or the queue fills
        an input file; at most one file's worth (requests and bytes)."""
        if not self._queue:
            return []
        full = self._full()
        now = self.clock()
        # quiet for ``linger`` since the last line came (more are still arriving otherwise), or the first has
        # waited ten lingers: a steady trickle still makes batches
        settled = now - self._queue[-1][0] >= self.linger or now - self._queue[0][0] >= 10 * self.linger
        if not full and not settled:
            return []
        group: list[Line] = []
        size = 0
        while self._queue and len(group) < self.backend.max_requests:
            line = self._queue[0][1]
            if group and size + line.size > self.backend.max_bytes:
                break
            group.append(self._queue.pop(0)[1])
            size += line.size
        return group

    def _full(self) -> bool:
        """(Under the lock.)  The queue fills an input file (requests or bytes): it goes now, lingering or not."""
        return len(self._queue) >= self.backend.max_requests or \
            sum(line.size for _, line in self._queue) >= self.backend.max_bytes

    def _submit(self, group: list[Line]) -> None:
        try:
            batch_id = self.backend.submit(group)
        except BaseException as exc:  # noqa: BLE001 - every caller of the group gets it: none may hang
            for line in group:
                line.finish(error=exc)
            return
        with self._lock:
            watched = self._watched.setdefault(batch_id, Watched(batch_id))
            for line in group:
                watched.lines.setdefault(line.key, []).append(line)
            self.counts["batches"] += 1

    def _poll_due(self) -> None:
        now = self.clock()
        with self._lock:
            due = [w for w in self._watched.values() if w.next_poll <= now]
        for watched in due:
            self._poll(watched)

    def _poll(self, watched: Watched) -> None:
        try:
            status = self.backend.poll(watched.batch_id)
            self.counts["polls"] += 1
            watched.polls += 1
            if status.ended:
                self._deliver(watched, status)
                return
        except BaseException as exc:  # noqa: BLE001 - a final error of a poll ends its lines (still journaled)
            if isinstance(exc, ProviderError) and exc.retryable:
                status = Status(watched.state, ended=False)
            else:
                self._end(watched, error=exc)
                return
        if watched.delays is None:
            watched.delays = _delays(self.poll_first, self.poll_max)
        watched.state = RUNNING if status.running else watched.state
        watched.next_poll = self.clock() + next(watched.delays)

    def _deliver(self, watched: Watched, status: Status) -> None:
        try:
            outcomes = self.backend.results(watched.batch_id, status)
            missing = self.backend.missing_outcome(watched.batch_id, status)
        except BaseException as exc:  # noqa: BLE001 - its lines stay journaled; the next attempt reads again
            self._end(watched, error=exc)
            return
        watched.state = DONE
        lines = self._let_go(watched)
        with self._lock:
            self.done.append(len(lines))
        for key, line in lines:
            line.finish(outcome=outcomes.get(key, missing))

    def _end(self, watched: Watched, *, error: BaseException) -> None:
        for _, line in self._let_go(watched):
            line.finish(error=error)

    def _let_go(self, watched: Watched) -> list[tuple[str, Line]]:
        """The batch's lines, and the batch no longer watched, in one step under the lock: a caller resuming a line
        of this batch meanwhile (another item of the run) adds it to the batch watched anew, polled again,
        rather than to lines being answered (a dict that grew while it was read failed every line of the batch)."""
        with self._lock:
            if self._watched.get(watched.batch_id) is watched:
                del self._watched[watched.batch_id]
            return [(key, line) for key, lines in watched.lines.items() for line in lines]

    def _sleep(self) -> float:
        """(Under the lock.)  Until the next thing to do: a line's linger ends, or a batch's poll is due."""
        now, times = self.clock(), []
        if self._stopped or self._full():
            # a line that filled the queue, or a stop, between this thread's look at the queue and this wait
            # notified nobody: without this the full batch waited out the linger (a minute at linger 60)
            return 0.01
        if self._queue:
            times.append(min(self._queue[-1][0] + self.linger, self._queue[0][0] + 10 * self.linger) - now)
        times += [w.next_poll - now for w in self._watched.values()]
        return max(0.01, min(times, default=1.0))

    def stop(self) -> None:
        """The process is done with this model: no more polls; a caller still waiting gets a retryable error (its
        line stays journaled when its batch was submitted, and the next run resumes it)."""
        with self._lock:
            self._stopped = True
            waiting = [line for _, line in self._queue]
            waiting += [line for w in self._watched.values() for lines in w.lines.values() for line in lines]
            self._queue, self._watched = [], {}
            self._lock.notify_all()
        for line in waiting:
            line.finish(error=ProviderError(f"{self.what}: line {line.key}: the run ended while it waited for its "
                                            "batch; the next run resumes it (a submitted batch is never submitted "
                                            "again)", retryable=True))
        self.collectors.remove(self)

    # ------------------------------------------------------------------ what the live line shows
    def snapshot(self) -> list[tuple[str, int]]:
        """(state, candidates) of each batch this collector holds: lines queued count as one submitted batch."""
        with self._lock:
            shown = [(SUBMITTED, len(self._queue))] if self._queue else []
            shown += [(DONE, n) for n in self.done]
            return shown + [(w.state, sum(len(v) for v in w.lines.values())) for w in self._watched.values()]


class Collectors:
    """The batch collectors of one run in this process that are not stopped, for its live line.  The run owns them
    (``Runtime.batches``, made with the run's runtime): a later run in the same process (pytester runs many) has
    its own, so a collector an earlier run left behind (one still watching a batch it could not finish) is never
    counted in it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: list[Collector] = []

    def add(self, collector: Collector) -> None:
        with self._lock:
            self._live.append(collector)

    def remove(self, collector: Collector) -> None:
        with self._lock:
            if collector in self._live:
                self._live.remove(collector)

    def tally(self) -> dict[str, list[int]]:
        """The run's batches in this process by state: ``{"submitted": [batches, candidates], "running": …,
        "done": …}``, for the live line (report/progress.py); empty when nothing is batched."""
        with self._lock:
            live = list(self._live)
        tally: dict[str, list[int]] = {SUBMITTED: [0, 0], RUNNING: [0, 0], DONE: [0, 0]}
        for collector in live:
            for state, candidates in collector.snapshot():
                tally[state][0] += 1
                tally[state][1] += candidates
        return tally if any(count for count, _ in tally.values()) else {}


def _delays(first: float, cap: float) -> Iterator[float]:
    return itertools.chain((first * 1.5 ** n for n in range(60) if first * 1.5 ** n < cap), itertools.repeat(cap))


def collector_for(backend: Backend, what: str, options: Any, collectors: Collectors) -> Collector:
    """A model's collector among the run's ``collectors``, its settings from the model's options: how long lines
    linger, how often batches are polled, how long a candidate waits in one run."""
    return Collector(backend, what=what, linger=float(options.get("batch_linger_s", DEFAULT_LINGER)),
                     poll=float(options.get("batch_poll_s", DEFAULT_POLL)),
                     poll_max=float(options.get("batch_poll_max_s", DEFAULT_POLL_MAX)),
                     max_wait=float(options.get("batch_max_wait_s", DEFAULT_MAX_WAIT)), collectors=collectors)
