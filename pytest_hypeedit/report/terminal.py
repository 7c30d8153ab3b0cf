"""The terminal summary: a RESULTS.md-like table plus what was judged, refused, errored and spent.

With a human sample (``--calibrate``) a row shows its calibrated figures first, marked "calibrated", and the
judge's own on the line below, marked "judge"."""

from __future__ import annotations

from .tables import COLUMNS, COMBINED, format_metric

COUNT_COLUMNS = (("Judged", "judged"), ("Refused", "refusals"), ("Errors", "errors"), ("Skipped", "skipped"))


def summary_lines(results: dict) -> list[str]:
    rows = results["rows"]
    headers = ["Model", "Split"] + [title for _, title, _ in COLUMNS] + [h for h, _ in COUNT_COLUMNS] + ["Spent"]
    body = [_cells(row) for row in _ordered(rows)]
    if any(row.get("calibrated") for row in rows):
        headers.insert(2, "Figures")
        body = [line for row in _ordered(rows) for line in _calibrated_first(row)]
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *body)]
    lines = [_join(headers, widths), _join(["-" * w for w in widths], widths)]
    lines += [_join(cells, widths) for cells in body]
    lines.append(_totals(rows, results))
    lines += rejudged_lines(rows)
    lines += possibly_paid_lines(rows)
    lines += implausible_lines(rows)
    return lines


def implausible_lines(rows: list[dict]) -> list[str]:
    """Amounts in records on disk that were not believed (negative, not finite, absurd) and counted as 0."""
    count = sum(row.get("implausible_amounts") or 0 for row in rows if row["split"] != COMBINED)
    if not count:
        return []
    return [(f"warning: {count} amount{'s' if count != 1 else ''} in records on disk not believed (negative, not "
             "a finite number, or above $10,000 a call) and counted as $0 in spent: a record was edited or corrupted; "
             "its candidate's record names the amount")]


def possibly_paid_lines(rows: list[dict]) -> list[str]:
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


def rejudged_lines(rows: list[dict]) -> list[str]:
    """One line per reason why stored verdicts were judged again, e.g. given under another prompt."""
    reasons: dict[str, int] = {}
    for row in rows:
        if row["split"] != COMBINED:
            for reason, count in (row.get("rejudged_stale_reasons") or {}).items():
                reasons[reason] = reasons.get(reason, 0) + count
    return [f"{count} verdict{'s' if count != 1 else ''} judged again: {reason}" for reason, count in reasons.items()]


def _ordered(rows: list[dict]) -> list[dict]:
    # per split by pass rate, as upstream; combined rows last
    return sorted(rows, key=lambda r: (r["split"] == COMBINED, r["split"], -(r["pass_rate"] or 0), r["model"]))


def _cells(row: dict) -> list[str]:
    metrics = [format_metric(row.get(key), kind) for key, _, kind in COLUMNS]
    counts = [f"{row[key]}/{row['candidates']}" if key == "judged" else str(row[key]) for _, key in COUNT_COLUMNS]
    return [row["model"], row["split"], *metrics, *counts, f"${row['spent']:.2f}"]


def _calibrated_first(row: dict) -> list[list[str]]:
    """A calibrated row's corrected figures first, marked "calibrated", then the judge's own on a line of
    their own marked "judge"; a row without a human sample shows its judge figures, marked so."""
    judge = _cells(row)
    judge.insert(2, "judge")
    calibrated = row.get("calibrated")
    if not calibrated:
        return [judge]
    first = _cells({**row, **{key: (calibrated.get(key) or {}).get("value") for key, _, _ in COLUMNS}})
    first.insert(2, "calibrated")
    metrics_end = 3 + len(COLUMNS)
    return [first, ["", "", "judge", *judge[3:metrics_end]] + [""] * (len(judge) - metrics_end)]


def _join(cells: list[str], widths: list[int]) -> str:
    return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()


def _totals(rows: list[dict], results: dict) -> str:
    own = [r for r in rows if r["split"] != COMBINED]
    spent = sum(r["spent"] for r in own)
    this_run = sum(r["spent_this_run"] for r in own)
    status = "complete" if results["complete"] else "INCOMPLETE (errors or skipped candidates; rerun to finish)"
    if not results["complete"] and results.get("coverage"):
        status = "INCOMPLETE (why: the last line)"
    resubmitted = sum(r.get("resubmitted", 0) for r in own)
    again = f", resubmitted {resubmitted} (their jobs had expired)" if resubmitted else ""
    return (
        f"candidates: {sum(r['candidates'] for r in own)}, judged {sum(r['judged'] for r in own)}, "
        f"refused {sum(r['refusals'] for r in own)}, errors {sum(r['errors'] for r in own)}, "
        f"skipped {sum(r['skipped'] for r in own)}{again}; spent ${spent:.2f} (${this_run:.2f} in this run"
        f"{_spent_parts(own)}); run {status}"
    )


def _spent_parts(rows: list[dict]) -> str:
    """What the spend was for, when a verdict, a resubmitted job or a possibly paid call cost something:
    "; generation $x, judge $y" (the parts that cost nothing left out)."""
    totals: dict[str, float] = {}
    for row in rows:
        for name, value in (row.get("spent_breakdown") or {}).items():
            totals[name] = totals.get(name, 0.0) + value
    if not any(value for name, value in totals.items() if name != "generation"):
        return ""
    shown = {name: value for name, value in totals.items() if value or name == "generation"}
    return "; " + ", ".join(f"{name.replace('_', ' ')} ${value:.2f}" for name, value in shown.items())
