"""A RESULTS.md-style leaderboard from one run, or merged from several runs' results JSON.

    python -m pytest_hypeedit.report.leaderboard runs/*.json -o RESULTS.md
    hypeedit-leaderboard runs/*.json --prefer last
    hypeedit-leaderboard reports/*/results.json --with-published -o RESULTS.md --index reports/index.html

One table per split plus ``combined``, sorted by pass rate, with the columns
of the upstream RESULTS.md.  Typical use: one CI job per model, each writing
its results JSON, and a final job merging them.  Two runs that both measured
the same model on the same split are refused unless ``--prefer`` says which
one wins: silently picking one would publish a number nobody chose.

``results_markdown(results)`` is pure (dict in, str out); the session calls it
to write the Markdown beside results.json.  ``--with-published`` adds the
paper's published rows (report/published.py); ``--index`` writes an HTML page
of the same tables linking each model's report (report/index.py).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence, TypeGuard

from ..errors import ConfigError, HypeEditError, InputError
from .tables import COLUMNS, COMBINED, SCHEMA, by_pass_rate, cell as _cell, format_metric, section_order

if TYPE_CHECKING:
    from .published import Published

#: Metrics that are means over tasks, so a pooled split is their task-weighted mean.
TASK_MEANS = ("pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "first_attempt_pass_rate")
COUNTS = ("tasks", "candidates", "judged", "errors", "refusals", "spent")
SETTINGS_THAT_CHANGE_NUMBERS = ("retry_cap", "review_cost")


# --------------------------------------------------------------------------- Markdown


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
        lines += ["", "95% bootstrap intervals over tasks:", "", _table(rows, _interval_cells)]
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


def merged_pairwise(rows: Sequence[Mapping[str, Any]], settings: Mapping[str, Any]) -> dict[str, Any]:
    """``pairwise`` for merged rows carrying ``task_tallies``, and ``pairwise_skipped``: the rows of a split of
    several models that carry none (an older version's results), left out and said so."""
    by_split: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_split.setdefault(str(row.get("split")), []).append(row)
    several = [row for split_rows in by_split.values() if len(split_rows) > 1 for row in split_rows]
    skipped = [{"split": r.get("split"), "model": r.get("model"),
                "reason": "no per-task tallies (results written by an older version), so not in the pairwise "
                          "comparison; rerun it to compare"} for r in several if not r.get("task_tallies")]
    compared = _pairwise_of(settings, [r for r in several if r.get("task_tallies")])
    found: dict[str, Any] = {"pairwise": compared} if compared is not None else {}
    return found | ({"pairwise_skipped": skipped} if skipped else {})


def _pairwise_of(settings: Mapping[str, Any], rows: list[Mapping[str, Any]]) -> list[dict] | None:
    from ..analysis.enrich import AnalysisSettings, pairwise_of_rows
    from ..analysis.metrics import DEFAULT_RETRY_CAP, MetricSettings
    from ..analysis.pairwise import PAIRWISE_METRICS

    review: Any = settings.get("review_cost")
    cap: Any = settings.get("retry_cap", DEFAULT_RETRY_CAP)
    metrics = PAIRWISE_METRICS if _number(review) else tuple(m for m in PAIRWISE_METRICS if m != "effective_cost")
    try:
        metric_settings = MetricSettings(cap, float(review)) if _number(review) else MetricSettings(cap)
        return pairwise_of_rows(rows, AnalysisSettings(metric_settings), metrics)
    except (ValueError, TypeError, KeyError) as exc:  # a malformed tally or setting in a file from outside
        raise InputError(f"the per-task tallies or settings of the results files cannot be compared ({exc}); "
                         "check that each file is a results JSON written by pytest-hypeedit") from None


# --------------------------------------------------------------------------- merging


def load_results(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read results file ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc}); expected the results JSON of a benchmark run "
                         "(pytest --model MODEL writes hypeedit-outputs/results.json)") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("rows"), list):
        raise InputError(f"{path}: not a results file (expected schema {SCHEMA!r} with a 'rows' list)")
    return data


def merge_results(runs: Sequence[tuple[str, Mapping[str, Any]]], prefer: str | None = None, allow_mixed_settings: bool = False) -> dict[str, Any]:
    """Merge several runs' results into one results dict.

    ``prefer``: None (a duplicate model x split is an error), "first", "last",
    or the name of the run whose rows win.  Combined rows are rebuilt from the
    chosen split rows when they come from more than one run.
    """
    if not runs:
        raise ConfigError("hypeedit-leaderboard: no results files given")
    settings = _merged_settings(runs, allow_mixed_settings)
    chosen = _choose_split_rows(runs, prefer)
    rows = [row for row, _ in chosen.values()]
    rows += _combined_rows(chosen, runs, settings)
    merged = {"schema": SCHEMA, "settings": settings, "runs": [name for name, _ in runs], "rows": rows}
    merged.update(merged_pairwise(rows, settings))
    stamps = [str(r["generated_at"]) for _, r in runs if r.get("generated_at")]
    if stamps:
        merged["generated_at"] = max(stamps)
    return merged


