"""The terminal summary: the results table, what was judged, refused, errored and spent, in 100 columns.

Two tables: the metrics (the answer; upstream's long titles abbreviated, a legend under them) and, per row, the
candidates' counts and the money.  With a human sample (``--calibrate``) a row shows its calibrated figures
first, marked "calibrated", and the judge's own on the line below, marked "judge".  A name too long for the
table is shortened in the middle (the results JSON keeps it whole); a prose line longer than the width is
folded at its spaces, never left for the terminal to wrap.  Pure: no I/O."""

from __future__ import annotations

import textwrap
from typing import Literal, Mapping

from ..finite import format_metric
from .results_model import Results, ResultsRow
from .spend_tiers import spend_by_tier_text, tiered
from .tables import COLUMNS, COMBINED, columns, repeats_note

#: The terminal's width the summary keeps to (a CI log, a laptop's split screen).
WIDTH = 100
#: The metric columns' titles in the terminal: upstream's (tables.COLUMNS, the Markdown and HTML tables'), with
#: the two long ones abbreviated; the legend under the table spells them out.
SHORT_TITLES = {"expected_attempts": "Attempts", "effective_cost": "$/success"}
COUNT_COLUMNS: tuple[tuple[str, Literal["judged", "refusals", "errors", "skipped"]], ...] = (
    ("Judged", "judged"), ("Refused", "refusals"), ("Errors", "errors"), ("Skipped", "skipped"))
#: The narrowest a shortened model or split name gets.
MIN_NAME = 8


def title(results: Results) -> str:
    """The table's title, naming the judge whose verdicts the figures count."""
    judge = (results.get("settings") or {}).get("judge")
    return f"HYPE-EDIT-1 results (judge: {judge})" if judge else "HYPE-EDIT-1 results"


def summary_lines(results: Results) -> list[str]:
    rows = _ordered(results["rows"])
    calibrated = any(row.get("calibrated") for row in rows)
    repeats = (results.get("settings") or {}).get("repeats")
    lines = metrics_table(rows, calibrated, repeats) + fold(legend(results))
    lines += fold(repeats_note(repeats) + ".") if repeats_note(repeats) else []
    lines += [""] + counts_table(rows)
    lines += totals_lines(rows, results)
    for line in tier_lines(rows) + rejudged_lines(rows) + possibly_paid_lines(rows) + implausible_lines(rows):
        lines += fold(line)
    return lines


def metrics_table(rows: list[ResultsRow], calibrated: bool, repeats: int | None = None) -> list[str]:
    """The metrics, ``pass_at_10`` and ``hype_gap`` titled for what they measure at ``repeats`` (Pass@k)."""
    headers = ["Model", "Split"] + [SHORT_TITLES.get(key, title) for key, title, _ in columns(repeats)]
    body = [[row["model"], row["split"], *_metrics(row)] for row in rows]
    if calibrated:
        headers.insert(2, "Figures")
        body = [line for row in rows for line in _calibrated_first(row)]
    return table(headers, body)


def counts_table(rows: list[ResultsRow]) -> list[str]:
    headers = ["Model", "Split"] + [h for h, _ in COUNT_COLUMNS] + ["Spent"]
    return table(headers, [[row["model"], row["split"], *_counts(row)] for row in rows])


def legend(results: Results) -> str:
    cap = (results.get("settings") or {}).get("retry_cap")
    within = f" within {cap} tries" if cap else ""
    paid = " at the price paid (the tiers below)" if any(tiered(row) for row in results["rows"]) else ""
    return f"Attempts: expected attempts{within}; $/success: effective cost per success{paid}, review included"


def tier_lines(rows: list[ResultsRow]) -> list[str]:
    """Spend by tier, when some was not at standard: "spend by tier: generation standard $x, batch $y; judge flex
    $z", then each model's effective cost at list price (results.json: effective_cost_list) to compare runs; and
    how many tiers read from records on disk were not believed."""
    own = [r for r in rows if r["split"] != COMBINED]
    unknown = sum(row.get("unknown_tiers") or 0 for row in own)
    lines = [f"warning: {unknown} tier{'s' if unknown != 1 else ''} in records on disk not believed (not a tier "
             "name we know): counted as unknown, their candidates priced at list price"] if unknown else []
    if not any(tiered(row) for row in own):
        return lines
    at_list = ", ".join(f"{row['model']} ({row['split']}) {format_metric(row.get('effective_cost_list'), 'dollars')}"
                        for row in rows if tiered(row))
    return [f"spend by tier: {spend_by_tier_text(own)}",
            f"$/success at list price (to compare with runs at other tiers): {at_list}", *lines]


