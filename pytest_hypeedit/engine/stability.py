"""``--judge-stability N[xK]``: the same judge asked again about the same image, K more times, on N candidates.

How often a verdict flips is noise that every metric carries and no interval over tasks shows.  The sample is
stratified by model and split (each stratum's share of N in proportion to its candidates, at least one; within a
stratum the first (task, repeat) positions of one seeded permutation per split), fixed before the run from the
options, so every xdist worker knows its part of it.  Each re-judgement is a paid call of its own, never a
verdict reused from the record or an earlier call, reserved in ``--budget`` like the judge's other calls, and
written into the record (``extra["stability"]``) the moment it is given: a rerun asks only for what is missing,
and never pays for one twice.  Each is a step of the candidate's lifecycle (engine/lifecycle.py: journaled,
asked again, written), taken under the claim its verdict was given under, before its handling is settled.

    record.extra["stability"] = {"judge": id, "candidate": "001.png", "original": "PASS" | "FAIL",
                                 "verdicts": ["PASS", ...], "cost": USD, "errors": [...]}
"""

from __future__ import annotations

import random
import re
from functools import partial
from typing import TYPE_CHECKING, Any, Iterable

from ..errors import BudgetExceeded, CallError, ConfigError, DiskFull, HypeEditError, JudgeError
from ..judges.base import JudgeRequest
from ..secrets import redact
from . import call_ledger, room
from .call_context import JudgeContext
from .journal import REJUDGE, new_call_id
from .lifecycle import CallReservation, Step
from .record_spend import add_failed_judge_cost, add_verdict_cost, keep_verdicts_cost
from .records import FAIL, PASS, Record, now_iso, usd

if TYPE_CHECKING:
    from ..report.results_model import JudgeStability
    from .paidcall import PaidCalls
    from .planning import Plan

_OPTION = re.compile(r"^\s*(?P<n>\d+)\s*(?:[xX]\s*(?P<k>\d+))?\s*$")
DEFAULT_K = 2
Key = tuple[str, str, str, int]  # (split, model, task_id, repeat)


def parse_stability_option(text: str | None) -> tuple[int, int] | None:
    """``--judge-stability 40x3`` -> (40 candidates, 3 re-judgements each); ``40`` means 40x2."""
    if not text:
        return None
    match = _OPTION.match(str(text))
    n, k = (int(match["n"]), int(match["k"] or DEFAULT_K)) if match else (0, 0)
    if n < 1 or k < 1:
        raise ConfigError(f"--judge-stability {text!r}: give N or NxK, N candidates re-judged K times each "
                          f"(K >= 1, default {DEFAULT_K}), e.g. --judge-stability 40x3")
    return n, k


def stability_sample(keys: Iterable[Key], size: int, k: int, seed: int) -> dict[Key, int]:
    """key -> K for the candidates to re-judge: ``size`` of ``keys``, stratified by model and split."""
    from ..sample_design import allocate

    strata: dict[tuple[str, str], list[Key]] = {}
    for key in keys:
        strata.setdefault((key[1], key[0]), []).append(key)
    shares = allocate({f"{model}\0{split}": len(v) for (model, split), v in strata.items()}, size)
    chosen: dict[Key, int] = {}
    for (model, split), members in sorted(strata.items()):
        order = sorted({(key[2], key[3]) for key in members})
        random.Random(f"hypeedit-stability:{seed}:{split}").shuffle(order)
        wanted = set(order[: max(1, shares[f"{model}\0{split}"])])
        chosen.update({key: k for key in members if (key[2], key[3]) in wanted})
    return chosen


# --------------------------------------------------------------------------- re-judging one candidate


def kept(record: Record, judge_id: str) -> dict[str, Any] | None:
    """The stability entry of the record, when it is this judge's on this candidate (else it starts afresh)."""
    entry = record.extra.get("stability") if isinstance(record.extra, dict) else None
    if isinstance(entry, dict) and entry.get("judge") == judge_id and entry.get("candidate") == record.candidate \
            and isinstance(entry.get("verdicts"), list):
        return entry
    return None


def rejudge(calls: PaidCalls, plan: Plan, k: int) -> None:
    """(Under the candidate's claim, its verdict given or reused in this handling.)  Ask the judge K times more about
    the plan's candidate (those still missing): each re-judgement is a step of the candidate's lifecycle, its
    --budget reservation one of the candidate's, its answer written at once.  ``calls``: the runner's paid-call seam,
    whose public steps (journal, call, end, write) every paid call takes, and the means it was given."""
    record = plan.record
    judge = calls.means.judge
    if record.outcome not in (PASS, FAIL) or record.judge != judge.id or plan.candidate is None:
        return
    entry = kept(record, judge.id)
    if entry is not None and len(entry["verdicts"]) >= k:
        return
    # re-judgements another process wrote meanwhile (the record was read at triage): kept, never asked again
    on_disk = calls.means.store.read_record(*record.key)
    theirs = kept(on_disk, judge.id) if on_disk is not None and on_disk.candidate == record.candidate else None
    keep_verdicts_cost(record)  # an entry of another judge or file, replaced below, stays counted
    if theirs is not None:
        record.extra["stability"] = entry = theirs
    entry = entry or {"judge": judge.id, "candidate": record.candidate, "original": record.verdict, "verdicts": [],
                      "cost": 0.0}
    _ask(calls, plan, entry, k)


