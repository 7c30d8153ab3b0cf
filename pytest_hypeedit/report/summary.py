"""The top of the HTML report: the answer first.  Pure: results rows and gate lines in, HTML out.

In order: the gates (a failed gate highlighted), then per split the metrics table with its
intervals (calibrated figures first and marked, when the run has a human sample), the
charts, the judge's error and stability and the pixel signals when the run measured them,
the comparison with the baseline and the tasks that got worse, the task types and the
sensitivity grid (those two folded).  Every key beyond today's is shown only when present
(CONTRACTS.md: ``calibrated``, ``judge_error``, ``judge_stability``, ``signals_summary``,
``possibly_paid``, ``baseline_tasks``).

Every string from a run (model, split and task names, gate lines) goes through ``html.escape``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence
from urllib.parse import quote

from ..finite import format_metric
from .charts import chart_metrics, metric_charts_svg, rows_repeats
from .model_groups import groups_html
from .release_text import release_lines, same_release_lines
from .spend_tiers import paid_price_note, spend_by_tier_text, tiers_text
from .tables import (
    repeats_note,
    row_repeats,
    split_order,
)

if TYPE_CHECKING:
    from .results_model import (
        BaselineTask,
        CalibratedFigure,
        Figure,
        PairwiseEntry,
        Results,
        ResultsRow,
        RunSettings,
        SignalsSummary,
        SplitFile,
    )

#: How many tasks that got worse are listed per model before the rest fold away.
WORSE_SHOWN = 10


def _text(value: object) -> str:
    return escape("" if value is None else str(value))


def summary_html(results: Results | None, gate_lines: Sequence[str], span: "RunSpan | None" = None,
                 notes: Sequence[str] = ()) -> str:
    """The summary block; "" parts are left out.  ``span``: when the records shown were made (``run_span``);
    ``notes``: lines the report has to say once (a baseline whose images were not found)."""
    if not results or not results.get("rows"):
        return '<section class="hx-summary"><h2>HYPE-EDIT-1</h2><p>No candidate was judged.</p></section>'
    rows = [r for r in results["rows"] if isinstance(r, Mapping)]
    parts = ['<section class="hx-summary" id="hx-summary"><h2>HYPE-EDIT-1 results</h2>',
             run_facts_html(results.get("settings"), span, rows),
             "".join(f'<div class="hx-warning"><p>{_text(note)}</p></div>' for note in notes),
             possibly_paid_html(rows), gates_html(gate_lines)]
    for split in split_order(rows):
        parts.append(split_html(split, [r for r in rows if str(r.get("split")) == split], results.get("pairwise")))
    from .control_cards import judge_controls_html

    parts.append(judge_controls_html(results))  # --judge-controls: the controls the judge passed
    from .serving_view import serving_html

    parts.append(serving_html(results))  # routes of one model compared, PASS by third of time and latency
    parts.append("</section>")
    return "".join(parts)


def split_html(split: str, rows: list[ResultsRow], pairwise: Iterable[PairwiseEntry] | None = ()) -> str:
    ordered = sorted(rows, key=lambda r: -_number(r.get("pass_rate")))
    return "".join([
        f'<h3>Split: {_text(split)}</h3>',
        metrics_table(ordered),
        groups_html(split, ordered, pairwise),  # which models cannot be told apart (report/model_groups.py)
        f'<div class="hx-chart">{metric_charts_svg(_chart_rows(ordered), title=_chart_title(split, ordered))}</div>',
        judge_table(ordered),
        signals_table(ordered),
        baseline_table(ordered),
        worse_tasks_html(split, ordered),
        _folded("Metrics by task type", task_type_table(ordered)),
        _folded("Sensitivity of the effective cost", sensitivity_table(ordered)),
    ])


def _number(value: Figure) -> float:
    return float(value) if isinstance(value, (int, float)) else -1.0


def _folded(title: str, body: str) -> str:
    return f"<details><summary>{_text(title)}</summary>{body}</details>" if body else ""


def _table(head: str, lines: list[str]) -> str:
    return _scroll(f"<table><thead>{head}</thead><tbody>{''.join(lines)}</tbody></table>")


def _scroll(table: str) -> str:
    """A wide table scrolls inside its box: the page itself never scrolls sideways."""
    return f'<div class="hx-scroll">{table}</div>'


# --------------------------------------------------------------------------- what ran

#: The price tier a run's figures are at, when its settings do not name one (the providers' standard prices).
DEFAULT_TIER = "standard"


class RunSpan:
    """When the records shown were made: from the earliest generation to the latest verdict, reruns included
    (a record a rerun reused keeps the time it was first made)."""

    def __init__(self, first: datetime, last: datetime, records: int):
        self.first, self.last, self.records = first, last, records

    @property
    def seconds(self) -> float:
        return (self.last - self.first).total_seconds()


def run_span(stamps: Iterable[object]) -> RunSpan | None:
    """The span of the records' timestamps (``generated_at``, ``judged_at``; untrusted text: what does not
    parse as an ISO time with a zone is left out); None when none does."""
    times = []
    for stamp in stamps:
        try:
            moment = datetime.fromisoformat(str(stamp))
        except (TypeError, ValueError):
            continue
        if moment.tzinfo is not None:
            times.append(moment.astimezone(timezone.utc))
    return RunSpan(min(times), max(times), len(times)) if times else None


def duration_text(seconds: float) -> str:
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours} h {rest // 60:02d} min {rest % 60:02d} s" if hours else f"{rest // 60} min {rest % 60:02d} s"


def run_facts_html(settings: RunSettings | None, span: RunSpan | None, rows: Sequence[ResultsRow] = ()) -> str:
    """What ran: the judge, repeats, task files, the retry cap, the review time and rate, the price tiers used, and
    how long the records shown took to make."""
    settings = settings if isinstance(settings, Mapping) else {}
    facts = [("Release", "; ".join(release_lines(rows) + same_release_lines(rows))), ("Judge", settings.get("judge")),
             ("Repeats", settings.get("repeats")),
             ("Task files", _task_files(settings.get("splits"))), ("Retry cap", settings.get("retry_cap")),
             ("Review", _review_text(settings)), ("Price tier", tiers_text(rows, settings.get("tier") or DEFAULT_TIER)),
             ("Spend by tier", spend_by_tier_text(rows)), ("Duration", _span_text(span))]
    items = "".join(f"<dt>{_text(name)}</dt><dd>{_text(value)}</dd>" for name, value in facts
                    if value not in (None, ""))
    return f'<div class="hx-run"><h3>What ran</h3><dl class="hx-run-facts">{items}</dl></div>'


def _task_files(splits: dict[str, SplitFile] | None) -> str:
    if not isinstance(splits, Mapping):
        return ""
    return "; ".join(f"{name}: {info.get('location')}" if isinstance(info, Mapping) and info.get("location")
                     else str(name) for name, info in splits.items())


def _review_text(settings: RunSettings) -> str:
    seconds, rate = settings.get("review_seconds"), settings.get("review_rate")
    if not isinstance(seconds, (int, float)) or not isinstance(rate, (int, float)):
        return ""
    cost = settings.get("review_cost")
    per = f" = {format_metric(cost, 'dollars')} per candidate" if isinstance(cost, (int, float)) else ""
    return f"{seconds:g} s per candidate at {format_metric(rate, 'dollars')}/h{per}"


def _span_text(span: RunSpan | None) -> str:
    if span is None:
        return "unknown (no record carries a time)"
    return (f"{duration_text(span.seconds)}: the span of the records shown, from the first candidate's generation "
            f"to the last verdict ({span.first:%Y-%m-%d %H:%M:%S} to {span.last:%Y-%m-%d %H:%M:%S} UTC), reruns "
            "included")


# --------------------------------------------------------------------------- gates and money


def gates_html(lines: Sequence[str]) -> str:
    """One line per gate; a failed one (``GateResult.line()`` starts with FAIL) stands out."""
    if not lines:
        return ""
    failed = sum(1 for line in lines if str(line).startswith("FAIL"))
    head = (f'<p class="hx-gates-head hx-bad">{failed} of {len(lines)} gates failed</p>' if failed
            else f'<p class="hx-gates-head hx-good">All {len(lines)} gates passed</p>')
    items = "".join(
        f'<li class="{"hx-gate-fail" if str(line).startswith("FAIL") else "hx-gate-pass"}">{_text(line)}</li>'
        for line in lines)
    return f'<div class="hx-gates"><h3>Gates</h3>{head}<ul>{items}</ul></div>'


def possibly_paid_html(rows: list[ResultsRow]) -> str:
    """Candidates whose paid call was abandoned without its reply: money that may be gone."""
    flagged = [r for r in rows if isinstance(r.get("possibly_paid"), int) and r["possibly_paid"] > 0
               and r.get("split") != "combined"]
    if not flagged:
        return ""
    items = "".join(
        f"<li>{_text(r.get('model'))} ({_text(r.get('split'))}): {_text(r['possibly_paid'])} candidates, up to "
        f"{_text(format_metric(r.get('possibly_paid_cost'), 'dollars'))}</li>" for r in flagged)
    return (f'<div class="hx-warning"><p><b>Possibly paid:</b> calls abandoned without their reply '
            f"(the provider may have charged them).</p><ul>{items}</ul></div>")


# --------------------------------------------------------------------------- metrics


def metrics_table(rows: list[ResultsRow]) -> str:
    """Per model: each metric with its interval; the calibrated figure first and marked when there is one."""
    calibrated = any(isinstance(r.get("calibrated"), Mapping) for r in rows)
    head = "".join(f"<th>{_text(name)}</th>" for _, name, _ in chart_metrics(rows_repeats(rows)))
    body = "".join(_metrics_row(r) for r in rows)
    table = (f'<table class="hx-metrics"><thead><tr><th>Model</th>{head}<th>Judged</th><th>Refused</th>'
             f"<th>Errors</th><th>Spent</th></tr></thead><tbody>{body}</tbody></table>")
    notes = []
    if any(r.get("intervals") for r in rows) or calibrated:
        notes.append("[95% interval]")
    if calibrated:
        notes.append(_calibration_note(rows))
    notes += [_text(note) for note in (paid_price_note(rows),) if note]  # model names are untrusted text
    notes += [_text(note + ".") for note in (repeats_note(rows_repeats(rows)),) if note]
    return _scroll(table) + (f'<p class="hx-note">{" ".join(notes)}</p>' if notes else "")


def _metrics_row(row: ResultsRow) -> str:
    cal = row.get("calibrated") if isinstance(row.get("calibrated"), Mapping) else None
    cells = "".join(f"<td>{_metric_cell(row, cal, key, kind)}</td>" for key, _, kind in chart_metrics())
    return (f"<tr><th scope=\"row\">{_text(row.get('model'))}</th>{cells}"
            f"<td>{_text(row.get('judged'))}/{_text(row.get('candidates'))}</td><td>{_text(row.get('refusals'))}</td>"
            f"<td>{_text(row.get('errors'))}</td><td>{_text(format_metric(row.get('spent'), 'dollars'))}</td></tr>")


def _metric_cell(row: ResultsRow, cal: Mapping[str, CalibratedFigure] | None, key: str, kind: str) -> str:
    judge = _value_with_interval(row.get(key), (row.get("intervals") or {}).get(key), kind,
                                 (row.get("interval_notes") or {}).get(key))
    entry = cal.get(key) if cal else None
    if not isinstance(entry, Mapping):
        return judge
    calibrated = _value_with_interval(entry.get("value"), [entry.get("low"), entry.get("high")], kind)
    return (f'<span class="hx-cal" title="calibrated against the human sample">{calibrated} '
            f'<abbr class="hx-mark" title="calibrated">cal</abbr></span>'
            f'<span class="hx-raw">judge: {judge}</span>')


def _value_with_interval(value: object, bounds: object, kind: str, note: object = None) -> str:
    """A figure and its interval; a figure without one says why (results.json ``interval_notes``)."""
    text = _text(format_metric(value, kind))
    if isinstance(bounds, (list, tuple)) and len(bounds) == 2 and None not in bounds:
        text += (f' <span class="hx-ci">[{_text(format_metric(bounds[0], kind))}, '
                 f"{_text(format_metric(bounds[1], kind))}]</span>")
    elif isinstance(note, str) and note:
        text += f' <span class="hx-ci">(no interval: {_text(note)})</span>'
    return text


def _calibration_note(rows: list[ResultsRow]) -> str:
    info = next((r.get("calibration") for r in rows if isinstance(r.get("calibration"), Mapping)), None) or {}
    text = "cal: corrected for the judge's errors measured on a human sample"
    if info.get("n_human") is not None:
        text += f" of {_text(info.get('n_human'))} candidates"
    if info.get("method"):
        text += f" ({_text(info.get('method'))}, {_text(info.get('design') or '')})".replace(", )", ")")
    if info.get("note"):
        text += f"; {_text(info.get('note'))}"
    text += "; judge: the judge's figure alone."
    # what a reader must know first (few disagreements, too few labels...), as the terminal prints it with "!"
    problems = [f"{_text(r.get('model'))}: {_text(p)}" for r in rows if isinstance(r.get("calibration"), Mapping)
                for p in r["calibration"].get("problems") or () if isinstance(p, str)]
    return text + "".join(f"<br>! {p}" for p in problems)


def _chart_rows(rows: list[ResultsRow]) -> Sequence[Mapping[str, object]]:
    """The rows the charts draw: the calibrated figures when every row has them, else the judge's (row-shaped:
    the model, each metric's value and its interval)."""
    if not rows or not all(isinstance(r.get("calibrated"), Mapping) for r in rows):
        return rows
    charted = []
    for row in rows:
        cal = row["calibrated"]
        entries = {k: v for k, v in cal.items() if isinstance(v, Mapping)}
        charted.append({"model": row.get("model"), **{k: v.get("value") for k, v in entries.items()},
                        "intervals": {k: [v.get("low"), v.get("high")] for k, v in entries.items()
                                      if v.get("low") is not None and v.get("high") is not None}})
    return charted


