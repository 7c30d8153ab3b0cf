"""The judge step: a verdict for a candidate saved on disk, reused when one of these bytes is there, else asked
for (its worst case reserved in --budget, its request journaled before it leaves) and written at once.

    verdict on disk for this judge?   -> reuse it (unless --rejudge)
    otherwise: judge (its worst case reserved, or reserved since the purchase) -> verdict written at once

Every step is one of the candidate's lifecycle (engine/lifecycle.py): a judge is only asked about an image
that is SAVED, and a paid judge only once its request is journaled.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BudgetExceeded, CallError, HypeEditError, JudgeError
from ..judges.base import Judge, JudgeRequest, Verdict
from ..registry import ModelSpec
from ..secrets import KEY_ENV, redact
from ..tasks import Task
from ..text import ERROR_LIMIT, clean_text
from . import provenance, room
from .call_context import JudgeContext
from .journal import JUDGE, new_call_id
from .lifecycle import CallReservation, Lifecycle, Step
from .measurer import Measuring
from .planning import Plan, skip
from .record_spend import add_failed_judge_cost, add_verdict_cost
from .records import ERROR, FAIL, PASS, Record, now_iso, verdict_tier

if TYPE_CHECKING:
    from .means import Means
    from .paidcall import PaidCalls
    from .planning import Planning
    from .preview import Preview


def _same_verdict(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Two verdict entries that say the same (they differ only in when they were given)."""
    keys = ("verdict", "reasoning", "judge", "votes", "cost", "extra")
    return all(old.get(key) == new.get(key) for key in keys)


def _says_what_it_has(record: Record, stale: dict[str, Any] | None, entry: dict[str, Any]) -> bool:
    """Whether a verdict entry is the one the record holds and shows (the same verdict of the same judge, and no
    error to clear): a free judge saying it again changes nothing on disk."""
    return (isinstance(stale, dict) and bool(stale) and _same_verdict(stale, entry) and record.judge == entry["judge"]
            and not record.error)


def judge_key_variables(judge: Judge) -> tuple[str, ...]:
    """The variables a paid judge's key is read from (``key_variables`` when the judge says, e.g. the openai
    judge on another server than OpenAI's; else its ``key_env``, else its route's)."""
    named = getattr(judge, "key_variables", None) or judge.key_env
    return tuple(named) or tuple(v for route in judge.routes for v in KEY_ENV.get(route.removesuffix("-judge"), ()))


