"""The seam every paid call goes through: journaled before it leaves, ended once, possibly paid when its reply is
lost; and what one process needs to produce candidates (the fields of ``Runner``).

    journal_call   the request written into the record as ``pending`` (a named step: write_journaled)
    _call          the call itself; an exception not ours becomes a call error, a full disk ``DiskFull``
    end_call       the call is over: a lost reply moves ``pending`` into ``possibly_paid`` (engine/journal.py)
    settle_abandoned  a pending call of a run that ended before its reply: possibly paid, written at once

The Runner is assembled in layers, each module one part of the data flow: this one (the state and the
seam), planning.py (what the disk says a candidate still needs), verdicts.py (the judge step), purchase.py
(the generation step), runner.py (the steps in order); engine/lifecycle.py is the protocol they follow.
"""

from __future__ import annotations

import os
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ..errors import CallError, DiskFull, HypeEditError
from ..judges.base import Judge
from ..providers.base import Provider
from ..registry import ModelSpec
from ..secrets import redact
from ..tasks import Task
from . import call_ledger, room
from .journal import (
    GENERATE,
    HELD,
    JUDGE,
    REBUY,
    REJUDGE,
    RUN_ENDED,
    abandon,
    gathering,
    mark_rebought,
    pending_call,
    sending,
)
from .lifecycle import Lifecycle, Step
from .records import Record
from .refusedkeys import RefusedKeys
from .store import Store

if TYPE_CHECKING:
    from .budget import Budget
    from .jobs import Key

T = TypeVar("T")
#: The lifecycle step that journals each kind of paid call.
_JOURNALED = {GENERATE: Step.WRITE_JOURNALED, JUDGE: Step.WRITE_JUDGE_JOURNALED, REJUDGE: Step.WRITE_REJUDGE_JOURNALED}


def _unexpected(who: str, exc: Exception) -> str:
    return redact(f"{who}: failed unexpectedly ({type(exc).__name__}: {exc}); this is a bug of the plugin or of the "
                  "adapter, please report it with this line")