def _chart_title(split: str, rows: list[ResultsRow]) -> str:
    calibrated = rows and all(isinstance(r.get("calibrated"), Mapping) for r in rows)
    return f"{split}: metrics by model" + (" (calibrated)" if calibrated else "")


# --------------------------------------------------------------------------- the judge and the pixels


def judge_table(rows: list[ResultsRow]) -> str:
    """The judge against the humans (``judge_error``) and against itself (``judge_stability``)."""
    lines = []
    for row in rows:
        error: Mapping[str, object] = found if isinstance(found := row.get("judge_error"), Mapping) else {}
        stable: Mapping[str, object] = given if isinstance(given := row.get("judge_stability"), Mapping) else {}
        if not error and not stable:
            continue
        flips = (f"{_text(stable.get('flips'))} of {_text(stable.get('candidates'))} "
                 f"({_text(format_metric(stable.get('flip_rate'), 'percent'))}, k={_text(stable.get('k'))})"
                 if stable else "")
        lines.append(f"<tr><th scope=\"row\">{_text(row.get('model'))}</th><td>{_text(error.get('n_human'))}</td>"
                     f"<td>{_text(format_metric(error.get('sensitivity'), 'percent')) if error else ''}</td>"
                     f"<td>{_text(format_metric(error.get('specificity'), 'percent')) if error else ''}</td>"
                     f"<td>{flips}</td></tr>")
    if not lines:
        return ""
    head = ("<tr><th>Model</th><th>Human labels</th><th>Judge sensitivity</th><th>Judge specificity</th>"
            "<th>Verdicts that flip when judged again</th></tr>")
    return f"<h4>The judge</h4>{_table(head, lines)}"


