"""The pool's threads (engine/pool.py): the dispatcher that starts steps and the call threads that run them.

``Dispatcher`` receives the pool's state (``JobBoard``, engine/board.py) and takes its one lock for every change;
each change of ``running`` or ``running_by_route`` is followed by ``JobBoard.check`` (the counting invariants).  The jobs'
states and their moves are engine/jobs.py; the sharing of the candidate slots between routes is
``JobBoard.fair_to_start``.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from typing import Callable, Iterable

from ..registry import ModelSpec
from .board import JobBoard
from .finishing import Finishers
from .jobs import DONE, GENERATE, RUNNING, TRIAGING, Entry, Job
from .limits import InFlightSlot
from .routes import RouteAdmission
from .runner import Runner

#: How often the dispatcher asks for new items, checks the stop signal and reports its state (seconds).
TICK = 0.05
REPORT_EVERY = 0.5
#: The longest the dispatcher sleeps with nothing to start (it is woken by every event of its own process).
IDLE = 0.2
#: How long the dispatcher waits before trying again when a route or slot it needs is held.
RETRY = 0.02

#: The slots a step holds: the admission each came from (None for the candidate slot) and the slot, which the step
#: carries to its HTTP requests (``Plan.slots``) and which is given back exactly once when the step ends.
Taken = list[tuple["RouteAdmission | None", InFlightSlot]]


class Dispatcher:
    """The dispatcher thread, which reads the disk ahead of pytest and starts every step a route and a candidate
    slot admit, and the call threads, which run the steps (one thread per running step, made as needed)."""

    def __init__(self, board: JobBoard, runner: Runner, finishers: Finishers, *,
                 admission_for: Callable[[ModelSpec], RouteAdmission], judge_admissions: Callable[[], list[RouteAdmission]],
                 source: Callable[[], Iterable[Entry]] | None = None,
                 should_stop: Callable[[], str | None] | None = None,
                 report: Callable[[], None] | None = None):
        self.board, self.runner, self.finishers = board, runner, finishers
        self._admission_for, self._judge_admissions = admission_for, judge_admissions
        self._source, self._should_stop, self._report = source, should_stop, report
        self._tasks: queue.SimpleQueue[tuple[Job, Taken] | None] = queue.SimpleQueue()  # None: a thread's end
        self.threads: list[threading.Thread] = []  # the call threads
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._dispatch_loop, name="hypeedit-dispatcher", daemon=True)
        self._thread.start()

    def end(self) -> None:
        """(The pool closed.)  Every call thread ends once its step is over."""
        for _ in self.threads:
            self._tasks.put(None)

    def join(self, timeout: float) -> None:
        for thread in self.threads:
            thread.join(timeout)

    # ------------------------------------------------------------------ the dispatcher
    def _dispatch_loop(self) -> None:
        try:
            self._dispatch()
        except BaseException as exc:  # a bug in the pool itself: fail every waiting item rather than hang
            self.board.fail_all(exc)
            raise

    def _dispatch(self) -> None:
        next_source = next_report = 0.0
        while True:
            now = time.monotonic()
            if now >= next_source:
                next_source = now + TICK
                self._poll_outside()
            if now >= next_report and self._report is not None:
                next_report = now + REPORT_EVERY
                self._report()
            with self.board.changed:
                if self.board.closed:
                    return
                stopping = self.board.stop_reason is not None
            more = False
            if stopping:
                self.board.drop_unstarted()
            else:
                more = self._triage_some()
            started, wait = (0, IDLE) if stopping else self._start_ready()
            with self.board.changed:
                if not (started or more or self.board.closed):
                    self.board.changed.wait(wait)

    def _poll_outside(self) -> None:
        if self._source is not None:
            self.board.add_entries(self._source())
        if self.board.slots is not None:
            with self.board.lock:
                unsettled = self.board.unsettled()
            self.board.slots.publish_demand(unsettled)  # outside the lock: a file write
        if self._should_stop is not None and self.board.stop_reason is None:
            reason = self._should_stop()
            if reason:
                self.board.stop(reason)

    def _triage_some(self, budget: int = 64) -> bool:
        """Read the disk for the next planned jobs, until enough paid work is queued to fill the slots;
        True when more jobs wait to be read."""
        for _ in range(budget):
            with self.board.changed:
                if self.board.queued_generations() >= 2 * self.board.concurrency:
                    return False
                job = self.board.next_new()
                if job is None:
                    return False
                job.move(TRIAGING)
            try:
                plan = self.runner.plan(job.task, job.spec, job.repeat)
            except Exception as exc:  # e.g. the judge cannot be built here: the item shows it
                with self.board.changed:
                    job.settle(error=exc)
                    job.done.set()
                continue
            with self.board.changed:
                if job.settled:  # the pool failed every job meanwhile (JobBoard.fail_all): that outcome stands
                    continue
                if plan.needs_generation or plan.needs_verdict:
                    self.board.make_ready(job, plan)
                else:
                    self.finishers.finish_later(job, plan)  # engine/finishing.py
                self.board.changed.notify_all()
        return True

    def _start_ready(self) -> tuple[int, float]:
        """Start every ready step that its route and a candidate slot admit; (started, seconds to wait)."""
        started, now, wait = 0, time.monotonic(), IDLE
        for queue_, admissions in self._queues_in_order():
            reason = next((admission.unreachable for admission in admissions if admission.unreachable), None)
            if reason is not None:
                self._end_unreachable(queue_, reason)
                continue
            while True:
                with self.board.changed:  # queue_[0] read under the lock: a worker thread may take it meanwhile
                    if not queue_ or self.board.running >= self.board.concurrency:
                        break
                    if queue_ is not self.board.judge and not self.board.fair_to_start(queue_[0].spec.route):
                        break  # the slots left are other routes' share; a finishing step wakes the dispatcher
                    if queue_ is not self.board.judge and not self.board.within_reach(queue_[0]):
                        break  # --sequential: pytest asking for the next item wakes the dispatcher
                    if queue_ is not self.board.judge and not self.board.within_share():
                        break  # the other processes' part of the slots; each has as much left to do
                taken = self._admit(admissions)
                if taken is None:
                    hints = [h for h in (g.wait_hint(now) for g in admissions) if h is not None]
                    wait = min(wait, min(hints) if hints else RETRY)
                    break
                with self.board.changed:
                    if not self.board.may_start(queue_):  # a stop, or another thread took the job checked above
                        self._release(taken)
                        break
                    job = queue_.popleft()
                    job.move(RUNNING)
                    self.board.running += 1
                    self.board.add_running(job.spec.route, +1)
                    self._submit(job, taken)
                    self.board.check()
                started += 1
            with self.board.changed:
                if self.board.running >= self.board.concurrency:
                    return started, wait
        return started, wait

    def _end_unreachable(self, queue_: deque[Job], reason: str) -> None:
        """A route whose first calls all failed to connect (its admission's breaker, engine/routes.py): its waiting
        candidates end at once with the breaker's one line, and none of their calls starts."""
        with self.board.changed:
            jobs = list(queue_)
            queue_.clear()
        for job in jobs:
            record = self.runner.unreachable(job.plan, reason)
            with self.board.changed:
                job.settle(record)
                self.board.count(record)
                job.done.set()
                self.board.changed.notify_all()

    def _queues_in_order(self) -> list[tuple[deque[Job], list[RouteAdmission]]]:
        """Judging first; then each route's generations, the route whose next item comes first first."""
        with self.board.changed:
            routes = sorted((q[0].index, route, q) for route, q in self.board.generate.items() if q)
            queues = [(self.board.judge, self._judge_admission_list())] if self.board.judge else []
            queues += [(q, [self._admission(q[0].spec)]) for _, _, q in routes]
        return queues

    def _admit(self, admissions: list[RouteAdmission]) -> Taken | None:
        """The route slots first, then a candidate slot; all or nothing."""
        taken = self._admit_routes(admissions)
        if taken is None:
            return None
        if self.board.slots is not None:
            slot = self.board.slots.try_take()
            if slot is None:
                self._release(taken)
                return None
            taken.append((None, slot))
        return taken

    def _admit_routes(self, admissions: list[RouteAdmission]) -> Taken | None:
        taken: Taken = []
        for admission in admissions:
            slot = admission.try_enter()
            if slot is None:
                self._release(taken)
                return None
            taken.append((admission, slot))
        return taken

    @staticmethod
    def _release(taken: Taken) -> None:
        """Give every slot back, each once, even when giving one back fails."""
        errors = []
        for _, slot in reversed(taken):
            try:
                slot.release()
            except BaseException as exc:  # noqa: BLE001 - the others are given back first, then it is raised
                errors.append(exc)
        if errors:
            raise errors[0]

    # ------------------------------------------------------------------ admissions
    def _admission(self, spec: ModelSpec) -> RouteAdmission:
        admission = self._admission_for(spec)
        self.board.admissions[id(admission)] = admission
        self.board.route_admissions[spec.route] = admission
        return admission

    def _judge_admission_list(self) -> list[RouteAdmission]:
        admissions = self._judge_admissions()
        for admission in admissions:
            self.board.admissions[id(admission)] = admission
        return admissions

    # ------------------------------------------------------------------ the workers
    def _submit(self, job: Job, taken: Taken) -> None:
        """(Under the lock, with the step counted in ``running``.)  Hand the step to a thread."""
        while len(self.threads) < self.board.running:  # one thread per running step, made as needed
            thread = threading.Thread(target=self._work, name=f"hypeedit-call-{len(self.threads)}", daemon=True)
            self.threads.append(thread)
            self.board.workers += 1
            thread.start()
        self._tasks.put((job, taken))

    def _work(self) -> None:
        try:
            self._work_steps()
        except BaseException as exc:  # a bug in the pool's own bookkeeping: fail every waiting item rather than hang
            self.board.fail_all(exc)
            raise

    def _work_steps(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            job: Job | None
            job, taken = task
            candidate = [entry for entry in taken if entry[0] is None]  # the candidate slot, kept between steps
            routes = [entry for entry in taken if entry[0] is not None]
            route = job.spec.route  # the route this thread's candidate slot is counted for
            try:
                while job is not None:
                    try:
                        self._run_step(job, routes)
                    finally:
                        self._release(routes)
                    self._finished_step(job)
                    job, routes = self._next_step_here(route)
                    route = job.spec.route if job is not None else route
            finally:
                with self.board.changed:  # counted free first, given back next: the slots held never fall below
                    self.board.add_running(route, -1)
                    self.board.running -= 1
                    self.board.check()
                self._release(candidate)
                with self.board.changed:
                    self.board.changed.notify_all()

    def _finished_step(self, job: Job) -> None:
        self.board.last_activity = time.monotonic()
        with self.board.changed:
            if job.state == DONE:  # only now: the route slots are back when pytest sees the result
                job.done.set()
            self.board.changed.notify_all()

    def _next_step_here(self, route: str) -> tuple[Job | None, Taken]:
        """The next step this thread may run at once, keeping its candidate slot: the verdict of the candidate
        it just generated, another verdict, or the next generation whose route admits it.  Handing it to the
        dispatcher instead would cost a thread switch and a slot given back and taken again, many times per
        second when calls come back together.  ``route`` is the route of the candidate it just finished."""
        for queue_, admissions in self._queues_in_order():
            with self.board.changed:
                if self.board.stop_reason is not None or self.board.closed:
                    return None, []
                if not queue_ or (queue_ is not self.board.judge
                                  and not (self.board.fair_to_start(queue_[0].spec.route, giving_up=route)
                                           and self.board.within_reach(queue_[0])
                                           and self.board.within_share(keeping=True))):
                    continue
            taken = self._admit_routes(admissions)
            if taken is None:
                continue
            with self.board.changed:
                if self.board.may_start(queue_):  # checked again: the lock was let go while the route admitted it
                    job = queue_.popleft()
                    job.move(RUNNING)
                    self.board.add_running(route, -1)
                    self.board.add_running(job.spec.route, +1)
                    self.board.check()
                    return job, taken
            self._release(taken)
        return None, []

    def _run_step(self, job: Job, routes: Taken) -> None:
        """Run the job's step; its requests carry the route slots taken for it (``Plan.slots``), so they take
        no second one, from whatever thread they are sent."""
        job.plan.slots = tuple(slot for _, slot in routes)
        try:
            if job.step == GENERATE:
                plan = self.runner.generate_step(job.plan)
                if plan.needs_verdict and self.runner.judge.routes:
                    with self.board.changed:
                        self.board.make_ready(job, plan)
                        self.board.changed.notify_all()
                    return
                record = self.runner.judge_step(plan) if plan.needs_verdict else self.runner.finish(plan)
            else:
                record = self.runner.judge_step(job.plan)
        except Exception as exc:  # a bug, not a call failure (the runner records those): show it on the item
            with self.board.changed:
                job.settle(error=exc)
            return
        with self.board.changed:
            job.settle(record)
            self.board.count(record)
