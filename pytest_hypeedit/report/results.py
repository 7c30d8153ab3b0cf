"""Records -> the results JSON (its contract: docs/reference/results.md) and its Markdown table.

``build_results`` is pure: it takes the run's records and settings and
returns the results (``Results``, typed in report/results_model.py); ``write_results`` does the I/O.  One row per model x split,
plus a pooled ``combined`` row per model when the run has several splits.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, cast

from ..analysis.metrics import MetricSettings, TaskTally, compute_metrics, metrics_by_task_type, tally_tasks
from ..analysis.sequential import is_sequential_stop
from ..engine import call_ledger
from ..engine.call_ledger import spent_in_run
from ..engine.journal import GENERATE, HELD, JUDGE, unresolved
from ..engine.records import (
    BATCH,
    ERROR,
    FAIL,
    PASS,
    REFUSED,
    SKIPPED,
    STANDARD,
    Record,
    implausible_amounts,
    unknown_tiers,
)
from ..engine.release import release_of
from ..engine.stability import stability_of
from ..files import atomic_write_bytes
from ..registry import ModelSpec
from .leaderboard_markdown import results_markdown
from .results_model import (
    CoverageSummary,
    IncompleteReason,
    Results,
    ResultsRow,
    RunSettings,
    SignalsSummary,
    SpentBreakdown,
)
from .tables import (
    COMBINED as COMBINED,  # re-exported: glue/ci.py imports it from here
    SCHEMA,
    metric_labels,
)

Key = tuple[str, str, str, int]



@dataclass(frozen=True)
class Unreported:
    """A selected item that ended without a report, whose record on disk shows money paid by this run (the pool
    bought it ahead of the items pytest reported before the run stopped): read by the glue, counted here."""

    key: Key
    spent: float  # what the record says the candidate cost (as ``spent`` counts a reported record)
    this_run: float  # of it, bought by this run
    pending: float = 0.0  # a paid call sent by this run and never answered: possibly paid (its price)


@dataclass(frozen=True)
class Coverage:
    """What the run was asked for and what it got to (the controller's knowledge, not the records'):
    ``planned`` every item of the splits x models x repeats, ``selected`` those left after -k, -m, --lf,
    --sw, --deselect (None: all of them), ``stopped`` why the run stopped early (Ctrl-C, SIGTERM, -x,
    --maxfail), and the records on disk of items bought ahead and never reported."""

    planned: frozenset[Key] = frozenset()
    selected: frozenset[Key] | None = None
    stopped: str | None = None
    unreported: tuple[Unreported, ...] = field(default=())

    @property
    def chosen(self) -> frozenset[Key]:
        return self.planned if self.selected is None else self.selected


def build_results(
    records: Iterable[Record], *, models: Sequence[ModelSpec], split_names: Sequence[str], settings: MetricSettings,
    settings_json: RunSettings, coverage: Coverage | None = None, run_id: str | None = None,
) -> Results:
    """The results for a run: ``models`` are ModelSpecs (for prices), splits in run order; ``coverage``
    (from the glue) says what was asked for, so that a run cut short or a selection never passes for a full run;
    ``run_id`` names the run whose purchases ``spent_this_run`` counts (the records say, their ledger entries naming
    the run; None: no run, 0)."""
    records = list(records)
    by_pair: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for record in records:
        by_pair[(record.model, record.split)].append(record)
    rows: list[ResultsRow] = []
    for spec in models:
        pair_rows = [_row(spec, split, by_pair.get((spec.name, split), []), settings, coverage=coverage,
                          run_id=run_id) for split in split_names]
        rows += [row for row in pair_rows if _has_something(row)]
        if len(split_names) > 1:
            pooled = [r for split in split_names for r in by_pair.get((spec.name, split), [])]
            combined = _row(spec, COMBINED, pooled, settings, pooled_keys=True, coverage=coverage,
                            splits=tuple(split_names), run_id=run_id)
            if _has_something(combined):
                rows.append(combined)
    for row in rows:  # what pass_at_10 and hype_gap measure at this many images per task (Pass@k below 10)
        row["repeats"] = settings_json.get("repeats")
        row["metric_labels"] = metric_labels(row["repeats"])
    results: Results = {"schema": SCHEMA, "settings": settings_json, "complete": all(r["complete"] for r in rows),
                        "rows": rows}
    if coverage is not None:
        covered = coverage_summary(records, coverage, rows)
        results["coverage"] = covered
        results["complete"] = results["complete"] and not covered["reasons"]
    return results


def _has_something(row: ResultsRow) -> bool:
    """A row is shown when it has a record, was selected, or bought something (a model whose items were all
    bought ahead and never reported keeps its row, with what it spent)."""
    return bool(row["candidates"] or row.get("selected") or row["spent"])


def _row(spec: ModelSpec, split: str, records: list[Record], settings: MetricSettings, pooled_keys: bool = False,
         coverage: Coverage | None = None, splits: tuple[str, ...] = (), run_id: str | None = None) -> ResultsRow:
    tallies = tallies_of(records, pooled_keys)
    counts = _counts(records, run_id)
    paid = paid_price(spec, records)
    # the counts and the metrics come as dicts by name (compute_metrics: by metric name): typed here, once
    row = cast(ResultsRow, {"model": spec.name, "split": split, "release": release_of(spec).as_row(), **counts,
                            "cost_per_candidate": spec.price, "cost_per_candidate_paid": paid,
                            **compute_metrics(tallies, paid, settings)})
    # effective_cost is at the price the run paid (its tiers); at the list price too, so that runs at different
    # tiers compare (the leaderboard compares at list price)
    row["effective_cost_basis"] = "paid"
    row["effective_cost_list"] = (row.get("effective_cost") if paid == spec.price
                                  else compute_metrics(tallies, spec.price, settings).get("effective_cost"))
    row["by_task_type"] = metrics_by_task_type(tallies, paid, settings)
    row["complete"] = counts["errors"] == 0 and counts["skipped"] == 0
    if coverage is not None:
        mine = (lambda key: key[1] == spec.name and key[0] in splits) if split == COMBINED else \
            (lambda key: key[1] == spec.name and key[0] == split)
        _add_coverage(row, {r.key for r in records}, coverage, mine)
    row["signals_summary"] = signals_summary(records)
    stability = stability_of(records)
    if stability is not None:
        row["judge_stability"] = stability
    return row


def _add_coverage(row: ResultsRow, recorded: set[Key], coverage: Coverage, mine: Callable[[Key], bool]) -> None:
    """The row's share of the plan: items planned, selected, ended without a record, and what the items bought
    ahead and never reported cost (added to ``spent``: it was bought)."""
    planned = sum(1 for key in coverage.planned if mine(key))
    selected = [key for key in coverage.chosen if mine(key)]
    row["planned"], row["selected"] = planned, len(selected)
    row["without_record"] = sum(1 for key in selected if key not in recorded)
    ahead = [u for u in coverage.unreported if mine(u.key) and u.key not in recorded]
    pending = [u for u in ahead if u.pending]
    row["bought_unreported"] = len(ahead)
    row["bought_unreported_cost"] = _money(sum(u.spent + u.pending for u in ahead))
    row["spent"] = _money(row["spent"] + row["bought_unreported_cost"])
    row["spent_this_run"] = _money(row["spent_this_run"] + sum(u.this_run + u.pending for u in ahead))
    if ahead:  # a part of its own, present only when some items were bought ahead and never reported
        row["spent_breakdown"]["unreported"] = row["bought_unreported_cost"]
    row["possibly_paid"] += len(pending)
    row["possibly_paid_cost"] = _money(row["possibly_paid_cost"] + sum(u.pending for u in pending))
    row["complete"] = row["complete"] and row["without_record"] == 0 and len(selected) == planned


def coverage_summary(records: list[Record], coverage: Coverage, rows: Sequence[ResultsRow]) -> CoverageSummary:
    """The run-level ``coverage`` object: counts, and ``reasons`` (each ``{"reason", "count", "detail"}``) why
    the run is not complete, empty when it is."""
    recorded = {r.key for r in records}
    chosen = coverage.chosen
    own = [row for row in rows if row["split"] != COMBINED]
    summary: CoverageSummary = {"planned": len(coverage.planned), "selected": len(chosen),
               "deselected": len(coverage.planned - chosen), "recorded": len(recorded & chosen),
               "without_record": len(chosen - recorded),
               "bought_unreported": sum(row.get("bought_unreported", 0) for row in own),
               "subset": bool(coverage.planned - chosen), "stopped": coverage.stopped}
    summary["reasons"] = incomplete_reasons(summary, own)
    return summary


def incomplete_reasons(summary: CoverageSummary, rows: Sequence[Mapping[str, Any]]) -> list[IncompleteReason]:
    """Why a run is not complete, in the order a user acts on them: stopped, not covered, not measured."""
    reasons: list[IncompleteReason] = []

    def add(reason: str, count: int | None, detail: str) -> None:
        reasons.append({"reason": reason, "count": count, "detail": detail})

    sequential = is_sequential_stop(summary["stopped"])
    if sequential:  # a deliberate, declared stop: the gates were decided (glue/early_stop.py)
        add("sequential", summary["without_record"], f"stopped by --sequential ({summary['stopped']}): "
                                                     f"{summary['without_record']} of {summary['selected']} selected "
                                                     "items not bought, on purpose")
    elif summary["stopped"]:
        interrupted = any(word in summary["stopped"] for word in ("interrupt", "SIGTERM", "signal", "Ctrl-C"))
        if interrupted:
            add("interrupted", None, summary["stopped"])
        else:
            add("stopped_early", None, f"stopped early: {summary['stopped']} (-x, --maxfail, --sw)")
    if summary["deselected"]:
        add("subset", summary["deselected"], f"a subset: {summary['selected']} of {summary['planned']} items "
                                             f"selected ({summary['deselected']} deselected by -k, -m, --lf, --sw "
                                             "or --deselect)")
    if summary["without_record"] and not sequential:
        add("without_record", summary["without_record"], f"{summary['without_record']} of {summary['selected']} "
                                                         "selected items ended without a record")
    if summary["bought_unreported"]:
        add("bought_unreported", summary["bought_unreported"], f"{summary['bought_unreported']} candidates bought "
                                                               "ahead and not reported (their cost is in spent)")
    if summary["selected"] and not sum(row.get("judged", 0) for row in rows):
        add("nothing_measured", None, "nothing was measured: no candidate was judged")
    disk_skipped = sum(row.get("disk_full_skipped", 0) for row in rows)
    for key, what, besides in (("errors", "errors (the next run tries them again)", 0),
                               ("skipped", "skipped by --budget (raise it and run again: what was paid is reused)",
                                disk_skipped)):
        count = sum(row.get(key, 0) for row in rows) - besides
        if count:
            add(key, count, f"{count} {what}")
    disk = sum(row.get("disk_full", 0) for row in rows)
    if disk:
        add("disk_full", disk, f"{disk} items ended by a full disk (No space left on device: "
                               f"{disk - disk_skipped} errors, {disk_skipped} not bought): free space and run again")
    return reasons


def signals_summary(records: list[Record]) -> SignalsSummary:
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


def _counts(records: list[Record], run_id: str | None) -> ResultsRow:
    spent = sum(r.spent for r in records)
    # every paid call this run sent, as each record says (its ledger's entries naming the run)
    this_run = sum(spent_in_run(r, run_id) for r in records)
    return {
        "candidates": len(records),
        # a write that found no room is an error; the items after it are not bought (engine/room.py)
        "disk_full": sum(1 for r in records if r.outcome in (ERROR, SKIPPED) and _disk_full(r.error)),
        "disk_full_skipped": sum(1 for r in records if r.outcome == SKIPPED and _disk_full(r.error)),
        "implausible_amounts": sum(implausible_amounts(r) for r in records),
        "unknown_tiers": sum(unknown_tiers(r) for r in records),
        "judged": sum(1 for r in records if r.judged),
        "errors": sum(1 for r in records if r.outcome == ERROR),
        "refusals": sum(1 for r in records if r.outcome == REFUSED),
        "skipped": sum(1 for r in records if r.outcome == SKIPPED),
        "resubmitted": sum(r.resubmitted for r in records),
        **_rejudged_stale(records),
        **_possibly_paid(records),
        "spent": _money(spent),
        "spent_breakdown": _spent_breakdown(records),
        "spend_by_tier": spend_by_tier(records),
        "spend_by_kind": spend_by_kind(records),
        "spent_this_run": _money(this_run),
    }


def _disk_full(error: str | None) -> bool:
    text = str(error or "")
    return "Errno 28" in text or "No space left" in text or text.startswith("disk full at ")


def _money(value: float) -> float:
    """A sum of amounts, rounded; never infinite or NaN (every amount read is capped: records.usd), so the
    results stay strict JSON."""
    return round(value, 6) if math.isfinite(value) else 0.0


def _possibly_paid(records: list[Record]) -> ResultsRow:
    """Candidates with a paid call abandoned without its reply (engine/journal.py), which may therefore have been
    paid twice, and those calls' worst-case price (the ledger's lost calls); of them, ``possibly_paid_open``: not
    bought again yet (the next run does), and ``possibly_paid_held``: left as errors for review (--possibly-paid
    review)."""
    lost = [(r, call_ledger.possibly_paid(call_ledger.calls_of(r))) for r in records]
    counted = [r for r, calls in lost if calls]
    open_ = [r for r in counted if unresolved(r, GENERATE) or unresolved(r, JUDGE)]
    held = [r for r in open_ if r.outcome == ERROR and r.extra.get(HELD)]
    return {"possibly_paid": len(counted),
            "possibly_paid_cost": round(sum(call.price for _, calls in lost for call in calls), 6),
            "possibly_paid_open": len(open_) - len(held), "possibly_paid_held": len(held)}


def _spent_breakdown(records: list[Record]) -> SpentBreakdown:
    """``spent`` in its parts: generation, judge, expired jobs bought again, possibly paid calls (USD), from the
    records' ledgers (engine/call_ledger.py)."""
    totals = {"generation": 0.0, "judge": 0.0, "resubmitted": 0.0, "possibly_paid": 0.0}
    for record in records:
        for part, value in call_ledger.breakdown(call_ledger.calls_of(record)).items():
            totals[part] += value
    return {"generation": round(totals["generation"], 6), "judge": round(totals["judge"], 6),
            "resubmitted": round(totals["resubmitted"], 6), "possibly_paid": round(totals["possibly_paid"], 6)}


