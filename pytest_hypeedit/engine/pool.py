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

A step starts only when its route's admission admits it (calls in flight, requests
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
leave does not wait for a 60 s call.

The pool is made of one state and its collaborators: ``JobBoard`` (engine/board.py: the jobs, the queues, the
counts, the one lock and the counting invariants), the ``Dispatcher`` and its call threads (engine/dispatch.py)
and the ``Finishers`` (engine/finishing.py), each given the board.  ``CandidatePool`` is the main thread's side.
Knows nothing of pytest (glue/pool_plugin.py is
the glue; glue/stopping.py the signals).
"""

from __future__ import annotations

import time
from typing import Callable, Iterable, TypeVar

from ..registry import ModelSpec
from ..tasks import Task
from .board import DEBUG_ENV, JobBoard, PoolState, fair_shares
from .dispatch import Dispatcher
from .finishing import Finishers
from .jobs import FINISHING, INLINE, MAIN, NEW, STOPPED, Entry, Job, LeftInFlight, NotStarted
from .limits import SlotSet
from .records import Record
from .routes import RouteAdmission
from .runner import Runner

T = TypeVar("T")

__all__ = ["DEBUG_ENV", "CandidatePool", "PoolState", "NotStarted", "LeftInFlight", "fair_shares"]


class CandidatePool:
    """The pool of one process (see the module docstring; the jobs' states and moves: engine/jobs.py).

    It owns the pool's state (``board``: the fields, the one lock, the counting invariants written in
    ``JobBoard``'s docstring) and hands it to its collaborators: the ``dispatcher`` (the dispatcher thread and
    the call threads) and the ``finishers``.  Its own methods are the main thread's side.
    """

    def __init__(self, runner: Runner, *, concurrency: int, admission_for: Callable[[ModelSpec], RouteAdmission],
                 judge_admissions: Callable[[], list[RouteAdmission]], slots: SlotSet | None = None,
                 source: Callable[[], Iterable[Entry]] | None = None,
                 should_stop: Callable[[], str | None] | None = None,
                 on_report: Callable[[PoolState], None] | None = None,
                 grace: float = 10.0, should_leave: Callable[[], bool] | None = None, ahead: int | None = None):
        self.runner, self.concurrency = runner, concurrency
        self.grace, self._should_leave = grace, should_leave
        self.board = JobBoard(concurrency=concurrency, slots=slots, run_id=runner.run_id, ahead=ahead)
        self.finishers = Finishers(self.board, runner)
        report = None if on_report is None else (lambda: on_report(self.state()))
        self.dispatcher = Dispatcher(self.board, runner, self.finishers, admission_for=admission_for, judge_admissions=judge_admissions,
                                     source=source, should_stop=should_stop, report=report)

    # ------------------------------------------------------------------ the main thread's side
    def start(self) -> "CandidatePool":
        self.dispatcher.start()
        return self

    def add(self, entries: Iterable[Entry]) -> None:
        """Plan candidates (in the order pytest will ask for them); known ones are ignored."""
        self.board.add_entries(entries)

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
                return self._settle_here(job, lambda: self.finishers.finish_job(job))
            if not job.done.wait(0.25):  # a timeout keeps Ctrl-C responsive and the live line moving
                if on_wait is not None:
                    on_wait()
                if self._grace_over():
                    raise LeftInFlight(f"left in flight: {self.board.stop_reason}, and its call did not end within "
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
        while time.monotonic() - self.board.last_activity < quiet and time.monotonic() < deadline:
            time.sleep(quiet / 2)

    def stop(self, reason: str) -> None:
        """No new step starts from now on (running steps finish, within the grace)."""
        self.board.stop(reason)

    def _grace_over(self) -> bool:
        """Stopped, and the grace is spent or the run is leaving now."""
        stopped_at = self.board.stopped_at
        if stopped_at is None:
            return False
        return time.monotonic() >= stopped_at + self.grace or bool(self._should_leave and self._should_leave())

    @property
    def stopping(self) -> str | None:
        return self.board.stop_reason

    def stopped_for(self) -> float | None:
        """Seconds since the pool was stopped; None while it is not."""
        stopped_at = self.board.stopped_at
        return None if stopped_at is None else time.monotonic() - stopped_at

    def shutdown(self, wait: bool = True) -> int:
        """Stop, wait for running steps until the grace (counted from the stop) is over or the run is leaving
        (``wait=False``: not at all), and end the threads; returns how many steps were still running (their
        calls are left: a journaled job is resumed by the next run, a call waiting for its reply is counted as
        possibly paid by it)."""
        board = self.board
        self.stop(board.stop_reason or "the session ended")
        with board.changed:
            while wait and board.running and not self._grace_over():
                board.changed.wait(0.1)
            left = board.running
            board.closed = True
            board.changed.notify_all()
            board.finish_ready.notify_all()
        self.dispatcher.end()
        if board.slots is not None:
            board.slots.withdraw_demand()  # the other processes share every slot from now on
        # a record being written is written whole (they call nothing paid); an endless grace (a --sequential
        # decision: glue/early_stop.py) waits as long as it takes: join(inf) raises OverflowError, join(None) waits
        patience = (None if self.grace == float("inf") else self.grace) if wait else 0
        self.finishers.join(patience)
        return left

    def state(self) -> PoolState:
        with self.board.lock:
            totals = self.board.totals.copy()
            planned, running = len(self.board.order), self.board.running
        admissions = tuple(admission.state() for admission in self.board.known_admissions())
        jobs, waiting, cost = self.runner.calls_in_flight()
        return PoolState(planned, totals["done"], running, totals["errors"], totals["refused"], totals["skipped"],
                         totals["spent"], admissions, jobs, waiting, cost)

    # ------------------------------------------------------------------ invariants
    def breaches(self) -> list[str]:
        """The counting invariants (``JobBoard``'s docstring) that do not hold now; empty when all do."""
        return self.board.breaches()

    def at_rest(self) -> list[str]:
        """After ``shutdown`` with nothing left running: what is still held (empty when every slot is back)."""
        board = self.board
        self.dispatcher.join(5)
        found = self.breaches()
        with board.lock:
            if board.running:
                found.append(f"{board.running} steps still running")
        if board.slots is not None and board.slots.taken_here():
            found.append(f"{board.slots.taken_here()} candidate slots not given back")
        found += [f"route {admission.route}: {admission.in_flight} calls still in flight"
                  for admission in self.board.known_admissions() if admission.in_flight]
        return found

    # ------------------------------------------------------------------ jobs
    def _claim_for_main(self, task: Task, spec: ModelSpec, repeat: int) -> Job:
        board = self.board
        with board.changed:
            job = board.jobs.get((task.split, spec.name, task.task_id, repeat)) or board.add(task, spec, repeat)
            assert job is not None  # add gives None only for a job already known, which get() found
            if job.index > board.asked_at:
                board.asked_at = job.index
                board.changed.notify_all()  # a generation held back by ``ahead`` moves on
                if board.finishing:
                    board.finish_ready.notify()  # and so does a finisher's lookahead
            if job.state == NEW:
                job.move(MAIN)  # not triaged yet: the main thread reads the disk itself
            return job

    def _take_inline(self, job: Job) -> bool:
        """An INLINE job no finisher has taken yet: the main thread takes it (FINISHING) and finishes it now."""
        with self.board.changed:
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
            return self._settle_here(job, lambda: self.finishers.finish_job(job))
        with self.board.changed:
            if self.board.stop_reason is not None:
                job.move(STOPPED)
                job.done.set()
            else:
                self.board.make_ready(job, plan, urgent=True)
                self.board.changed.notify_all()
        return None

    def _settle_here(self, job: Job, work: Callable[[], T]) -> T:
        """``work()`` on the main thread; if it fails, the job is settled with the error, so asking again gives
        the error again rather than waiting for nobody or doing the work twice."""
        try:
            return work()
        except Exception as exc:
            with self.board.changed:
                if not job.settled:
                    job.settle(error=exc)
                job.done.set()
            raise

    def _outcome(self, job: Job) -> Record:
        """The job's outcome, the same however often it is asked: a settled job keeps its record or error."""
        if self._take_inline(job):
            return self._settle_here(job, lambda: self.finishers.finish_job(job))
        if job.state == STOPPED:
            raise NotStarted(f"not started: {self.board.stop_reason or 'the run is stopping'}")
        if job.error is not None:
            raise job.error
        if job.record is None:  # pragma: no cover - a settled job always has one or the other
            raise RuntimeError(f"{job.label}: the pool settled it without a record (a bug of the pool)")
        return job.record