def _merged_settings(runs, allow_mixed: bool) -> dict[str, Any]:
    settings = dict(runs[0][1].get("settings") or {})
    for name, results in runs[1:]:
        other = results.get("settings") or {}
        for key in SETTINGS_THAT_CHANGE_NUMBERS:
            if other.get(key) != settings.get(key) and not allow_mixed:
                raise ConfigError(
                    f"{name}: {key} = {other.get(key)!r} but {runs[0][0]} has {settings.get(key)!r}; "
                    "their effective costs are not comparable. Rerun with the same settings, "
                    "or pass --allow-mixed-settings"
                )
        if other.get("judge") != settings.get("judge"):
            settings["judge"] = " / ".join(dict.fromkeys(filter(None, [settings.get("judge"), other.get("judge")])))
        if other.get("outputs") != settings.get("outputs"):
            settings.pop("outputs", None)  # runs in several folders: a merged file has no one place for its images
    if allow_mixed and any((r.get("settings") or {}).get("review_cost") != settings.get("review_cost") for _, r in runs):
        settings.pop("review_cost", None)
    return settings


def _choose_split_rows(runs, prefer: str | None) -> dict[tuple[str, str], tuple[dict, str]]:
    names = [name for name, _ in runs]
    if prefer not in (None, "first", "last") and prefer not in names:
        raise ConfigError(f"--prefer {prefer!r}: expected first, last, or one of the files given ({', '.join(names)})")
    chosen: dict[tuple[str, str], tuple[dict, str]] = {}
    for name, results in runs:
        for row in results.get("rows") or []:
            if row.get("split") == COMBINED:
                continue
            key = (str(row.get("model")), str(row.get("split")))
            if key in chosen and not _replaces(name, chosen[key][1], prefer, key):
                continue
            chosen[key] = (dict(row), name)
    return chosen


def _replaces(new: str, old: str, prefer: str | None, key: tuple[str, str]) -> bool:
    if prefer is None:
        raise ConfigError(
            f"{old} and {new} both hold model {key[0]!r} on split {key[1]!r}; say which one wins with "
            f"--prefer first, --prefer last or --prefer {new}"
        )
    if prefer in ("first", "last"):
        return prefer == "last"
    return new == prefer


def _combined_rows(chosen, runs, settings) -> list[dict[str, Any]]:
    """A combined row per model with two or more splits: kept from its run if all splits came from it."""
    by_model: dict[str, list[tuple[dict, str]]] = {}
    for (model, _split), entry in chosen.items():
        by_model.setdefault(model, []).append(entry)
    combined = []
    for model, entries in by_model.items():
        sources = {name for _, name in entries}
        if len(entries) < 2:
            continue
        original = _original_combined(model, sources, runs) if len(sources) == 1 else None
        combined.append(original or pooled_row(model, [row for row, _ in entries], settings.get("review_cost")))
    return combined


def _original_combined(model: str, sources: set[str], runs) -> dict[str, Any] | None:
    for name, results in runs:
        if name in sources:
            for row in results.get("rows") or []:
                if row.get("split") == COMBINED and row.get("model") == model:
                    return dict(row)
    return None


def pooled_row(model: str, rows: Sequence[Mapping[str, Any]], review_cost: float | None) -> dict[str, Any]:
    """The combined row of one model from its split rows.

    Every metric but effective cost and hype gap is a mean over tasks, so the
    pooled value is the task-weighted mean; effective cost is then recomputed
    from the pooled E and P@4 (a ratio of means, as in the design).  Intervals
    cannot be pooled without per-task data and are left out.
    """
    tasks = sum(int(r.get("tasks") or 0) for r in rows)
    pooled: dict[str, Any] = {"model": model, "split": COMBINED}
    for key in COUNTS:
        pooled[key] = sum(r.get(key) or 0 for r in rows)
    for key in TASK_MEANS:
        values: list[tuple[Any, int]] = [(r.get(key), int(r.get("tasks") or 0)) for r in rows]
        pooled[key] = sum(v * t for v, t in values) / tasks if tasks and all(_number(v) for v, _ in values) else None
    if _number(pooled["pass_at_10"]) and _number(pooled["first_attempt_pass_rate"]):
        pooled["hype_gap"] = pooled["pass_at_10"] - pooled["first_attempt_pass_rate"]
    if any(r.get("incomplete") or r.get("complete") is False for r in rows):
        pooled["incomplete"] = True
    pooled["cost_per_candidate"] = rows[0].get("cost_per_candidate")
    if all(r.get("task_tallies") for r in rows):  # as a run's own combined row keys them: split/task
        pooled["task_tallies"] = [{**t, "task_id": f"{r.get('split')}/{t.get('task_id')}"}
                                  for r in rows for t in r["task_tallies"]]
    pooled["effective_cost"] = _effective_cost(pooled, review_cost)
    return pooled


