"""The Markdown leaderboard of one results dict: a header, then one table per split and combined.

``results_markdown(results)`` is pure (dict in, str out): the session calls it to write the Markdown beside
results.json, and ``hypeedit-leaderboard`` (report/leaderboard.py) on merged results.  With a ``Published``
(report/published.py) the paper's rows stand beside the run's, marked (published).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .tables import COLUMNS, by_pass_rate, cell as _cell, format_metric, section_order

if TYPE_CHECKING:
    from .published import Published


def results_markdown(results: Mapping[str, Any], published: "Published | None" = None) -> str:
    """The leaderboard of one results dict: a header, then one table per split and combined.

    With ``published`` (report/published.py), the paper's rows of each split are
    shown in the same table, marked "(published)", and its splits the run lacks
    get a table of their own.
    """
    rows = list(results.get("rows") or [])
    settings = results.get("settings") or (published.settings if published and not rows else {})
    parts = [_header(settings, published, tiered=any(_paid_elsewhere(r) for r in rows))]
    for split in section_order(rows, published):
        theirs = published.rows_of(split) if published else []
        parts.append(_split_section(split, [r for r in rows if r.get("split") == split], results, theirs, published))
    if not rows and not published:
        parts.append("No candidate was judged in this run.\n")
    return "\n".join(parts)


def _header(settings: Mapping[str, Any], published: "Published | None" = None, tiered: bool = False) -> str:
    cap = settings.get("retry_cap", 4)
    review = settings.get("review_cost")
    review_text = f"${review:.4f}" if isinstance(review, (int, float)) else "as set for each run"
    lines = [
        "# Results",
        "",
        "Metrics:",
        "- Pass rate (P@1): mean over tasks of the share of PASS candidates.",
        "- Pass@4 (P@4): mean over tasks of 1 - (1 - p)^4, the chance of a PASS within 4 attempts.",
        "- Pass@10 (P@10): tasks with at least one PASS among their candidates.",
        f"- Expected attempts: expected number of attempts to get a PASS (max {cap}).",
        "- Effective cost per success: expected attempts * (model cost + review cost per candidate) / P@4.",
        "- Hype gap: Pass@10 - first-attempt pass rate.",
        "",
        "Notes:",
        f"- Costs are USD; review cost per candidate is {review_text}.",
        "- Tables are sorted by pass rate (descending).",
    ]
    if settings.get("judge"):
        lines.append(f"- Judge: {_cell(settings['judge'])}.")
    if tiered:
        lines.append("- Effective cost per success is at each model's list price (its standard price per "
                     "candidate), whatever tier a run bought at, so that runs compare; what a run paid is in its "
                     "results JSON (effective_cost at cost_per_candidate_paid), its intervals here are n/a.")
    if published:
        lines += _published_notes(settings, published)
    return "\n".join(lines) + "\n"


def _published_notes(settings: Mapping[str, Any], published: "Published") -> list[str]:
    theirs = published.settings
    notes = [
        f"- Rows marked (published) are the paper's figures as published in {published.citation()}: "
        f"{theirs['repeats']} images per task, review cost ${theirs['review_cost']:.4f}, human majority labels. "
        "Compare a run with them on the same tasks only (the paper's private split is not public).",
        "- Rows marked (judge) are a run's automatic judge's figures, not people's: the paper's judge agreed with "
        "its raters on about 80% of candidates. Rows marked (calibrated) are the judge's figures corrected with a "
        "random human sample (pytest --calibrate), the ones to compare with the published rows.",
    ]
    cap, review = settings.get("retry_cap"), settings.get("review_cost")
    if cap is not None and cap != theirs["retry_cap"] or review is not None and abs(review - theirs["review_cost"]) > 5e-5:
        notes.append(f"- This run's retry cap or review cost differs from the paper's ({theirs['retry_cap']}, "
                     f"${theirs['review_cost']:.4f}): its expected attempts and effective cost are not comparable "
                     "with the published rows.")
    return notes


def _split_section(split: str, rows: list[Mapping[str, Any]], results: Mapping[str, Any],
                   theirs: Sequence[Mapping[str, Any]] = (), published: "Published | None" = None) -> str:
    rows = by_pass_rate(rows)
    generated = results.get("generated_at") or results.get("created")
    if not rows:  # a split only the paper has
        generated = published.source["generated_at"] if published else None
    title = f"## {split.capitalize()}" + (f" (generated at {str(generated)[:10]})" if generated else "")
    scope = [_scope_line(rows, results)] if rows else []
    if theirs and published is not None:  # the paper's rows come with it
        scope.append(f"Published: {_scope_line(theirs, {'settings': published.settings})}")
    ours = _beside_published(rows) if published else rows
    lines = [title, "", " ".join(scope), "", _table(by_pass_rate([*ours, *theirs]), _metric_cells)]
    if any(r.get("intervals") for r in rows):
        lines += ["", "95% intervals over tasks:", "", _table(rows, _interval_cells)]
    lines += _calibrated_section(rows)
    lines += _pairwise_section(split, results)
    notes = [_row_note(r) for r in rows if _row_note(r)]
    if notes:
        lines += [""] + [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"


def _scope_line(rows: Sequence[Mapping[str, Any]], results: Mapping[str, Any]) -> str:
    tasks = max((int(r.get("tasks") or 0) for r in rows), default=0)
    repeats = (results.get("settings") or {}).get("repeats")
    if not repeats and tasks:
        repeats = round(max(int(r.get("candidates") or 0) for r in rows) / tasks)
    total = f"{tasks * repeats:,}" if repeats else "?"
    return f"{tasks} tasks, {repeats or '?'} images per task, {total} total images."


def _table(rows: list[Mapping[str, Any]], cells) -> str:
    header = "| Model | " + " | ".join(title for _, title, _ in COLUMNS) + " |"
    rule = "| --- " * (len(COLUMNS) + 1) + "|"
    body = [f"| {_model_cell(r)} | " + " | ".join(cells(r)) + " |" for r in rows]
    return "\n".join([header, rule, *body])


def _model_cell(row: Mapping[str, Any]) -> str:
    if row.get("published"):
        return _cell(row.get("model")) + " (published)"
    marked = " (incomplete)" if row.get("incomplete") or row.get("complete") is False else ""
    return _cell(row.get("model")) + (f" ({row['figures']})" if row.get("figures") else "") + marked


def _beside_published(rows: list[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    from .published import beside_published

    return beside_published(rows)


def _metric_cells(row: Mapping[str, Any]) -> list[str]:
    at_list = {**row, "effective_cost": row["effective_cost_list"]} if "effective_cost_list" in row else row
    return [format_metric(at_list.get(key), kind) for key, _, kind in COLUMNS]


def _paid_elsewhere(row: Mapping[str, Any]) -> bool:
    """Whether the row's run paid another price than the list price (a batch or Flex tier): the table shows its
    effective cost at list price, and its interval (at the price paid) is left out."""
    paid = row.get("cost_per_candidate_paid")
    return paid is not None and paid != row.get("cost_per_candidate")


def _interval_cells(row: Mapping[str, Any]) -> list[str]:
    intervals = row.get("intervals") or {}
    cells = []
    for key, _, kind in COLUMNS:
        bounds = None if key == "effective_cost" and _paid_elsewhere(row) else intervals.get(key)
        cells.append(f"{format_metric(bounds[0], kind)} – {format_metric(bounds[1], kind)}" if bounds else "n/a")
    return cells


def _calibrated_section(rows: list[Mapping[str, Any]]) -> list[str]:
    """The figures corrected with a human sample (--calibrate), each with its interval, and what to know."""
    calibrated = [r for r in rows if isinstance(r.get("calibration"), Mapping)]
    if not calibrated:
        return []
    levels = {(r["calibration"].get("level"), r["calibration"].get("target")) for r in calibrated}
    level = next(iter(levels))[0] if len(levels) == 1 and next(iter(levels))[0] else None
    title = (f"Calibrated with a human sample ({f'{100 * level:g}% intervals' if level else 'intervals'} for the "
             "population of tasks, judged by people; n/a: not calibrated, see below):")
    lines = ["", title, "", _table(calibrated, _calibrated_cells)]
    for row in calibrated:
        lines += [f"- {_cell(row.get('model'))}: {_cell(problem)}" for problem in row["calibration"].get("problems") or ()]
    return lines


def _calibrated_cells(row: Mapping[str, Any]) -> list[str]:
    figures = found if isinstance(found := row.get("calibrated"), Mapping) else {}
    cells = []
    for key, _, kind in COLUMNS:
        entry = given if isinstance(given := figures.get(key), Mapping) else {}
        value = format_metric(entry.get("value"), kind)
        if entry.get("value") is None or entry.get("low") is None:
            cells.append(value)
            continue
        high = "unbounded" if entry.get("high_unbounded") else format_metric(entry.get("high"), kind)
        cells.append(f"{value} ({format_metric(entry.get('low'), kind)} – {high})")
    return cells


def _row_note(row: Mapping[str, Any]) -> str:
    problems = [f"{int(row[k])} {k}" for k in ("errors", "skipped") if isinstance(row.get(k), (int, float)) and row[k] > 0]
    if not problems:
        return ""
    return f"{_cell(row.get('model'))}: incomplete ({', '.join(problems)}); its figures cover judged candidates only."


def _pairwise_section(split: str, results: Mapping[str, Any]) -> list[str]:
    """Under a split's tables: which models cannot be told apart on pass rate (analysis/pairwise.py), or why
    they were not compared."""
    lines = [f"- {_cell(skip.get('model'))}: {_cell(skip.get('reason'))}" for skip in results.get("pairwise_skipped")
             or () if isinstance(skip, Mapping) and skip.get("split") == split]
    entries = [e for e in results.get("pairwise") or () if isinstance(e, Mapping) and e.get("split") == split
               and e.get("metric") == "pass_rate"]
    if entries:
        same = [f"{_cell(e.get('a'))} ~ {_cell(e.get('b'))}" for e in entries if not e.get("significant")]
        method = "paired over tasks, Holm-adjusted over the split's pairs x metrics, 5%"
        lines.insert(0, f"Cannot be told apart on pass rate ({method}): {'; '.join(same)}." if same else
                     f"Every pair of models differs on pass rate ({method}).")
    return ["", *lines] if lines else []
