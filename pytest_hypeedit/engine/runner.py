"""One candidate, from task to verdict: reuse what is on disk, else pay for it once.

    plan(task, spec, repeat)   read the disk: what still has to be paid for (no call)       planning.py
    generate_step(plan)        buy the candidate (or resume its job), under the candidate's claim  purchase.py
    judge_step(plan)           ask the judge, under the candidate's claim                     verdicts.py
    finish(plan)               everything else: reuse from disk, a refusal, a free judge (labels)
    unreachable(plan, reason)  its route answers nothing: nothing sent, nothing written

    otherwise: budget (the verdict's worst case reserved, then the call's) -> pending call written
               -> provider call -> candidate + record written at once
               -> judge (its worst case reserved, or reserved since the purchase) -> verdict written at once

Each candidate's money path is a state machine (engine/lifecycle.py): every write of its record is a named
step taken only from the stages that allow it, and every --budget reservation is settled exactly once when its
handling ends (``Lifecycle.settle``, called by ``judge_step``, ``finish`` and ``unreachable``: one of them ends
every plan).  That module's docstring gives the crash-safety argument.

The work is split in steps so that a pool (engine/pool.py) can keep many candidates in flight and give each
paid step its route's slot.  A claim is a cross-process lock per candidate: two processes never buy the
same candidate, and the one that waited finds it on disk.  ``run`` does the steps in order, for callers
without a pool.  Knows nothing of pytest.

The Runner owns what one process produces candidates with (``Means``, engine/means.py) and its collaborators,
each given what it needs and none a half of another: the paid-call seam (``PaidCalls``, engine/paidcall.py),
the planning (``Planning``), the verdicts (``Verdicts``) and the purchase (``Purchase``).  It takes the steps
in order; each collaborator does its part of one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..judges.base import Judge
from ..providers.base import Provider
from ..registry import ModelSpec
from ..tasks import Task
from .jobs import Key
from .journal import JUDGE
from .lifecycle import Step
from .means import Means
from .paidcall import PaidCalls
from .planning import Plan, Planning, refused
from .purchase import Purchase
from .records import ERROR, Record
from .stability import rejudge
from .store import Store
from .verdicts import Verdicts, judge_key_variables

__all__ = ["Plan", "Runner", "judge_key_variables", "refused"]


class Runner:
    """What one process (the serial run, or one xdist worker) produces candidates with, and the steps that do."""

    def __init__(self, means: Means) -> None:
        self.means = means
        self.calls = PaidCalls(means)
        self.planning = Planning(means, self.calls)
        self.verdicts = Verdicts(means, self.calls, self.planning)
        self.purchase = Purchase(means, self.calls, self.planning, self.verdicts)

    # ------------------------------------------------------------------ what its callers read of the means

    @property
    def store(self) -> Store:
        return self.means.store

    @store.setter
    def store(self, store: Store) -> None:  # every collaborator reads it from the means when it acts
        self.means.store = store

    @property
    def judge(self) -> Judge:
        return self.means.judge

    @property
    def made_judge(self) -> Judge | None:
        """The judge when it was made already; asking here makes none."""
        return self.means.made_judge

    @property
    def run_id(self) -> str:
        return self.means.run_id

    @property
    def stability(self) -> dict[Key, int]:
        return self.means.stability

    @property
    def references(self) -> Callable[[Task], list[Path]]:
        return self.means.references

    def provider(self, spec: ModelSpec) -> Provider:
        return self.means.provider(spec)

    # ------------------------------------------------------------------ the steps

    def run(self, task: Task, spec: ModelSpec, repeat: int) -> Record:
        """One candidate from task to verdict, step by step (the pool runs the same steps in its threads)."""
        plan = self.plan(task, spec, repeat)
        if plan.needs_generation:
            self.generate_step(plan)
        if plan.needs_verdict:
            return self.judge_step(plan)
        return self.finish(plan)

    def plan(self, task: Task, spec: ModelSpec, repeat: int) -> Plan:
        """What this candidate still needs, read from the disk (no call, no claim)."""
        plan = Plan(task, spec, repeat, self.planning.read_or_new(task, spec, repeat), None)
        self.planning.look_on_disk(plan)
        if plan.unusable is None:
            self.planning.settle_plan(plan)
        return plan

    def generate_step(self, plan: Plan) -> Plan:
        """Buy the candidate (or resume its journaled job), unless another process did meanwhile."""
        with self.store.claim(*plan.record.key):
            plan.record = self.planning.read_or_new(plan.task, plan.spec, plan.repeat)
            self.planning.look_on_disk(plan)
            if plan.unusable is not None:
                return plan
            self.calls.settle_abandoned(plan.record, plan.candidate, plan.life)
            self.planning.settle_plan(plan)
            if plan.held:
                self.calls.write(plan.life, Step.WRITE_HELD, plan.record)  # visible in the outputs as the error it is
            if plan.needs_generation:
                self.planning.forget_lost_candidate(plan)
                self.purchase.buy(plan)
        return plan

    def judge_step(self, plan: Plan) -> Record:
        """Give the candidate its verdict (paid, or from disk when another process gave it meanwhile)."""
        reserved, plan.verdict_reservation = plan.verdict_reservation, None
        with self.store.claim(*plan.record.key):
            if not self.planning.refreshed(plan):
                plan.needs_verdict = False
                self._settle(plan)
                return plan.record
            self.calls.settle_abandoned(plan.record, plan.candidate, plan.life)
            if self.planning.reusable_verdict(plan.record) is None and self.planning.held(plan.record, JUDGE):
                self.planning.reserved(plan, JUDGE)
                self.verdicts.measure_signals(plan)  # those measured since its purchase, written with it
                self.calls.write(plan.life, Step.WRITE_HELD, plan.record)
            else:
                self.verdicts.judge_candidate(plan, reserved)
                self._rejudge_for_stability(plan)
            self._settle(plan)
        plan.needs_verdict = False
        return plan.record

    def finish(self, plan: Plan) -> Record:
        """The record of a candidate that needs no paid step: reused verdict, free judge, or no image.  Its
        record is written under the candidate's claim, re-read first: the plan was read without it (maybe long
        ago, at triage), and a verdict another process paid for meanwhile must not be overwritten."""
        reserved, plan.verdict_reservation = plan.verdict_reservation, None
        if plan.candidate is None or plan.held:
            self._settle(plan)
            return plan.record
        unchanged = None if self.pays_to_finish(plan) else self.verdicts.free_verdict_if_unchanged(plan)
        if unchanged is not None:  # nothing is written, so nothing to claim or merge
            self.verdicts.judge_candidate(plan, reserved, answer=unchanged)
            self._settle(plan)
            return plan.record
        with self.store.claim(*plan.record.key):
            if not self.planning.refreshed(plan):
                self._settle(plan)
                return plan.record
            self.calls.settle_abandoned(plan.record, plan.candidate, plan.life)
            self.verdicts.judge_candidate(plan, reserved, save=plan.bound)
            self._rejudge_for_stability(plan)
            self._settle(plan)
        return plan.record

    def unreachable(self, plan: Plan, reason: str) -> Record:
        """The record of a candidate whose call never started: its route is unreachable (engine/routes.py).
        Nothing was paid or changed, so nothing is written; the next run tries it again."""
        plan.verdict_reservation = None
        plan.life.move(Step.UNREACHABLE)
        plan.record.outcome, plan.record.error = ERROR, reason
        self._settle(plan)
        return plan.record

    def _settle(self, plan: Plan) -> None:
        """The candidate's handling is over (every --budget reservation settled); what it bought is in the record's ledger,
        entries naming the run (its last write said so on the disk)."""
        plan.life.settle()

    def pays_to_finish(self, plan: Plan) -> bool:
        """Whether ``finish`` may call a paid judge: --judge-stability's re-judgements of a sampled candidate."""
        return bool(self.stability.get(plan.key))

    def _rejudge_for_stability(self, plan: Plan) -> None:
        """--judge-stability: the same judge asked K times more about a sampled candidate (engine/stability.py),
        under the claim its verdict was given under, as steps of its lifecycle before the handling is settled."""
        if self.stability.get(plan.key):
            rejudge(self.calls, plan, self.stability[plan.key])

    # ------------------------------------------------------------------ what its callers ask before and after

    def calls_in_flight(self) -> tuple[int, int, float]:
        """Paid steps running in this process (``PaidCalls.calls_in_flight``): what leaving now would cost."""
        return self.calls.calls_in_flight()

    def reusable_verdict(self, record: Record) -> dict[str, Any] | None:
        return self.planning.reusable_verdict(record)

    def paid_verdict_needed(self, record: Record) -> bool:
        return self.planning.paid_verdict_needed(record)

    def worst_case_generation(self, task: Task, spec: ModelSpec, repeat: int) -> float:
        return self.purchase.worst_case_generation(task, spec, repeat)

    def worst_case_verdict(self, task: Task, spec: ModelSpec, repeat: int) -> float:
        return self.verdicts.worst_case_verdict(task, spec, repeat)

    def close(self) -> None:
        self.means.close()
