"""The pool's finisher threads (engine/pool.py): the records of candidates with nothing to pay, written a little
ahead of pytest.

A replay (every candidate and verdict on disk, or a free judge such as a labels file) pays for nothing, but
each candidate's record is still written once (its verdict, its content hashes: Runner.finish).  Written on the
main thread, one after the other, a 7,000-candidate replay spent most of its time waiting for those writes: a
rename over an existing file waits for the file system.  Finishers write them in a few threads instead, at most
``LOOKAHEAD`` candidates ahead of the item pytest runs, so the waits overlap.

Rules, as for the pool's paid steps: a finisher takes a job only in INLINE (the main thread, asking first, takes
it itself: engine/jobs.py INLINE -> FINISHING), never after the run is stopping (``-x``, Ctrl-C: no record is
written for an item pytest will not run beyond the lookahead already taken), and a job whose finish raised is
settled with the error, which the item shows.  A finisher holds no candidate slot and no route slot: it calls
nothing paid (a job with re-judgements for --judge-stability is never finished ahead, see ``finishes_ahead``).

The finishers wait on a condition of their own (``JobBoard.finish_ready``, over the pool's one lock), woken when a job is
queued for them, when the lookahead moves and when the pool closes; each that takes a job wakes the next while
more wait.  Woken by every event of the pool instead (every job triaged, settled or asked for), four finishers
and the interpreter lock they fight over took a quarter of a 7,000-candidate replay's CPU.
"""

from __future__ import annotations

import threading

from .board import JobBoard
from .jobs import FINISHING, INLINE, Job
from .records import Record
from .runner import Plan, Runner

#: Finisher threads per process: enough to overlap the writes' waits (a rename over a file waits for the
#: file system), few enough to leave the interpreter to pytest.
FINISHERS = 4
#: How far ahead of the item pytest runs a finisher may write (positions in the plan).
LOOKAHEAD = 64
#: The longest a finisher sleeps with nothing to take (it is woken by every new job and every ask).
IDLE = 0.2


class Finishers:
    """The finisher threads, made as jobs are queued for them (at most ``FINISHERS``); they share the pool's
    state (``JobBoard``) and take its lock for every change."""

    def __init__(self, board: JobBoard, runner: Runner):
        self.board, self.runner = board, runner
        self.threads: list[threading.Thread] = []

    def join(self, timeout: float | None) -> None:
        for thread in self.threads:
            thread.join(timeout)

    def finish_later(self, job: Job, plan: Plan) -> None:
        """(Under the lock.)  A job with nothing to pay: INLINE, queued for a finisher.  Its ``done`` is set: the
        main thread, waiting for it or asking later, takes it itself unless a finisher took it first (a finisher
        clears ``done`` when it takes a job, and sets it again once the job is settled)."""
        job.move(INLINE)
        job.plan = plan
        job.done.set()
        if not self.finishes_ahead(plan):
            return  # the main thread finishes it when pytest asks
        self.board.finishing.append(job)
        self.board.finish_ready.notify()
        if len(self.threads) < FINISHERS:
            thread = threading.Thread(target=self._finish_loop, name=f"hypeedit-finish-{len(self.threads)}",
                                      daemon=True)
            self.threads.append(thread)
            thread.start()

    def finishes_ahead(self, plan: Plan) -> bool:
        """Whether a finisher may write this job: not when finishing it may call a paid judge again
        (--judge-stability's re-judgements: those are started only for items pytest runs)."""
        return not self.runner.pays_to_finish(plan)

    def _finish_loop(self) -> None:
        while True:
            with self.board.changed:
                job = self.next_to_finish()
                while job is None:
                    if self.board.closed:
                        return
                    self.board.finish_ready.wait(IDLE)
                    job = self.next_to_finish()
                job.move(FINISHING)
                job.done.clear()
                if self.board.finishing:
                    self.board.finish_ready.notify()  # more may be waiting: another finisher looks
            try:
                self.finish_job(job)
            except Exception as exc:
                if job.error is not exc:  # not the runner's failure, settled on the job, but the pool's own bug
                    self.board.fail_all(exc)
                    raise
                # settled with the error: the item shows it when pytest asks

    def next_to_finish(self) -> Job | None:
        """(Under the lock.)  The next INLINE job within the lookahead; jobs the main thread took are dropped."""
        queue_ = self.board.finishing
        while queue_ and queue_[0].state != INLINE:
            queue_.popleft()
        if not queue_ or self.board.stop_reason is not None or queue_[0].index > self.board.asked_at + LOOKAHEAD:
            return None
        return queue_.popleft()

    def finish_job(self, job: Job) -> Record:
        """(A job this thread took: FINISHING, or MAIN when the main thread triaged it itself.)  Runner.finish, and
        the job settled with its outcome."""
        try:
            record = self.runner.finish(job.plan)
        except Exception as exc:
            with self.board.changed:
                if not job.settled:  # a bug of the dispatcher may have failed every job meanwhile
                    job.settle(error=exc)
                job.done.set()
                self.board.changed.notify_all()
            raise
        with self.board.changed:
            try:
                if not job.settled:
                    job.settle(record)
                    self.board.count(record)
            finally:  # whatever happens, the item waiting on it is woken (a bug above is raised to the caller)
                job.done.set()
                self.board.changed.notify_all()
        return record