def signals_table(rows: list[ResultsRow]) -> str:
    """Pixel diagnostics per model (``signals_summary``): never verdicts, clues to what failed."""
    lines = []
    for row in rows:
        sig = row.get("signals_summary")
        if not isinstance(sig, Mapping):
            continue
        lines.append(f"<tr><th scope=\"row\">{_text(row.get('model'))}</th><td>{_measured(sig, row)}</td>"
                     f"<td>{_text(sig.get('size_mismatch'))}</td>"
                     f"<td>{_text(sig.get('unchanged'))}</td><td>{_text(sig.get('unchanged_pass'))}</td>"
                     f"<td>{_text(_float(sig.get('ssim_mean'), 3))}</td><td>{_text(_float(sig.get('delta_e_mean'), 2))}</td></tr>")
    if not lines:
        return ""
    head = ("<tr><th>Model</th><th>Measured</th><th>Size differs from the task's target</th><th>Unchanged</th>"
            "<th>Judged PASS but unchanged</th><th>Mean SSIM</th><th>Mean &Delta;E</th></tr>")
    return f"<h4>Pixel signals</h4>{_table(head, lines)}{_unmeasured_note(rows)}"


def _measured(signals: SignalsSummary, row: ResultsRow) -> str:
    measured, unmeasured = signals.get("measured"), signals.get("unmeasured")
    if not isinstance(measured, int) or not isinstance(unmeasured, int):
        return ""
    return _text(f"{measured} of {measured + unmeasured}")


