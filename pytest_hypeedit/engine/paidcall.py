"""The seam every paid call goes through: journaled before it leaves, ended once, possibly paid when its reply is
lost; and the room the purchases of one process hold on the outputs' disk.

    journal_call   the request written into the record's call ledger, journaled (a named step: write_journaled)
    call           the call itself; an exception not ours becomes a call error, a full disk ``DiskFull``
    end_call       the call is over: a lost reply moves its entry to lost (engine/journal.py), an error to unbilled
    settle_abandoned  an open call of a run that ended before its reply: possibly paid, written at once
    write          the record written as a named step of the candidate's lifecycle: the only way the money
                   path writes one

The Runner (engine/runner.py) owns one ``PaidCalls`` and gives it to its collaborators: the planning
(engine/planning.py: what the disk says a candidate still needs), the verdicts (engine/verdicts.py: the judge
step), the purchase (engine/purchase.py: the generation step) and the re-judgements (engine/stability.py);
engine/lifecycle.py is the protocol they follow.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ..errors import CallError, DiskFull, HypeEditError
from ..registry import ModelSpec
from ..secrets import redact
from . import call_ledger, room
from .journal import (
    GENERATE,
    HELD,
    JUDGE,
    REBUY,
    REJUDGE,
    RUN_ENDED,
    abandon,
    end_open,
    gathering,
    mark_rebought,
    pending_call,
    sending,
)
from .lifecycle import Lifecycle, Step
from .records import Record

if TYPE_CHECKING:
    from .jobs import Key
    from .means import Means

T = TypeVar("T")
#: The lifecycle step that journals each kind of paid call.
_JOURNALED = {GENERATE: Step.WRITE_JOURNALED, JUDGE: Step.WRITE_JUDGE_JOURNALED, REJUDGE: Step.WRITE_REJUDGE_JOURNALED}


def _unexpected(who: str, exc: Exception) -> str:
    return redact(f"{who}: failed unexpectedly ({type(exc).__name__}: {exc}); this is a bug of the plugin or of the "
                  "adapter, please report it with this line")


class PaidCalls:
    """The seam every paid call of one process goes through, and the room its purchases hold on the outputs' disk."""

    def __init__(self, means: Means) -> None:
        self.means = means
        self._live: dict[Key, Record] = {}  # key -> record of a paid step running in this process
        self._live_lock = threading.Lock()
        #: why nothing more is bought in this process: the outputs' disk is full (engine/room.py)
        self.disk_full: str | None = None
        self._room_reserved = 0  # bytes of the outputs' disk reserved for purchases running in this process
        self._room_lock = threading.Lock()

    def write(self, life: Lifecycle, step: Step, record: Record) -> None:
        """Write the record as the named step of the candidate's lifecycle (engine/lifecycle.py), which raises
        before writing when its stage forbids the step: the money path writes a record no other way."""
        life.write(step, lambda: self.means.store.write_record(record))

    # ------------------------------------------------------------------ pending, possibly paid

    def resolve_pending(self, record: Record, candidate: Path | None) -> None:
        """An open call whose answer is on disk after all (the image, the verdict) was not lost: it ended, its bill
        the answer's own entry; a batch line that was still gathering was never sent."""
        call, pending = pending_call(record), call_ledger.open_call(record) or {}
        if call == GENERATE and gathering(pending):
            end_open(record, call_ledger.NOT_SENT)
        elif call == GENERATE and candidate is not None:
            end_open(record, call_ledger.UNBILLED, why="answered: its image is on disk")
        elif call == JUDGE:
            verdict = record.judgements.get(str(pending.get("judge")))
            # given after the call was sent (timestamps are to the second: a verdict of that same second may be the
            # one a --rejudge call was sent to replace, so it is no answer to it)
            if isinstance(verdict, dict) and str(verdict.get("judged_at") or "") > str(pending.get("sent_at")):
                end_open(record, call_ledger.UNBILLED, why="answered: its verdict is on disk")

    def settle_abandoned(self, record: Record, candidate: Path | None, life: Lifecycle) -> None:
        """(Under the candidate's claim, so no live call of any process is behind it.)  An open call found on
        disk was sent by a run that ended before its reply: it may have been paid.  Written at once."""
        self.resolve_pending(record, candidate)
        if pending_call(record) is not None:
            abandon(record, RUN_ENDED)
            self.write(life, Step.WRITE_ABANDONED, record)

    def journal_call(self, record: Record, call: str, *, route: str, price: float, call_id: str | None,
                     life: Lifecycle, **fields: Any) -> None:
        """Write the paid request into the record's call ledger (journaled) before it is sent (its reply may never
        come back)."""
        entry = sending(call, route=route, price=price, call_id=call_id, run=self.means.run_id, **fields)
        record.calls = [*(record.calls if isinstance(record.calls, list) else []), entry]
        mark_rebought(record, call)
        record.extra.pop(HELD, None)
        step = _JOURNALED[call]
        try:
            self.write(life, step, record)
        except OSError as exc:  # not journaled, so not sent: nothing was paid (the entry was never on disk)
            if not room.no_room(exc):
                raise
            record.calls = [kept for kept in record.calls if kept is not entry]
            raise DiskFull(f"not sent: {self.stop_for_disk(exc)}") from exc
        with self._live_lock:
            self._live[record.key] = record

    def end_call(self, record: Record, exc: BaseException | None = None) -> dict[str, Any] | None:
        """The paid step is over: a call whose reply was lost (``reply_lost``) becomes possibly paid (the
        entry is returned); a call answered with an error ended unbilled (a judge's asks answered before it failed
        are their own entry, record_spend.add_failed_judge_cost); an answer leaves the entry to the step's write
        that keeps it (record_spend: the generation's or the verdict's entry, billed)."""
        with self._live_lock:
            self._live.pop(record.key, None)
        pending = call_ledger.open_call(record)
        if pending is None:
            return None
        if exc is not None and getattr(exc, "reply_lost", False) and not gathering(pending):
            return abandon(record, redact(str(exc))[:500])
        if gathering(pending):  # a batch line its batch never took: it never left
            end_open(record, call_ledger.NOT_SENT)
        elif exc is not None:
            end_open(record, call_ledger.UNBILLED)
        return None

    def call(self, fn: Callable[[], T], record: Record, who: str, error: type[CallError]) -> T:
        """``fn()``, with an exception that is not one of ours (a bug in an adapter or a judge, e.g. a reply of an
        unexpected shape) turned into a call error that says so: the item errors with one line, the record is
        written, and a paid request that was already sent counts as possibly paid, since nobody can tell
        whether the provider took it."""
        try:
            return fn()
        except (HypeEditError, KeyboardInterrupt, SystemExit):
            raise
        except OSError as exc:
            if not room.no_room(exc):
                raise error(_unexpected(who, exc), retryable=True, reply_lost=call_ledger.open_call(record) is not None) from exc
            # the result (a download) found no room where it lands: paid, and lost if the reply was
            raise DiskFull(self.stop_for_disk(exc), reply_lost=call_ledger.open_call(record) is not None) from exc
        except Exception as exc:
            raise error(_unexpected(who, exc), retryable=True, reply_lost=call_ledger.open_call(record) is not None) from exc

    def lost_note(self, lost: dict[str, Any] | None) -> str:
        if lost is None:
            return ""
        then = ("the next run buys it again" if self.means.on_possibly_paid == REBUY
                else "the next run holds it for review (--possibly-paid review)")
        return (f"; counted as possibly paid (up to ${float(lost.get('price') or 0):.2f}, request id "
                f"{lost.get('id')}): {then}")

    def calls_in_flight(self) -> tuple[int, int, float]:
        """Paid steps running in this process: (journaled jobs a next run resumes, calls sent and still waiting
        for their reply, the most those could cost) - what leaving now would cost."""
        with self._live_lock:
            records = list(self._live.values())
        opened = [call_ledger.open_call(r) for r in records]
        pending = [p for p in opened if p is not None and not gathering(p)]
        jobs = sum(1 for r, p in zip(records, opened) if p is None and r.job)
        return jobs, len(pending), sum(call_ledger.open_price(p) for p in pending)

    # ------------------------------------------------------------------ the outputs' disk

    def stop_for_disk(self, exc: OSError) -> str:
        """A write found no room: nothing more is bought in this process; the line that says so."""
        where = Path(os.path.abspath(Path(exc.filename).parent if exc.filename else self.means.store.root))
        message = room.no_room_message(where, f"{exc.strerror or 'no space left'} (errno {exc.errno})")
        self.disk_full = self.disk_full or message
        return message

    def reserve_room(self, spec: ModelSpec) -> tuple[str | None, int]:
        """Room on the outputs' disk for one purchase of ``spec``, held beside those running in this process:
        (None, bytes held), or (why the buying stops, 0) when the disk cannot take it (engine/room.py)."""
        needed = room.room_needed(spec.options)
        with self._room_lock:
            if self.disk_full is None:
                free = (self.means.free_bytes or room.free_bytes)(self.means.store.root) - self._room_reserved
                self.disk_full = room.short_of_room(Path(os.path.abspath(self.means.store.root)), free, spec)
            if self.disk_full is not None:
                return self.disk_full, 0
            self._room_reserved += needed
            return None, needed

    def release_room(self, reserved_bytes: int) -> None:
        """A purchase is over: the room it held (``reserve_room``) is free for the next."""
        with self._room_lock:
            self._room_reserved -= reserved_bytes
