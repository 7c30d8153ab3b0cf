"""The Markdown leaderboard of one results dict: a header, then one table per split and combined.

``results_markdown(results)`` is pure (dict in, str out): the session calls it to write the Markdown beside
results.json, and ``hypeedit-leaderboard`` (report/leaderboard.py) on merged results.  With a ``Published``
(report/published.py) the paper's rows stand beside the run's, marked (published).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..finite import format_metric
from .tables import (
    COLUMNS,
    Row,
    Section,
    by_pass_rate,
    cell as _cell,
    columns,
    leaderboard_cells,
    model_name,
    paid_elsewhere as _paid_elsewhere,
    repeats_note,
    sections,
)

if TYPE_CHECKING:
    from .published import Published
    from .results_model import Results, ResultsRow, RunComparison, RunSettings


def results_markdown(results: Results, published: "Published | None" = None) -> str:
    """The leaderboard of one results dict: a header, then one table per split and combined.

    With ``published`` (report/published.py), the paper's rows of each split are
    shown in the same table, marked "(published)", and its splits the run lacks
    get a table of their own.
    """
    rows = list(results.get("rows") or [])
    settings = results.get("settings") or (published.settings if published and not rows else {})
    parts = [_header(settings, published, tiered=any(_paid_elsewhere(r) for r in rows))]
    tables = sections(rows, published, (results.get("settings") or {}).get("repeats"))
    last = {section.split: section for section in tables if section.rows}  # the pairwise note goes under it, once
    parts += [_split_section(section, results, published, last.get(section.split) is section) for section in tables]
    left_out = [e for e in results.get("combined_left_out") or () if isinstance(e, Mapping)]
    if left_out:  # report/leaderboard.py drop_mixed_combined
        parts.append("Combined rows left out:\n\n" + "\n".join(f"- {_cell(e.get('model'))}: {_cell(e.get('reason'))}"
                                                             for e in left_out) + "\n")
    if not rows and not published:
        parts.append("No candidate was judged in this run.\n")
    serving = serving_section(results)
    if serving:
        parts.append(serving)
    return "\n".join(parts)


def _header(settings: RunSettings | Mapping[str, Any], published: "Published | None" = None,
            tiered: bool = False) -> str:
    # the run's settings, or with no row the paper's (report/published.py: not the results model)
    cap = settings.get("retry_cap", 4)
    review = settings.get("review_cost")
    review_text = f"${review:.4f}" if isinstance(review, (int, float)) else "as set for each run"
    lines = [
        "# Results",
        "",
        "Metrics:",
        "- Pass rate (P@1): mean over tasks of the share of PASS candidates.",
        "- Pass@4 (P@4): mean over tasks of 1 - (1 - p)^4, the chance of a PASS within 4 attempts.",
        "- Pass@10 (P@10): tasks with at least one PASS among their candidates (10 per task). A table of k images "
        "per task other than 10 names it Pass@k, and the hype gap on it Hype gap@k: not the paper's figures.",
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


def _published_notes(settings: RunSettings | Mapping[str, Any], published: "Published") -> list[str]:
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
    if (cap is not None and cap != theirs["retry_cap"]) or (review is not None and abs(review - theirs["review_cost"]) > 5e-5):
        notes.append(f"- This run's retry cap or review cost differs from the paper's ({theirs['retry_cap']}, "
                     f"${theirs['review_cost']:.4f}): its expected attempts and effective cost are not comparable "
                     "with the published rows.")
    return notes


def _split_section(section: Section, results: Results, published: "Published | None" = None,
                   pairwise: bool = True) -> str:
    rows, theirs, repeats, split = by_pass_rate(section.rows), section.published, section.repeats, section.split
    generated = results.get("generated_at") or results.get("created")
    if not rows:  # a table of the paper's rows alone
        generated = published.source["generated_at"] if published else None
    title = f"## {section.title}" + (f" (generated at {str(generated)[:10]})" if generated else "")
    scope = [_scope_line(rows, repeats)] if rows else []
    if theirs and published is not None:  # the paper's rows come with it
        scope.append(f"Published: {_scope_line(theirs, published.settings['repeats'])}")
    ours = _beside_published(rows) if published else rows
    lines = [title, "", " ".join(scope), "", _table(by_pass_rate([*ours, *theirs]), leaderboard_cells, repeats)]
    if rows and repeats_note(repeats):
        lines += ["", repeats_note(repeats) + "."]
    if any(r.get("intervals") for r in rows):
        missing = _missing_intervals(rows, repeats)
        title = "95% intervals over tasks" + (" (n/a: no interval, why below)" if missing else "") + ":"
        lines += ["", title, "", _table(rows, _interval_cells, repeats), *([""] + missing if missing else [])]
    lines += _calibrated_section(rows, repeats)
    lines += pairwise_lines(split, results) if pairwise else []
    notes = [_row_note(r) for r in rows if _row_note(r)]
    if notes:
        lines += [""] + [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"


def _scope_line(rows: Sequence[Mapping[str, Any]], repeats: int | None) -> str:
    # the run's rows, or the paper's (report/published.py: results-shaped, not the results model)
    tasks = max((int(r.get("tasks") or 0) for r in rows), default=0)
    if not repeats and tasks:
        repeats = round(max(int(r.get("candidates") or 0) for r in rows) / tasks)
    total = f"{tasks * repeats:,}" if repeats else "?"
    return f"{tasks} tasks, {repeats or '?'} images per task, {total} total images."


def _table(rows: Sequence[Row], cells: Callable[[Row], list[str]], repeats: int | None = None) -> str:
    header = "| Model | " + " | ".join(title for _, title, _ in columns(repeats)) + " |"
    rule = "| --- " * (len(COLUMNS) + 1) + "|"
    body = [f"| {_cell(model_name(r))} | " + " | ".join(cells(r)) + " |" for r in rows]
    return "\n".join([header, rule, *body])


def _beside_published(rows: list[ResultsRow]) -> Sequence[Mapping[str, Any]]:
    from .published import beside_published

    return beside_published(rows)


def _interval_cells(row: ResultsRow) -> list[str]:
    intervals = row.get("intervals") or {}
    cells = []
    for key, _, kind in COLUMNS:
        bounds = None if key == "effective_cost" and _paid_elsewhere(row) else intervals.get(key)
        cells.append(f"{format_metric(bounds[0], kind)} – {format_metric(bounds[1], kind)}" if bounds else "n/a")
    return cells


def _missing_intervals(rows: list[ResultsRow], repeats: int | None) -> list[str]:
    """Why each n/a of the intervals table has no interval: the row's own note (``interval_notes``), the price
    paid (a batch or Flex tier: the interval is at the price paid, the table at list price), else the file's silence."""
    found = []
    for row in rows:
        notes = found_notes if isinstance(found_notes := row.get("interval_notes"), Mapping) else {}
        for (key, title, _), cell in zip(columns(repeats), _interval_cells(row)):
            if cell != "n/a":
                continue
            if key == "effective_cost" and _paid_elsewhere(row):
                why = "the run paid another price than the list price (a batch or Flex tier); its interval is at the price paid"
            else:
                why = str(notes.get(key) or "the results file gives none")
            found.append(f"- {_cell(model_name(row))}, {title}: {_cell(why)}")
    return found


