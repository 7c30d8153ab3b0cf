"""What a record says its candidate's purchases cost, kept where no later write erases it.

A verdict given (and later replaced: ``--rejudge``, a stale verdict, a ``--judge-stability`` re-judgement), a
judge call that failed after being paid, a purchase that left no image and each run's purchases (``spent_by_run``)
stay counted in the record's call ledger (``calls``) and its own fields; these helpers are the only writers of them.  What they add
up to is read by the call ledger only (engine/call_ledger.py), where every figure of spend is derived
(docs/explanation/money.md).
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
    if paid:
        entry = call_ledger.new_entry(kind, call_ledger.BILLED, paid, tier=call_ledger.known_tier(tier or record.judge_tier), run=run)
        record.calls = [*(record.calls if isinstance(record.calls, list) else []), entry]
    return paid


def note_run_spend(record: Record, run_id: str, bought: float) -> None:
    """Write down what the run ``run_id`` has bought for this candidate so far (its lifecycle's ``bought``; less than
    it said before when a job it submitted was forgotten: the provider says it failed, unbilled)."""
    runs = record.spent_by_run if isinstance(record.spent_by_run, dict) else {}
    if bought or run_id in runs:
        record.spent_by_run = {**runs, run_id: round(bought, 6)}
