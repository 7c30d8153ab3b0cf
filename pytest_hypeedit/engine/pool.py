"""Many candidates in flight from one process: a pool that works ahead of pytest.

pytest runs items one at a time.  Each item waits in its setup for its own
candidate (``CandidatePool.result``) while the pool's threads already work on
the candidates pytest will ask for next, in that order.  So one process keeps
as many calls in flight as the providers allow, and pytest still sees one item
per candidate, in order, with the same outcomes.

    plan (the items this process will run, in order)
      -> triage: read the disk (Runner.plan): nothing to pay -> its record written (engine/finishing.py)
      -> ready to generate, one queue per route      -> generate step -> ready to judge
      -> ready to judge (before any new generation)  -> judge step    -> done

A step starts only when its route's gate admits it (calls in flight, requests
per minute, the adaptive level: engine/routes.py) *and* a candidate slot is
free (``concurrency`` across the whole run: a cross-process ``SlotSet``).  The
route is asked first, so a route at its limit never holds a slot another route
could use.  Judging comes before new generation, so started candidates finish
first and results reach pytest in order.

Stopping (``-x``, ``--maxfail``, Ctrl-C, SIGTERM): no new step starts; steps
already running finish and are written to disk by the runner; a candidate whose
paid step never started is ``NotStarted``.  The grace counts from the stop: the
item waiting for a running step waits until then at most (then it is
``LeftInFlight``), and ``shutdown`` waits for the rest until then, or until
``should_leave()`` says to go now.  Threads are daemons, so a process that must
leave does not wait for a 60 s call.  Knows nothing of pytest (glue/pool_plugin.py is
the glue; glue/stopping.py the signals).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable, TypedDict, TypeVar

from ..registry import ModelSpec
from ..tasks import Task
from .call_ledger import spent_in_run
from .dispatch import Dispatcher, fair_shares
from .finishing import Finishers
from .jobs import (
    FINISHING,
    GENERATE,
    INLINE,
    JUDGE,
    MAIN,
    NEW,
    READY,
    RUNNING,
    STOPPED,
    Entry,
    Job,
    Key,
    LeftInFlight,
    NotStarted,
)
from .limits import SlotSet
from .records import ERROR, REFUSED, SKIPPED, Record
from .routes import GateState, RouteGate
from .runner import Plan, Runner

T = TypeVar("T")

__all__ = ["CandidatePool", "PoolState", "NotStarted", "LeftInFlight", "fair_shares"]

#: Set to 1: check the counting invariants after every change (CandidatePool's docstring); the tests set it.
DEBUG_ENV = "HYPEEDIT_DEBUG_INVARIANTS"
#: Up to this many jobs, the debug check also walks every job (READY ones queued, RUNNING ones counted).
DEBUG_WALK_MAX = 500

class Totals(TypedDict):
    """The settled jobs' counts and what they spent."""

    done: int
    errors: int
    refused: int
    skipped: int
    spent: float


@dataclass(frozen=True)
class PoolState:
    """What the live line shows of one process's pool."""

    planned: int
    done: int
    running: int
    errors: int
    refused: int
    skipped: int
    spent: float
    routes: tuple[GateState, ...]
    #: Of the running steps: journaled jobs a next run resumes, paid calls sent and waiting for their reply
    #: (lost if the process left now), and those calls' worst-case price (Runner.calls_in_flight).
    resumable: int = 0
    unanswered: int = 0
    unanswered_cost: float = 0.0