def _unmeasured_note(rows: list[ResultsRow]) -> str:
    """The counts above are of the candidates measured; the others were not computed, never guessed."""
    missing = sum(sig["unmeasured"] for row in rows if isinstance(sig := row.get("signals_summary"), Mapping)
                  and isinstance(sig.get("unmeasured"), int) and sig["unmeasured"] > 0)
    if not missing:
        return ""
    return (f'<p class="hx-note">Signals not computed for {missing} candidates read back from disk whose records '
            "lack them (the counts and means above leave them out): run with --signals to measure them.</p>")


def _float(value: Figure, digits: int) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "n/a"


# --------------------------------------------------------------------------- against the baseline


def baseline_table(rows: list[ResultsRow]) -> str:
    lines = []
    for row in rows:
        for key, name, kind in chart_metrics(row_repeats(row)):
            entry = (row.get("baseline") or {}).get(key)
            if not isinstance(entry, Mapping):
                continue
            low, high = entry.get("low"), entry.get("high")
            interval = f"[{_diff(low, kind)}, {_diff(high, kind)}]" if low is not None and high is not None else "n/a"
            if entry.get("degenerate"):  # a zero-width interval is none (analysis/enrich.py)
                interval = "n/a (every shared task changed by the same amount)"
            elif interval == "n/a" and entry.get("difference") is not None:  # the test rules out no difference
                interval = f"none ({_text(entry.get('tasks'))} shared tasks are too few to rule out any difference)"
            worse = _is_worse(key, entry.get("difference"), high if key in _LOWER_IS_BETTER else low)
            lines.append(
                f'<tr class="{"hx-worse" if worse else ""}"><th scope="row">{_text(row.get("model"))}</th>'
                f"<td>{_text(name)}</td><td>{_text(format_metric(entry.get('current'), kind))}</td>"
                f"<td>{_text(format_metric(entry.get('baseline'), kind))}</td><td>{_diff(entry.get('difference'), kind)}</td>"
                f"<td>{interval}</td><td>{_text(entry.get('tasks'))}</td></tr>")
        if row.get("baseline_error"):
            lines.append(f'<tr><th scope="row">{_text(row.get("model"))}</th><td colspan="6">'
                         f'{_text(row.get("baseline_error"))}</td></tr>')
    if not lines:
        return ""
    head = ("<tr><th>Model</th><th>Metric</th><th>Current</th><th>Baseline</th><th>Difference</th>"
            "<th>95% interval</th><th>Shared tasks</th></tr>")
    note = '<p class="hx-note">A highlighted line got worse beyond its 95% interval.</p>'
    return (f"<h4>Against the baseline (paired, same tasks)</h4>"
            f"{_table(head, lines)}{note}")


