"""One candidate, from task to verdict: reuse what is on disk, else pay for it once.

    record on disk? candidate on disk? -> reuse them (no call, no key needed); the candidate is the file
                                          the record names, other images beside it are strays (store.py);
                                          its bytes are those its verdict judged, else it is judged again
                                          (provenance.py); a symbolic link is refused, never followed
    a journaled job in the record?     -> resume it (no new submission, no new budget)
    a paid call pending, its reply lost? -> possibly paid: buy again (--possibly-paid rebuy) or hold it
    otherwise: budget (the verdict's worst case held, then the call's) -> pending call written
               -> provider call -> candidate + record written at once
    verdict on disk for this judge?   -> reuse it (unless --rejudge)
    otherwise: judge (its worst case reserved, or held since the purchase) -> verdict written at once

The work is split in steps so that a pool (engine/pool.py) can keep many
candidates in flight and give each paid step its route's slot:

    plan(task, spec, repeat)   read the disk: what still has to be paid for (no call)
    generate_step(plan)        buy the candidate (or resume its job), under the candidate's claim
    judge_step(plan)           ask the judge, under the candidate's claim
    finish(plan)               everything else: reuse from disk, a refusal, a free judge (labels)

A claim is a cross-process lock per candidate: two processes never buy the
same candidate, and the one that waited finds it on disk.  ``run`` does the
steps in order, for callers without a pool.  Knows nothing of pytest.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ..errors import (
    BudgetExceeded,
    CallError,
    DiskFull,
    HypeEditError,
    JobExpired,
    JudgeError,
    NotRegularFile,
    ProviderError,
    Refusal,
)
from ..files import sha256_bytes, sha256_of
from ..judges.base import Judge, JudgeRequest, Verdict
from ..providers.base import Generation, GenerationRequest, Provider, seed_for
from ..registry import ModelSpec
from ..secrets import KEY_ENV, redact
from ..tasks import Task
from ..text import ERROR_LIMIT, clean_text
from . import journal as paid, provenance, room
from .journal import GENERATE, JUDGE, REBUY, REVIEW, Journal
from .limits import CallSlots
from .records import DISCARDED, ERROR, FAIL, PASS, REFUSED, SKIPPED, Record, now_iso, usd
from .refusedkeys import RefusedKeys
from .store import Store

if TYPE_CHECKING:
    from .budget import Budget, Reservation
    from .jobs import Key
    from .signals import Preview

T = TypeVar("T")


def _same_verdict(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Two verdict entries that say the same (they differ only in when they were given)."""
    keys = ("verdict", "reasoning", "judge", "votes", "cost", "extra")
    return all(old.get(key) == new.get(key) for key in keys)


def _unexpected(who: str, exc: Exception) -> str:
    return redact(f"{who}: failed unexpectedly ({type(exc).__name__}: {exc}); this is a bug of the plugin or of the "
                  "adapter, please report it with this line")


def _purchase(record: Record) -> tuple[Any, ...]:
    """What tells one purchase of a candidate from the next: a candidate bought again (its image lost) has a
    lost_candidates entry more, and its own generation time and request id."""
    lost = record.extra.get("lost_candidates") if isinstance(record.extra, dict) else None
    return record.candidate, record.generated_at, record.request_id, len(lost) if isinstance(lost, list) else 0


def judge_key_variables(judge: Judge) -> tuple[str, ...]:
    """The variables a paid judge's key is read from (``key_variables`` when the judge says, e.g. the openai
    judge on another server than OpenAI's; else its ``key_env``, else its route's)."""
    named = getattr(judge, "key_variables", None) or judge.key_env
    return tuple(named) or tuple(v for route in judge.routes for v in KEY_ENV.get(route.removesuffix("-judge"), ()))


def refused(record: Record | None) -> bool:
    """The model's answer was a refusal: a settled (and paid-for) outcome, not retried."""
    return record is not None and record.outcome == REFUSED


@dataclass
class Plan:
    """One candidate between steps: its record, its image on disk, and what it still needs."""

    task: Task
    spec: ModelSpec
    repeat: int
    record: Record
    candidate: Path | None
    needs_generation: bool = False  # a provider call (or a journaled job to resume)
    needs_verdict: bool = False  # a paid judge call
    held: bool = False  # a possibly paid call held for review (--possibly-paid review): no call, an error
    lost: str | None = None  # the image the record names, gone from the disk: bought again
    verdict_hold: Reservation | None = None  # --budget held for the verdict of a candidate being bought (budget.py)
    refused: str | None = None  # a symbolic link where the candidate's files are (store.py): an error, no call
    bound: bool = False  # the record's content hashes were set or changed (provenance.py): to be written
    #: The in-flight slots the pool holds for the step running now (engine/limits.py), carried into its
    #: GenerationRequest or JudgeRequest; empty outside a pool (each request takes its own).
    slots: CallSlots = ()

    @property
    def key(self) -> tuple[str, str, str, int]:
        return self.record.key