class CandidatePool(Dispatcher, Finishers):
    """The pool of one process (see the module docstring; the jobs' states and moves: engine/jobs.py).

    The threads' side (the dispatcher, the workers, the sharing of slots) is engine/dispatch.py.  One lock
    (``_cond``) guards every field below; the main thread, the dispatcher and the workers take it.
    Counting invariants, true whenever the lock is free (``breaches`` lists the broken ones; checked after
    every change of the counts when ``HYPEEDIT_DEBUG_INVARIANTS=1``, as the test suite sets):

    - ``_running`` (steps running: a thread holds a candidate slot for them) is between 0 and ``concurrency``,
      and never more than the threads made;
    - ``_held`` counts those steps per route: every count is >= 0 and they sum to ``_running``; a route holds
      at least as many as its jobs in RUNNING;
    - the jobs in READY are exactly the jobs in the queues (``_judge``, ``_generate``), each once;
    - the candidate slots this process holds (``SlotSet.held_here``) are at least ``_running`` (a slot is
      taken before its step is counted and given back after it is not);
    - at rest (``at_rest``: nothing running, the threads ended) no candidate slot and no route slot is held.
    """

    def __init__(self, runner: Runner, *, concurrency: int, gate_for: Callable[[ModelSpec], RouteGate],
                 judge_gates: Callable[[], list[RouteGate]], slots: SlotSet | None = None,
                 source: Callable[[], Iterable[Entry]] | None = None,
                 should_stop: Callable[[], str | None] | None = None,
                 on_report: Callable[[PoolState], None] | None = None,
                 grace: float = 10.0, should_leave: Callable[[], bool] | None = None, ahead: int | None = None):
        self.runner, self.concurrency = runner, concurrency
        # --sequential: no generation starts more than ``ahead`` items past the one pytest waits for, so a
        # decision taken from the items reported stops the buying within that many (None: no limit)
        self._ahead, self._asked_at = ahead, 0
        self.grace, self._should_leave = grace, should_leave
        self._stopped_at: float | None = None
        self._gate_for, self._judge_gates = gate_for, judge_gates
        self._slots, self._source, self._should_stop, self._on_report = slots, source, should_stop, on_report
        self._jobs: dict[Key, Job] = {}
        self._order: list[Job] = []
        self._triage_at = 0
        self._generate: dict[str, deque[Job]] = {}  # route -> jobs ready to generate, in plan order
        self._judge: deque[Job] = deque()
        self._running = 0
        self._held: dict[str, int] = {}  # route -> candidates of that route whose step is running here
        self._route_gates: dict[str, RouteGate] = {}
        self._stop_reason: str | None = None
        self._closed = False
        lock = threading.RLock()  # the pool's one lock (as threading.Condition() makes it)
        self._cond = threading.Condition(lock)
        # The finishers wait on a condition of their own over the same lock: woken when a job is queued for
        # them or the lookahead moves, not by every event of the pool (engine/finishing.py)
        self._finish_ready = threading.Condition(lock)
        self._tasks = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._finishing: deque[Job] = deque()  # INLINE jobs a finisher may write (engine/finishing.py)
        self._finishers: list[threading.Thread] = []
        self._dispatcher: threading.Thread | None = None
        self._totals: Totals = {"done": 0, "errors": 0, "refused": 0, "skipped": 0, "spent": 0.0}
        self._gates: dict[int, RouteGate] = {}
        self._last_activity = 0.0  # when a worker last finished a step (monotonic)

    # ------------------------------------------------------------------ the main thread's side
    def start(self) -> "CandidatePool":
        self._dispatcher = threading.Thread(target=self._dispatch_loop, name="hypeedit-dispatcher", daemon=True)
        self._dispatcher.start()
        return self

    def add(self, entries: Iterable[Entry]) -> None:
        """Plan candidates (in the order pytest will ask for them); known ones are ignored."""
        with self._cond:
            added = sum(self._add(*entry) is not None for entry in entries)
            if added:
                self._cond.notify_all()

    def result(self, task: Task, spec: ModelSpec, repeat: int,
               on_wait: Callable[[], None] | None = None) -> Record:
        """The candidate's record once it is done (blocks); pytest's item calls this in its setup."""
        job = self._claim_for_main(task, spec, repeat)
        if job.state == MAIN:
            record = self._triage_here(job)
            if record is not None:
                return record
        if job.settled and job.done.is_set():  # asked again (a rerun of the item): the same outcome
            return self._outcome(job)
        while True:
            if self._take_inline(job):  # nothing to pay and no finisher on it (yet): finished here, now
                return self._settle_here(job, lambda: self.finish_job(job))
            if not job.done.wait(0.25):  # a timeout keeps Ctrl-C responsive and the live line moving
                if on_wait is not None:
                    on_wait()
                if self._grace_over():
                    raise LeftInFlight(f"left in flight: {self._stop_reason}, and its call did not end within "
                                       f"the {self.grace:g} s grace (its record says what the next run does with it)")
            elif job.settled:
                break
        self._let_calls_go_first()
        return self._outcome(job)

    def _let_calls_go_first(self, quiet: float = 0.01, most: float = 0.2) -> None:
        """While calls are coming back (a step finished in the last ``quiet`` seconds), pytest's reporting of
        this item waits, up to ``most``: the threads turning answers into the next requests share the
        interpreter with it, and reporting is the one that can wait."""
        deadline = time.monotonic() + most
        while time.monotonic() - self._last_activity < quiet and time.monotonic() < deadline:
            time.sleep(quiet / 2)

    def stop(self, reason: str) -> None:
        """No new step starts from now on (running steps finish, within the grace)."""
        with self._cond:
            if self._stop_reason is None:
                self._stop_reason, self._stopped_at = reason, time.monotonic()
            self._cond.notify_all()

    def _grace_over(self) -> bool:
        """Stopped, and the grace is spent or the run is leaving now."""
        if self._stopped_at is None:
            return False
        return time.monotonic() >= self._stopped_at + self.grace or bool(self._should_leave and self._should_leave())

    @property
    def stopping(self) -> str | None:
        return self._stop_reason

    def stopped_for(self) -> float | None:
        """Seconds since the pool was stopped; None while it is not."""
        return None if self._stopped_at is None else time.monotonic() - self._stopped_at

    def shutdown(self, wait: bool = True) -> int:
        """Stop, wait for running steps until the grace (counted from the stop) is over or the run is leaving
        (``wait=False``: not at all), and end the threads; returns how many steps were still running (their
        calls are left: a journaled job is resumed by the next run, a call waiting for its reply is counted as
        possibly paid by it)."""
        self.stop(self._stop_reason or "the session ended")
        with self._cond:
            while wait and self._running and not self._grace_over():
                self._cond.wait(0.1)
            left = self._running
            self._closed = True
            self._cond.notify_all()
            self._finish_ready.notify_all()
        for _ in self._threads:
            self._tasks.put(None)
        # a record being written is written whole (they call nothing paid); an endless grace (a --sequential
        # decision: glue/early_stop.py) waits as long as it takes: join(inf) raises OverflowError, join(None) waits
        patience = (None if self.grace == float("inf") else self.grace) if wait else 0
        for finisher in self._finishers:
            finisher.join(patience)
        return left

    def state(self) -> PoolState:
        with self._cond:
            totals = self._totals.copy()
            planned, running = len(self._order), self._running
        gates = tuple(gate.state() for gate in self._known_gates())
        jobs, waiting, cost = self.runner.calls_in_flight()
        return PoolState(planned, totals["done"], running, totals["errors"], totals["refused"], totals["skipped"],
                         totals["spent"], gates, jobs, waiting, cost)

    # ------------------------------------------------------------------ invariants
    def breaches(self) -> list[str]:
        """The counting invariants (class docstring) that do not hold now; empty when all do."""
        with self._cond:
            return self._breaches()

    def _breaches(self, *, every_job: bool = True) -> list[str]:
        """``every_job=False``: the counts only (a walk over every job costs too much on a large run)."""
        found, running, held = [], self._running, self._held
        if not 0 <= running <= self.concurrency or running > len(self._threads):
            found.append(f"{running} steps running, concurrency {self.concurrency}, {len(self._threads)} threads")
        if any(count < 0 for count in held.values()) or sum(held.values()) != running:
            found.append(f"held per route {held} does not sum to the {running} steps running")
        if self._slots is not None and self._slots.held_here() < running:
            found.append(f"{self._slots.held_here()} candidate slots held for {running} steps running")
        if not every_job:
            return found
        for job in self._order:
            if job.state == RUNNING and held.get(job.spec.route, 0) < 1:
                found.append(f"{job.label} runs without its route {job.spec.route} counted")
        queued = [job for queue_ in (self._judge, *self._generate.values()) for job in queue_]
        ready = [job for job in self._order if job.state == READY]
        if len(queued) != len(set(map(id, queued))) or set(map(id, queued)) != set(map(id, ready)):
            found.append(f"{len(ready)} jobs READY, {len(queued)} queued")
        return found

    def _check(self) -> None:
        """(Under the lock.)  In debug mode, raise at the first broken invariant (a bug of the pool)."""
        if os.environ.get(DEBUG_ENV) == "1":
            found = self._breaches(every_job=len(self._order) <= DEBUG_WALK_MAX)
            if found:
                raise AssertionError("pool invariants broken: " + "; ".join(found))

    def at_rest(self) -> list[str]:
        """After ``shutdown`` with nothing left running: what is still held (empty when every slot is back)."""
        for thread in self._threads:
            thread.join(5)
        found = self.breaches()
        with self._cond:
            if self._running:
                found.append(f"{self._running} steps still running")
        if self._slots is not None and self._slots.held_here():
            found.append(f"{self._slots.held_here()} candidate slots not given back")
        found += [f"route {gate.route}: {gate.in_flight} calls still in flight"
                  for gate in self._known_gates() if gate.in_flight]
        return found

    # ------------------------------------------------------------------ jobs
    def _add(self, task: Task, spec: ModelSpec, repeat: int) -> Job | None:
        key = (task.split, spec.name, task.task_id, repeat)
        if key in self._jobs:
            return None
        job = Job(task, spec, repeat, len(self._order))
        self._jobs[key] = job
        self._order.append(job)
        return job

    def _claim_for_main(self, task: Task, spec: ModelSpec, repeat: int) -> Job:
        with self._cond:
            job = self._jobs.get((task.split, spec.name, task.task_id, repeat)) or self._add(task, spec, repeat)
            assert job is not None  # _add gives None only for a job already known, which get() found
            if job.index > self._asked_at:
                self._asked_at = job.index
                self._cond.notify_all()  # a generation held back by ``ahead`` moves on
                if self._finishing:
                    self._finish_ready.notify()  # and so does a finisher's lookahead
            if job.state == NEW:
                job.move(MAIN)  # not triaged yet: the main thread reads the disk itself
            return job

    def _take_inline(self, job: Job) -> bool:
        """An INLINE job no finisher has taken yet: the main thread takes it (FINISHING) and finishes it now."""
        with self._cond:
            if job.state != INLINE:
                return False
            job.move(FINISHING)
            return True

    def _triage_here(self, job: Job) -> Record | None:
        """The main thread's own triage of a job the pool has not reached: finish it at once when nothing
        is to be paid, else hand it to the pool ahead of everything else.  A triage that fails settles the
        job with its error, so asking again gives the error again rather than waiting for nobody."""
        plan = self._settle_here(job, lambda: self.runner.plan(job.task, job.spec, job.repeat))
        if not (plan.needs_generation or plan.needs_verdict):
            job.plan = plan
            return self._settle_here(job, lambda: self.finish_job(job))
        with self._cond:
            if self._stop_reason is not None:
                job.move(STOPPED)
                job.done.set()
            else:
                self._make_ready(job, plan, urgent=True)
                self._cond.notify_all()
        return None

    def _settle_here(self, job: Job, work: Callable[[], T]) -> T:
        """``work()`` on the main thread; if it fails, the job is settled with the error, so asking again gives
        the error again rather than waiting for nobody or doing the work twice."""
        try:
            return work()
        except Exception as exc:
            with self._cond:
                if not job.settled:
                    job.settle(error=exc)
                job.done.set()
            raise

    def _outcome(self, job: Job) -> Record:
        """The job's outcome, the same however often it is asked: a settled job keeps its record or error."""
        if self._take_inline(job):
            return self._settle_here(job, lambda: self.finish_job(job))
        if job.state == STOPPED:
            raise NotStarted(f"not started: {self._stop_reason or 'the run is stopping'}")
        if job.error is not None:
            raise job.error
        if job.record is None:  # pragma: no cover - a settled job always has one or the other
            raise RuntimeError(f"{job.label}: the pool settled it without a record (a bug of the pool)")
        return job.record

    def _make_ready(self, job: Job, plan: Plan, *, urgent: bool = False) -> None:
        job.move(READY)
        job.plan = plan
        if plan.needs_generation:
            job.step = GENERATE
            queue_ = self._generate.setdefault(job.spec.route, deque())
        else:
            job.step = JUDGE
            queue_ = self._judge
        queue_.appendleft(job) if urgent else queue_.append(job)

    def _count(self, record: Record) -> None:
        totals = self._totals
        totals["done"] += 1
        totals["errors"] += record.outcome == ERROR
        totals["refused"] += record.outcome == REFUSED
        totals["skipped"] += record.outcome == SKIPPED
        totals["spent"] += spent_in_run(record, self.runner.run_id)  # every paid call this process settled for it