class Verdicts:
    """Asking the judge about a saved candidate, and keeping what it said: its calls go through the paid-call seam
    (``PaidCalls``), a verdict already paid for is the planning's to find (``Planning.reusable_verdict``)."""

    def __init__(self, means: Means, calls: PaidCalls, planning: Planning) -> None:
        self.means, self.calls, self.planning = means, calls, planning

    def free_verdict_if_unchanged(self, plan: Plan) -> Verdict | None:
        """(Without the candidate's claim.)  The verdict a free judge (human labels: nothing is paid) gives the
        candidate, when it is the one the record holds and nothing else would be written: no new content hashes
        or signals, no call left to settle, no error to clear (re-judgements are the caller's to rule out).  Then
        the record on disk is right as it is, and is neither claimed nor read again (on a 7,000-candidate
        replay, a tenth of its time).  None: the record may change, so it is judged under the claim (a free
        judge is then asked twice, at no cost)."""
        record, judge = plan.record, self.means.judge
        stale = record.judgements.get(judge.id) if isinstance(record.judgements, dict) else None
        if (judge.routes or judge.needs_images or (judge.reuse_verdicts and not self.means.rejudge) or plan.candidate is None
                or plan.bound or record.open_call or record.error or not isinstance(stale, dict)
                or self._needs_signals(record)):
            return None
        request = JudgeRequest(plan.task, plan.spec.name, plan.repeat, plan.candidate, (),
                               call=JudgeContext(slots=plan.slots))
        try:
            verdict = judge.judge(request)
        except Exception:  # noqa: BLE001 - asked again under the claim, where a failure is handled and written
            return None
        return verdict if _says_what_it_has(record, stale, self._verdict_entry(verdict)) else None

    def judge_candidate(self, plan: Plan, reserved: CallReservation | None = None, save: bool = False,
                         answer: Verdict | None = None) -> None:
        """``reserved``: --budget reserved for this verdict when the candidate was bought (else it is reserved here);
        ``save``: the record changed already (its content hashes, provenance.py) and is written in any case;
        ``answer``: what the free judge said already (``free_verdict_if_unchanged``), not asked again."""
        record, life, judge = plan.record, plan.life, self.means.judge
        assert plan.candidate is not None  # only a candidate on disk is judged
        stored = self.planning.reusable_verdict(record)
        stopped = self.means.rejected_keys.stopped(*judge.routes) if judge.routes and not stored else None
        # a paid call ahead: the signals measured since the purchase (measure_beside) are taken once it has
        # answered, so its request does not wait for them
        paid_call = bool(judge.routes) and not stored and not stopped and answer is None
        new_signals = save if paid_call else (self.measure_signals(plan) or save)
        if stored:
            life.move(Step.REUSE)
            before = (record.outcome, record.error)
            self._apply_verdict(record, stored, reused=True)
            # written when something changed: new signals (stored once: the next run reads them), or a record whose
            # last attempt failed (a --rejudge whose call failed), which says its verdict again; a replay writes nothing
            if new_signals or before != (record.outcome, record.error):
                self._write_judged(life, Step.WRITE_JUDGED, record)
            return
        if stopped:  # the judge's key was rejected: nothing sent (engine/rejected_keys.py)
            life.move(Step.STOP)
            record.outcome, record.error = ERROR, f"judge {judge.id}: {stopped}"
            return
        reservation = reserved
        try:
            references = tuple(self.means.references(plan.task)) if judge.needs_images else ()
            request = JudgeRequest(plan.task, plan.spec.name, plan.repeat, plan.candidate, references,
                                   call=JudgeContext(call_id=new_call_id() if judge.routes else None, slots=plan.slots))
            reservation = reserved or self._reserve_verdict(life, request)
            if judge.routes:  # a paid judge: its request is journaled before it leaves
                self._journal_judge_call(life, record, judge, request)
            life.move(Step.ASK if judge.routes else Step.ASK_FREE, reservation)
            verdict = self.calls.call(lambda: answer if answer is not None else judge.judge(request), record, f"judge {judge.id}", JudgeError)
        except BudgetExceeded as exc:
            self.measure_signals(plan)
            skip(life, record, str(exc))  # the paid candidate stays on disk: a larger budget judges it
            return
        except (CallError, HypeEditError) as exc:
            self._judge_failed(plan, judge, reservation, exc)
            return
        self.calls.end_call(record)
        if reservation is not None:
            reservation.settle(verdict.cost)
        life.move(Step.VERDICT)
        self._keep_verdict(plan, verdict, self.measure_signals(plan) or new_signals)

    def _judge_failed(self, plan: Plan, judge: Judge, reservation: CallReservation | None, exc: HypeEditError) -> None:
        """The judge's call failed (or never left): what it may have cost is settled, the record says why and keeps
        what it was paid (an entry of its call ledger, written with the error, so ``spent`` counts it)."""
        record = plan.record
        lost = self.calls.end_call(record, exc)
        self.measure_signals(plan)  # written with the error
        # asks that were answered were paid; a call whose reply was lost may have been paid at its worst case
        # (that part is a lost entry of the record's call ledger)
        answered = add_failed_judge_cost(record, getattr(exc, "cost", None), self.means.run_id)
        if reservation is not None:
            reservation.settle(answered + (float(lost.get("price") or 0) if lost else 0.0))
        rejected, said = self.means.rejected_keys.rejection(exc, route=judge.routes[0], model_scope=judge.routes[0],
                                                  variables=judge_key_variables(judge)) if judge.routes else ("", None)
        # in flight when the key was rejected: the one line of the judge, not its reply once more
        record.outcome, record.error = ERROR, clean_text(
            redact(f"judge {judge.id}: {said or exc}") + self.calls.lost_note(lost) + ("" if said else rejected), ERROR_LIMIT)
        self._write_judged(plan.life, Step.WRITE_LOST if lost else Step.WRITE_FAILED, record)

    def _keep_verdict(self, plan: Plan, verdict: Verdict, new_signals: bool) -> None:
        """The judge's answer applied to the record and written at once (a paid verdict is never lost); what it cost
        is counted with every verdict the record was given (an entry of its call ledger), whichever it replaces."""
        record, judge = plan.record, self.means.judge
        entry = self._verdict_entry(verdict)
        add_verdict_cost(record, verdict.cost, self.means.run_id, tier=verdict_tier(entry))
        stale = record.judgements.get(judge.id)
        reason = judge.stale_reason(stale) if stale and judge.reuse_verdicts and not self.means.rejudge else None
        if reason and stale:  # a reason is only given for a stale verdict
            entry["replaced"] = {"reason": reason, "verdict": stale.get("verdict"), "judged_at": stale.get("judged_at")}
        if stale and not judge.routes and _says_what_it_has(record, stale, entry):
            # A free judge (human labels) asked again and saying the same: the record on disk is right as it
            # is.  Not rewriting it is most of a 7,000-candidate replay's time.
            self._apply_verdict(record, stale, reused=False)
            if new_signals:
                self._write_judged(plan.life, Step.WRITE_JUDGED, record)
            return
        self._apply_verdict(record, entry, reused=False)
        self._write_judged(plan.life, Step.WRITE_JUDGED, record)

    def _write_judged(self, life: Lifecycle, step: Step, record: Record) -> None:
        """The record with its verdict (or why it has none); a disk with no room stops the buying, and the item
        says what was lost."""
        try:
            self.calls.write(life, step, record)
        except OSError as exc:
            if not room.no_room(exc):
                raise
            message = self.calls.stop_for_disk(exc)
            if record.outcome != ERROR:
                record.outcome, record.error = ERROR, (f"{message}; its verdict ({record.verdict}) could not be "
                                                       "saved, so the next run asks for it again")

    def _journal_judge_call(self, life: Lifecycle, record: Record, judge: Judge, request: JudgeRequest) -> None:
        self.calls.journal_call(record, JUDGE, route=judge.routes[0], price=judge.worst_case_cost(request),
                          call_id=request.call.call_id, life=life, judge=judge.id)

    def reserve_verdict(self, plan: Plan) -> CallReservation | None:
        """--budget for the verdict of a candidate about to be bought, asked of the judge with the path the
        candidate will have (a judge's worst case does not depend on the image's content)."""
        if self.means.budget is None or not self.means.judge.routes:
            return None
        return self._reserve_verdict(plan.life, self._verdict_request(plan.task, plan.spec, plan.repeat))

    def _verdict_request(self, task: Task, spec: ModelSpec, repeat: int) -> JudgeRequest:
        """The judge's request for a candidate before it is bought, with the path it will have."""
        references = tuple(self.means.references(task)) if self.means.judge.needs_images else ()
        to_be = self.means.store.task_dir(task.split, spec.name, task.task_id) / f"{repeat:03d}.png"
        return JudgeRequest(task, spec.name, repeat, to_be, references)

    def _reserve_verdict(self, life: Lifecycle, request: JudgeRequest) -> CallReservation | None:
        """A paid judge's verdict reserves its worst case of --budget too (a free judge calls nothing)."""
        if not self.means.judge.routes:
            return None
        what = f"judge {self.means.judge.id} on {request.model} {request.task.task_id} r{request.repeat:03d}"
        return life.reserve(self.means.budget, lambda: self.means.judge.worst_case_cost(request), what)

    def worst_case_verdict(self, task: Task, spec: ModelSpec, repeat: int) -> float:
        """The most this candidate's verdict can cost: what --budget reserves for it; 0 for a free judge."""
        if not self.means.judge.routes:
            return 0.0
        return self.means.judge.worst_case_cost(self._verdict_request(task, spec, repeat))

    def measure_beside(self, plan: Plan, preview: Preview) -> None:
        """Start measuring the signals of a candidate just bought, from the preview its adapter made, on the
        measurer's thread while its verdict is asked (engine/measurer.py); ``measure_signals`` takes them.
        Measured here at once when the measurer has its backlog of previews waiting already."""
        record, task = plan.record, plan.task
        if not self._needs_signals(record):
            return

        def measure() -> dict[str, Any]:
            return self._signals_of(task, preview)

        pending = self.means.measurer.submit(measure)
        if pending is None:
            record.signals = measure()
        else:
            plan.measuring = Measuring(record.candidate_sha256, pending)

    def measure_signals(self, plan: Plan) -> bool:
        """Pixel diagnostics beside the verdict (engine/signals.py), computed once per candidate: those measured
        since its purchase (``measure_beside``) when they are of the bytes its record names now, else from its
        file; True when new."""
        measuring, plan.measuring = plan.measuring, None
        record = plan.record
        if not self._needs_signals(record):
            return False
        measured = measuring.result() if measuring is not None and measuring.of == record.candidate_sha256 else None
        if measured is None:
            if plan.candidate is None:
                return False
            measured = self._signals_of(plan.task, plan.candidate)
        record.signals = measured
        return bool(record.signals)

    def _signals_of(self, task: Task, candidate: Path | Preview) -> dict[str, Any]:
        """engine/signals.py ``candidate_signals`` with this run's references and cache folder."""
        from .signals import candidate_signals

        return candidate_signals(task, candidate, self.means.references, self.means.cache_dir)

    def _needs_signals(self, record: Record) -> bool:
        if not self.means.signals or record.signals:
            return False
        # a candidate read back from disk without them is left unmeasured (a replay of thousands would decode
        # every image again): the report and signals_summary say how many, never a figure that was not
        # computed. Bytes that changed since their verdict are judged again now, and measured with it
        return not (record.reused_candidate and not self.means.signals_from_disk and provenance.CHANGED not in record.extra)

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
        record.judge_tier = verdict_tier(entry)
        record.outcome, record.error, record.reused_verdict = (PASS if entry["verdict"] == "PASS" else FAIL), None, reused