@dataclass
class Runner:
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
    _providers: dict[str, Provider] = field(default_factory=dict)
    _judge: Judge | None = None
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

    def run(self, task: Task, spec: ModelSpec, repeat: int) -> Record:
        """One candidate from task to verdict, step by step (the pool runs the same steps in its threads)."""
        plan = self.plan(task, spec, repeat)
        if plan.needs_generation:
            self.generate_step(plan)
        if plan.needs_verdict:
            return self.judge_step(plan)
        return self.finish(plan)

    # ------------------------------------------------------------------ steps

    def plan(self, task: Task, spec: ModelSpec, repeat: int) -> "Plan":
        """What this candidate still needs, read from the disk (no call, no claim)."""
        plan = Plan(task, spec, repeat, self._read_or_new(task, spec, repeat), None)
        self._look_on_disk(plan)
        if plan.refused is None:
            self._settle_plan(plan)
        return plan

    def generate_step(self, plan: "Plan") -> "Plan":
        """Buy the candidate (or resume its journaled job), unless another process did meanwhile."""
        with self.store.claim(*plan.record.key):
            plan.record = self._read_or_new(plan.task, plan.spec, plan.repeat)
            self._look_on_disk(plan)
            if plan.refused is not None:
                return plan
            self.settle_abandoned(plan.record, plan.candidate)
            self._settle_plan(plan)
            if plan.held:
                self.store.write_record(plan.record)  # visible in the outputs as the error it is
            if plan.needs_generation:
                self._forget_lost_candidate(plan)
                self._buy(plan)
        return plan

    def _buy(self, plan: "Plan") -> None:
        """Generate the candidate, with --budget held for its verdict first: a candidate the budget could not
        also judge is not bought (it would be paid for and left unjudged)."""
        plan.needs_generation = plan.needs_verdict = False
        stopped = self._key_stopped(plan.spec)
        if stopped:  # nothing sent: the same key would be refused again (engine/refusedkeys.py)
            plan.record.outcome, plan.record.error = ERROR, stopped
            return
        full, held = self._hold_room(plan.spec)
        if full:  # as a budget stop: not bought, nothing written (there is no room to write it)
            self._skip(plan.record, full)
            return
        try:
            self._buy_with_room(plan)
        finally:
            with self._room_lock:
                self._room_held -= held

    def _buy_with_room(self, plan: "Plan") -> None:
        try:
            plan.verdict_hold = self._hold_verdict(plan)
        except BudgetExceeded as exc:
            self._skip(plan.record, str(exc))
            return
        except HypeEditError:  # e.g. a reference that cannot be read: the generation says so, the verdict reserves
            plan.verdict_hold = None
        plan.candidate = self._generate(plan.task, plan.spec, plan.repeat, plan.record, plan.slots)
        self._note_strays(plan.record, self.store.find(*plan.record.key, named=plan.record.candidate).strays)
        plan.needs_verdict = plan.candidate is not None
        if plan.candidate is None:
            self._settle(plan.verdict_hold, 0.0)
            plan.verdict_hold = None

    def judge_step(self, plan: "Plan") -> Record:
        """Give the candidate its verdict (paid, or from disk when another process gave it meanwhile)."""
        with self.store.claim(*plan.record.key):
            if not self._refreshed(plan):
                self._settle(plan.verdict_hold, 0.0)
                plan.verdict_hold, plan.needs_verdict = None, False
                return plan.record
            self.settle_abandoned(plan.record, plan.candidate)
            hold, plan.verdict_hold = plan.verdict_hold, None
            if self.reusable_verdict(plan.record) is None and self._held(plan.record, JUDGE):
                self._settle(hold, 0.0)
                self._hold(plan, JUDGE)
                self.store.write_record(plan.record)
            else:
                assert plan.candidate is not None  # _refreshed: an image is left to judge
                self._judge_candidate(plan.task, plan.spec, plan.repeat, plan.candidate, plan.record, hold,
                                      slots=plan.slots)
        plan.needs_verdict = False
        self._rejudge_for_stability(plan)
        return plan.record

    def finish(self, plan: "Plan") -> Record:
        """The record of a candidate that needs no paid step: reused verdict, free judge, or no image.  Its
        record is written under the candidate's claim, re-read first: the plan was read without it (maybe long
        ago, at triage), and a verdict another process paid for meanwhile must not be overwritten."""
        hold, plan.verdict_hold = plan.verdict_hold, None
        if plan.candidate is None or plan.held:
            self._settle(hold, 0.0)
            return plan.record
        with self.store.claim(*plan.record.key):
            if not self._refreshed(plan):
                self._settle(hold, 0.0)
                return plan.record
            self.settle_abandoned(plan.record, plan.candidate)
            self._judge_candidate(plan.task, plan.spec, plan.repeat, plan.candidate, plan.record, hold,
                                  save=plan.bound)
        self._rejudge_for_stability(plan)
        return plan.record

    def merge_from_disk(self, record: Record) -> bool:
        """(Under the candidate's claim.)  What other processes wrote into the record since ``record`` was read:
        the journal of paid calls, and, while the record still holds the same purchase, every verdict (a judge's
        entry on disk wins unless ours is newer).  Written back with ours, so a second writer never clobbers a
        paid verdict.  False when the record on disk holds another purchase (its verdicts are not merged)."""
        on_disk = self.store.read_record(*record.key)
        if on_disk is None:
            return True
        record.pending, record.possibly_paid = on_disk.pending, on_disk.possibly_paid
        if on_disk.candidate is not None and _purchase(on_disk) != _purchase(record):
            return False
        if on_disk.candidate != record.candidate or not provenance.judged_same_bytes(on_disk, record):
            return True  # verdicts of other bytes are not ours to count (provenance.py)
        theirs = on_disk.judgements if isinstance(on_disk.judgements, dict) else {}
        for judge_id, entry in theirs.items():
            mine = record.judgements.get(judge_id)
            if isinstance(entry, dict) and (not isinstance(mine, dict)
                                            or str(entry.get("judged_at") or "") >= str(mine.get("judged_at") or "")):
                record.judgements[judge_id] = entry
        return True

    def _refreshed(self, plan: "Plan") -> bool:
        """(Under the candidate's claim.)  The plan's record merged with the disk's, or replaced by it when another
        process bought the candidate again meanwhile; False (the record says why) when no image is left to judge."""
        if not self.merge_from_disk(plan.record):
            self._take_other_purchase(plan)
        if plan.candidate is None:
            plan.record.outcome, plan.record.error = ERROR, (
                "its image was replaced or removed by another process while this run waited; rerun")
            return False
        return True

    def _take_other_purchase(self, plan: "Plan") -> None:
        """Another process bought this candidate again since the plan was read: its record is the one to judge
        and write (the plan's verdicts were of the earlier image)."""
        on_disk = self.store.read_record(*plan.record.key)
        if on_disk is not None:
            vars(plan.record).update(vars(on_disk))
        self._look_on_disk(plan)

    def unreachable(self, plan: "Plan", reason: str) -> Record:
        """The record of a candidate whose call never started: its route is unreachable (engine/routes.py).
        Nothing was paid or changed, so nothing is written; the next run tries it again."""
        self._settle(plan.verdict_hold, 0.0)
        plan.verdict_hold = None
        plan.record.outcome, plan.record.error = ERROR, reason
        return plan.record

    def _read_or_new(self, task: Task, spec: ModelSpec, repeat: int) -> Record:
        """The record on disk, or a new one; a file there that is no record (untrusted: a wrong type, too deep,
        not JSON) is treated as absent and noted on the new record (``extra["discarded_record"]``: why) for the
        summary to warn about, naming the file."""
        found, problem = self.store.load_record(task.split, spec.name, task.task_id, repeat)
        if found is not None:
            found.extra.pop(DISCARDED, None)  # a note of an earlier run, about a file since rewritten
            return found
        record = Record(split=task.split, model=spec.name, task_id=task.task_id, repeat=repeat,
                        task_types=list(task.task_types))
        if problem:
            record.extra[DISCARDED] = problem
        return record

    def _look_on_disk(self, plan: "Plan") -> None:
        """The candidate is the file its record names (engine/store.py): other images beside it are strays,
        noted on the record (``extra["strays"]``) for the summary to report and never adopted."""
        found = self.store.find(*plan.record.key, named=plan.record.candidate)
        plan.candidate, plan.lost, plan.refused = found.candidate, found.missing, found.refused
        self._note_strays(plan.record, found.strays)
        plan.record.extra.pop(provenance.CHANGED, None)  # what an earlier run found: this run looks again
        if plan.candidate is not None and plan.candidate.name == plan.record.candidate:
            self._check_bytes(plan, plan.candidate)
        if plan.refused is not None:
            self._refuse(plan)

    def _check_bytes(self, plan: "Plan", candidate: Path) -> None:
        """The candidate's bytes are those its verdict judged (engine/provenance.py), else it is judged again;
        a file that is no image any more is a lost candidate, bought again."""
        try:
            checked = provenance.check(plan.record, candidate, self.store.root, self._reference_hashes(plan.task))
        except NotRegularFile as exc:  # swapped for a link since the store looked
            plan.candidate, plan.refused = None, str(exc)
            return
        except OSError as exc:
            checked = provenance.corrupt(plan.record, candidate, exc.strerror or str(exc))
        plan.bound = plan.bound or checked.bound
        if checked.corrupt:
            plan.candidate, plan.lost = None, candidate.name

    def _reference_hashes(self, task: Task) -> list[str]:
        """The SHA-256 of the task's reference images; [] when they cannot be read (nothing to compare with: the
        judge, which needs them, says what is wrong)."""
        try:
            return provenance.REFERENCES.of(self.references(task))
        except (HypeEditError, OSError):
            return []

    def _bind_adopted(self, plan: "Plan", candidate: Path) -> None:
        try:
            digest = sha256_of(candidate, self.store.root)
        except OSError:  # swapped or gone since the store looked: left unbound, the next run binds it
            return
        provenance.bind(plan.record, digest, self._reference_hashes(plan.task))
        plan.bound = True

    @staticmethod
    def _refuse(plan: "Plan") -> None:
        """A symbolic link where the candidate's files are: nothing is read, bought or written through it."""
        plan.candidate = plan.lost = None
        plan.needs_generation = plan.needs_verdict = False
        plan.record.outcome, plan.record.error = ERROR, plan.refused

    @staticmethod
    def _note_strays(record: Record, strays: tuple[Path, ...]) -> None:
        if strays:
            record.extra["strays"] = [path.name for path in strays]
        else:
            record.extra.pop("strays", None)

    def _forget_lost_candidate(self, plan: "Plan") -> None:
        """The record names an image that is gone: its verdict can be neither shown nor checked, so the
        candidate is bought again.  The record stops naming it first, so that a run killed between writing the
        new image and its record adopts the new image rather than paying a third time.  What the lost image and
        its verdict cost was paid all the same: it moves to ``resubmitted_cost`` (earlier purchases of this
        candidate that left no image), so ``spent`` keeps every purchase, not only the last."""
        if plan.lost is None:
            return
        record = plan.record
        record.extra["lost_candidates"] = [*record.extra.get("lost_candidates", []),
                                           {"file": plan.lost, "cost": record.cost, "judge_cost": record.judge_cost,
                                            "verdict": record.verdict}]
        record.resubmitted_cost = usd(record.resubmitted_cost) + usd(record.cost) + usd(record.judge_cost)
        record.candidate, record.cost, record.judge_cost = None, 0.0, 0.0
        self.store.write_record(record)
        plan.lost = None

    def _settle_plan(self, plan: "Plan") -> None:
        """Decide the plan's needs from its record and candidate (and adopt a candidate found on disk)."""
        record = plan.record
        plan.held = False
        self._resolve_pending(record, plan.candidate)
        if plan.candidate is None:
            plan.needs_generation = not refused(record)
            plan.needs_verdict = False
            if not plan.needs_generation:
                record.reused_candidate = True  # the model's refusal was paid for: it is its answer
            elif self._held(record, GENERATE):
                self._hold(plan, GENERATE)
            return
        self._adopt_candidate(record, plan.spec, plan.candidate)
        if record.candidate_sha256 is None:  # an image adopted: its verdict will be of these bytes
            self._bind_adopted(plan, plan.candidate)
        plan.needs_generation = False
        plan.needs_verdict = self.paid_verdict_needed(record)
        if plan.needs_verdict and self._held(record, JUDGE):
            self._hold(plan, JUDGE)

    # ------------------------------------------------------------------ paid calls: pending, possibly paid

    def _resolve_pending(self, record: Record, candidate: Path | None) -> None:
        """A pending call whose answer is on disk after all (the image, the verdict) was not lost: forget it."""
        call = paid.pending_call(record)
        if call == GENERATE and candidate is not None:
            record.pending = None
        elif call == JUDGE:
            pending = record.pending or {}  # a JUDGE call is a pending entry
            verdict = record.judgements.get(str(pending.get("judge")))
            if isinstance(verdict, dict) and str(verdict.get("judged_at") or "") >= str(pending.get("sent_at")):
                record.pending = None

    def settle_abandoned(self, record: Record, candidate: Path | None) -> None:
        """(Under the candidate's claim, so no live call of any process is behind it.)  A pending call found on
        disk was sent by a run that ended before its reply: it may have been paid.  Written at once."""
        self._resolve_pending(record, candidate)
        if paid.pending_call(record) is not None:
            paid.abandon(record, paid.RUN_ENDED)
            self.store.write_record(record)

    def _held(self, record: Record, call: str) -> bool:
        return self.on_possibly_paid == REVIEW and bool(paid.unresolved(record, call))

    @staticmethod
    def _hold(plan: "Plan", call: str) -> None:
        plan.needs_generation = plan.needs_verdict = False
        plan.held = True
        plan.record.outcome, plan.record.error = ERROR, paid.held_message(plan.record, call)
        plan.record.extra[paid.HELD] = call

    def journal_call(self, record: Record, call: str, *, route: str, price: float, call_id: str | None,
                      **fields: Any) -> None:
        """Write the paid request into the record before it is sent (its reply may never come back)."""
        record.pending = paid.sending(call, route=route, price=price, call_id=call_id, **fields)
        paid.mark_rebought(record, call)
        record.extra.pop(paid.HELD, None)
        try:
            self.store.write_record(record)
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
        if exc is not None and getattr(exc, "reply_lost", False):
            return paid.abandon(record, redact(str(exc))[:500])
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
        pending = [r.pending for r in records if isinstance(r.pending, dict)]
        jobs = sum(1 for r in records if r.pending is None and r.job)
        return jobs, len(pending), sum(float(p.get("price") or 0) for p in pending)

    def paid_verdict_needed(self, record: Record) -> bool:
        """Whether the judge must be called, and paid, for this candidate (a free judge never is)."""
        return bool(self.judge.routes) and self.reusable_verdict(record) is None

    # ------------------------------------------------------------------ generation

    @staticmethod
    def _adopt_candidate(record: Record, spec: ModelSpec, candidate: Path) -> None:
        record.reused_candidate = True
        if record.candidate != candidate.name:
            # An image no record names (Store.find never offers one over a named file): a run was killed
            # between the two writes, or the image came from elsewhere. It was paid for at the model's price.
            record.candidate, record.route, record.cost = candidate.name, spec.route, spec.price
            record.provider_model, record.judgements = spec.provider_model, {}
            record.signals = {}  # they were the old candidate's
            record.candidate_sha256, record.references_sha256 = None, []  # and so were these

    def _generate(self, task: Task, spec: ModelSpec, repeat: int, record: Record, slots: CallSlots = ()
                  ) -> Path | None:
        """Buy the candidate (or resume its journaled job); an expired job is submitted once more."""
        for attempt in (1, 2):
            try:
                return self._generate_once(task, spec, repeat, record, slots)
            except JobExpired as exc:
                expired = f"{spec.name} job {(record.job or {}).get('id')} expired: {redact(str(exc))}"
                record.resubmitted += 1
                record.job = None
                if attempt == 2:
                    self._failed(record, spec, JobExpired(f"{expired}; submitted again, expired again"))
                    return None
                record.extra["expired_jobs"] = [*record.extra.get("expired_jobs", []), expired]
                self.store.write_record(record)
        return None

    def _generate_once(self, task: Task, spec: ModelSpec, repeat: int, record: Record, slots: CallSlots = ()
                       ) -> Path | None:
        journal = self._journal(record, spec)
        reservation, request = None, None

        def worst() -> float:  # what the call may have cost, asked only when a job's own figure is missing
            return self._worst_case(spec, request)

        try:
            request = self.generation_request(task, spec, repeat, journal, slots)
            provider = self.provider(spec)
            if not journal.resumed:  # a resumed job was paid for when it was submitted
                # the worst case (the size requested, the references), not the list price: the budget is a cap
                price = provider.worst_case_cost(request)
                reservation = self._reserve(price, f"{spec.name} {task.task_id} r{repeat:03d}")
                self._journal_generation(record, spec, price, request)
            started = time.monotonic()
            generation = self._call(lambda: provider.generate(request), record, f"{spec.name} via {spec.route}",
                                    ProviderError)
        except BudgetExceeded as exc:
            return self._skip(record, str(exc))
        except Refusal as exc:
            self.end_call(record)
            self._settle(reservation, exc.cost or 0.0)
            self._refused(record, spec, exc)
            return None
        except JobExpired:
            self.end_call(record)
            self._expired_job_paid(record, self._job_cost(record, worst), reservation)
            raise
        except (CallError, HypeEditError) as exc:
            lost = self.end_call(record, exc)
            # A job that was submitted is paid for even when its polls failed: it stays in the record
            # (journaled) and the next attempt resumes it.  A call whose reply was lost may be paid: its
            # worst case is committed, never released.
            self._settle(reservation, float(lost.get("price") or 0) if lost else self._job_cost(record, worst))
            if record.job and not journal.resumed:
                record.cost = self._job_cost(record, worst)
            refused = self.refused_keys.note(exc, route=spec.route, model_scope=self._model_scope(spec),
                                             variables=self._provider_key_variables(spec))
            self._failed(record, spec, exc, note=self._lost_note(lost) + refused)
            return None
        self.end_call(record)
        self._settle(reservation, generation.cost)
        if journal.resumed and record.job:
            record.job["resumed"] = True  # paid for by an earlier attempt, not by this run
        record.references_sha256 = self._reference_hashes(task)  # what the verdict will be of, with the image
        try:
            path = self._save_generation(record, spec, generation, time.monotonic() - started)
        except DiskFull as exc:
            self._failed(record, spec, exc)
            return None
        if generation.preview is not None:  # measured now, from the copy the adapter made: no second decode
            self._signals(task, generation.preview, record)
        return path

    @staticmethod
    def _model_scope(spec: ModelSpec) -> str:
        return f"{spec.route} model {spec.provider_model}"

    def _provider_key_variables(self, spec: ModelSpec) -> tuple[str, ...]:
        return tuple(getattr(self.provider(spec), "key_env", ()) or KEY_ENV.get(spec.route, ()))

    def _key_stopped(self, spec: ModelSpec) -> str | None:
        """Why this candidate is not bought: its route's (or model's) key was refused, or the paid judge's was
        (a candidate bought now would be paid for and left unjudged); None when nothing stops it."""
        stopped = self.refused_keys.stopped(spec.route, self._model_scope(spec))
        if stopped:
            return stopped
        judge = self.judge
        if judge.routes and (stopped := self.refused_keys.stopped(*judge.routes)):
            return f"judge {judge.id}: {stopped}"
        return None

    def _journal_generation(self, record: Record, spec: ModelSpec, price: float, request: GenerationRequest) -> None:
        """The generation's request, journaled before it leaves, at its worst-case price; a free route (price 0)
        has nothing to lose."""
        if price > 0:
            self.journal_call(record, GENERATE, route=spec.route, price=price, call_id=request.journal.call_id)

    def _journal(self, record: Record, spec: ModelSpec) -> Journal:
        """The candidate's journal: a job an adapter submits is written into the record before its first poll."""
        def save(job: dict[str, Any] | None) -> None:
            record.job = job
            if job is not None:
                record.route, record.provider_model = spec.route, spec.provider_model
                record.pending = None  # the job is what the submit's reply said: resumable, not lost
            self.store.write_record(record)

        # A job journaled on another route (the model was pointed elsewhere with --models-file since) cannot be
        # polled by this route's adapter: it is left behind, and this route submits its own.
        job = record.job if record.job and record.job.get("route") in (None, spec.route) else None
        source = self.store.record_path(record.split, record.model, record.task_id, record.repeat)
        return Journal(job, save, route=spec.route, call_id=paid.new_call_id(), source=str(source))

    @staticmethod
    def _job_cost(record: Record, unknown: Callable[[], float]) -> float:
        """What a submitted job cost: the provider's figure journaled at submission, else ``unknown()`` (the
        call's worst case: what it may have cost); 0 when no job was submitted."""
        if not record.job:
            return 0.0
        cost = record.job.get("cost")
        return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else unknown()

    def generation_request(self, task: Task, spec: ModelSpec, repeat: int, journal: Journal | None = None,
                           slots: CallSlots = ()) -> GenerationRequest:
        """The request that buys this candidate: the same for the call, its --budget hold and the run's price."""
        # paid bytes land in the candidate's own folder of the outputs, never in the cache (a full cache loses none)
        return GenerationRequest(task, repeat, seed_for(task.task_id, repeat), tuple(self.references(task)), spec,
                                 journal=journal or Journal(), slots=slots,
                                 landing=self.store.task_dir(task.split, spec.name, task.task_id))

    def worst_case_generation(self, task: Task, spec: ModelSpec, repeat: int) -> float:
        """The most buying this candidate can cost: what --budget holds for it (the run's price, engine/estimate.py)."""
        return self.provider(spec).worst_case_cost(self.generation_request(task, spec, repeat))

    def worst_case_verdict(self, task: Task, spec: ModelSpec, repeat: int) -> float:
        """The most this candidate's verdict can cost: what --budget holds for it; 0 for a free judge."""
        if not self.judge.routes:
            return 0.0
        return self.judge.worst_case_cost(self._verdict_request(task, spec, repeat))

    def _worst_case(self, spec: ModelSpec, request: GenerationRequest | None) -> float:
        """The most ``request`` can cost; the list price when it cannot be said (e.g. its references failed)."""
        if request is None:
            return spec.price
        try:
            return self.provider(spec).worst_case_cost(request)
        except HypeEditError:
            return spec.price

    def _expired_job_paid(self, record: Record, cost: float, reservation: Reservation | None) -> None:
        """A job whose result expired at the provider was paid for all the same: a cost of its own
        (``resubmitted_cost``), in ``spent``, apart from the generation that replaces it."""
        self._settle(reservation, cost)
        record.resubmitted_cost = (record.resubmitted_cost or 0.0) + cost
        record.cost = 0.0  # the candidate's own generation is the next submission's

    def _reserve(self, amount: float, what: str) -> Reservation | None:
        """Hold ``amount`` USD of --budget for a call (its worst case), or raise BudgetExceeded when the rest of
        the budget cannot cover it: such a call never starts."""
        if self.budget is None:
            return None
        return self.budget.reserve(amount, what)

    @staticmethod
    def _settle(reservation: Reservation | None, actual: float) -> None:
        if reservation is not None:
            reservation.commit(actual) if actual else reservation.release()

    def _save_generation(self, record: Record, spec: ModelSpec, gen: Generation, latency: float) -> Path:
        """The paid image and its record, written at once; DiskFull when the disk has no room: an image that could
        not be written is counted as paid and lost (``resubmitted_cost``); one written before its record failed
        stays on disk, and the next run adopts it without paying."""
        try:
            path = self.store.write_candidate(record.split, record.model, record.task_id, record.repeat, gen.image,
                                              gen.ext)
        except OSError as exc:
            if not room.no_room(exc):
                raise
            record.resubmitted_cost = usd(record.resubmitted_cost) + usd(gen.cost)
            if isinstance(gen.image, Path):
                gen.image.unlink(missing_ok=True)
            raise DiskFull(self.stop_for_disk(exc)) from exc
        record.candidate, record.route, record.provider_model = path.name, spec.route, gen.provider_model
        record.seed, record.request_id, record.cost = gen.seed, gen.request_id, gen.cost
        record.latency_s, record.generated_at, record.outcome, record.error = round(latency, 3), now_iso(), None, None
        record.reused_candidate = False
        record.extra.update(gen.extra)
        if record.job:
            record.job["finished_at"] = now_iso()
        record.verdict = record.reasoning = record.judge = None
        record.judgements, record.pending, record.signals = {}, None, {}
        # hashed from the bytes in memory (a downloaded file: from disk, once)
        record.candidate_sha256 = (sha256_of(path, self.store.root) if isinstance(gen.image, Path)
                                   else sha256_bytes(gen.image))
        try:
            self.store.write_record(record)  # the paid image is safe before the judge is asked
        except OSError as exc:
            if not room.no_room(exc):
                raise
            raise DiskFull(self.stop_for_disk(exc) + f"; the image is kept at {path}, and the next run adopts it "
                           "without paying") from exc
        return path

    def _refused(self, record: Record, spec: ModelSpec, exc: Refusal) -> None:
        record.outcome, record.refusal, record.route = REFUSED, redact(exc.reason), spec.route
        record.cost, record.request_id, record.generated_at = exc.cost or 0.0, exc.request_id, now_iso()
        record.provider_model, record.error, record.pending = spec.provider_model, None, None
        self.store.write_record(record)
        return None

    def _failed(self, record: Record, spec: ModelSpec, exc: Exception, note: str = "") -> None:
        # the error names model and route already; the item adds task and repeat
        # any exception of a plugin's provider: its text is cleaned and capped where it is stored (text.py)
        record.outcome, record.route, record.error = ERROR, spec.route, clean_text(redact(str(exc)) + note, ERROR_LIMIT)
        try:
            self.store.write_record(record)  # visible in the outputs; the next run retries it
        except OSError as write_error:
            if not room.no_room(write_error):
                raise
            self.stop_for_disk(write_error)  # the item still says what happened; the disk had no room for it
        return None

    @staticmethod
    def _skip(record: Record, reason: str) -> None:
        record.outcome, record.error = SKIPPED, reason  # not written: nothing was paid
        return None

    def provider(self, spec: ModelSpec) -> Provider:
        if spec.name not in self._providers:
            self._providers[spec.name] = self.make_provider(spec)
        return self._providers[spec.name]

    # ------------------------------------------------------------------ judging

    @property
    def judge(self) -> Judge:
        if self._judge is None:
            self._judge = self.make_judge()
        return self._judge

    def needs_call(self, split: str, model: str, task_id: str, repeat: int) -> bool:
        """Whether this candidate still has to be bought: no image on disk and no refusal recorded."""
        record = self.store.read_record(split, model, task_id, repeat)
        found = self.store.find(split, model, task_id, repeat, named=record.candidate if record else None)
        if found.candidate is not None or found.refused is not None:  # a link is refused, not bought
            return False
        return not refused(record)

    def reusable_verdict(self, record: Record) -> dict[str, Any] | None:
        """The verdict of this judge already paid for on this candidate, unless --rejudge or it is stale."""
        judge = self.judge
        if judge.reuse_verdicts and not self.rejudge:
            entry = record.judgements.get(judge.id)
            if entry and judge.stale_reason(entry) is None:
                return entry
        return None

    def _judge_candidate(self, task: Task, spec: ModelSpec, repeat: int, candidate: Path, record: Record,
                         hold: Reservation | None = None, save: bool = False, slots: CallSlots = ()) -> None:
        """``hold``: --budget held for this verdict when the candidate was bought (else it is reserved here);
        ``save``: the record changed already (its content hashes, provenance.py) and is written in any case."""
        judge = self.judge
        new_signals = self._signals(task, candidate, record) or save
        stored = self.reusable_verdict(record)
        if stored:
            self._settle(hold, 0.0)
            self._apply_verdict(record, stored, reused=True)
            if new_signals:
                self._write_judged(record)  # stored once: the next run reads them
            return
        stale = record.judgements.get(judge.id)
        reason = judge.stale_reason(stale) if stale and judge.reuse_verdicts and not self.rejudge else None
        stopped = self.refused_keys.stopped(*judge.routes) if judge.routes else None
        if stopped:  # the judge's key was refused: nothing sent (engine/refusedkeys.py)
            self._settle(hold, 0.0)
            record.outcome, record.error = ERROR, f"judge {judge.id}: {stopped}"
            return
        reservation = hold
        try:
            references = tuple(self.references(task)) if judge.needs_images else ()
            request = JudgeRequest(task, spec.name, repeat, candidate, references,
                                   call_id=paid.new_call_id() if judge.routes else None, slots=slots)
            reservation = hold or self._reserve_verdict(request)
            if judge.routes:  # a paid judge: its request is journaled before it leaves
                self._journal_judge_call(record, judge, request)
            verdict = self._call(lambda: judge.judge(request), record, f"judge {judge.id}", JudgeError)
        except BudgetExceeded as exc:
            self._skip(record, str(exc))  # the paid candidate stays on disk: a rerun with more budget judges it
            return
        except (CallError, HypeEditError) as exc:
            lost = self.end_call(record, exc)
            # asks that were answered were paid; a call whose reply was lost may have been paid at its worst case
            paid_for = (getattr(exc, "cost", None) or 0.0) + (float(lost.get("price") or 0) if lost else 0.0)
            self._settle(reservation, paid_for)
            refused = self.refused_keys.note(exc, route=judge.routes[0], model_scope=judge.routes[0],
                                             variables=judge_key_variables(judge)) if judge.routes else ""
            record.outcome, record.error = ERROR, clean_text(
                redact(f"judge {judge.id}: {exc}") + self._lost_note(lost) + refused, ERROR_LIMIT)
            self._write_judged(record)
            return
        self.end_call(record)
        self._settle(reservation, verdict.cost)
        entry = self._verdict_entry(verdict)
        if reason and stale:  # a reason is only given for a stale verdict
            entry["replaced"] = {"reason": reason, "verdict": stale.get("verdict"), "judged_at": stale.get("judged_at")}
        if stale and not judge.routes and _same_verdict(stale, entry) and record.judge == entry["judge"] \
                and not record.error:
            # A free judge (human labels) asked again and saying the same: the record on disk is right as it
            # is.  Not rewriting it is most of a 7,000-candidate replay's time.
            self._apply_verdict(record, stale, reused=False)
            if new_signals:
                self._write_judged(record)
            return
        self._apply_verdict(record, entry, reused=False)
        self._write_judged(record)

    def _write_judged(self, record: Record) -> None:
        """The record with its verdict; a disk with no room stops the buying, and the item says what was lost."""
        try:
            self.store.write_record(record)
        except OSError as exc:
            if not room.no_room(exc):
                raise
            message = self.stop_for_disk(exc)
            if record.outcome != ERROR:
                record.outcome, record.error = ERROR, (f"{message}; its verdict ({record.verdict}) could not be "
                                                       "saved, so the next run asks for it again")

    def _journal_judge_call(self, record: Record, judge: Judge, request: JudgeRequest) -> None:
        self.journal_call(record, JUDGE, route=judge.routes[0], price=judge.worst_case_cost(request),
                           call_id=request.call_id, judge=judge.id)

    def _hold_verdict(self, plan: "Plan") -> Reservation | None:
        """--budget for the verdict of a candidate about to be bought, asked of the judge with the path the
        candidate will have (a judge's worst case does not depend on the image's content)."""
        if self.budget is None or not self.judge.routes:
            return None
        return self._reserve_verdict(self._verdict_request(plan.task, plan.spec, plan.repeat))

    def _verdict_request(self, task: Task, spec: ModelSpec, repeat: int) -> JudgeRequest:
        """The judge's request for a candidate before it is bought, with the path it will have."""
        references = tuple(self.references(task)) if self.judge.needs_images else ()
        to_be = self.store.task_dir(task.split, spec.name, task.task_id) / f"{repeat:03d}.png"
        return JudgeRequest(task, spec.name, repeat, to_be, references)

    def _reserve_verdict(self, request: JudgeRequest) -> Reservation | None:
        """A paid judge's verdict holds its worst case of --budget too (a free judge calls nothing)."""
        if self.budget is None or not self.judge.routes:
            return None
        return self._reserve(self.judge.worst_case_cost(request),
                             f"judge {self.judge.id} on {request.model} {request.task.task_id} r{request.repeat:03d}")

    def _rejudge_for_stability(self, plan: "Plan") -> None:
        """--judge-stability: the same judge asked K times more about a sampled candidate (engine/stability.py)."""
        if self.stability.get(plan.key):
            from .stability import rejudge

            rejudge(self, plan, self.stability[plan.key])

    def _signals(self, task: Task, candidate: Path | Preview, record: Record) -> bool:
        """Pixel diagnostics beside the verdict (engine/signals.py), computed once per candidate from its file or
        the preview its adapter made; True when new."""
        if not self.signals or record.signals:
            return False
        if record.reused_candidate and not self.signals_from_disk and provenance.CHANGED not in record.extra:
            # a candidate read back from disk without them is left unmeasured (a replay of thousands would decode
            # every image again): the report and signals_summary say how many, never a figure that was not
            # computed. Bytes that changed since their verdict are judged again now, and measured with it
            return False
        from .signals import candidate_signals

        record.signals = candidate_signals(task, candidate, self.references)
        return bool(record.signals)

    @staticmethod
    def _verdict_entry(verdict: Verdict) -> dict[str, Any]:
        return {
            "verdict": verdict.label,
            "reasoning": redact(verdict.reasoning),
            "judge": verdict.judge,
            "votes": verdict.votes,
            "cost": verdict.cost,
            "judged_at": now_iso(),
            "extra": verdict.extra,
        }

    @staticmethod
    def _apply_verdict(record: Record, entry: dict[str, Any], *, reused: bool) -> None:
        record.judgements[entry["judge"]] = entry
        record.verdict, record.reasoning, record.judge = entry["verdict"], entry["reasoning"], entry["judge"]
        record.votes, record.judged_at = entry["votes"], entry["judged_at"]
        record.judge_cost = entry.get("cost") or 0.0
        record.outcome, record.error, record.reused_verdict = (PASS if entry["verdict"] == "PASS" else FAIL), None, reused

    def close(self) -> None:
        for provider in self._providers.values():
            provider.close()
        if self._judge is not None:
            self._judge.close()