def spend_by_tier(records: list[Record]) -> dict[str, dict[str, float]]:
    """The generation and judge parts of ``spent_breakdown`` by the tier that served each call (``unknown`` for a
    tier on disk that is no tier we know): USD.  A candidate's judge calls that failed after being paid, and its
    re-judgements, count at its verdict's tier (no reply says theirs)."""
    parts: dict[str, dict[str, float]] = {"generation": {}, "judge": {}}
    for record in records:
        for part, tiers in call_ledger.by_tier(call_ledger.calls_of(record)).items():
            for tier, value in tiers.items():
                parts[part][tier] = parts[part].get(tier, 0.0) + value
    return {part: {tier: _money(value) for tier, value in tiers.items()} for part, tiers in parts.items()}


def spend_by_kind(records: list[Record]) -> dict[str, float]:
    """``spent`` by what each paid call was for (the ledger's kinds: generation, batch_line, verdict, rejudgement,
    judge_call), every state counted (paid, left behind, possibly paid): USD, kinds that cost nothing left out."""
    kinds: dict[str, float] = {}
    for record in records:
        for kind, value in call_ledger.by_kind(call_ledger.calls_of(record)).items():
            kinds[kind] = kinds.get(kind, 0.0) + value
    return {kind: _money(value) for kind, value in sorted(kinds.items())}


