"""The money path of one candidate as a state machine: every step it may take, in one table.

A candidate's handling in one process (a ``Plan``, engine/planning.py) moves through these stages::

    PLANNED -write_forgotten-> FORGOTTEN                 a lost image: its record stops naming it first
    PLANNED|FORGOTTEN|EXPIRED -write_journaled-> JOURNALED -send-> SENT -reply-> PAID -write_saved-> SAVED
    PLANNED|FORGOTTEN|EXPIRED -send_unjournaled-> SENT   a free route, or a job an earlier attempt journaled
    SENT -write_job-> SENT                               a submitted job, written before its first poll
    SENT -write_expired-> EXPIRED                        its job's result is gone: submitted once more
    PLANNED|SAVED -adopt-> SAVED                         an image found on disk
    SAVED -write_judge_journaled-> JUDGE_JOURNALED -ask-> JUDGING -verdict-> JUDGED -write_judged-> JUDGED
    SAVED -ask_free-> JUDGING                            a judge that costs nothing (human labels)
    SAVED -reuse-> JUDGED                                a verdict of these bytes on disk
    JUDGED -write_rejudge_journaled-> REJUDGE_JOURNALED -ask_again-> REJUDGING   --judge-stability's
    JUDGED -ask_again_free-> REJUDGING                   re-judgements, each written at once:
    REJUDGING -write_rejudged|write_rejudge_failed-> JUDGED  its verdict, or what its failed call cost

    exits: HELD, REFUSED, FAILED, REPLY_LOST (written); SKIPPED, STOPPED, DISK_FULL, UNREACHABLE, BLOCKED
    (nothing sent, nothing written); every stage ends in SETTLED, where each --budget reservation is settled.

``STEPS`` is the whole protocol: a step names the stages it may be taken from and the stage it leads to; any
other step raises ``LifecycleError`` (errors.py), a bug of the plugin, before it writes or sends anything.
A step that writes the record (``Lifecycle.write``) moves on only when its write succeeded.

Why the order is safe against a kill at any moment (a process may die between any two lines; the next run
reads only the disk):

- **Journal before sending.**  A paid request is written into the record as an entry of its call ledger,
  journaled (write_journaled), before it leaves (``send`` is only taken from JOURNALED); the write of its
  outcome moves that entry in place (engine/call_ledger.py: an entry before the call, its outcome after).
  Killed before the write: nothing was sent, nothing paid.  Killed after the write, before or during the
  call: the next run finds an open entry it did not write and moves it to lost, possibly paid
  (engine/journal.py), so it is never sent again blindly.  The
  only sends without a journal entry are a free route's (nothing to lose) and the poll of a job an earlier
  attempt journaled (nothing new is bought).
- **A submitted job is written before its first poll** (write_job, while SENT: the ``job`` of the call's
  entry, billed): killed while polling, the next run resumes the job instead of submitting (paying) again.
- **Forget a lost image before buying again.**  A record that names an image gone from the disk stops naming
  it (write_forgotten, its cost a left-behind entry of ``calls``) before the new purchase is journaled.  Killed
  between writing the new image and its record, the next run finds an image no record names and adopts it
  rather than paying a third time; had the record still named the lost file, the new image would be a stray.
  A job the record holds is the lost image's, marked counted in the same write: its result fetched again (or
  adopted, killed before its record), or its expiry, adds nothing more, whichever run does it; a new purchase's
  write_journaled drops it, so an image adopted later is that purchase's.
- **Save the image before judging.**  The paid image and its record are written together (write_saved: the
  image file first, then the record naming it, each atomic) before any judge is asked; ``ask`` is only taken
  from SAVED.  Killed between the two writes: the image is on disk, unnamed, and the next run adopts it at
  the model's price without paying.  So once PAID the only ways on are SAVED, or FAILED with the image's cost
  kept as a left-behind entry of ``calls`` (a full disk): a paid image is never lost unaccounted.
- **A re-judgement is a judge call like the verdict's** (--judge-stability, engine/stability.py): journaled before
  it leaves (write_rejudge_journaled, then ask_again), and written at once (write_rejudged, or
  write_rejudge_failed with what a failed call was paid), only once the candidate's verdict is JUDGED; its
  --budget reservation is one of the candidate's, so the handling settles only after the last re-judgement.
- **A write never loses a verdict of the same bytes.**  Every write under the candidate's claim first merges
  the record on disk (``merge_from_disk``): verdicts another process paid for meanwhile are kept when they are
  of the same purchase and the same bytes (engine/provenance.py); a record of another purchase replaces ours.
  Every write is atomic (a temporary name, then rename), so a kill leaves the old record or the new, never half.

--budget: every reservation is a ``CallReservation`` taken through the lifecycle.  A reservation is settled exactly once: by its
call's end with what the call cost (``CallReservation.settle``, the only place a reservation is committed or released),
or, when its call never left, released when the candidate's handling ends (``Lifecycle.settle``).  Settled
twice, or a call that was sent and whose reservation was never settled: ``LifecycleError``.  A process killed with a
reservation open leaves it in the ledger, which counts it as spent once the process is gone (engine/budget.py).  What a
reservation commits is on the record too, written by the step that ends its call (a verdict's entry in ``calls``, a
failed judge call's entry in ``calls``, an expired job's left-behind entry, a lost reply's
lost entry in ``calls``), so ``spent``, summed from the records, is never less than what the ledger committed.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Callable

from ..errors import LifecycleError

if TYPE_CHECKING:
    from .budget import Budget, Reservation


class Stage(Enum):
    """Where one candidate's handling in this process stands."""

    PLANNED = "planned"  # read from the disk: nothing sent or written by this process yet
    FORGOTTEN = "forgotten"  # a lost image's record stopped naming it (written): it is bought again
    JOURNALED = "journaled"  # the generation's request written as its journaled entry: it may now leave
    SENT = "sent"  # the generation's call left (a job it submits is written meanwhile)
    EXPIRED = "expired"  # its job expired at the provider (written): submitted once more
    PAID = "paid"  # the provider answered with an image, still only in memory
    SAVED = "saved"  # the image and its record are on disk (bought now, or found there)
    JUDGE_JOURNALED = "judge-journaled"  # the paid judge's request written as its journaled entry
    JUDGING = "judging"  # the judge was asked
    JUDGED = "judged"  # a verdict of these bytes (answered now, or reused from the disk)
    REJUDGE_JOURNALED = "rejudge-journaled"  # a re-judgement's request journaled (--judge-stability)
    REJUDGING = "rejudging"  # the judge was asked again about a judged candidate
    HELD = "held"  # a possibly paid call held for review (--possibly-paid review), written
    REFUSED = "refused"  # the model answered without an image, written
    FAILED = "failed"  # a call or a step failed, written (the next run retries it)
    REPLY_LOST = "reply-lost"  # a paid call's reply never came: possibly paid, written
    SKIPPED = "skipped"  # --budget could not cover it: nothing sent, nothing written
    STOPPED = "stopped"  # a rejected key: nothing sent, nothing written
    DISK_FULL = "disk-full"  # no room on the outputs' disk for it: nothing bought, nothing written
    UNREACHABLE = "unreachable"  # its route answers nothing: nothing sent, nothing written
    BLOCKED = "blocked"  # a link where its files are, or its image replaced meanwhile: nothing read or written
    SETTLED = "settled"  # the handling is over, every --budget reservation settled