def _calibrated_section(rows: list[ResultsRow], repeats: int | None = None) -> list[str]:
    """The figures corrected with a human sample (--calibrate), each with its interval, and what to know."""
    calibrated = [r for r in rows if isinstance(r.get("calibration"), Mapping)]
    if not calibrated:
        return []
    levels = {(r["calibration"].get("level"), r["calibration"].get("target")) for r in calibrated}
    level = next(iter(levels))[0] if len(levels) == 1 and next(iter(levels))[0] else None
    title = (f"Calibrated with a human sample ({f'{100 * level:g}% intervals' if level else 'intervals'} for the "
             "population of tasks, judged by people; n/a: not calibrated, see below):")
    lines = ["", title, "", _table(calibrated, _calibrated_cells, repeats)]
    for row in calibrated:
        lines += [f"- {_cell(row.get('model'))}: {_cell(problem)}" for problem in row["calibration"].get("problems") or ()]
    return lines


def _calibrated_cells(row: ResultsRow) -> list[str]:
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


def _row_note(row: ResultsRow) -> str:
    problems = [f"{int(row[k])} {k}" for k in ("errors", "skipped") if isinstance(row.get(k), (int, float)) and row[k] > 0]
    if not problems:
        return ""
    return f"{_cell(row.get('model'))}: incomplete ({', '.join(problems)}); its figures cover judged candidates only."


def pairwise_lines(split: str, results: Results) -> list[str]:
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


def serving_section(results: Results) -> str:
    """Is a model served the same (results ``serving``, analysis/serving.py): its routes' pass rates compared, and
    one model's pass rate between two runs on the same tasks; "" when the results have neither."""
    from .serving_view import comparison_text, route_pairs

    serving = found if isinstance(found := results.get("serving"), Mapping) else {}
    routes = []
    for (split, a, b), entries in route_pairs(results).items():
        entry = next((e for e in entries if e.get("metric") == "pass_rate"), None)
        if entry is not None:
            routes.append(f"- {_cell(entry.get('model'))} via {_cell(entry.get('route_a'))} vs via "
                          f"{_cell(entry.get('route_b'))} ({_cell(a)} - {_cell(b)}, {_cell(split)}, "
                          f"{_cell(entry.get('tasks'))} tasks): pass rate {comparison_text(entry, 'points')}.")
    runs = [_runs_line(entry) for entry in serving.get("runs") or () if isinstance(entry, Mapping)]
    if not routes and not runs:
        return ""
    limits = given if isinstance(given := serving.get("limits"), Mapping) else {}
    kinds = (["routes"] if routes else []) + (["runs"] if runs else [])
    notes = [f"{kind.capitalize()}: {_cell(limits[kind])}." for kind in kinds if limits.get(kind)]
    return "\n".join(["## Serving (not a model's score)", "",
                      "Paired over the tasks both judged, sign-flip test, Holm-adjusted per split, 5%; a - b.", "",
                      *routes, *runs, "", *notes]) + "\n"


def _runs_line(entry: RunComparison) -> str:
    from .serving_view import comparison_text

    sentence = f" {_cell(entry['sentence'])}." if entry.get("significant") and entry.get("sentence") else ""
    judge = " The judge differs between the runs." if entry.get("judge_changed") else ""
    return (f"- {_cell(entry.get('model'))} ({_cell(entry.get('split'))}, {_cell(entry.get('tasks'))} tasks): "
            f"{_cell(entry.get('run_a'))} - {_cell(entry.get('run_b'))}: pass rate "
            f"{comparison_text(entry, 'points')}.{sentence}{judge}")
