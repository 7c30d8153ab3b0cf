"""Records -> the results JSON (design.md contract) and its Markdown table.

``build_results`` is pure: it takes the run's records and settings and
returns the dict; ``write_results`` does the I/O.  One row per model x split,
plus a pooled ``combined`` row per model when the run has several splits.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Sequence

from ..files import atomic_write_bytes
from .leaderboard import COMBINED, SCHEMA, results_markdown
from ..analysis.metrics import MetricSettings, TaskTally, compute_metrics, metrics_by_task_type, tally_tasks
from ..engine.journal import GENERATE, HELD, JUDGE, unresolved
from ..engine.records import ERROR, FAIL, PASS, REFUSED, SKIPPED, Record, usd
from ..engine.stability import stability_cost, stability_of


def build_results(
    records: Iterable[Record], *, models: Sequence, split_names: Sequence[str], settings: MetricSettings, settings_json: dict
) -> dict:
    """The results dict for a run: ``models`` are ModelSpecs (for prices), splits in run order."""
    by_pair: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for record in records:
        by_pair[(record.model, record.split)].append(record)
    rows = []
    for spec in models:
        pair_rows = [_row(spec, split, by_pair.get((spec.name, split), []), settings) for split in split_names]
        rows += [row for row in pair_rows if row["candidates"]]
        if len(split_names) > 1:
            pooled = [r for split in split_names for r in by_pair.get((spec.name, split), [])]
            if pooled:
                rows.append(_row(spec, COMBINED, pooled, settings, pooled_keys=True))
    return {"schema": SCHEMA, "settings": settings_json, "complete": all(r["complete"] for r in rows), "rows": rows}


def _row(spec, split: str, records: list[Record], settings: MetricSettings, pooled_keys: bool = False) -> dict:
    tallies = tallies_of(records, pooled_keys)
    counts = _counts(records)
    row = {"model": spec.name, "split": split, **counts, "cost_per_candidate": spec.price}
    row.update(compute_metrics(tallies, spec.price, settings))
    row["by_task_type"] = metrics_by_task_type(tallies, spec.price, settings)
    row["complete"] = counts["errors"] == 0 and counts["skipped"] == 0
    row["signals_summary"] = signals_summary(records)
    stability = stability_of(records)
    if stability is not None:
        row["judge_stability"] = stability
    return row


def signals_summary(records: list[Record]) -> dict:
    """What the pixel diagnostics say about a row (engine/signals.py): counts, and means where measured."""
    measured = [r for r in records if r.signals]
    ssim = [r.signals["ssim"] for r in measured if isinstance(r.signals.get("ssim"), (int, float))]
    delta_e = [r.signals["delta_e"] for r in measured if isinstance(r.signals.get("delta_e"), (int, float))]
    return {
        "measured": len(measured),
        # candidates with an image whose records lack them (read back from disk without --signals): not computed
        "unmeasured": sum(1 for r in records if r.candidate and not r.signals),
        "size_mismatch": sum(1 for r in measured if r.signals.get("size_match") is False),
        "unchanged": sum(1 for r in measured if r.signals.get("unchanged") is True),
        "unchanged_pass": sum(1 for r in measured if r.signals.get("unchanged") is True and r.outcome == PASS),
        "ssim_mean": sum(ssim) / len(ssim) if ssim else None,
        "delta_e_mean": sum(delta_e) / len(delta_e) if delta_e else None,
    }


def tallies_of(records: Iterable[Record], pooled_keys: bool = False) -> list[TaskTally]:
    """Per-task tallies of judged candidates (a refusal is a judged FAIL); ``split/task`` keys when pooled."""
    judged = [
        (f"{r.split}/{r.task_id}" if pooled_keys else r.task_id, r.repeat, r.passed, tuple(r.task_types))
        for r in records
        if r.judged
    ]
    return tally_tasks(judged)


def _counts(records: list[Record]) -> dict:
    spent = sum(r.spent + stability_cost(r) for r in records)  # re-judgements (--judge-stability) are judge spend
    # this run's generations and verdicts (an expired job may have been paid by an earlier run: not counted here)
    this_run = sum((0 if r.reused_candidate or _paid_earlier(r) else usd(r.cost))
                   + (usd(r.judge_cost) if _judged_now(r) else 0) for r in records)
    return {
        "candidates": len(records),
        "judged": sum(1 for r in records if r.judged),
        "errors": sum(1 for r in records if r.outcome == ERROR),
        "refusals": sum(1 for r in records if r.outcome == REFUSED),
        "skipped": sum(1 for r in records if r.outcome == SKIPPED),
        "resubmitted": sum(r.resubmitted for r in records),
        **_rejudged_stale(records),
        **_possibly_paid(records),
        "spent": round(spent, 6),
        "spent_breakdown": _spent_breakdown(records),
        "spent_this_run": round(this_run, 6),
    }


def _possibly_paid(records: list[Record]) -> dict:
    """Candidates with a paid call abandoned without its reply (engine/journal.py), which may therefore have been
    paid twice, and those calls' worst-case price; of them, ``possibly_paid_open``: not bought again yet (the next
    run does), and ``possibly_paid_held``: left as errors for review (--possibly-paid review)."""
    counted = [r for r in records if r.possibly_paid_calls]
    open_ = [r for r in counted if unresolved(r, GENERATE) or unresolved(r, JUDGE)]
    held = [r for r in open_ if r.outcome == ERROR and r.extra.get(HELD)]
    return {"possibly_paid": len(counted), "possibly_paid_cost": round(sum(r.spent_breakdown["possibly_paid"]
                                                                           for r in counted), 6),
            "possibly_paid_open": len(open_) - len(held), "possibly_paid_held": len(held)}


def _spent_breakdown(records: list[Record]) -> dict:
    """``spent`` in its parts: generation, judge, expired jobs bought again, possibly paid calls (USD)."""
    totals = {"generation": 0.0, "judge": 0.0, "resubmitted": 0.0, "possibly_paid": 0.0}
    for record in records:
        for part, value in record.spent_breakdown.items():
            totals[part] += value
        totals["judge"] += stability_cost(record)  # re-judgements (--judge-stability) are the judge's calls
    return {part: round(value, 6) for part, value in totals.items()}


def _rejudged_stale(records: list[Record]) -> dict:
    """Verdicts this run gave in place of stored ones the judge declared stale (Judge.stale_reason), by reason:
    they were paid for again, so the user is told, never silently."""
    reasons: dict[str, int] = {}
    for record in records:
        if record.outcome in (PASS, FAIL) and not record.reused_verdict:
            replaced = (record.judgements.get(record.judge or "") or {}).get("replaced")
            if isinstance(replaced, dict):
                reason = str(replaced.get("reason") or "stale")
                reasons[reason] = reasons.get(reason, 0) + 1
    return {"rejudged_stale": sum(reasons.values()), "rejudged_stale_reasons": reasons}


def _judged_now(record: Record) -> bool:
    """The record's verdict was given (and paid) by this run: not reused, and not an older verdict left on a
    candidate whose new verdict was skipped (--budget) or failed."""
    return record.outcome in (PASS, FAIL) and not record.reused_verdict


def _paid_earlier(record: Record) -> bool:
    """A journaled job this run resumed: it was paid for when an earlier run submitted it."""
    return bool(record.job and record.job.get("resumed"))


def write_results(results: dict, path: Path) -> Path:
    """Write the JSON and, beside it, the RESULTS.md-style leaderboard (same stem, ``.md``)."""
    atomic_write_bytes(path, (json.dumps(results, indent=2, sort_keys=False) + "\n").encode("utf-8"))
    markdown = path.with_suffix(".md")
    atomic_write_bytes(markdown, results_markdown(results).encode("utf-8"))
    return markdown