S = Stage
#: before a generation leaves: planned, a lost image forgotten, or an expired job to submit again
_BEFORE_SEND = frozenset({S.PLANNED, S.FORGOTTEN, S.EXPIRED})


class Step(Enum):
    """Everything the money path does that changes what is sent, paid or on disk.  ``write_*`` steps write the
    record (``Lifecycle.write``); the others are moves in memory (``Lifecycle.move``)."""

    ADOPT = "adopt"
    BLOCK = "block"
    WRITE_ABANDONED = "write_abandoned"
    WRITE_HELD = "write_held"
    WRITE_FORGOTTEN = "write_forgotten"
    SKIP = "skip"
    STOP = "stop"
    NO_ROOM = "no_room"
    UNREACHABLE = "unreachable"
    WRITE_JOURNALED = "write_journaled"
    SEND = "send"
    SEND_UNJOURNALED = "send_unjournaled"
    WRITE_JOB = "write_job"
    WRITE_EXPIRED = "write_expired"
    REPLY = "reply"
    WRITE_SAVED = "write_saved"
    WRITE_REFUSED = "write_refused"
    WRITE_FAILED = "write_failed"
    WRITE_LOST = "write_lost"
    WRITE_JUDGE_JOURNALED = "write_judge_journaled"
    ASK = "ask"
    ASK_FREE = "ask_free"
    REUSE = "reuse"
    VERDICT = "verdict"
    WRITE_JUDGED = "write_judged"
    WRITE_REJUDGE_JOURNALED = "write_rejudge_journaled"
    ASK_AGAIN = "ask_again"
    ASK_AGAIN_FREE = "ask_again_free"
    WRITE_REJUDGED = "write_rejudged"
    WRITE_REJUDGE_FAILED = "write_rejudge_failed"
    SETTLE = "settle"


