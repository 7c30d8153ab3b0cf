"""What a record says its candidate's purchases cost, kept where no later write erases it.

A verdict given (and later replaced: ``--rejudge``, a stale verdict, a ``--judge-stability`` re-judgement), a
judge call that failed after being paid, the candidate's own generation and a purchase that left no image stay
counted in the record's call ledger (``calls``), each entry naming the run that bought it (``run``: what a run bought,
call_ledger.spent_in_run); these helpers are the only writers of them.  What they add up to is read by the call
ledger only (engine/call_ledger.py), where every figure of spend is derived (docs/explanation/money.md).
"""

from __future__ import annotations

from typing import Any

from . import call_ledger
from .call_ledger import usd
from .records import Record


def add_failed_judge_cost(record: Record, amount: Any, run: str | None = None) -> float:
    """Keep what a judge call that gave no verdict was paid all the same (``amount``: a JudgeError's ``cost``, the
    asks answered before the judge gave up) as an entry of the record's call ledger (``calls``: answered, at the
    verdict's tier), where no later verdict erases it; the amount counted (0 unless believable: a plugin's judge may
    set anything)."""
    paid = usd(amount)
    if paid:
        entry = call_ledger.new_entry(call_ledger.JUDGE_CALL, call_ledger.ANSWERED, paid, tier=call_ledger.known_tier(record.judge_tier),
                                 run=run)
        record.calls = [*(record.calls if isinstance(record.calls, list) else []), entry]
    return paid


def add_left_behind(record: Record, amount: Any, *, tier: Any, route: Any = None, id: Any = None,
                    run: str | None = None) -> float:
    """Keep what an earlier purchase of this candidate that left no image was paid (``amount``: a lost image's, an
    expired job's, a job left behind, an image a full disk could not keep) as an entry of the record's call ledger
    (``calls``: left behind, a batch line at tier batch, else a generation), where no later purchase erases it; the
    amount counted (0 unless believable: a record is untrusted)."""
    paid = usd(amount)
    if paid:
        tier = call_ledger.known_tier(tier)
        entry = call_ledger.new_entry(call_ledger.BATCH_LINE if tier == call_ledger.BATCH else call_ledger.GENERATION,
                                 call_ledger.LEFT_BEHIND, paid, tier=tier, route=route if isinstance(route, str) else None,
                                 id=id if isinstance(id, str) else None, run=run)
        record.calls = [*(record.calls if isinstance(record.calls, list) else []), entry]
    return paid


def _own_index(record: Record) -> int | None:
    """Where the entry of the candidate's own generation is in its call ledger (call_ledger.own: billed, the
    latest; or the purchase's call still open, journaled or gathering), None without one."""
    entries = record.calls if isinstance(record.calls, list) else []
    own = [index for index, entry in enumerate(entries) if isinstance(entry, dict)
           and entry.get("kind") in call_ledger.GENERATION_KINDS
           and entry.get("state") in call_ledger.OPEN | {call_ledger.BILLED}]
    return own[-1] if own else None


def set_job(record: Record, job: dict[str, Any] | None) -> None:
    """The job journaled for the candidate's purchase (``job``, the adapter's ``Journal.submitted``) kept in its
    generation's entry (the open call, or its billed entry: a job resumed); None: the job is forgotten (it failed,
    expired or was left behind), its entry stays."""
    holder = call_ledger.job_index(record)
    if job is None:
        if holder is not None:
            record.calls = call_ledger.replaced(record, holder, job=None)
        return
    index = _own_index(record)
    if index is None:
        record.calls = [*(record.calls if isinstance(record.calls, list) else []),
                        call_ledger.new_entry(call_ledger.GENERATION, call_ledger.BILLED, 0.0)]
        index = len(record.calls) - 1
    if holder is not None and holder != index:
        record.calls = call_ledger.replaced(record, holder, job=None)
    record.calls = call_ledger.replaced(record, index, job=dict(job))


def update_job(record: Record, **fields: Any) -> None:
    """Fields added to the journaled job (``resumed``, ``finished_at``, the COUNTED_IN marker), in its entry."""
    holder = call_ledger.job_index(record)
    if holder is not None:
        record.calls = call_ledger.replaced(record, holder, job={**(record.job or {}), **fields})