def paid_price(spec: ModelSpec, records: list[Record]) -> float:
    """The price per candidate the run paid: each bought candidate's model price at the tier that served it
    (``price_at``), averaged; the list price
    when none was bought or every one was bought at standard."""
    tiers = [r.tier for r in records if r.candidate]
    kinds = set(tiers)
    if not tiers or kinds == {STANDARD}:
        return spec.price
    if len(kinds) == 1:
        return price_at(spec, tiers[0])
    return sum(price_at(spec, tier) for tier in tiers) / len(tiers)


def price_at(spec: ModelSpec, tier: str) -> float:
    """The model's price per candidate at ``tier`` (``ModelSpec.price_at``); a tier no candidate is bought at
    (an unknown one from a record on disk) at the list price: the price paid is never made smaller than it
    may have been."""
    return spec.price_at(tier) if tier in (STANDARD, BATCH) else spec.price


def _rejudged_stale(records: list[Record]) -> ResultsRow:
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


def write_results(results: Results, path: Path) -> Path:
    """Write the JSON (strict: a NaN or infinity is a bug, not accepted here rather than written for a parser
    to fail on) and, beside it, the RESULTS.md-style leaderboard (same stem, ``.md``)."""
    atomic_write_bytes(path, (json.dumps(results, indent=2, sort_keys=False, allow_nan=False) + "\n").encode("utf-8"))
    markdown = path.with_suffix(".md")
    atomic_write_bytes(markdown, results_markdown(results).encode("utf-8"))
    return markdown


#: The name a partial run's results take beside a complete run's: ``results.json`` -> ``results.partial.json``.
PARTIAL_SUFFIX = ".partial"


def partial_path(path: Path) -> Path:
    return path.with_name(f"{path.stem}{PARTIAL_SUFFIX}{path.suffix or '.json'}")


def where_to_write(results: Results, path: Path) -> Path:
    """Where this run's results go: ``path``, unless this run is not complete (a subset, stopped early, errors)
    and ``path`` holds a complete run's results, which a partial run never replaces: then beside it
    (``results.partial.json``)."""
    if results.get("complete") or not _has_complete_results(path):
        return path
    return partial_path(path)


def _has_complete_results(path: Path) -> bool:
    try:
        existing = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(existing, dict) and existing.get("complete") is True