@dataclass
class PaidCalls:
    """What one process (the serial run, or one xdist worker) needs to produce candidates."""

    store: Store
    make_provider: Callable[[ModelSpec], Provider]
    make_judge: Callable[[], Judge]
    references: Callable[[Task], list[Path]]
    rejudge: bool = False
    budget: Budget | None = None
    #: --possibly-paid: a candidate whose paid call may have been paid without its reply arriving is bought
    #: again (REBUY) or held as an error for review (REVIEW)
    on_possibly_paid: str = REBUY
    signals: bool = True  # pixel diagnostics beside each verdict (engine/signals.py), once per candidate
    #: --signals: also measure candidates read back from disk whose records lack them (a full decode of each;
    #: a replay of thousands of large images would spend minutes on it, so only when asked)
    signals_from_disk: bool = False
    stability: dict[Key, int] = field(default_factory=dict)  # key -> K re-judgements (--judge-stability, engine/stability.py)
    #: The run this process belongs to (glue/stash.py run_id: the same in the controller and every xdist worker):
    #: every ledger entry its calls write names it (``run``: what the run bought, call_ledger.spent_in_run)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    _providers: dict[str, Provider] = field(default_factory=dict)
    _judge: Judge | None = None
    #: One provider per model and one judge per process: the pool's threads ask for them at once, and a second
    #: copy of a provider is a second client, limiter view and batch collector (on the batch tier, a batch of its
    #: own: 10-15 batches for 20 candidates under -n 2 before this lock)
    _make_lock: threading.RLock = field(default_factory=threading.RLock)
    _live: dict[Key, Record] = field(default_factory=dict)  # key -> record of a paid step running in this process
    _live_lock: threading.Lock = field(default_factory=threading.Lock)
    #: routes, models and judges whose key the provider refused (401/403) in this process: not called again
    refused_keys: RefusedKeys = field(default_factory=RefusedKeys)
    #: free bytes on the disk of a folder (engine/room.py; a test gives a nearly full disk)
    free_bytes: Callable[[Path], int] | None = None
    #: why nothing more is bought in this process: the outputs' disk is full (engine/room.py)
    disk_full: str | None = None
    _room_held: int = 0  # bytes of the outputs' disk held for purchases running in this process
    _room_lock: threading.Lock = field(default_factory=threading.Lock)

    def provider(self, spec: ModelSpec) -> Provider:
        made = self._providers.get(spec.name)
        if made is not None:
            return made
        with self._make_lock:  # made once, whichever thread asks first (a failed making is tried again)
            if spec.name not in self._providers:
                self._providers[spec.name] = self.make_provider(spec)
            return self._providers[spec.name]

    @property
    def judge(self) -> Judge:
        if self._judge is not None:
            return self._judge
        with self._make_lock:
            if self._judge is None:
                self._judge = self.make_judge()
            return self._judge

    def _write(self, life: Lifecycle, step: Step, record: Record) -> None:
        """Write the record as the named step of the candidate's lifecycle (engine/lifecycle.py), which raises
        before writing when its stage forbids the step: the money path writes a record no other way."""
        life.write(step, lambda: self.store.write_record(record))

    # ------------------------------------------------------------------ pending, possibly paid

    def _resolve_pending(self, record: Record, candidate: Path | None) -> None:
        """A pending call whose answer is on disk after all (the image, the verdict) was not lost, and a batch line
        that was still gathering was never sent: forget it."""
        call = pending_call(record)
        if call == GENERATE and (candidate is not None or gathering(record.pending)):
            record.pending = None
        elif call == JUDGE:
            pending = record.pending or {}  # a JUDGE call is a pending entry
            verdict = record.judgements.get(str(pending.get("judge")))
            # given after the call was sent (timestamps are to the second: a verdict of that same second may be the
            # one a --rejudge call was sent to replace, so it is no answer to it)
            if isinstance(verdict, dict) and str(verdict.get("judged_at") or "") > str(pending.get("sent_at")):
                record.pending = None

    def settle_abandoned(self, record: Record, candidate: Path | None, life: Lifecycle) -> None:
        """(Under the candidate's claim, so no live call of any process is behind it.)  A pending call found on
        disk was sent by a run that ended before its reply: it may have been paid.  Written at once."""
        self._resolve_pending(record, candidate)
        if pending_call(record) is not None:
            abandon(record, RUN_ENDED)
            self._write(life, Step.WRITE_ABANDONED, record)

    def journal_call(self, record: Record, call: str, *, route: str, price: float, call_id: str | None,
                     life: Lifecycle, **fields: Any) -> None:
        """Write the paid request into the record before it is sent (its reply may never come back)."""
        record.pending = sending(call, route=route, price=price, call_id=call_id, run=self.run_id, **fields)
        mark_rebought(record, call)
        record.extra.pop(HELD, None)
        step = _JOURNALED[call]
        try:
            self._write(life, step, record)
        except OSError as exc:  # not journaled, so not sent: nothing was paid
            if not room.no_room(exc):
                raise
            record.pending = None
            raise DiskFull(f"not sent: {self.stop_for_disk(exc)}") from exc
        with self._live_lock:
            self._live[record.key] = record

    def end_call(self, record: Record, exc: BaseException | None = None) -> dict[str, Any] | None:
        """The paid step is over: a call whose reply was lost (``reply_lost``) becomes possibly paid (the
        entry is returned); any other end means the provider answered (the record's next write clears it)."""
        with self._live_lock:
            self._live.pop(record.key, None)
        if record.pending is None:
            return None
        if exc is not None and getattr(exc, "reply_lost", False) and not gathering(record.pending):
            return abandon(record, redact(str(exc))[:500])
        record.pending = None
        return None

    def _call(self, fn: Callable[[], T], record: Record, who: str, error: type[CallError]) -> T:
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
                raise error(_unexpected(who, exc), retryable=True, reply_lost=record.pending is not None) from exc
            # the result (a download) found no room where it lands: paid, and lost if the reply was
            raise DiskFull(self.stop_for_disk(exc), reply_lost=record.pending is not None) from exc
        except Exception as exc:
            raise error(_unexpected(who, exc), retryable=True, reply_lost=record.pending is not None) from exc

    def _lost_note(self, lost: dict[str, Any] | None) -> str:
        if lost is None:
            return ""
        then = ("the next run buys it again" if self.on_possibly_paid == REBUY
                else "the next run holds it for review (--possibly-paid review)")
        return (f"; counted as possibly paid (up to ${float(lost.get('price') or 0):.2f}, request id "
                f"{lost.get('id')}): {then}")

    def calls_in_flight(self) -> tuple[int, int, float]:
        """Paid steps running in this process: (journaled jobs a next run resumes, calls sent and still waiting
        for their reply, the most those could cost) - what leaving now would cost."""
        with self._live_lock:
            records = list(self._live.values())
        pending = [r.pending for r in records if isinstance(r.pending, dict) and not gathering(r.pending)]
        jobs = sum(1 for r in records if r.pending is None and r.job)
        return jobs, len(pending), sum(call_ledger.open_price(p) for p in pending)

    # ------------------------------------------------------------------ the outputs' disk

    def stop_for_disk(self, exc: OSError) -> str:
        """A write found no room: nothing more is bought in this process; the line that says so."""
        where = Path(os.path.abspath(Path(exc.filename).parent if exc.filename else self.store.root))
        message = room.no_room_message(where, f"{exc.strerror or 'no space left'} (errno {exc.errno})")
        self.disk_full = self.disk_full or message
        return message

    def _hold_room(self, spec: ModelSpec) -> tuple[str | None, int]:
        """Room on the outputs' disk for one purchase of ``spec``, held beside those running in this process:
        (None, bytes held), or (why the buying stops, 0) when the disk cannot take it (engine/room.py)."""
        needed = room.room_needed(spec.options)
        with self._room_lock:
            if self.disk_full is None:
                free = (self.free_bytes or room.free_bytes)(self.store.root) - self._room_held
                self.disk_full = room.short_of_room(Path(os.path.abspath(self.store.root)), free, spec)
            if self.disk_full is not None:
                return self.disk_full, 0
            self._room_held += needed
            return None, needed