def table(headers: list[str], body: list[list[str]]) -> list[str]:
    """Aligned columns within WIDTH: the first two (model, split) give up what the others need."""
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *body)]
    over = sum(widths) + 2 * (len(widths) - 1) - WIDTH
    for index in (0, 1):
        if over > 0:
            cut = min(over, max(0, widths[index] - max(MIN_NAME, len(headers[index]))))
            widths[index] -= cut
            over -= cut
    body = [[shorten(str(c), widths[i]) if i < 2 else c for i, c in enumerate(cells)] for cells in body]
    lines = [_join(headers, widths), _join(["-" * w for w in widths], widths)]
    return lines + [_join(cells, widths) for cells in body]


def shorten(text: str, width: int) -> str:
    """``text`` in ``width`` characters, a part of its middle elided ("~"): its start and its end stay, which
    tell a family's variants apart more often than the start alone; the results JSON has the name whole."""
    if len(text) <= width:
        return text
    tail = max(1, (width - 1) // 3)
    return text[:width - 1 - tail] + "~" + text[len(text) - tail:]


def fold(text: str, width: int = WIDTH, indent: str = "  ") -> list[str]:
    """A prose line within ``width``, folded at its spaces, the rest indented (a word longer than the width, a
    path someone copies, is kept whole)."""
    if len(text) <= width:
        return [text]
    return textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


def fold_cells(head: str, cells: list[str], width: int = WIDTH, indent: str = "  ") -> list[str]:
    """``head`` and "; "-separated cells within ``width``, never a cell split across lines."""
    lines, current = [], head
    for i, cell in enumerate(cells):
        piece = cell + (";" if i < len(cells) - 1 else "")
        if current.strip() and len(current) + 1 + len(piece) > width:
            lines.append(current.rstrip())
            current = indent + piece
        else:
            current = f"{current} {piece}" if current.strip() else current + piece
    return lines + [current.rstrip()]


def implausible_lines(rows: list[ResultsRow]) -> list[str]:
    """Amounts in records on disk that were not believed (negative, not finite, absurd) and counted as 0."""
    count = sum(row.get("implausible_amounts") or 0 for row in rows if row["split"] != COMBINED)
    if not count:
        return []
    return [(f"warning: {count} amount{'s' if count != 1 else ''} in records on disk not believed (negative, not "
             "a finite number, or above $10,000 a call) and counted as $0 in spent: a record was edited or corrupted; "
             "its candidate's record names the amount")]


def possibly_paid_lines(rows: list[ResultsRow]) -> list[str]:
    """One line per model with candidates possibly paid twice: a paid call of theirs was abandoned without its
    reply (a kill, a second Ctrl-C, a lost connection), so the provider may have billed it."""
    lines = []
    for row in rows:
        count = row.get("possibly_paid") or 0
        if row["split"] == COMBINED or not count:
            continue
        held, waiting = row.get("possibly_paid_held") or 0, row.get("possibly_paid_open") or 0
        fates = [f"{count - held - waiting} bought again", f"{waiting} to be bought again by the next run",
                 f"{held} held as errors for review (--possibly-paid review)"]
        lines.append(f"possibly paid: {row['model']} ({row['split']}): {count} candidate{'s' if count != 1 else ''}"
                     f" whose paid call was abandoned without its reply (up to ${row.get('possibly_paid_cost', 0):.2f}"
                     f", included in spent): " + ", ".join(f for f in fates if not f.startswith("0 ")))
    return lines


def rejudged_lines(rows: list[ResultsRow]) -> list[str]:
    """One line per reason why stored verdicts were judged again, e.g. given under another prompt."""
    reasons: dict[str, int] = {}
    for row in rows:
        if row["split"] != COMBINED:
            for reason, count in (row.get("rejudged_stale_reasons") or {}).items():
                reasons[reason] = reasons.get(reason, 0) + count
    return [f"{count} verdict{'s' if count != 1 else ''} judged again: {reason}" for reason, count in reasons.items()]


def _ordered(rows: list[ResultsRow]) -> list[ResultsRow]:
    # per split by pass rate, as upstream; combined rows last
    return sorted(rows, key=lambda r: (r["split"] == COMBINED, r["split"], -(r["pass_rate"] or 0), r["model"]))


def _metrics(row: Mapping[str, object]) -> list[str]:
    return [format_metric(row.get(key), kind) for key, _, kind in COLUMNS]


def _counts(row: ResultsRow) -> list[str]:
    counts = [f"{row[key]}/{row['candidates']}" if key == "judged" else str(row[key]) for _, key in COUNT_COLUMNS]
    return [*counts, f"${row['spent']:.2f}"]


def _calibrated_first(row: ResultsRow) -> list[list[str]]:
    """A calibrated row's corrected figures first, marked "calibrated", then the judge's own on a line of
    their own marked "judge"; a row without a human sample shows its judge figures, marked so."""
    judge = [row["model"], row["split"], "judge", *_metrics(row)]
    calibrated = row.get("calibrated")
    if not calibrated:
        return [judge]
    values = {key: (calibrated.get(key) or {}).get("value") for key, _, _ in COLUMNS}
    first = [row["model"], row["split"], "calibrated", *_metrics({**row, **values})]
    return [first, ["", "", *judge[2:]]]


def _join(cells: list[str], widths: list[int]) -> str:
    return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()


def totals_lines(rows: list[ResultsRow], results: Results) -> list[str]:
    """The run's counts and spend (folded to the width), then its status on a line of its own."""
    return fold(_totals(rows)) + [_status(results)]


def _totals(rows: list[ResultsRow]) -> str:
    own = [r for r in rows if r["split"] != COMBINED]
    spent = sum(r["spent"] for r in own)
    this_run = sum(r["spent_this_run"] for r in own)
    resubmitted = sum(r.get("resubmitted", 0) for r in own)
    # a job whose result expired, or a batch line its batch did not run (never made, expired, cancelled, failed)
    again = f", resubmitted {resubmitted} (expired, or not run by their batch)" if resubmitted else ""
    return (
        f"candidates: {sum(r['candidates'] for r in own)}, judged {sum(r['judged'] for r in own)}, "
        f"refused {sum(r['refusals'] for r in own)}, errors {sum(r['errors'] for r in own)}, "
        f"skipped {sum(r['skipped'] for r in own)}{again}; spent ${spent:.2f} (${this_run:.2f} in this run"
        f"{_spent_parts(own)})"
    )


def _status(results: Results) -> str:
    if results["complete"]:
        return "run complete"
    if results.get("coverage"):  # the run's last line says why, with counts (glue/session.py)
        return "run INCOMPLETE (why: the last line)"
    return "run INCOMPLETE (errors or skipped candidates; rerun to finish)"


def _spent_parts(rows: list[ResultsRow]) -> str:
    """What the spend was for, when a verdict, a resubmitted job or a possibly paid call cost something:
    "; generation $x, judge $y" (the parts that cost nothing left out)."""
    totals: dict[str, float] = {}
    for row in rows:
        for name, value in (row.get("spent_breakdown") or {}).items():
            totals[name] = totals.get(name, 0.0) + (value if isinstance(value, (int, float)) else 0.0)
    if not any(value for name, value in totals.items() if name != "generation"):
        return ""
    shown = {name: value for name, value in totals.items() if value or name == "generation"}
    return "; " + ", ".join(f"{name.replace('_', ' ')} ${value:.2f}" for name, value in shown.items())


#: Pairs a note lists before it says how many more there are (results.json has them all).
MAX_PAIRS_SHOWN = 12


def pairwise_lines(results: Results, metric: str = "pass_rate") -> list[str]:
    """Per split with two or more models, the pairs not shown different on ``metric`` (Holm-adjusted, 5%), or
    that every pair differs: a few folded lines (analysis/pairwise.py; every metric is in results.json)."""
    entries = [e for e in results.get("pairwise") or () if isinstance(e, dict) and e.get("metric") == metric]
    lines = []
    for split in dict.fromkeys(str(e.get("split")) for e in entries):
        mine = [e for e in entries if str(e.get("split")) == split]
        same = [f"{e['a']} ~ {e['b']}" for e in mine if not e.get("significant")]
        if not same:
            lines += fold(f"every pair differs on {metric} ({split}): Holm-adjusted paired test over tasks, 5%")
            continue
        if len(same) > MAX_PAIRS_SHOWN:
            same = same[:MAX_PAIRS_SHOWN] + [f"and {len(same) - MAX_PAIRS_SHOWN} more (results.json: pairwise)"]
        lines += fold_cells(f"indistinguishable on {metric} ({split}):", same)
    if lines:
        lines.append("  (~: not shown different at 5%, Holm-corrected over the pairs x metrics of the split; not proven equal)")
    return lines
