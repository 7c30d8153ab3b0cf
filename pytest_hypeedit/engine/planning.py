"""What one candidate still needs, read from the disk: its record, its image, what other writers did meanwhile.

    record on disk? candidate on disk? -> reuse them (no call, no key needed); the candidate is the file
                                          the record names, other images beside it are strays (store.py);
                                          its bytes are those its verdict judged, else it is judged again
                                          (provenance.py); a symbolic link is unusable, never followed
    a journaled job in the record?     -> resume it (no new submission, no new budget)
    a paid call pending, its reply lost? -> possibly paid: buy again (--possibly-paid rebuy) or hold it

No call is made here; the only writes are the lifecycle's named steps (engine/lifecycle.py): a lost image
forgotten before it is bought again, a candidate held for review.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import HypeEditError, NotRegularFile
from ..files import sha256_with_signature
from ..registry import ModelSpec
from ..tasks import Task
from ..transport.slots import CallSlots
from . import call_ledger, provenance
from .journal import COUNTED_IN, GENERATE, HELD, JUDGE, RESUBMITTED_COST, REVIEW, counted, held_message, unresolved
from .lifecycle import CallReservation, Lifecycle, Step
from .measurer import Measuring
from .record_spend import keep_verdicts_cost, leave_generation_behind, set_generation, update_job
from .records import BATCH, DISCARDED, ERROR, REFUSED, SKIPPED, Record
from .release import belongs, record_release_id, release_of

if TYPE_CHECKING:
    from .means import Means
    from .paidcall import PaidCalls


def refused(record: Record | None) -> bool:
    """The model's answer was a refusal: a settled (and paid-for) outcome, not retried."""
    return record is not None and record.outcome == REFUSED


def skip(life: Lifecycle, record: Record, reason: str) -> None:
    """--budget cannot cover the next call: not sent, and not written (nothing was paid)."""
    life.move(Step.SKIP)
    record.outcome, record.error = SKIPPED, reason


def _purchase(record: Record) -> tuple[Any, ...]:
    """What tells one purchase of a candidate from the next: a candidate bought again (its image lost) has a
    lost_candidates entry more, and its own generation time and request id."""
    lost = record.extra.get("lost_candidates") if isinstance(record.extra, dict) else None
    return record.candidate, record.generated_at, record.request_id, len(lost) if isinstance(lost, list) else 0


def _life_of(record: Record) -> Lifecycle:
    return Lifecycle(f"{record.model} {record.task_id} r{record.repeat:03d}")


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
    verdict_reservation: CallReservation | None = None  # --budget reserved for the verdict of a candidate being bought (budget.py)
    unusable: str | None = None  # a symbolic link where the candidate's files are (store.py): an error, no call
    bound: bool = False  # the record's content hashes were set or changed (provenance.py): to be written
    #: The in-flight slots the pool holds for the step running now (engine/limits.py), carried into its
    #: GenerationRequest or JudgeRequest; empty outside a pool (each request takes its own).
    slots: CallSlots = ()
    #: its signals being measured since its purchase, taken with its verdict (engine/measurer.py)
    measuring: Measuring | None = None
    life: Lifecycle = field(init=False)  # where its money path stands (engine/lifecycle.py)

    def __post_init__(self) -> None:
        self.life = _life_of(self.record)

    @property
    def key(self) -> tuple[str, str, str, int]:
        return self.record.key


