"""The pool's jobs (engine/pool.py): one per candidate, its states and the moves between them, in one place.

    NEW ──> TRIAGING ──> READY ──> RUNNING ──> DONE          (the pool's threads read the disk, buy, judge)
     │          │          │  ^       │
     │          │          │  └───────┘  a generated candidate waits for its paid verdict
     │          ├──> INLINE ──> FINISHING ──> DONE   (nothing to pay: a finisher thread writes its record a little
     │          │                                   ahead of pytest, or the main thread when pytest asks first)
     │          └──> DONE                (the triage failed: the item shows the error)
     └──> MAIN ──> READY                 (pytest asked before the pool got to it: the main thread triages)
           ├──> DONE                     (nothing to pay)
           └──> STOPPED                  (the run is stopping and its paid step never started)
    READY ──> STOPPED (the run stopped first) | DONE (its route is unreachable)
    any state not settled ──> DONE       (a bug in the pool's dispatcher: every waiting item fails with it)

A job is *settled* in DONE or STOPPED: its outcome (the record, or the error) never changes again, and asking
for it again (pytest-rerunfailures, any plugin that runs an item twice) gives the same outcome, never a second
purchase.  ``Job.move`` is the only way a state changes; a move not in ``MOVES`` raises ``IllegalTransition``
(a bug of the pool, never of the user's input).
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, field
from typing import Any

from ..errors import HypeEditError
from ..registry import ModelSpec
from ..tasks import Task
from .records import Record

Key = tuple[str, str, str, int]
Entry = tuple[Task, ModelSpec, int]
GENERATE, JUDGE = "generate", "judge"


class JobState(enum.Enum):
    NEW = "new"  # planned; nobody has read its disk yet
    TRIAGING = "triaging"  # the dispatcher reads its disk (Runner.plan)
    MAIN = "main"  # pytest asked first: the main thread reads its disk
    READY = "ready"  # a paid step waits in a queue for its route and a candidate slot
    RUNNING = "running"  # a pool thread runs its step
    INLINE = "inline"  # nothing to pay: waits for a finisher thread, or the main thread, to finish it
    FINISHING = "finishing"  # Runner.finish writes its record (a finisher thread, or the main thread)
    DONE = "done"  # settled: its record or its error is kept
    STOPPED = "stopped"  # settled: the run stopped before its paid step started


NEW, TRIAGING, MAIN, READY, RUNNING, INLINE, FINISHING, DONE, STOPPED = JobState
SETTLED = frozenset({DONE, STOPPED})

#: Every legal move.  DONE is reachable from every unsettled state: a bug in the dispatcher fails every job.
MOVES: dict[JobState, frozenset[JobState]] = {
    NEW: frozenset({TRIAGING, MAIN, DONE}),
    TRIAGING: frozenset({READY, INLINE, DONE}),
    MAIN: frozenset({READY, DONE, STOPPED}),
    READY: frozenset({RUNNING, STOPPED, DONE}),
    RUNNING: frozenset({READY, DONE}),
    INLINE: frozenset({FINISHING, DONE}),
    FINISHING: frozenset({DONE}),
    DONE: frozenset(),
    STOPPED: frozenset(),
}


class IllegalTransition(RuntimeError):
    """A job moved in a way ``MOVES`` does not allow: a bug of the pool."""


class NotStarted(HypeEditError):
    """The run is stopping (-x, --maxfail, Ctrl-C) and this candidate's paid step never started."""


class LeftInFlight(NotStarted):
    """The run is stopping and this candidate's paid step did not end within the grace: it is left running."""


@dataclass(eq=False)
class Job:
    task: Task
    spec: ModelSpec
    repeat: int
    index: int  # position in the plan: the order pytest asks
    state: JobState = NEW
    step: str | None = None
    plan: Any = None  # the runner's Plan while a step is to run (None otherwise; the pool checks the state first)
    record: Record | None = None
    error: BaseException | None = None
    #: Set once the outcome may be read: settled (DONE, STOPPED).
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def key(self) -> Key:
        return (self.task.split, self.spec.name, self.task.task_id, self.repeat)

    @property
    def label(self) -> str:
        return f"{self.task.task_id} {self.spec.name} r{self.repeat:03d}"

    @property
    def settled(self) -> bool:
        return self.state in SETTLED

    def move(self, to: JobState) -> None:
        """(Under the pool's lock.)  The one way a job's state changes."""
        if to not in MOVES[self.state]:
            raise IllegalTransition(f"{self.label}: {self.state.value} -> {to.value} is not a move of the pool")
        self.state = to

    def settle(self, record: Record | None = None, error: BaseException | None = None) -> None:
        """(Under the pool's lock.)  DONE with its outcome, kept for every later ask."""
        self.move(DONE)
        self.record, self.error, self.plan = record, error, None
