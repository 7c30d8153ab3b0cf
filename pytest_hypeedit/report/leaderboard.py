"""A RESULTS.md-style leaderboard from one run, or merged from several runs' results JSON.

    python -m pytest_hypeedit.report.leaderboard runs/*.json -o RESULTS.md
    hypeedit-leaderboard runs/*.json --prefer last
    hypeedit-leaderboard reports/*/results.json --with-published -o RESULTS.md --index reports/index.html

One table per split plus ``combined``, sorted by pass rate, with the columns
of the upstream RESULTS.md.  Typical use: one CI job per model, each writing
its results JSON, and a final job merging them.  Two runs that both measured
the same model on the same split are not accepted unless ``--prefer`` says which
one wins: silently picking one would publish a number nobody chose.

The command line only: the files are read and merged by report/results_files.py and the Markdown is
written by report/leaderboard_markdown.py.  ``--with-published`` adds the
paper's published rows (report/published.py); ``--index`` writes an HTML page
of the same tables linking each model's report (report/index.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..errors import HypeEditError, InputError
from .leaderboard_markdown import results_markdown
from .results_files import load_results, merge_results
from .results_model import CombinedLeftOut, Results, ResultsRow
from .tables import COMBINED, SCHEMA, cell as _cell, row_repeats

if TYPE_CHECKING:
    from .published import Published


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
        help="when two files hold the same model and split, which one wins (default: an error, nothing merged)",
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
        stamp_repeats(runs)
        merged = merge_results(runs, _prefer_name(args.prefer), args.allow_mixed_settings) if runs else _no_run()
        drop_mixed_combined(merged)
        published = _published() if args.with_published else None
    except HypeEditError as exc:
        print(f"hypeedit-leaderboard: error: {exc}", file=sys.stderr)
        return 2
    _write_outputs(args, merged, [(path, results) for path, (_, results) in zip(args.results, runs)], published)
    return 0


def take_incomplete(runs: Sequence[tuple[str, Results]], allowed: bool) -> None:
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


def stamp_repeats(runs: Sequence[tuple[str, Results]]) -> None:
    """Give each row the images per task its run was measured on (a file written before rows carried ``repeats``
    says it in its settings), so that the merge keeps runs of 2 and 4 repeats apart: the settings of a merge are
    the first file's."""
    for _, results in runs:
        settings = results.get("settings")
        for row in results.get("rows") or []:
            if isinstance(row, dict) and row_repeats(row) is None:
                row["repeats"] = row_repeats({}, settings.get("repeats") if isinstance(settings, Mapping) else None)


def drop_mixed_combined(merged: Results) -> None:
    """A combined row pooled from split rows of different repeats is no figure of any number of images per task:
    it is left out, named in ``combined_left_out``.  A combined row pooled from rows of one number carries it."""
    rows = merged.get("rows") or []
    kept: list[ResultsRow] = []
    left_out: list[CombinedLeftOut] = []
    for row in rows:
        if row.get("split") != COMBINED or row_repeats(row) is not None:
            kept.append(row)
            continue
        found = {row_repeats(r) for r in rows if r.get("split") != COMBINED and r.get("model") == row.get("model")}
        if len(found) == 1:
            row["repeats"] = found.pop()
            kept.append(row)
        else:
            left_out.append({"model": row["model"], "reason": "its splits were measured on different numbers of "
                             f"images per task ({', '.join(str(k) for k in sorted(found, key=str))}): no pooled figure"})
    merged["rows"] = kept
    if left_out:
        merged["combined_left_out"] = left_out


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


def _write_outputs(args: argparse.Namespace, merged: Results, runs: list[tuple[Path, Results]],
                   published: Published | None) -> None:
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


def _no_run() -> Results:
    return {"schema": SCHEMA, "settings": {}, "runs": [], "rows": []}


def _published() -> Published:
    from .published import load_published

    return load_published()


def _prefer_name(prefer: str | None) -> str | None:
    # A file given as ./runs/a.json should match runs/a.json on the command line.
    if prefer in (None, "first", "last"):
        return prefer
    return str(Path(prefer))


if __name__ == "__main__":
    sys.exit(main())