#: The protocol: step -> (the stages it may be taken from, the stage it leads to; None: it stays).
STEPS: dict[Step, tuple[frozenset[Stage], Stage | None]] = {
    Step.ADOPT: (frozenset({S.PLANNED, S.SAVED}), S.SAVED),
    Step.BLOCK: (frozenset({S.PLANNED, S.SAVED, S.BLOCKED}), S.BLOCKED),
    Step.WRITE_ABANDONED: (frozenset({S.PLANNED, S.SAVED}), None),  # a dead run's open call: possibly paid
    Step.WRITE_HELD: (frozenset({S.PLANNED, S.SAVED}), S.HELD),
    Step.WRITE_FORGOTTEN: (frozenset({S.PLANNED}), S.FORGOTTEN),
    Step.SKIP: (_BEFORE_SEND | {S.SAVED}, S.SKIPPED),
    Step.STOP: (frozenset({S.PLANNED, S.FORGOTTEN, S.SAVED}), S.STOPPED),
    Step.NO_ROOM: (frozenset({S.PLANNED, S.FORGOTTEN}), S.DISK_FULL),
    Step.UNREACHABLE: (frozenset({S.PLANNED, S.SAVED}), S.UNREACHABLE),
    # generation
    Step.WRITE_JOURNALED: (_BEFORE_SEND, S.JOURNALED),
    Step.SEND: (frozenset({S.JOURNALED}), S.SENT),
    Step.SEND_UNJOURNALED: (_BEFORE_SEND, S.SENT),  # a free route, or a job journaled by an earlier attempt
    Step.WRITE_JOB: (frozenset({S.SENT}), None),
    Step.WRITE_EXPIRED: (frozenset({S.SENT}), S.EXPIRED),
    Step.REPLY: (frozenset({S.SENT}), S.PAID),
    Step.WRITE_SAVED: (frozenset({S.PAID}), S.SAVED),
    Step.WRITE_REFUSED: (frozenset({S.SENT}), S.REFUSED),
    # a failure before the call (a reference unreadable, no room to journal), of the call, or of saving what
    # it paid for (a full disk: the image's cost is kept as a left-behind entry of calls)
    Step.WRITE_FAILED: (_BEFORE_SEND | {S.JOURNALED, S.SENT, S.PAID, S.SAVED, S.JUDGE_JOURNALED, S.JUDGING},
                        S.FAILED),
    Step.WRITE_LOST: (frozenset({S.SENT, S.JUDGING}), S.REPLY_LOST),
    # judging: only ever of an image on disk
    Step.WRITE_JUDGE_JOURNALED: (frozenset({S.SAVED}), S.JUDGE_JOURNALED),
    Step.ASK: (frozenset({S.JUDGE_JOURNALED}), S.JUDGING),
    Step.ASK_FREE: (frozenset({S.SAVED}), S.JUDGING),  # a judge that costs nothing (human labels)
    Step.REUSE: (frozenset({S.SAVED}), S.JUDGED),
    Step.VERDICT: (frozenset({S.JUDGING}), S.JUDGED),
    Step.WRITE_JUDGED: (frozenset({S.JUDGED}), None),
    # re-judging (--judge-stability): only ever of a candidate judged in this handling
    Step.WRITE_REJUDGE_JOURNALED: (frozenset({S.JUDGED}), S.REJUDGE_JOURNALED),
    Step.ASK_AGAIN: (frozenset({S.REJUDGE_JOURNALED}), S.REJUDGING),
    Step.ASK_AGAIN_FREE: (frozenset({S.JUDGED}), S.REJUDGING),
    Step.WRITE_REJUDGED: (frozenset({S.REJUDGING}), S.JUDGED),
    Step.WRITE_REJUDGE_FAILED: (frozenset({S.REJUDGING}), S.JUDGED),
    Step.SETTLE: (frozenset(Stage) - {S.SETTLED}, S.SETTLED),  # ended once, from wherever it stands
}