def _effective_cost(row: Mapping[str, Any], review_cost: float | None) -> float | None:
    attempts, pass_at_4, price = row.get("expected_attempts"), row.get("pass_at_4"), row.get("cost_per_candidate")
    if not (_number(attempts) and _number(pass_at_4) and _number(price) and _number(review_cost)) or pass_at_4 <= 0:
        return None
    return attempts * (price + review_cost) / pass_at_4


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# --------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hypeedit-leaderboard",
        description="Write a RESULTS.md-style leaderboard from one or more pytest-hypeedit results JSON files.",
    )
    parser.add_argument("results", nargs="*", type=Path, help="results JSON files (e.g. runs/*.json)")
    parser.add_argument("-o", "--output", type=Path, help="write the Markdown here instead of standard output")
    parser.add_argument("--json", type=Path, dest="json_out", help="also write the merged results JSON here")
    parser.add_argument(
        "--prefer", metavar="first|last|FILE",
        help="when two files hold the same model and split, which one wins (default: refuse to merge)",
    )
    parser.add_argument("--allow-mixed-settings", action="store_true", help="merge runs with different retry caps or review costs")
    parser.add_argument(
        "--allow-incomplete", action="store_true",
        help="take results files of incomplete runs (stopped early, a -k/--lf subset, errors, skipped items); "
             "their rows are marked (incomplete) in the Markdown and \"incomplete\": true in the JSON",
    )
    parser.add_argument(
        "--with-published", action="store_true",
        help="show the paper's published figures (public, private, combined) beside the runs' rows, marked "
             "(published); with no results file, the published table alone",
    )
    parser.add_argument(
        "--index", type=Path, metavar="HTML",
        help="also write an HTML page of the tables, each model linked to the HTML report(s) in the folder of "
             "its results file (one CI job per model: one report per folder)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.results and not args.with_published:
        parser.error("give one or more results JSON files (or --with-published for the paper's table alone)")
    try:
        runs = [(str(path), load_results(path)) for path in args.results]
        take_incomplete(runs, args.allow_incomplete)
        merged = merge_results(runs, _prefer_name(args.prefer), args.allow_mixed_settings) if runs else _no_run()
        published = _published() if args.with_published else None
    except HypeEditError as exc:
        print(f"hypeedit-leaderboard: error: {exc}", file=sys.stderr)
        return 2
    _write_outputs(args, merged, [(path, results) for path, (_, results) in zip(args.results, runs)], published)
    return 0


def take_incomplete(runs: Sequence[tuple[str, dict[str, Any]]], allowed: bool) -> None:
    """Refuse a results file of an incomplete run (its figures cover part of what was asked), unless ``allowed``:
    then mark each of its rows ``incomplete``, which the tables show."""
    for name, results in runs:
        why = incomplete_why(results)
        if not why:
            continue
        if not allowed:
            raise InputError(f"{name}: the results of an incomplete run ({why}); its figures cover part of what "
                             "was asked. Finish the run (the same command reuses what is on disk), or pass "
                             "--allow-incomplete to take it anyway, its rows marked (incomplete)")
        for row in results.get("rows") or []:
            if isinstance(row, dict):
                row["incomplete"] = True


def incomplete_why(results: Mapping[str, Any]) -> str:
    """Why a results file is not a complete run ("" when it is): its coverage's reasons, else its rows'."""
    coverage = results.get("coverage")
    listed = (coverage.get("reasons") if isinstance(coverage, Mapping) else None) or ()
    reasons = [str(r.get("detail")) for r in listed if isinstance(r, Mapping)]
    rows = [r for r in results.get("rows") or () if isinstance(r, Mapping)]
    reasons += [f"{_cell(r.get('model'))} ({_cell(r.get('split'))}) not complete" for r in rows
                if r.get("complete") is False and not reasons]
    if not reasons and results.get("complete") is False:
        reasons = ["marked not complete"]
    return "; ".join(reasons)


def _write_outputs(args: argparse.Namespace, merged: dict[str, Any], runs: list[tuple[Path, dict]], published) -> None:
    markdown = results_markdown(merged, published)
    if args.json_out:
        args.json_out.write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
    if args.index:
        from .index import write_index

        write_index(args.index, merged, runs, published)
    if args.output:
        args.output.write_text(markdown, encoding="utf-8")
    else:
        sys.stdout.write(markdown)


def _no_run() -> dict[str, Any]:
    return {"schema": SCHEMA, "settings": {}, "runs": [], "rows": []}


def _published():
    from .published import load_published

    return load_published()


def _prefer_name(prefer: str | None) -> str | None:
    # A file given as ./runs/a.json should match runs/a.json on the command line.
    if prefer in (None, "first", "last"):
        return prefer
    return str(Path(prefer))


if __name__ == "__main__":
    sys.exit(main())
