"""The pool's state (engine/pool.py): every job, the queues, the counts, one lock over all of them, and the
counting invariants that hold whenever the lock is free.

The pool's collaborators each receive the one ``JobBoard``: the pool itself (the main thread: pytest asking for
results, stopping), the dispatcher and its call threads (engine/dispatch.py) and the finishers
(engine/finishing.py).  Each change of the counts is made here or under ``lock`` and followed by ``check``.
The jobs' states and their moves are engine/jobs.py.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Iterable, TypedDict

from ..registry import ModelSpec
from ..tasks import Task
from .call_ledger import spent_in_run
from .jobs import GENERATE, JUDGE, NEW, READY, RUNNING, STOPPED, Entry, Job, Key
from .limits import SlotSet
from .records import ERROR, REFUSED, SKIPPED, Record
from .routes import AdmissionState, RouteAdmission
from .runner import Plan

#: Set to 1: check the counting invariants after every change (``JobBoard``'s docstring); the tests set it.
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
    routes: tuple[AdmissionState, ...]
    #: Of the running steps: journaled jobs a next run resumes, paid calls sent and waiting for their reply
    #: (lost if the process left now), and those calls' worst-case price (Runner.calls_in_flight).
    resumable: int = 0
    unanswered: int = 0
    unanswered_cost: float = 0.0


class JobBoard:
    """The state one process's pool shares between its threads.  One lock (``lock``, which both conditions
    are made over) guards every field; the main thread, the dispatcher, the call threads and the finishers
    take it.  Counting invariants, true whenever the lock is free (``breaches`` lists the broken ones;
    ``check`` raises at the first after every change of the counts when ``HYPEEDIT_DEBUG_INVARIANTS=1``, as
    the test suite sets):

    - ``running`` (steps running: a thread holds a candidate slot for them) is between 0 and ``concurrency``,
      and never more than the call threads made (``workers``);
    - ``running_by_route`` counts those steps per route: every count is >= 0 and they sum to ``running``; a route holds
      at least as many as its jobs in RUNNING;
    - the jobs in READY are exactly the jobs in the queues (``judge``, ``generate``), each once;
    - the candidate slots this process holds (``SlotSet.held_here``) are at least ``running`` (a slot is
      taken before its step is counted and given back after it is not);
    - at rest (nothing running, the threads ended) no candidate slot and no route slot is held
      (``CandidatePool.at_rest``).
    """

    def __init__(self, *, concurrency: int, slots: SlotSet | None, run_id: str | None, ahead: int | None):
        self.concurrency, self.slots, self.run_id = concurrency, slots, run_id
        self.lock = threading.RLock()
        #: Woken by every event of the pool (a job queued, settled or asked for, a step ended, a stop).
        self.changed = threading.Condition(self.lock)
        #: The finishers' own (engine/finishing.py): woken when a job is queued for them or the lookahead
        #: moves, not by every event of the pool.
        self.finish_ready = threading.Condition(self.lock)
        self.jobs: dict[Key, Job] = {}
        self.order: list[Job] = []  # every job, in plan order (the order pytest asks)
        self.triage_at = 0  # the next position of ``order`` the dispatcher reads the disk for
        self.generate: dict[str, deque[Job]] = {}  # route -> jobs ready to generate, in plan order
        self.judge: deque[Job] = deque()  # jobs ready to judge
        self.finishing: deque[Job] = deque()  # INLINE jobs a finisher may write (engine/finishing.py)
        self.running = 0
        self.running_by_route: dict[str, int] = {}  # route -> candidates of that route whose step is running here
        self.workers = 0  # call threads made (engine/dispatch.py)
        self.route_admissions: dict[str, RouteAdmission] = {}  # route -> its admission, once a step of it was queued
        self.admissions: dict[int, RouteAdmission] = {}  # every admission the pool asked (generation and judge routes)
        # --sequential: no generation starts more than ``ahead`` items past the one pytest waits for, so a
        # decision taken from the items reported stops the buying within that many (None: no limit)
        self.ahead, self.asked_at = ahead, 0
        self.stop_reason: str | None = None
        self.stopped_at: float | None = None  # when the pool was stopped (monotonic)
        self.closed = False
        self.totals: Totals = {"done": 0, "errors": 0, "refused": 0, "skipped": 0, "spent": 0.0}
        self.last_activity = 0.0  # when a call thread last finished a step (monotonic)

    # ------------------------------------------------------------------ jobs
    def add_entries(self, entries: Iterable[Entry]) -> None:
        """Plan candidates (in the order pytest will ask for them); known ones are ignored."""
        with self.changed:
            added = sum(self.add(*entry) is not None for entry in entries)
            if added:
                self.changed.notify_all()

    def add(self, task: Task, spec: ModelSpec, repeat: int) -> Job | None:
        """(Under the lock.)  A new job at the end of the plan; None for one already known."""
        key = (task.split, spec.name, task.task_id, repeat)
        if key in self.jobs:
            return None
        job = Job(task, spec, repeat, len(self.order))
        self.jobs[key] = job
        self.order.append(job)
        return job

    def next_new(self) -> Job | None:
        """(Under the lock.)  The next job in plan order nobody has read the disk for."""
        while self.triage_at < len(self.order):
            job = self.order[self.triage_at]
            self.triage_at += 1
            if job.state == NEW:
                return job
        return None

    def make_ready(self, job: Job, plan: Plan, *, urgent: bool = False) -> None:
        """(Under the lock.)  READY, queued for its paid step (``urgent``: ahead of the others)."""
        job.move(READY)
        job.plan = plan
        if plan.needs_generation:
            job.step = GENERATE
            queue_ = self.generate.setdefault(job.spec.route, deque())
        else:
            job.step = JUDGE
            queue_ = self.judge
        queue_.appendleft(job) if urgent else queue_.append(job)

    def queued_generations(self) -> int:
        return sum(len(q) for q in self.generate.values())

    def count(self, record: Record) -> None:
        """(Under the lock.)  A settled job's outcome in the totals."""
        totals = self.totals
        totals["done"] += 1
        totals["errors"] += record.outcome == ERROR
        totals["refused"] += record.outcome == REFUSED
        totals["skipped"] += record.outcome == SKIPPED
        totals["spent"] += spent_in_run(record, self.run_id)  # every paid call this process settled for it

    def add_running(self, route: str, change: int) -> None:
        """(Under the lock.)  Count the candidates of each route whose step is running in this process."""
        self.running_by_route[route] = self.running_by_route.get(route, 0) + change

    # ------------------------------------------------------------------ stopping
    def stop(self, reason: str) -> None:
        """No new step starts from now on; the first reason stands."""
        with self.changed:
            if self.stop_reason is None:
                self.stop_reason, self.stopped_at = reason, time.monotonic()
            self.changed.notify_all()

    def drop_unstarted(self) -> None:
        """Every queued step is STOPPED: its paid call never starts."""
        with self.lock:
            for queue_ in [self.judge, *self.generate.values()]:
                while queue_:
                    job = queue_.popleft()
                    job.move(STOPPED)
                    job.done.set()

    def fail_all(self, exc: BaseException) -> None:
        """A bug in the pool itself: every job not settled fails with it, rather than its item hanging."""
        with self.lock:
            self.closed = True
            self.finish_ready.notify_all()
            for job in self.order:
                if not job.settled:  # (an INLINE job's done is set, yet it is not settled: it fails too)
                    job.settle(error=exc)
                job.done.set()

    # ------------------------------------------------------------------ who may start
    def may_start(self, queue_: deque[Job]) -> bool:
        """(Under the lock, just before a step is taken off ``queue_``.)  The checks made before its slots were
        taken hold still: the route and slot admission runs without the lock, and meanwhile the run may have
        stopped or another thread taken the job that was checked, leaving one past --sequential's reach first.
        Unchecked here, a decided --sequential run bought a dozen candidates past its reach under load."""
        if self.stop_reason is not None or self.closed or not queue_:
            return False
        return queue_ is self.judge or self.within_reach(queue_[0])

    def within_reach(self, job: Job) -> bool:
        """(Under the lock.)  May this generation start now: always, unless --sequential limits how far the
        pool buys past the item pytest waits for (``ahead``)."""
        return self.ahead is None or job.index < self.asked_at + self.ahead

    def fair_to_start(self, route: str, giving_up: str | None = None) -> bool:
        """(Under the lock.)  May a generation on ``route`` take a candidate slot, leaving every other route
        with work its fair share of the slots?  Without this, a fast route fills the pool, and a slow route
        limited to a few calls in flight waits for a slot each time one of its calls ends instead of starting
        the next at once: the run goes slower than its slowest route.  ``giving_up`` is the route of a slot
        this thread hands on (it is counted as free)."""
        by_route = dict(self.running_by_route)
        running = self.running
        if giving_up is not None:
            by_route[giving_up] = by_route.get(giving_up, 0) - 1
            running -= 1
        demands = {}
        for name in set(by_route) | set(self.generate):
            wanted = by_route.get(name, 0) + len(self.generate.get(name, ()))
            admission = self.route_admissions.get(name)
            if admission is not None:  # a candidate holds its slot while it is generated, then judged
                wanted = min(wanted, 2 * max(1, int(admission.level)))
            if wanted > 0:
                demands[name] = wanted
        if running <= 0:
            return True  # nothing of this process is running: waiting could only stall it
        shares = fair_shares(demands, self.concurrency)
        owed = sum(max(0, share - by_route.get(name, 0)) for name, share in shares.items() if name != route)
        return self.concurrency - running - 1 >= owed

    def within_share(self, *, keeping: bool = False) -> bool:
        """(Under the lock.)  May a generation take a candidate slot, by the run's sharing of the slots between
        its processes (``SlotSet.share``: each in proportion to what it has left to settle)?  ``keeping``: the
        thread asking already holds the slot it would use."""
        if self.slots is None:
            return True
        by_route, share = self.slots.taken_here(), self.slots.share()
        return by_route <= share if keeping else by_route < share

    def unsettled(self) -> int:
        """(Under the lock.)  The candidates this process still has to settle, as the other processes see it."""
        return len(self.order) - self.totals["done"]

    # ------------------------------------------------------------------ admissions
    def known_admissions(self) -> list[RouteAdmission]:
        with self.lock:
            return list(self.admissions.values())

    # ------------------------------------------------------------------ invariants
    def breaches(self, *, every_job: bool = True) -> list[str]:
        """The counting invariants (class docstring) that do not hold now; empty when all do.
        ``every_job=False``: the counts only (a walk over every job costs too much on a large run)."""
        with self.lock:
            return self._breaches(every_job)

    def _breaches(self, every_job: bool) -> list[str]:
        found, running, by_route = [], self.running, self.running_by_route
        if not 0 <= running <= self.concurrency or running > self.workers:
            found.append(f"{running} steps running, concurrency {self.concurrency}, {self.workers} threads")
        if any(count < 0 for count in by_route.values()) or sum(by_route.values()) != running:
            found.append(f"held per route {by_route} does not sum to the {running} steps running")
        if self.slots is not None and self.slots.taken_here() < running:
            found.append(f"{self.slots.taken_here()} candidate slots held for {running} steps running")
        if not every_job:
            return found
        for job in self.order:
            if job.state == RUNNING and by_route.get(job.spec.route, 0) < 1:
                found.append(f"{job.label} runs without its route {job.spec.route} counted")
        queued = [job for queue_ in (self.judge, *self.generate.values()) for job in queue_]
        ready = [job for job in self.order if job.state == READY]
        if len(queued) != len(set(map(id, queued))) or set(map(id, queued)) != set(map(id, ready)):
            found.append(f"{len(ready)} jobs READY, {len(queued)} queued")
        return found

    def check(self) -> None:
        """(Under the lock.)  In debug mode, raise at the first broken invariant (a bug of the pool)."""
        if os.environ.get(DEBUG_ENV) == "1":
            found = self._breaches(every_job=len(self.order) <= DEBUG_WALK_MAX)
            if found:
                raise AssertionError("pool invariants broken: " + "; ".join(found))


def fair_shares(demands: dict[str, int], total: int) -> dict[str, int]:
    """Max-min fair shares of ``total`` slots, in whole slots: a route that wants less than an even split gets
    what it wants, and the rest is split evenly among the others (water-filling).  Slots that do not split
    evenly are nobody's share (any route may take them): with fewer slots than routes, no route is owed one,
    so the first that can go goes rather than each waiting for a slot reserved for another."""
    level = 0  # the water level: the most slots any route is owed
    for candidate in sorted(set(demands.values())):
        if sum(min(d, candidate) for d in demands.values()) > total:
            break
        level = candidate
    else:
        return dict(demands)  # every demand fits
    below = [d for d in demands.values() if d <= level]
    above = len(demands) - len(below)
    level = max(level, (total - sum(below)) // above) if above else level
    return {name: min(d, level) for name, d in demands.items()}