class CallReservation:
    """One call's --budget reservation (``reservation`` None without --budget: still settled exactly once)."""

    def __init__(self, reservation: Reservation | None, what: str) -> None:
        self.reservation = reservation
        self.what = what
        self.sent = False  # its call left: only the call's end knows what it cost
        self.settled: float | None = None  # USD committed (0: released), once settled

    def settle(self, actual: float) -> None:
        """Commit what the call cost (``actual``), or release the reservation when it cost nothing; exactly once."""
        if self.settled is not None:
            raise LifecycleError(f"{self.what}: its --budget reservation was settled twice (first with {self.settled} "
                                 f"USD, then {actual} USD); a bug of the plugin, please report it")
        self.settled = actual
        if self.reservation is not None:
            self.reservation.commit(actual) if actual else self.reservation.release()


class Lifecycle:
    """One candidate's stage, the steps it took (``trail``) and the --budget reserves taken for its calls."""

    def __init__(self, what: str) -> None:
        self.what = what  # names the candidate in a LifecycleError
        self.stage = Stage.PLANNED
        self.trail: list[Step] = []
        self.reservations: list[CallReservation] = []

    def check(self, step: Step) -> Stage:
        """The stage ``step`` leads to from here, or LifecycleError when the protocol forbids it."""
        allowed, to = STEPS[step]
        if self.stage not in allowed:
            raise LifecycleError(f"{self.what}: {step.value} is not allowed once {self.stage.value} (only from "
                                 f"{', '.join(sorted(s.value for s in allowed))}); a bug of the plugin's money "
                                 "path, please report it")
        return self.stage if to is None else to

    def move(self, step: Step, reserved: CallReservation | None = None) -> None:
        """Take a step that writes nothing; a send names the reservation of the call it sends."""
        self.stage = self.check(step)
        self.trail.append(step)
        if reserved is not None and step in (Step.SEND, Step.SEND_UNJOURNALED, Step.ASK, Step.ASK_FREE, Step.ASK_AGAIN,
                                         Step.ASK_AGAIN_FREE):
            reserved.sent = True

    def write(self, step: Step, write: Callable[[], object]) -> None:
        """Take a step that writes the record: allowed first, written, and only then moved on (a write that
        fails leaves the stage as it was, since the disk does)."""
        to = self.check(step)
        write()
        self.stage = to
        self.trail.append(step)

    def reserve(self, budget: Budget | None, amount: Callable[[], float], what: str) -> CallReservation:
        """A reservation of --budget for one call (BudgetExceeded when the rest cannot cover ``amount()``, its worst
        case, asked only with a budget); settled by the call's end, else released by ``settle``."""
        if self.stage is Stage.SETTLED:
            raise LifecycleError(f"{self.what}: --budget reserved for {what} after its handling ended")
        reserved = CallReservation(budget.reserve(amount(), what) if budget is not None else None, what)
        self.reservations.append(reserved)
        return reserved

    def settle(self) -> None:
        """The handling is over: every reservation whose call never left is released; a reservation of a call that left and
        was never settled is a bug (what it cost would be missing from the ledger)."""
        settled = self.check(Step.SETTLE)
        forgotten = [reserved.what for reserved in self.reservations if reserved.settled is None and reserved.sent]
        for reserved in self.reservations:
            if reserved.settled is None and not reserved.sent:
                reserved.settle(0.0)
        self.stage = settled
        self.trail.append(Step.SETTLE)
        if forgotten:
            raise LifecycleError(f"{self.what}: the call for {', '.join(forgotten)} was sent and its --budget "
                                 "reservation never settled; a bug of the plugin's money path, please report it")