def set_generation(record: Record, amount: Any, *, tier: Any, route: Any = None, id: Any = None,
                   run: str | None = None, always: bool = True) -> float:
    """Write what the candidate's own generation costs (``amount``, at ``tier``: a batch line's is the batch's) as
    its entry of the record's call ledger: billed, a batch line at tier batch, else a generation.  One entry per
    purchase: while the purchase goes on (its job journaled, then its image or refusal; a job the provider says it
    did not bill, at $0) its entry is updated (a new copy in its place: an entry read may be shared), its run kept
    unless ``run`` is given (a job resumed was bought by the run that submitted it); a purchase that left no image
    moves it to left behind (``leave_generation_behind``), and the next purchase has an entry of its own.
    ``always``: written even at $0 without an entry (it says the tier); else only an entry that exists is set.
    The amount counted (0 unless believable)."""
    paid, tier = usd(amount), call_ledger.known_tier(tier)
    index = _own_index(record)
    if index is None and not (paid or always):
        return 0.0
    if index is None:
        record.calls = [*(record.calls if isinstance(record.calls, list) else []),
                        call_ledger.new_entry(call_ledger.GENERATION, call_ledger.BILLED, 0.0)]
        index = len(record.calls) - 1
    entry = {**record.calls[index], "price": round(paid, 6), "tier": tier,
             "kind": call_ledger.BATCH_LINE if tier == call_ledger.BATCH else call_ledger.GENERATION}
    if entry.get("state") in call_ledger.OPEN:  # the purchase's call ended: billed, its bill known
        entry["state"] = call_ledger.end(str(entry["state"]), call_ledger.BILLED,
                                         f"{record.model} {record.task_id} r{record.repeat:03d}")
        entry.pop("worst", None)
    for name, value in (("route", route), ("id", id), ("run", run)):
        if isinstance(value, str):
            entry[name] = value
    record.calls = [*record.calls[:index], entry, *record.calls[index + 1:]]
    return paid


def leave_generation_behind(record: Record, amount: Any, *, tier: Any, route: Any = None, id: Any = None,
                            run: str | None = None) -> float:
    """The candidate's own purchase left no image (its image lost, its job expired or left behind, an image a
    full disk could not keep): what it was paid (``amount``) stays in the record's call ledger, its entry moved to
    left behind (one appended when it has none, with ``run``: a job journaled by a run killed before it counted it),
    and the next purchase is a new entry.  Nothing at $0 is left behind (it counts no purchase bought again)."""
    paid = usd(amount)
    if not paid:
        return 0.0
    index = _own_index(record)
    if index is None:
        return add_left_behind(record, paid, tier=tier, route=route, id=id, run=run)
    set_generation(record, paid, tier=tier, route=route, id=id)  # its run: the one that bought it
    state = call_ledger.move(call_ledger.BILLED, call_ledger.LEFT_BEHIND,
                             f"{record.model} {record.task_id} r{record.repeat:03d}")
    record.calls = [*record.calls[:index], {**record.calls[index], "state": state}, *record.calls[index + 1:]]
    return paid


#: The ids of the entries ``keep_verdicts_cost`` writes: fixed, so two processes that both kept one record's
#: verdicts write them alike, and merged (call_ledger.merged) they count once.
KEPT_VERDICT, KEPT_REJUDGEMENTS = "judge_cost", "judge_cost.rejudged"


def keep_verdicts_cost(record: Record) -> None:
    """Write down what the record's verdicts cost as entries of its call ledger before anything replaces one of
    them: a record whose verdicts are not entries yet (written before ``judge_verdicts_cost`` was kept) counts its
    verdict (``judge_cost``) and re-judgements only while they are its own."""
    verdict, rejudged = call_ledger.unwritten_verdicts(record)
    tier = call_ledger.known_tier(record.judge_tier)
    kept = [call_ledger.new_entry(kind, call_ledger.BILLED, amount, tier=tier, entry=entry)
            for kind, amount, entry in ((call_ledger.VERDICT, verdict, KEPT_VERDICT),
                                        (call_ledger.REJUDGEMENT, rejudged, KEPT_REJUDGEMENTS)) if amount]
    if kept:
        record.calls = [*(record.calls if isinstance(record.calls, list) else []), *kept]


def add_verdict_cost(record: Record, amount: Any, run: str | None = None, *, kind: str = call_ledger.VERDICT,
                     tier: str | None = None) -> float:
    """Count what a verdict the judge just gave cost (``amount``: the Verdict's ``cost``; a re-judgement's too,
    ``kind`` REJUDGEMENT) as an entry of the record's call ledger (billed, at ``tier``: the tier that served it, else
    the record's verdict's), where no later
    verdict erases it; the amount counted (0 unless believable).  Only a verdict asked for is counted: one reused
    from the record was counted when it was given."""
    keep_verdicts_cost(record)
    paid = usd(amount)
    index = call_ledger.open_index(record)
    if index is not None and record.calls[index].get("kind") == kind:  # the judge call journaled: billed
        state = call_ledger.end(str(record.calls[index].get("state")), call_ledger.BILLED,
                                f"{record.model} {record.task_id} r{record.repeat:03d}")
        record.calls = call_ledger.replaced(record, index, state=state, worst=None, price=round(paid, 6),
                                            tier=call_ledger.known_tier(tier or record.judge_tier), run=run)
    elif paid:
        entry = call_ledger.new_entry(kind, call_ledger.BILLED, paid, tier=call_ledger.known_tier(tier or record.judge_tier), run=run)
        record.calls = [*(record.calls if isinstance(record.calls, list) else []), entry]
    return paid