#: Metrics where a rise is a loss.
_LOWER_IS_BETTER = ("expected_attempts", "effective_cost", "hype_gap")


def _is_worse(key: str, difference: Figure, bound: Figure) -> bool:
    """Worse, and the whole interval on the worse side of zero."""
    if not isinstance(difference, (int, float)) or not isinstance(bound, (int, float)):
        return False
    return bound > 0 if key in _LOWER_IS_BETTER else bound < 0


def _diff(value: Figure, kind: str) -> str:
    if not isinstance(value, (int, float)):
        return "n/a"
    if kind == "percent":
        return f"{value * 100:+.1f} pts"
    return f"{'+' if value >= 0 else '-'}${abs(value):.2f}" if kind == "dollars" else f"{value:+.2f}"


def worse_tasks_html(split: str, rows: list[ResultsRow]) -> str:
    """Per model, the tasks whose pass rate fell against the baseline (``baseline_tasks``), worst first,
    each a link to its row in the failure browser."""
    blocks = []
    for row in rows:
        worse = [t for t in row.get("baseline_tasks") or [] if isinstance(t, Mapping)
                 and isinstance(t.get("difference"), (int, float)) and t["difference"] < 0]
        if worse:
            blocks.append(_worse_block(split, row, worse))
    if not blocks:
        return ""
    return f'<div class="hx-worse-tasks"><h4>Tasks that got worse</h4>{"".join(blocks)}</div>'