def _ask(calls: PaidCalls, plan: Plan, entry: dict[str, Any], k: int) -> None:
    record, judge, life = plan.record, calls.means.judge, plan.life
    assert plan.candidate is not None  # rejudge() asks only about a candidate
    references = tuple(calls.means.references(plan.task)) if judge.needs_images else ()
    while len(entry["verdicts"]) < k:
        request = JudgeRequest(plan.task, plan.spec.name, plan.repeat, plan.candidate, references,
                               call=JudgeContext(call_id=new_call_id() if judge.routes else None, slots=plan.slots))
        try:
            reserved = life.reserve(calls.means.budget, partial(judge.worst_case_cost, request),
                                f"re-judging {record.model} {record.task_id} r{record.repeat:03d}")
            if judge.routes:  # a paid call like any other: journaled before it is sent (engine/journal.py)
                calls.journal_call(record, REJUDGE, route=judge.routes[0], price=judge.worst_case_cost(request),
                                    call_id=request.call.call_id, life=life, judge=judge.id)
        except BudgetExceeded as exc:
            record.extra.setdefault("stability_skipped", str(exc))
            return
        except DiskFull:  # not journaled, so not sent: its reservation is released when the handling ends
            return
        life.move(Step.ASK_AGAIN if judge.routes else Step.ASK_AGAIN_FREE, reserved)
        try:  # a call of its own: nothing is reused
            verdict = calls.call(partial(judge.judge, request), record, f"judge {judge.id} (re-judging)", JudgeError)
        except (CallError, HypeEditError) as exc:
            _failed(calls, plan, entry, reserved, exc)
            return
        calls.end_call(record)
        reserved.settle(verdict.cost)
        add_verdict_cost(record, verdict.cost, calls.means.run_id, kind=call_ledger.REJUDGEMENT)  # never erased
        entry["verdicts"].append(verdict.label)
        entry["cost"] = round(usd(entry.get("cost")) + usd(verdict.cost), 6)
        record.extra["stability"] = entry
        if not _written(calls, plan, Step.WRITE_REJUDGED):  # a paid verdict is never lost
            return


def _failed(calls: PaidCalls, plan: Plan, entry: dict[str, Any], reserved: CallReservation, exc: HypeEditError) -> None:
    """A re-judgement's call failed: what it may have cost is settled and kept in the record (asks answered before
    it failed as an entry of its call ledger, a lost reply's worst case as a lost one); the verdict stands."""
    record = plan.record
    lost = calls.end_call(record, exc)
    answered = add_failed_judge_cost(record, getattr(exc, "cost", None), calls.means.run_id)
    reserved.settle(answered + (float(lost.get("price") or 0) if lost else 0.0))
    entry.setdefault("errors", []).append(redact(f"{now_iso()}: {exc}")[:300])
    record.extra["stability"] = entry
    _written(calls, plan, Step.WRITE_REJUDGE_FAILED)


def _written(calls: PaidCalls, plan: Plan, step: Step) -> bool:
    """The record written as ``step``; False when the disk had no room (nothing more is bought in this process,
    and the candidate keeps the verdict it has)."""
    try:
        calls.write(plan.life, step, plan.record)
    except OSError as exc:
        if not room.no_room(exc):
            raise
        calls.stop_for_disk(exc)
        return False
    return True


# --------------------------------------------------------------------------- the results


def stability_of(records: Iterable[Record]) -> JudgeStability | None:
    """A row's ``judge_stability``: candidates re-judged, K, flips and their rate (None when none was)."""
    candidates = rejudgements = flips = 0
    most, cost = 0, 0.0
    for record in records:
        entry = kept(record, record.judge or "")
        if not entry or not entry["verdicts"] or entry.get("original") not in ("PASS", "FAIL"):
            continue
        candidates += 1
        rejudgements += len(entry["verdicts"])
        flips += sum(1 for v in entry["verdicts"] if v != entry["original"])
        most, cost = max(most, len(entry["verdicts"])), cost + usd(entry.get("cost"))
    if not candidates:
        return None
    return {"candidates": candidates, "k": most, "flips": flips, "flip_rate": flips / rejudgements,
            "rejudgements": rejudgements, "cost": round(cost, 6)}
