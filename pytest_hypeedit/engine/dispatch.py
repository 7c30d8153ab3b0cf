"""The pool's threads (engine/pool.py): the dispatcher that starts steps, the workers that run them, and the
sharing of the candidate slots between routes.

``Dispatcher`` is the half of ``CandidatePool`` that runs off the main thread; it shares the pool's fields and
its one lock (``_cond``), and keeps the counting invariants written in ``CandidatePool``'s docstring (each
change of ``_running`` or ``_held`` is followed by ``_check``).  The jobs' states and their moves are
engine/jobs.py.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Callable, Iterable

from ..registry import ModelSpec
from .jobs import DONE, GENERATE, NEW, RUNNING, STOPPED, TRIAGING, Entry, Job
from .limits import InFlightSlot, SlotSet
from .routes import RouteGate

if TYPE_CHECKING:
    from .pool import PoolState
    from .records import Record
    from .runner import Plan, Runner

#: How often the dispatcher asks for new items, checks the stop signal and reports its state (seconds).
TICK = 0.05
REPORT_EVERY = 0.5
#: The longest the dispatcher sleeps with nothing to start (it is woken by every event of its own process).
IDLE = 0.2
#: How long the dispatcher waits before trying again when a route or slot it needs is held.
RETRY = 0.02

#: The slots a step holds: the gate each came from (None for the candidate slot) and the slot, which the step
#: carries to its HTTP requests (``Plan.slots``) and which is given back exactly once when the step ends.
Taken = list[tuple["RouteGate | None", InFlightSlot]]


class Dispatcher:
    """The threads' half of the pool; every field is made by ``CandidatePool.__init__``."""

    runner: "Runner"
    concurrency: int
    _cond: threading.Condition
    _finish_ready: threading.Condition  # the finishers' (engine/finishing.py), over _cond's lock
    _order: list[Job]
    _triage_at: int
    _generate: dict[str, deque[Job]]
    _judge: deque[Job]
    _running: int
    _held: dict[str, int]
    _route_gates: dict[str, RouteGate]
    _gates: dict[int, RouteGate]
    _stop_reason: str | None
    _closed: bool
    _tasks: queue.SimpleQueue[tuple[Job, Taken] | None]  # None: a worker's signal to end
    _threads: list[threading.Thread]
    _slots: SlotSet | None
    _source: Callable[[], Iterable[Entry]] | None
    _should_stop: Callable[[], str | None] | None
    _on_report: Callable[[PoolState], None] | None
    _gate_for: Callable[[ModelSpec], RouteGate]
    _judge_gates: Callable[[], list[RouteGate]]
    _last_activity: float
    _ahead: int | None
    _asked_at: int

    if TYPE_CHECKING:  # CandidatePool's methods the threads call: declared for the type checker only
        def state(self) -> PoolState: ...
        def add(self, entries: Iterable[Entry]) -> None: ...
        def stop(self, reason: str) -> None: ...
        def _check(self) -> None: ...
        def _make_ready(self, job: Job, plan: Plan, *, urgent: bool = False) -> None: ...
        def _count(self, record: Record) -> None: ...
        def _finish_later(self, job: Job, plan: Plan) -> None: ...

    # ------------------------------------------------------------------ the dispatcher
    def _dispatch_loop(self) -> None:
        try:
            self._dispatch()
        except BaseException as exc:  # a bug in the pool itself: fail every waiting item rather than hang
            self._fail_all(exc)
            raise

    def _dispatch(self) -> None:
        next_source = next_report = 0.0
        while True:
            now = time.monotonic()
            if now >= next_source:
                next_source = now + TICK
                self._poll_outside()
            if now >= next_report and self._on_report is not None:
                next_report = now + REPORT_EVERY
                self._on_report(self.state())
            with self._cond:
                if self._closed:
                    return
                stopping = self._stop_reason is not None
            more = False
            if stopping:
                self._drop_unstarted()
            else:
                more = self._triage_some()
            started, wait = (0, IDLE) if stopping else self._start_ready()
            with self._cond:
                if not (started or more or self._closed):
                    self._cond.wait(wait)

    def _fail_all(self, exc: BaseException) -> None:
        with self._cond:
            self._closed = True
            self._finish_ready.notify_all()
            for job in self._order:
                if not job.settled:  # (an INLINE job's done is set, yet it is not settled: it fails too)
                    job.settle(error=exc)
                job.done.set()

    def _poll_outside(self) -> None:
        if self._source is not None:
            self.add(self._source())
        if self._should_stop is not None and self._stop_reason is None:
            reason = self._should_stop()
            if reason:
                self.stop(reason)

    def _triage_some(self, budget: int = 64) -> bool:
        """Read the disk for the next planned jobs, until enough paid work is queued to fill the slots;
        True when more jobs wait to be read."""
        for _ in range(budget):
            with self._cond:
                if self._queued_generations() >= 2 * self.concurrency:
                    return False
                job = self._next_new()
                if job is None:
                    return False
                job.move(TRIAGING)
            try:
                plan = self.runner.plan(job.task, job.spec, job.repeat)
            except Exception as exc:  # e.g. the judge cannot be built here: the item shows it
                with self._cond:
                    job.settle(error=exc)
                    job.done.set()
                continue
            with self._cond:
                if job.settled:  # the pool failed every job meanwhile (_fail_all): that outcome stands
                    continue
                if plan.needs_generation or plan.needs_verdict:
                    self._make_ready(job, plan)
                else:
                    self._finish_later(job, plan)  # engine/finishing.py
                self._cond.notify_all()
        return True

    def _next_new(self) -> Job | None:
        while self._triage_at < len(self._order):
            job = self._order[self._triage_at]
            self._triage_at += 1
            if job.state == NEW:
                return job
        return None

    def _queued_generations(self) -> int:
        return sum(len(q) for q in self._generate.values())

    def _drop_unstarted(self) -> None:
        with self._cond:
            for queue_ in [self._judge, *self._generate.values()]:
                while queue_:
                    job = queue_.popleft()
                    job.move(STOPPED)
                    job.done.set()

    def _start_ready(self) -> tuple[int, float]:
        """Start every ready step that its route and a candidate slot admit; (started, seconds to wait)."""
        started, now, wait = 0, time.monotonic(), IDLE
        for queue_, gates in self._queues_in_order():
            reason = next((gate.unreachable for gate in gates if gate.unreachable), None)
            if reason is not None:
                self._end_unreachable(queue_, reason)
                continue
            while True:
                with self._cond:  # queue_[0] read under the lock: a worker thread may take it meanwhile
                    if not queue_ or self._running >= self.concurrency:
                        break
                    if queue_ is not self._judge and not self._fair_to_start(queue_[0].spec.route):
                        break  # the slots left are other routes' share; a finishing step wakes the dispatcher
                    if queue_ is not self._judge and not self._within_reach(queue_[0]):
                        break  # --sequential: pytest asking for the next item wakes the dispatcher
                taken = self._admit(gates)
                if taken is None:
                    hints = [h for h in (g.wait_hint(now) for g in gates) if h is not None]
                    wait = min(wait, min(hints) if hints else RETRY)
                    break
                with self._cond:
                    if not self._may_start(queue_):  # a stop, or another thread took the job checked above
                        self._release(taken)
                        break
                    job = queue_.popleft()
                    job.move(RUNNING)
                    self._running += 1
                    self._hold(job.spec.route, +1)
                    self._submit(job, taken)
                    self._check()
                started += 1
            with self._cond:
                if self._running >= self.concurrency:
                    return started, wait
        return started, wait

    def _end_unreachable(self, queue_: deque[Job], reason: str) -> None:
        """A route whose first calls all failed to connect (its gate's breaker, engine/routes.py): its waiting
        candidates end at once with the breaker's one line, and none of their calls starts."""
        with self._cond:
            jobs = list(queue_)
            queue_.clear()
        for job in jobs:
            record = self.runner.unreachable(job.plan, reason)
            with self._cond:
                job.settle(record)
                self._count(record)
                job.done.set()
                self._cond.notify_all()

    def _queues_in_order(self) -> list[tuple[deque[Job], list[RouteGate]]]:
        """Judging first; then each route's generations, the route whose next item comes first first."""
        with self._cond:
            routes = sorted((q[0].index, route, q) for route, q in self._generate.items() if q)
            queues = [(self._judge, self._judge_gate_list())] if self._judge else []
            queues += [(q, [self._gate(q[0].spec)]) for _, _, q in routes]
        return queues

    def _admit(self, gates: list[RouteGate]) -> Taken | None:
        """The route slots first, then a candidate slot; all or nothing."""
        taken = self._admit_routes(gates)
        if taken is None:
            return None
        if self._slots is not None:
            slot = self._slots.try_take()
            if slot is None:
                self._release(taken)
                return None
            taken.append((None, slot))
        return taken

    def _admit_routes(self, gates: list[RouteGate]) -> Taken | None:
        taken: Taken = []
        for gate in gates:
            slot = gate.try_enter()
            if slot is None:
                self._release(taken)
                return None
            taken.append((gate, slot))
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

    # ------------------------------------------------------------------ gates
    def _gate(self, spec: ModelSpec) -> RouteGate:
        gate = self._gate_for(spec)
        self._gates[id(gate)] = gate
        self._route_gates[spec.route] = gate
        return gate

    def _judge_gate_list(self) -> list[RouteGate]:
        gates = self._judge_gates()
        for gate in gates:
            self._gates[id(gate)] = gate
        return gates

    def _known_gates(self) -> list[RouteGate]:
        return list(self._gates.values())

    # ------------------------------------------------------------------ the workers
    def _submit(self, job: Job, taken: Taken) -> None:
        """(Under the lock, with the step counted in ``_running``.)  Hand the step to a thread."""
        while len(self._threads) < self._running:  # one thread per running step, made as needed
            thread = threading.Thread(target=self._work, name=f"hypeedit-call-{len(self._threads)}", daemon=True)
            self._threads.append(thread)
            thread.start()
        self._tasks.put((job, taken))

    def _work(self) -> None:
        try:
            self._work_steps()
        except BaseException as exc:  # a bug in the pool's own bookkeeping: fail every waiting item rather than hang
            self._fail_all(exc)
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
                with self._cond:  # counted free first, given back next: the slots held never fall below
                    self._hold(route, -1)
                    self._running -= 1
                    self._check()
                self._release(candidate)
                with self._cond:
                    self._cond.notify_all()

    def _finished_step(self, job: Job) -> None:
        self._last_activity = time.monotonic()
        with self._cond:
            if job.state == DONE:  # only now: the route slots are back when pytest sees the result
                job.done.set()
            self._cond.notify_all()

    def _next_step_here(self, route: str) -> tuple[Job | None, Taken]:
        """The next step this thread may run at once, keeping its candidate slot: the verdict of the candidate
        it just generated, another verdict, or the next generation whose route admits it.  Handing it to the
        dispatcher instead would cost a thread switch and a slot given back and taken again, many times per
        second when calls come back together.  ``route`` is the route of the candidate it just finished."""
        for queue_, gates in self._queues_in_order():
            with self._cond:
                if self._stop_reason is not None or self._closed:
                    return None, []
                if not queue_ or (queue_ is not self._judge
                                  and not (self._fair_to_start(queue_[0].spec.route, giving_up=route)
                                           and self._within_reach(queue_[0]))):
                    continue
            taken = self._admit_routes(gates)
            if taken is None:
                continue
            with self._cond:
                if self._may_start(queue_):  # checked again: the lock was let go while the route admitted it
                    job = queue_.popleft()
                    job.move(RUNNING)
                    self._hold(route, -1)
                    self._hold(job.spec.route, +1)
                    self._check()
                    return job, taken
            self._release(taken)
        return None, []

    def _may_start(self, queue_: deque[Job]) -> bool:
        """(Under the lock, just before a step is taken off ``queue_``.)  The checks made before its slots were
        taken hold still: the route and slot admission runs without the lock, and meanwhile the run may have
        stopped or another thread taken the job that was checked, leaving one past --sequential's reach first.
        Unchecked here, a decided --sequential run bought a dozen candidates past its reach under load."""
        if self._stop_reason is not None or self._closed or not queue_:
            return False
        return queue_ is self._judge or self._within_reach(queue_[0])

    def _within_reach(self, job: Job) -> bool:
        """(Under the lock.)  May this generation start now: always, unless --sequential limits how far the
        pool buys past the item pytest waits for (CandidatePool ``ahead``)."""
        return self._ahead is None or job.index < self._asked_at + self._ahead

    # ------------------------------------------------------------------ sharing the candidate slots
    def _hold(self, route: str, change: int) -> None:
        """(Under the lock.)  Count the candidates of each route whose step is running in this process."""
        self._held[route] = self._held.get(route, 0) + change

    def _fair_to_start(self, route: str, giving_up: str | None = None) -> bool:
        """(Under the lock.)  May a generation on ``route`` take a candidate slot, leaving every other route
        with work its fair share of the slots?  Without this, a fast route fills the pool, and a slow route
        limited to a few calls in flight waits for a slot each time one of its calls ends instead of starting
        the next at once: the run goes slower than its slowest route.  ``giving_up`` is the route of a slot
        this thread hands on (it is counted as free)."""
        held = dict(self._held)
        running = self._running
        if giving_up is not None:
            held[giving_up] = held.get(giving_up, 0) - 1
            running -= 1
        demands = {}
        for name in set(held) | set(self._generate):
            wanted = held.get(name, 0) + len(self._generate.get(name, ()))
            gate = self._route_gates.get(name)
            if gate is not None:  # a candidate holds its slot while it is generated, then judged
                wanted = min(wanted, 2 * max(1, int(gate.level)))
            if wanted > 0:
                demands[name] = wanted
        if running <= 0:
            return True  # nothing of this process is running: waiting could only stall it
        shares = fair_shares(demands, self.concurrency)
        owed = sum(max(0, share - held.get(name, 0)) for name, share in shares.items() if name != route)
        return self.concurrency - running - 1 >= owed

    def _run_step(self, job: Job, routes: Taken) -> None:
        """Run the job's step; its requests carry the route slots taken for it (``Plan.slots``), so they take
        no second one, from whatever thread they are sent."""
        job.plan.slots = tuple(slot for _, slot in routes)
        try:
            if job.step == GENERATE:
                plan = self.runner.generate_step(job.plan)
                if plan.needs_verdict and self.runner.judge.routes:
                    with self._cond:
                        self._make_ready(job, plan)
                        self._cond.notify_all()
                    return
                record = self.runner.judge_step(plan) if plan.needs_verdict else self.runner.finish(plan)
            else:
                record = self.runner.judge_step(job.plan)
        except Exception as exc:  # a bug, not a call failure (the runner records those): show it on the item
            with self._cond:
                job.settle(error=exc)
            return
        with self._cond:
            job.settle(record)
            self._count(record)


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