def _worse_block(split: str, row: ResultsRow, worse: list[BaselineTask]) -> str:
    model = str(row.get("model"))
    items = [_worse_item(split, model, t) for t in worse]
    shown = "".join(items[:WORSE_SHOWN])
    rest = (f"<details><summary>{len(items) - WORSE_SHOWN} more</summary><ul>{''.join(items[WORSE_SHOWN:])}</ul></details>"
            if len(items) > WORSE_SHOWN else "")
    return (f"<p><b>{_text(model)}</b>: {len(worse)} of {len(row.get('baseline_tasks') or [])} shared tasks "
            f"pass less often than in the baseline ({_text(row.get('baseline_model'))})</p><ul>{shown}</ul>{rest}")


def _worse_item(split: str, model: str, task: BaselineTask) -> str:
    task_id = str(task.get("task_id"))
    key = task_id if split == "combined" else f"{split}/{task_id}"  # a combined row's ids carry their split
    href = "#task=" + quote(key, safe="/") + "&model=" + quote(model, safe="")
    return (f'<li><a href="{escape(href)}">{_text(task_id)}</a>: {_text(task.get("baseline_passes"))}/'
            f'{_text(task.get("baseline_judged"))} &rarr; {_text(task.get("passes"))}/{_text(task.get("judged"))} PASS '
            f'({_diff(task.get("difference"), "percent")})</li>')


# --------------------------------------------------------------------------- folded tables


def task_type_table(rows: list[ResultsRow]) -> str:
    lines = []
    for row in rows:
        for task_type, metrics in sorted((row.get("by_task_type") or {}).items()):
            cells = "".join(f"<td>{_text(format_metric(metrics.get(k), kind))}</td>" for k, _, kind in chart_metrics())
            lines.append(f"<tr><td>{_text(task_type)}</td><td>{_text(row.get('model'))}</td>"
                         f"<td>{_text(metrics.get('tasks'))}</td>{cells}</tr>")
    if not lines:
        return ""
    head = "".join(f"<th>{_text(name)}</th>" for _, name, _ in chart_metrics(rows_repeats(rows)))
    return _scroll(f"<table><thead><tr><th>Task type</th><th>Model</th><th>Tasks</th>{head}</tr></thead>"
                   f"<tbody>{''.join(lines)}</tbody></table>")


def sensitivity_table(rows: list[ResultsRow]) -> str:
    """Effective cost per model across review times (rows) and retry caps (columns)."""
    blocks = []
    for row in rows:
        grid = [g for g in row.get("sensitivity") or [] if isinstance(g, Mapping)]
        if not grid:
            continue
        caps = sorted({g["retry_cap"] for g in grid})
        seconds = sorted({g["review_seconds"] for g in grid})
        cell = {(g["review_seconds"], g["retry_cap"]): g.get("effective_cost") for g in grid}
        head = "".join(f"<th>cap {_text(c)}</th>" for c in caps)
        body = "".join(
            f"<tr><td>{_text(s)} s review</td>"
            + "".join(f"<td>{_text(format_metric(cell.get((s, c)), 'dollars'))}</td>" for c in caps) + "</tr>"
            for s in seconds)
        blocks.append(f"<p>{_text(row.get('model'))}</p>"
                      + _scroll(f"<table><thead><tr><th>Effective cost</th>{head}</tr></thead><tbody>{body}</tbody></table>"))
    return "".join(blocks)
