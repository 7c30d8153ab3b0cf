"""One candidate, from task to verdict: reuse what is on disk, else pay for it once.

    plan(task, spec, repeat)   read the disk: what still has to be paid for (no call)       planning.py
    generate_step(plan)        buy the candidate (or resume its job), under the candidate's claim  purchase.py
    judge_step(plan)           ask the judge, under the candidate's claim                     verdicts.py
    finish(plan)               everything else: reuse from disk, a refusal, a free judge (labels)
    unreachable(plan, reason)  its route answers nothing: nothing sent, nothing written

    otherwise: budget (the verdict's worst case held, then the call's) -> pending call written
               -> provider call -> candidate + record written at once
               -> judge (its worst case reserved, or held since the purchase) -> verdict written at once

Each candidate's money path is a state machine (engine/lifecycle.py): every write of its record is a named
step taken only from the stages that allow it, and every --budget hold is settled exactly once when its
handling ends (``Lifecycle.settle``, called by ``judge_step``, ``finish`` and ``unreachable``: one of them ends
every plan).  That module's docstring gives the crash-safety argument.

The work is split in steps so that a pool (engine/pool.py) can keep many candidates in flight and give each
paid step its route's slot.  A claim is a cross-process lock per candidate: two processes never buy the
same candidate, and the one that waited finds it on disk.  ``run`` does the steps in order, for callers
without a pool.  Knows nothing of pytest.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BudgetExceeded, HypeEditError
from ..registry import ModelSpec
from ..tasks import Task
from .journal import JUDGE
from .lifecycle import Step
from .planning import Plan, refused
from .purchase import Purchase
from .records import ERROR, SKIPPED, Record
from .verdicts import judge_key_variables

__all__ = ["Plan", "Runner", "judge_key_variables", "refused"]


@dataclass
class Runner(Purchase):
    """What one process (the serial run, or one xdist worker) needs to produce candidates (its fields:
    engine/paidcall.py)."""

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
        plan = Plan(task, spec, repeat, self._read_or_new(task, spec, repeat), None)
        self._look_on_disk(plan)
        if plan.refused is None:
            self._settle_plan(plan)
        return plan

    def generate_step(self, plan: Plan) -> Plan:
        """Buy the candidate (or resume its journaled job), unless another process did meanwhile."""
        with self.store.claim(*plan.record.key):
            plan.record = self._read_or_new(plan.task, plan.spec, plan.repeat)
            self._look_on_disk(plan)
            if plan.refused is not None:
                return plan
            self.settle_abandoned(plan.record, plan.candidate, plan.life)
            self._settle_plan(plan)
            if plan.held:
                self._write(plan.life, Step.WRITE_HELD, plan.record)  # visible in the outputs as the error it is
            if plan.needs_generation:
                self._forget_lost_candidate(plan)
                self._buy(plan)
        return plan

    def _buy(self, plan: Plan) -> None:
        """Generate the candidate, with --budget held for its verdict first: a candidate the budget could not
        also judge is not bought (it would be paid for and left unjudged)."""
        plan.needs_generation = plan.needs_verdict = False
        stopped = self._key_stopped(plan.spec)
        if stopped:  # nothing sent: the same key would be refused again (engine/refusedkeys.py)
            plan.life.move(Step.STOP)
            plan.record.outcome, plan.record.error = ERROR, stopped
            return
        full, held = self._hold_room(plan.spec)
        if full:  # as a budget stop: not bought, nothing written (there is no room to write it)
            plan.life.move(Step.NO_ROOM)
            plan.record.outcome, plan.record.error = SKIPPED, full
            return
        try:
            self._buy_with_room(plan)
        finally:
            with self._room_lock:
                self._room_held -= held

    def _buy_with_room(self, plan: Plan) -> None:
        try:
            plan.verdict_hold = self._hold_verdict(plan)
        except BudgetExceeded as exc:
            self._skip(plan.life, plan.record, str(exc))
            return
        except HypeEditError:  # e.g. a reference that cannot be read: the generation says so, the verdict reserves
            plan.verdict_hold = None
        plan.candidate = self._generate(plan)
        self._note_strays(plan.record, self.store.find(*plan.record.key, named=plan.record.candidate).strays)
        plan.needs_verdict = plan.candidate is not None  # not bought: its verdict's hold is released at the end

    def judge_step(self, plan: Plan) -> Record:
        """Give the candidate its verdict (paid, or from disk when another process gave it meanwhile)."""
        hold, plan.verdict_hold = plan.verdict_hold, None
        with self.store.claim(*plan.record.key):
            if not self._refreshed(plan):
                plan.needs_verdict = False
                self._settle(plan)
                return plan.record
            self.settle_abandoned(plan.record, plan.candidate, plan.life)
            if self.reusable_verdict(plan.record) is None and self._held(plan.record, JUDGE):
                self._hold(plan, JUDGE)
                self._write(plan.life, Step.WRITE_HELD, plan.record)
            else:
                self._judge_candidate(plan, hold)
                self._rejudge_for_stability(plan)
            self._settle(plan)
        plan.needs_verdict = False
        return plan.record

    def finish(self, plan: Plan) -> Record:
        """The record of a candidate that needs no paid step: reused verdict, free judge, or no image.  Its
        record is written under the candidate's claim, re-read first: the plan was read without it (maybe long
        ago, at triage), and a verdict another process paid for meanwhile must not be overwritten."""
        hold, plan.verdict_hold = plan.verdict_hold, None
        if plan.candidate is None or plan.held:
            self._settle(plan)
            return plan.record
        unchanged = None if self.pays_to_finish(plan) else self.free_verdict_if_unchanged(plan)
        if unchanged is not None:  # nothing is written, so nothing to claim or merge
            self._judge_candidate(plan, hold, answer=unchanged)
            self._settle(plan)
            return plan.record
        with self.store.claim(*plan.record.key):
            if not self._refreshed(plan):
                self._settle(plan)
                return plan.record
            self.settle_abandoned(plan.record, plan.candidate, plan.life)
            self._judge_candidate(plan, hold, save=plan.bound)
            self._rejudge_for_stability(plan)
            self._settle(plan)
        return plan.record

    def unreachable(self, plan: Plan, reason: str) -> Record:
        """The record of a candidate whose call never started: its route is unreachable (engine/routes.py).
        Nothing was paid or changed, so nothing is written; the next run tries it again."""
        plan.verdict_hold = None
        plan.life.move(Step.UNREACHABLE)
        plan.record.outcome, plan.record.error = ERROR, reason
        self._settle(plan)
        return plan.record

    def _settle(self, plan: Plan) -> None:
        """The candidate's handling is over (every --budget hold settled); what it bought is in the record's ledger,
        entries naming the run (its last write said so on the disk)."""
        plan.life.settle()

    def pays_to_finish(self, plan: Plan) -> bool:
        """Whether ``finish`` may call a paid judge: --judge-stability's re-judgements of a sampled candidate."""
        return bool(self.stability.get(plan.key))

    def _rejudge_for_stability(self, plan: Plan) -> None:
        """--judge-stability: the same judge asked K times more about a sampled candidate (engine/stability.py),
        under the claim its verdict was given under, as steps of its lifecycle before the handling is settled."""
        if self.stability.get(plan.key):
            from .stability import rejudge

            rejudge(self, plan, self.stability[plan.key])

    def close(self) -> None:
        for provider in self._providers.values():
            provider.close()
        if self._judge is not None:
            self._judge.close()