class Planning:
    """Reading a candidate's state from the disk, and merging with what other processes wrote there.  Its only
    writes go through the paid-call seam it is given (``PaidCalls.write``)."""

    def __init__(self, means: Means, calls: PaidCalls) -> None:
        self.means, self.calls = means, calls

    def read_or_new(self, task: Task, spec: ModelSpec, repeat: int) -> Record:
        """The record on disk, or a new one; a file there that is no record (untrusted: a wrong type, too deep,
        not JSON) is treated as absent and noted on the new record (``extra["discarded_record"]``: why) for the
        summary to warn about, naming the file."""
        found, problem = self.means.store.load_record(task.split, spec.name, task.task_id, repeat)
        release = release_of(spec)
        if found is not None:
            found.extra.pop(DISCARDED, None)  # a note of an earlier run, about a file since rewritten
            if found.release is None and belongs(found, release):  # an earlier version's, proved this release's
                found.release = release.as_record()  # written with the record whenever it is written
            return found
        record = Record(split=task.split, model=spec.name, task_id=task.task_id, repeat=repeat,
                        task_types=list(task.task_types), release=release.as_record())
        if problem:
            record.extra[DISCARDED] = problem
        return record

    def look_on_disk(self, plan: Plan) -> None:
        """The candidate is the file its record names (engine/store.py): other images beside it are strays,
        noted on the record (``extra["strays"]``) for the summary to report and never adopted."""
        if self._foreign(plan):
            return
        found = self.means.store.find(*plan.record.key, named=plan.record.candidate)
        plan.candidate, plan.lost, plan.unusable = found.candidate, found.missing, found.unusable
        self.note_strays(plan.record, found.strays)
        plan.record.extra.pop(provenance.CHANGED, None)  # what an earlier run found: this run looks again
        if plan.candidate is not None and plan.candidate.name == plan.record.candidate:
            self._check_bytes(plan, plan.candidate)
        if plan.unusable is not None:
            self._set_unusable(plan)

    def _foreign(self, plan: Plan) -> bool:
        """A record of another release where this release's candidate goes (a file copied in by hand: each release
        has its own folder, engine/release.py): it is never counted for this one, and never overwritten (it was
        paid for).  The candidate is an error naming it; the run's record of it is a new one, which is not
        written."""
        release = release_of(plan.spec)
        if belongs(plan.record, release):
            return False
        other = record_release_id(plan.record.release) or "an earlier version's, of another provider model"
        path = self.means.store.record_path(*plan.record.key)
        plan.record = Record(split=plan.record.split, model=plan.record.model, task_id=plan.record.task_id,
                             repeat=plan.record.repeat, task_types=list(plan.task.task_types),
                             release=release.as_record())
        plan.unusable = (f"{path}: a record of another release ({other}) where release {release.id} of "
                        f"{plan.spec.name} keeps its candidates; it is kept and not counted: move it (with its image) "
                        "to its own release's folder, or out of the outputs")
        self._set_unusable(plan)
        return True

    def _check_bytes(self, plan: Plan, candidate: Path) -> None:
        """The candidate's bytes are those its verdict judged (engine/provenance.py), else it is judged again;
        a file that is no image any more is a lost candidate, bought again."""
        try:
            checked = provenance.check(plan.record, candidate, self.means.store.root, self.reference_hashes(plan.task))
        except NotRegularFile as exc:  # swapped for a link since the store looked
            plan.candidate, plan.unusable = None, str(exc)
            return
        except OSError as exc:
            checked = provenance.corrupt(plan.record, candidate, exc.strerror or str(exc))
        plan.bound = plan.bound or checked.bound
        if checked.corrupt:
            plan.candidate, plan.lost = None, candidate.name

    def reference_hashes(self, task: Task) -> list[str]:
        """The SHA-256 of the task's reference images; [] when they cannot be read (nothing to compare with: the
        judge, which needs them, says what is wrong)."""
        try:
            return provenance.REFERENCES.of(self.means.references(task))
        except (HypeEditError, OSError):
            return []

    def _bind_adopted(self, plan: Plan, candidate: Path) -> None:
        try:
            digest, signature = sha256_with_signature(candidate, self.means.store.root)
        except OSError:  # swapped or gone since the store looked: left unbound, the next run binds it
            return
        provenance.bind(plan.record, digest, self.reference_hashes(plan.task))
        plan.record.candidate_stat = signature
        plan.bound = True

    @staticmethod
    def _set_unusable(plan: Plan) -> None:
        """A symbolic link where the candidate's files are: nothing is read, bought or written through it."""
        plan.candidate = plan.lost = None
        plan.needs_generation = plan.needs_verdict = False
        plan.record.outcome, plan.record.error = ERROR, plan.unusable
        plan.life.move(Step.BLOCK)

    @staticmethod
    def note_strays(record: Record, strays: tuple[Path, ...]) -> None:
        if strays:
            record.extra["strays"] = [path.name for path in strays]
        else:
            record.extra.pop("strays", None)

    def forget_lost_candidate(self, plan: Plan) -> None:
        """The record names an image that is gone: its verdict can be neither shown nor checked, so the
        candidate is bought again.  The record stops naming it first, so that a run killed between writing the
        new image and its record adopts the new image rather than paying a third time.  What the lost image and
        its verdict cost was paid all the same: the image's cost becomes a left-behind entry of the record's call
        ledger (an earlier purchase of this candidate that left no image) and its verdicts stay in
        its call ledger, so ``spent`` keeps every purchase, not only the last; ``extra["lost_candidates"]``
        says which image was lost and its verdict.  A job the record still
        holds (the one that delivered the lost image) is marked as counted there: the purchase may fetch its result
        again, which costs nothing more, and its expiry adds nothing (engine/purchase.py)."""
        if plan.lost is None:
            return
        record = plan.record
        record.extra["lost_candidates"] = [*record.extra.get("lost_candidates", []),
                                           {"file": plan.lost, "verdict": record.verdict}]
        keep_verdicts_cost(record)
        leave_generation_behind(record, record.cost, tier=record.tier, route=record.route, id=record.request_id)
        record.candidate, record.judge_cost = None, 0.0
        update_job(record, **{COUNTED_IN: RESUBMITTED_COST})
        self.calls.write(plan.life, Step.WRITE_FORGOTTEN, record)
        plan.lost = None

    def settle_plan(self, plan: Plan) -> None:
        """Decide the plan's needs from its record and candidate (and adopt a candidate found on disk)."""
        record = plan.record
        plan.held = False
        self.calls.resolve_pending(record, plan.candidate)
        if plan.candidate is None:
            plan.needs_generation = not refused(record)
            plan.needs_verdict = False
            if not plan.needs_generation:
                record.reused_candidate = True  # the model's refusal was paid for: it is its answer
            elif self.held(record, GENERATE):
                self.reserved(plan, GENERATE)
            return
        self._adopt_candidate(record, plan.spec, plan.candidate)
        plan.life.move(Step.ADOPT)
        if record.candidate_sha256 is None:  # an image adopted: its verdict will be of these bytes
            self._bind_adopted(plan, plan.candidate)
        plan.needs_generation = False
        plan.needs_verdict = self.paid_verdict_needed(record)
        if plan.needs_verdict and self.held(record, JUDGE):
            self.reserved(plan, JUDGE)

    @staticmethod
    def _adopt_candidate(record: Record, spec: ModelSpec, candidate: Path) -> None:
        record.reused_candidate = True
        if record.candidate != candidate.name:
            # An image no record names (Store.find never offers one over a named file): a run was killed
            # between the two writes, or the image came from elsewhere. It was paid for at the model's price; unless
            # the record holds a job whose image was lost: it is that job's result fetched again, whose cost
            # its left-behind ledger entry holds already (a new purchase would have replaced the job: purchase.py).
            record.candidate, record.route = candidate.name, spec.route
            job = record.job or {}
            batch = job.get("kind") == BATCH  # a batch line's image: its price
            price = spec.price_at(BATCH) if batch else spec.price
            # bought by the run that was killed, not by this one: no run
            set_generation(record, 0.0 if counted(job) else price, tier=BATCH if batch else record.tier,
                           route=spec.route)
            record.provider_model, record.judgements = spec.provider_model, {}
            record.signals = {}  # they were the old candidate's
            record.candidate_sha256, record.references_sha256 = None, []  # and so were these

    def held(self, record: Record, call: str) -> bool:
        return self.means.on_possibly_paid == REVIEW and bool(unresolved(record, call))

    @staticmethod
    def reserved(plan: Plan, call: str) -> None:
        plan.needs_generation = plan.needs_verdict = False
        plan.held = True
        plan.record.outcome, plan.record.error = ERROR, held_message(plan.record, call)
        plan.record.extra[HELD] = call

    # ------------------------------------------------------------------ other writers

    def merge_from_disk(self, record: Record) -> bool:
        """(Under the candidate's claim.)  What other processes wrote into the record since ``record`` was read:
        the journal of paid calls, and, while the record still holds the same purchase, every verdict (a judge's
        entry on disk wins unless ours is newer).  Written back with ours, so a second writer never clobbers a
        paid verdict.  False when the record on disk holds another purchase (its verdicts are not merged)."""
        on_disk = self.means.store.read_record(*record.key)
        if on_disk is None:
            return True
        # the call ledger is append-only, whichever process paid: every entry of both, once (a lost call another
        # process bought again since stays rebought, call_ledger.later; a call another process ended or abandoned
        # since is at its end, further along its moves)
        record.calls = call_ledger.merged(on_disk.calls, record.calls)
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

    def refreshed(self, plan: Plan) -> bool:
        """(Under the candidate's claim.)  The plan's record merged with the disk's, or replaced by it when another
        process bought the candidate again meanwhile; False (the record says why) when no image is left to judge."""
        if not self.merge_from_disk(plan.record):
            self._take_other_purchase(plan)
        if plan.candidate is None:
            plan.record.outcome, plan.record.error = ERROR, (
                "its image was replaced or removed by another process while this run waited; rerun")
            plan.life.move(Step.BLOCK)
            return False
        return True

    def _take_other_purchase(self, plan: Plan) -> None:
        """Another process bought this candidate again since the plan was read: its record is the one to judge
        and write (the plan's verdicts were of the earlier image)."""
        on_disk = self.means.store.read_record(*plan.record.key)
        if on_disk is not None:
            vars(plan.record).update(vars(on_disk))
        self.look_on_disk(plan)

    # ------------------------------------------------------------------ what is still to pay

    def needs_call(self, split: str, model: str, task_id: str, repeat: int) -> bool:
        """Whether this candidate still has to be bought: no image on disk and no refusal recorded."""
        return self.disk_state(split, model, task_id, repeat)[1]

    def disk_state(self, split: str, model: str, task_id: str, repeat: int) -> tuple[Record | None, bool]:
        """The candidate's record on disk (None: none, or no record of it), and whether it still has to be bought
        (``needs_call``); read once per candidate by the up-front checks (engine/survey.py)."""
        record = self.means.store.read_record(split, model, task_id, repeat)
        if record is not None and self.means.store.has_file(split, model, task_id, repeat, record.candidate):
            return record, False  # its image is there (or a link is: unusable, not bought either)
        found = self.means.store.find(split, model, task_id, repeat, named=record.candidate if record else None)
        if found.candidate is not None or found.unusable is not None:  # a link is unusable, not bought
            return record, False
        return record, not refused(record)

    def reusable_verdict(self, record: Record) -> dict[str, Any] | None:
        """The verdict of this judge already paid for on this candidate, unless --rejudge or it is stale."""
        judge = self.means.judge
        if judge.reuse_verdicts and not self.means.rejudge:
            entry = record.judgements.get(judge.id)
            if entry and judge.stale_reason(entry) is None:
                return entry
        return None

    def paid_verdict_needed(self, record: Record) -> bool:
        """Whether the judge must be called, and paid, for this candidate (a free judge never is)."""
        return bool(self.means.judge.routes) and self.reusable_verdict(record) is None
