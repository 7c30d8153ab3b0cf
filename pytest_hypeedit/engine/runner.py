"""One candidate, from task to verdict: reuse what is on disk, else pay for it once.

    record on disk? candidate on disk? -> reuse them (no call, no key needed)
    a journaled job in the record?     -> resume it (no new submission, no new budget)
    otherwise: budget -> provider call -> candidate + record written at once
    verdict on disk for this judge?   -> reuse it (unless --rejudge)
    otherwise: judge -> verdict written into the record at once

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

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import BudgetExceeded, CallError, HypeEditError, JobExpired, Refusal
from ..judges.base import Judge, JudgeRequest, Verdict
from ..providers.base import Generation, GenerationRequest, Provider, seed_for
from .records import ERROR, FAIL, PASS, REFUSED, SKIPPED, Record, now_iso
from ..registry import ModelSpec
from ..secrets import redact
from .store import Store
from ..tasks import Task
from .journal import Journal


def _same_verdict(old: dict, new: dict) -> bool:
    """Two verdict entries that say the same (they differ only in when they were given)."""
    keys = ("verdict", "reasoning", "judge", "votes", "cost", "extra")
    return all(old.get(key) == new.get(key) for key in keys)


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
    budget: object | None = None  # budget.Budget: reserve(amount, what) -> Reservation
    signals: bool = True  # pixel diagnostics beside each verdict (engine/signals.py), once per candidate
    stability: dict = field(default_factory=dict)  # key -> K re-judgements (--judge-stability, engine/stability.py)
    _providers: dict[str, Provider] = field(default_factory=dict)
    _judge: Judge | None = None

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
        record = self._read_or_new(task, spec, repeat)
        plan = Plan(task, spec, repeat, record, self.store.find_candidate(*record.key))
        self._settle_plan(plan)
        return plan

    def generate_step(self, plan: "Plan") -> "Plan":
        """Buy the candidate (or resume its journaled job), unless another process did meanwhile."""
        with self.store.claim(*plan.record.key):
            plan.record = self._read_or_new(plan.task, plan.spec, plan.repeat)
            plan.candidate = self.store.find_candidate(*plan.record.key)
            self._settle_plan(plan)
            if plan.needs_generation:
                plan.candidate = self._generate(plan.task, plan.spec, plan.repeat, plan.record)
                plan.needs_generation = False
                plan.needs_verdict = plan.candidate is not None
        return plan

    def judge_step(self, plan: "Plan") -> Record:
        """Give the candidate its verdict (paid, or from disk when another process gave it meanwhile)."""
        with self.store.claim(*plan.record.key):
            on_disk = self.store.read_record(*plan.record.key)
            if on_disk is not None and on_disk.candidate == plan.record.candidate and self.reusable_verdict(on_disk):
                plan.record.judgements = on_disk.judgements
            self._judge_candidate(plan.task, plan.spec, plan.repeat, plan.candidate, plan.record)
        plan.needs_verdict = False
        self._rejudge_for_stability(plan)
        return plan.record

    def finish(self, plan: "Plan") -> Record:
        """The record of a candidate that needs no paid step: reused verdict, free judge, or no image."""
        if plan.candidate is not None:
            self._judge_candidate(plan.task, plan.spec, plan.repeat, plan.candidate, plan.record)
            self._rejudge_for_stability(plan)
        return plan.record

    def _read_or_new(self, task: Task, spec: ModelSpec, repeat: int) -> Record:
        return self.store.read_record(task.split, spec.name, task.task_id, repeat) or Record(
            split=task.split, model=spec.name, task_id=task.task_id, repeat=repeat, task_types=list(task.task_types)
        )

    def _settle_plan(self, plan: "Plan") -> None:
        """Decide the plan's needs from its record and candidate (and adopt a candidate found on disk)."""
        record = plan.record
        if plan.candidate is None:
            plan.needs_generation = not refused(record)
            plan.needs_verdict = False
            if not plan.needs_generation:
                record.reused_candidate = True  # the model's refusal was paid for: it is its answer
            return
        self._adopt_candidate(record, plan.spec, plan.candidate)
        plan.needs_generation = False
        plan.needs_verdict = self.paid_verdict_needed(record)

    def paid_verdict_needed(self, record: Record) -> bool:
        """Whether the judge must be called, and paid, for this candidate (a free judge never is)."""
        return bool(self.judge.routes) and self.reusable_verdict(record) is None

    # ------------------------------------------------------------------ generation

    @staticmethod
    def _adopt_candidate(record: Record, spec: ModelSpec, candidate: Path) -> None:
        record.reused_candidate = True
        if record.candidate != candidate.name:
            # An image with no record: a run was killed between the two writes, or the
            # image came from elsewhere. It was paid for at the model's price.
            record.candidate, record.route, record.cost = candidate.name, spec.route, spec.price
            record.provider_model, record.judgements = spec.provider_model, {}
            record.signals = {}  # they were the old candidate's

    def _generate(self, task: Task, spec: ModelSpec, repeat: int, record: Record) -> Path | None:
        """Buy the candidate (or resume its journaled job); an expired job is submitted once more."""
        for attempt in (1, 2):
            try:
                return self._generate_once(task, spec, repeat, record)
            except JobExpired as exc:
                expired = f"{spec.name} job {(record.job or {}).get('id')} expired: {redact(str(exc))}"
                record.resubmitted += 1
                record.job = None
                if attempt == 2:
                    return self._failed(record, spec, JobExpired(f"{expired}; submitted again, expired again"))
                record.extra["expired_jobs"] = [*record.extra.get("expired_jobs", []), expired]
                self.store.write_record(record)
        return None

    def _generate_once(self, task: Task, spec: ModelSpec, repeat: int, record: Record) -> Path | None:
        journal = self._journal(record, spec)
        reservation = None
        try:
            if not journal.resumed:  # a resumed job was paid for when it was submitted
                reservation = self._reserve(spec, task, repeat)
            request = GenerationRequest(task, repeat, seed_for(task.task_id, repeat), tuple(self.references(task)),
                                        spec, journal=journal)
            started = time.monotonic()
            generation = self.provider(spec).generate(request)
        except BudgetExceeded as exc:
            return self._skip(record, str(exc))
        except Refusal as exc:
            self._settle(reservation, exc.cost or 0.0)
            return self._refused(record, spec, exc)
        except JobExpired:
            self._settle(reservation, self._job_cost(record, spec))
            raise
        except (CallError, HypeEditError) as exc:
            # A job that was submitted is paid for even when its polls failed: it stays in the record
            # (journaled) and the next attempt resumes it.
            self._settle(reservation, self._job_cost(record, spec))
            if record.job and not journal.resumed:
                record.cost = self._job_cost(record, spec)
            return self._failed(record, spec, exc)
        self._settle(reservation, generation.cost)
        if journal.resumed and record.job:
            record.job["resumed"] = True  # paid for by an earlier attempt, not by this run
        return self._save_generation(record, spec, generation, time.monotonic() - started)

    def _journal(self, record: Record, spec: ModelSpec) -> Journal:
        """The candidate's journal: a job an adapter submits is written into the record before its first poll."""
        def save(job: dict | None) -> None:
            record.job = job
            if job is not None:
                record.route, record.provider_model = spec.route, spec.provider_model
            self.store.write_record(record)

        # A job journaled on another route (the model was pointed elsewhere with --models-file since) cannot be
        # polled by this route's adapter: it is left behind, and this route submits its own.
        job = record.job if record.job and record.job.get("route") in (None, spec.route) else None
        return Journal(job, save, route=spec.route)

    @staticmethod
    def _job_cost(record: Record, spec: ModelSpec) -> float:
        """What a submitted job cost: the provider's figure journaled at submission, else the model's price;
        0 when no job was submitted."""
        if not record.job:
            return 0.0
        cost = record.job.get("cost")
        return float(cost) if isinstance(cost, (int, float)) else spec.price

    def _reserve(self, spec: ModelSpec, task: Task, repeat: int):
        if self.budget is None:
            return None
        return self.budget.reserve(spec.price, f"{spec.name} {task.task_id} r{repeat:03d}")

    @staticmethod
    def _settle(reservation, actual: float) -> None:
        if reservation is not None:
            reservation.commit(actual) if actual else reservation.release()

    def _save_generation(self, record: Record, spec: ModelSpec, gen: Generation, latency: float) -> Path:
        path = self.store.write_candidate(record.split, record.model, record.task_id, record.repeat, gen.image, gen.ext)
        record.candidate, record.route, record.provider_model = path.name, spec.route, gen.provider_model
        record.seed, record.request_id, record.cost = gen.seed, gen.request_id, gen.cost
        record.latency_s, record.generated_at, record.outcome, record.error = round(latency, 3), now_iso(), None, None
        record.reused_candidate = False
        record.extra.update(gen.extra)
        if record.job:
            record.job["finished_at"] = now_iso()
        record.verdict = record.reasoning = record.judge = None
        record.judgements, record.signals = {}, {}
        self.store.write_record(record)  # the paid image is safe before the judge is asked
        return path

    def _refused(self, record: Record, spec: ModelSpec, exc: Refusal) -> None:
        record.outcome, record.refusal, record.route = REFUSED, redact(exc.reason), spec.route
        record.cost, record.request_id, record.generated_at = exc.cost or 0.0, exc.request_id, now_iso()
        record.provider_model, record.error = spec.provider_model, None
        self.store.write_record(record)
        return None

    def _failed(self, record: Record, spec: ModelSpec, exc: Exception) -> None:
        # the error names model and route already; the item adds task and repeat
        record.outcome, record.route, record.error = ERROR, spec.route, redact(str(exc))
        self.store.write_record(record)  # visible in the outputs; the next run retries it
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
        if self.store.find_candidate(split, model, task_id, repeat) is not None:
            return False
        return not refused(self.store.read_record(split, model, task_id, repeat))

    def reusable_verdict(self, record: Record) -> dict | None:
        """The verdict of this judge already paid for on this candidate, unless --rejudge or it is stale."""
        judge = self.judge
        if judge.reuse_verdicts and not self.rejudge:
            entry = record.judgements.get(judge.id)
            if entry and judge.stale_reason(entry) is None:
                return entry
        return None

    def _judge_candidate(self, task: Task, spec: ModelSpec, repeat: int, candidate: Path, record: Record) -> None:
        judge = self.judge
        new_signals = self._signals(task, candidate, record)
        stored = self.reusable_verdict(record)
        if stored:
            self._apply_verdict(record, stored, reused=True)
            if new_signals:
                self.store.write_record(record)  # stored once: the next run reads them
            return
        stale = record.judgements.get(judge.id)
        reason = judge.stale_reason(stale) if stale and judge.reuse_verdicts and not self.rejudge else None
        try:
            references = tuple(self.references(task)) if judge.needs_images else ()
            verdict = judge.judge(JudgeRequest(task, spec.name, repeat, candidate, references))
        except (CallError, HypeEditError) as exc:
            record.outcome, record.error = ERROR, redact(f"judge {judge.id}: {exc}")
            self.store.write_record(record)
            return
        entry = self._verdict_entry(verdict)
        if reason:
            entry["replaced"] = {"reason": reason, "verdict": stale.get("verdict"), "judged_at": stale.get("judged_at")}
        if stale and not judge.routes and _same_verdict(stale, entry) and record.judge == entry["judge"] \
                and not record.error:
            # A free judge (human labels) asked again and saying the same: the record on disk is right as it
            # is.  Not rewriting it is most of a 7,000-candidate replay's time.
            self._apply_verdict(record, stale, reused=False)
            if new_signals:
                self.store.write_record(record)
            return
        self._apply_verdict(record, entry, reused=False)
        self.store.write_record(record)

    def _rejudge_for_stability(self, plan: "Plan") -> None:
        """--judge-stability: the same judge asked K times more about a sampled candidate (engine/stability.py)."""
        if self.stability.get(plan.key):
            from .stability import rejudge

            rejudge(self, plan, self.stability[plan.key])

    def _signals(self, task: Task, candidate: Path, record: Record) -> bool:
        """Pixel diagnostics beside the verdict (engine/signals.py), computed once per candidate; True when new."""
        if not self.signals or record.signals:
            return False
        from .signals import candidate_signals

        record.signals = candidate_signals(task, candidate, self.references)
        return bool(record.signals)

    @staticmethod
    def _verdict_entry(verdict: Verdict) -> dict:
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
    def _apply_verdict(record: Record, entry: dict, *, reused: bool) -> None:
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
