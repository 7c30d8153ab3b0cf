"""The HTML failure gallery and summary, on top of pytest-html (``--html report.html``).

- Every failed, refused or errored candidate gets an extra in its row: the
  instruction, reference(s), the candidate, the judge's reasoning and votes,
  route, seed, cost and latency.  Images are files under
  ``<report dir>/hypeedit-assets/`` (small JPEG thumbnails inline, linking to
  the full-size original in the outputs by a relative path), so 500
  candidates make neither a several-hundred-MB HTML file nor a copy of the outputs.
- The summary on top: metrics per model and split with 95% intervals, per
  task type, sensitivity and baseline tables, gate lines, bar charts (SVG) and
  one collage per task with a failure.
- ``--self-contained-html`` still works: thumbnails and collages are inlined
  as data URIs (no full-size links), and the run warns when the file grows large.

Every string from a task, a provider or a judge goes through ``html.escape``:
pytest-html inserts extras with ``insertAdjacentHTML``, so an unescaped
reasoning could run script in the reader's browser.
"""

from __future__ import annotations

import base64
import io
import os
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import pytest

from ..files import atomic_write_bytes
from ..engine.records import ERROR, FAIL, REFUSED, Record, records_from_properties
from .charts import CHART_METRICS, format_value, metric_charts_svg
from .collage import make_collage, tiles_by_model

ASSETS_DIR = "hypeedit-assets"
THUMB_SIZE = 224
GALLERY_OUTCOMES = (FAIL, REFUSED, ERROR)
SELF_CONTAINED_WARN_BYTES = 20 * 1024 * 1024
_ATTACHED = pytest.StashKey[bool]()

STYLE = """<style>
.hypeedit-summary table{border-collapse:collapse;margin:4px 0 12px}
.hypeedit-summary th,.hypeedit-summary td{border:1px solid #ccc;padding:2px 6px;text-align:right}
.hypeedit-summary th:first-child,.hypeedit-summary td:first-child{text-align:left}
.hypeedit-summary .ci{color:#666;font-size:85%}
.hypeedit-collages figure{display:inline-block;margin:4px;vertical-align:top}
.hypeedit-collages img{max-width:480px;border:1px solid #ccc}
.hypeedit-gallery figure{display:inline-block;margin:4px;vertical-align:top;text-align:center;font-size:85%}
.hypeedit-gallery img{height:160px;width:auto;max-width:240px;object-fit:contain;border:4px solid #bbb;background:#eee}
.hypeedit-gallery figure.fail img{border-color:#c81e1e}.hypeedit-gallery figure.refused img{border-color:#963c96}
.hypeedit-gallery .noimage{display:inline-block;width:160px;height:100px;line-height:100px;background:#eee;border:4px solid #6e6e6e}
.hypeedit-gallery table td,.hypeedit-gallery table th{text-align:left;padding:1px 8px 1px 0}
.hypeedit-gallery .reasoning{white-space:pre-wrap;max-width:900px}
</style>"""


@dataclass(frozen=True)
class GallerySource:
    """Where the gallery finds what it shows; built from the run (``source_from_run``) or by a test."""

    references: Callable[[Record], list[Path]]
    candidate: Callable[[Record], Path | None]
    instruction: Callable[[Record], str]
    results: Callable[[], Mapping[str, Any] | None] = lambda: None
    records: Callable[[], Iterable[Record]] = lambda: ()
    gate_lines: Callable[[], list[str]] = lambda: []


# --------------------------------------------------------------------------- assets


class Assets:
    """Writes thumbnails and full-size copies under ``<report dir>/hypeedit-assets``; returns URLs."""

    def __init__(self, report_dir: Path, self_contained: bool):
        self.report_dir, self.self_contained = report_dir, self_contained
        self.root = report_dir / ASSETS_DIR

    def thumbnail(self, source: Path, name: str) -> str:
        """URL of a JPEG thumbnail (a relative path, or a data URI when self-contained)."""
        data = thumbnail_bytes(source, THUMB_SIZE)
        if self.self_contained:
            return "data:image/jpeg;base64," + base64.b64encode(data).decode("ascii")
        return self._write(f"{name}.thumb.jpg", data)

    def full_size(self, source: Path) -> str | None:
        """Relative URL of the full-size original, or None when self-contained.

        A link, not a copy: 500 full-size candidates would make the report
        folder hundreds of MB, and the originals already sit in the outputs.
        """
        return None if self.self_contained else self.url(source)

    def collage(self, dest_name: str) -> Path:
        return self.root / "collages" / dest_name

    def url(self, path: Path) -> str:
        return Path(os.path.relpath(path, self.report_dir)).as_posix()

    def inline(self, path: Path, mime: str) -> str:
        return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")

    def _write(self, name: str, data: bytes) -> str:
        dest = self.root / name
        if not (dest.is_file() and dest.stat().st_size == len(data)):
            atomic_write_bytes(dest, data)
        return self.url(dest)


def thumbnail_bytes(source: Path, size: int) -> bytes:
    from PIL import Image, ImageOps

    with Image.open(source) as image:
        image = ImageOps.exif_transpose(image).convert("RGB")
        image.thumbnail((size, size))
        out = io.BytesIO()
        image.save(out, format="JPEG", quality=78, optimize=True)
        return out.getvalue()


# --------------------------------------------------------------------------- one failure


def failure_html(record: Record, source: GallerySource, assets: Assets) -> str:
    """The gallery entry of one candidate: every value escaped, images as thumbnails with links."""
    parts = [
        f'<div class="hypeedit-gallery" data-outcome="{escape(record.outcome or "")}">',
        f"<p><b>Instruction:</b> {_text(source.instruction(record))}</p>",
        '<div class="images">',
        *_reference_figures(record, source, assets),
        _candidate_figure(record, source, assets),
        "</div>",
        _facts_table(record),
        _reasoning(record),
        "</div>",
    ]
    return "".join(parts)


def _reference_figures(record: Record, source: GallerySource, assets: Assets) -> list[str]:
    figures = []
    for index, path in enumerate(_safe(lambda: source.references(record), []), start=1):
        name = f"{record.split}/references/{record.task_id}/{path.stem}"
        figures.append(_figure(path, name, f"reference {index}: {path.name}", "reference", assets))
    return figures


def _candidate_figure(record: Record, source: GallerySource, assets: Assets) -> str:
    path = _safe(lambda: source.candidate(record), None)
    label = f"candidate r{record.repeat:03d}: {(record.outcome or '').upper()}"
    if path is None or not path.is_file():
        return f'<figure class="{escape(record.outcome or "")}"><span class="noimage">no image</span><figcaption>{_text(label)}</figcaption></figure>'
    name = f"{record.split}/{record.model}/{record.task_id}/{record.repeat:03d}"
    return _figure(path, name, label, record.outcome or "", assets)


def _figure(path: Path, name: str, caption: str, css_class: str, assets: Assets) -> str:
    try:
        thumb = assets.thumbnail(path, name)
        full = assets.full_size(path)
    except (OSError, ValueError) as exc:  # an unreadable image must not cost the whole report
        return f'<figure class="{escape(css_class)}"><span class="noimage">unreadable</span><figcaption>{_text(caption)}: {_text(exc)}</figcaption></figure>'
    image = f'<img src="{escape(thumb)}" alt="{escape(caption)}" loading="lazy">'
    if full:
        image = f'<a href="{escape(full)}" target="_blank">{image}</a>'
    return f'<figure class="{escape(css_class)}">{image}<figcaption>{_text(caption)}</figcaption></figure>'


def _facts_table(record: Record) -> str:
    facts = [
        ("outcome", (record.outcome or "").upper()), ("model", record.model), ("split", record.split),
        ("task", record.task_id), ("repeat", f"{record.repeat:03d}"), ("route", record.route),
        ("provider model", record.provider_model), ("seed", record.seed),
        ("cost", None if record.cost is None else f"${record.cost:.4f}"),
        ("judge cost", f"${record.judge_cost:.4f}" if record.judge_cost else None),
        ("latency", None if record.latency_s is None else f"{record.latency_s:.2f} s"),
        ("request id", record.request_id), ("judge", record.judge),
    ]
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{_text(v)}</td></tr>" for k, v in facts if v not in (None, ""))
    return f"<table>{rows}</table>"


def _reasoning(record: Record) -> str:
    parts = []
    if record.refusal:
        parts.append(f'<p><b>Refusal:</b> <span class="reasoning">{_text(record.refusal)}</span></p>')
    if record.error:
        parts.append(f'<p><b>Error:</b> <span class="reasoning">{_text(record.error)}</span></p>')
    if record.reasoning:
        parts.append(f'<p><b>Judge reasoning:</b></p><div class="reasoning">{_text(record.reasoning)}</div>')
    if record.votes:
        parts.append("<p><b>Votes:</b></p><ul>" + "".join(_vote(v) for v in record.votes) + "</ul>")
    return "".join(parts)


def _vote(vote: Any) -> str:
    if not isinstance(vote, Mapping):
        return f"<li>{_text(vote)}</li>"
    head = f"<b>{_text(vote.get('judge', '?'))}</b>: {_text(vote.get('verdict', '?'))}"
    rest = "".join(
        f'<div class="reasoning">{_text(k)}: {_text(v)}</div>' for k, v in vote.items() if k not in ("judge", "verdict")
    )
    return f"<li>{head}{rest}</li>"


def _text(value: Any) -> str:
    return escape("" if value is None else str(value))


def _safe(make: Callable[[], Any], default: Any) -> Any:
    try:
        return make()
    except Exception:  # a missing reference must not cost the whole report; the row shows the gap
        return default


# --------------------------------------------------------------------------- summary


def summary_html(results: Mapping[str, Any] | None, collages: list[tuple[str, str, str]], gate_lines: list[str]) -> str:
    """The block on top of the report: gates, charts, metric tables, task types, collages."""
    if not results or not results.get("rows"):
        return STYLE + '<div class="hypeedit-summary"><p>HYPE-EDIT-1: no candidate was judged.</p></div>'
    rows = list(results["rows"])
    parts = [STYLE, '<div class="hypeedit-summary">', "<h2>HYPE-EDIT-1 results</h2>"]
    if gate_lines:
        parts.append("<h3>Gates</h3><ul>" + "".join(f"<li>{_text(line)}</li>" for line in gate_lines) + "</ul>")
    for split in _split_order(rows):
        split_rows = [r for r in rows if r.get("split") == split]
        parts.append(f"<h3>Split: {_text(split)}</h3>")
        parts.append(f'<div class="chart">{metric_charts_svg(split_rows, title=f"{split}: metrics by model")}</div>')
        parts.append(metrics_table(split_rows))
        parts.append(task_type_table(split_rows))
        parts.append(sensitivity_table(split_rows))
        parts.append(baseline_table(split_rows))
    parts.append(collage_section(collages))
    parts.append("</div>")
    return "".join(parts)


def _split_order(rows: list[Mapping[str, Any]]) -> list[str]:
    splits = list(dict.fromkeys(str(r.get("split")) for r in rows))
    return [s for s in splits if s != "combined"] + (["combined"] if "combined" in splits else [])


def _with_interval(row: Mapping[str, Any], key: str, kind: str) -> str:
    text = _text(format_value(row.get(key), kind))
    bounds = (row.get("intervals") or {}).get(key)
    if bounds and None not in bounds:
        text += f' <span class="ci">[{_text(format_value(bounds[0], kind))}, {_text(format_value(bounds[1], kind))}]</span>'
    return text


def metrics_table(rows: list[Mapping[str, Any]]) -> str:
    ordered = sorted(rows, key=lambda r: -(r.get("pass_rate") or 0))
    head = "".join(f"<th>{_text(name)}</th>" for _, name, _ in CHART_METRICS)
    body = "".join(
        f"<tr><td>{_text(r.get('model'))}</td>"
        + "".join(f"<td>{_with_interval(r, key, kind)}</td>" for key, _, kind in CHART_METRICS)
        + f"<td>{_text(r.get('judged'))}/{_text(r.get('candidates'))}</td><td>{_text(r.get('refusals'))}</td>"
        f"<td>{_text(r.get('errors'))}</td><td>{_text(format_value(r.get('spent'), 'dollars'))}</td></tr>"
        for r in ordered
    )
    note = '<p class="ci">[95% bootstrap interval over tasks]</p>' if any(r.get("intervals") for r in rows) else ""
    return f"<table><tr><th>Model</th>{head}<th>Judged</th><th>Refused</th><th>Errors</th><th>Spent</th></tr>{body}</table>{note}"


def task_type_table(rows: list[Mapping[str, Any]]) -> str:
    lines = []
    for row in rows:
        for task_type, metrics in sorted((row.get("by_task_type") or {}).items()):
            cells = "".join(f"<td>{_text(format_value(metrics.get(k), kind))}</td>" for k, _, kind in CHART_METRICS)
            lines.append(f"<tr><td>{_text(task_type)}</td><td>{_text(row.get('model'))}</td><td>{_text(metrics.get('tasks'))}</td>{cells}</tr>")
    if not lines:
        return ""
    head = "".join(f"<th>{_text(name)}</th>" for _, name, _ in CHART_METRICS)
    return f"<h4>By task type</h4><table><tr><th>Task type</th><th>Model</th><th>Tasks</th>{head}</tr>{''.join(lines)}</table>"


def sensitivity_table(rows: list[Mapping[str, Any]]) -> str:
    """Effective cost per model across review times (rows) and retry caps (columns)."""
    blocks = []
    for row in rows:
        grid = row.get("sensitivity") or []
        caps = sorted({g["retry_cap"] for g in grid})
        seconds = sorted({g["review_seconds"] for g in grid})
        if not grid:
            continue
        cell = {(g["review_seconds"], g["retry_cap"]): g.get("effective_cost") for g in grid}
        head = "".join(f"<th>cap {_text(c)}</th>" for c in caps)
        body = "".join(
            f"<tr><td>{_text(s)} s review</td>" + "".join(f"<td>{_text(format_value(cell.get((s, c)), 'dollars'))}</td>" for c in caps) + "</tr>"
            for s in seconds
        )
        blocks.append(f"<p>{_text(row.get('model'))}</p><table><tr><th>Effective cost</th>{head}</tr>{body}</table>")
    return "<h4>Sensitivity of the effective cost</h4>" + "".join(blocks) if blocks else ""


def baseline_table(rows: list[Mapping[str, Any]]) -> str:
    lines = []
    for row in rows:
        for key, name, kind in CHART_METRICS:
            entry = (row.get("baseline") or {}).get(key)
            if not entry:
                continue
            low, high = entry.get("low"), entry.get("high")
            interval = f"[{_diff(low, kind)}, {_diff(high, kind)}]" if low is not None and high is not None else "n/a"
            lines.append(
                f"<tr><td>{_text(row.get('model'))}</td><td>{_text(name)}</td><td>{_text(format_value(entry.get('current'), kind))}</td>"
                f"<td>{_text(format_value(entry.get('baseline'), kind))}</td><td>{_diff(entry.get('difference'), kind)}</td>"
                f"<td>{interval}</td><td>{_text(entry.get('tasks'))}</td></tr>"
            )
    if not lines:
        return ""
    head = "<tr><th>Model</th><th>Metric</th><th>Current</th><th>Baseline</th><th>Difference</th><th>95% interval</th><th>Shared tasks</th></tr>"
    return f"<h4>Against the baseline (paired, same tasks)</h4><table>{head}{''.join(lines)}</table>"


def _diff(value: Any, kind: str) -> str:
    if not isinstance(value, (int, float)):
        return "n/a"
    if kind == "percent":
        return f"{value * 100:+.1f} pts"
    return f"{'+' if value >= 0 else '-'}${abs(value):.2f}" if kind == "dollars" else f"{value:+.2f}"


def collage_section(collages: list[tuple[str, str, str]]) -> str:
    """``collages``: (caption, image URL, link URL or "") per task with a failure."""
    if not collages:
        return ""
    figures = "".join(
        f'<figure>{_linked(_lazy_img(url, caption), link)}<figcaption>{_text(caption)}</figcaption></figure>'
        for caption, url, link in collages
    )
    return f'<h3>Collages: tasks with at least one failure ({len(collages)})</h3><div class="hypeedit-collages">{figures}</div>'


def _lazy_img(url: str, alt: str) -> str:
    return f'<img src="{escape(url)}" alt="{escape(alt)}" loading="lazy">'


def _linked(inner: str, link: str) -> str:
    return f'<a href="{escape(link)}" target="_blank">{inner}</a>' if link else inner


# --------------------------------------------------------------------------- the pytest plugin


def report_dir(config: pytest.Config) -> Path | None:
    """Where pytest-html writes the report (it resolves the path the same way)."""
    path = config.getoption("htmlpath", default=None)
    if not path:
        return None
    return (Path.cwd() / Path(os.path.expandvars(path)).expanduser()).parent


class GalleryPlugin:
    """Registered on the controller and on every xdist worker when ``--html`` is given."""

    def __init__(self, config: pytest.Config, source: GallerySource):
        self.config, self.source = config, source
        self.self_contained = bool(config.getoption("self_contained_html", default=False))
        self.assets = Assets(report_dir(config), self.self_contained)
        self.collages: list[tuple[str, str, str]] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call):
        outcome = yield
        report = outcome.get_result()
        if not report.failed or item.stash.get(_ATTACHED, False):
            return
        record = next((r for r in records_from_properties(report.user_properties) if r.outcome in GALLERY_OUTCOMES), None)
        if record is None:
            return
        item.stash[_ATTACHED] = True
        extra = {"name": "HYPE-EDIT candidate", "format_type": "html", "content": failure_html(record, self.source, self.assets),
                 "mime_type": None, "extension": None}
        report.extras = list(getattr(report, "extras", [])) + [extra]

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not hasattr(self.config, "workerinput"):
            self.collages = self._make_collages()

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list, summary: list, postfix: list, session) -> None:
        prefix.append(summary_html(self.source.results(), self.collages, self.source.gate_lines()))

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter) -> None:
        path = self.config.getoption("htmlpath", default=None)
        if not self.self_contained or not path or not Path(path).is_file():
            return
        size = Path(path).stat().st_size
        if size > SELF_CONTAINED_WARN_BYTES:
            terminalreporter.write_line(
                f"WARNING: the self-contained HTML report is {size / 1e6:.1f} MB; browsers slow down on large "
                "files. For big runs drop --self-contained-html: images then stay files in hypeedit-assets/.",
                yellow=True, bold=True,
            )

    def _make_collages(self) -> list[tuple[str, str, str]]:
        by_task: dict[tuple[str, str], list[Record]] = {}
        for record in self.source.records():
            by_task.setdefault((record.split, record.task_id), []).append(record)
        made = []
        for (split, task_id), records in sorted(by_task.items()):
            if any(r.outcome in GALLERY_OUTCOMES for r in records):
                made.append(self._collage(split, task_id, records))
        return [entry for entry in made if entry]

    def _collage(self, split: str, task_id: str, records: list[Record]) -> tuple[str, str, str] | None:
        first = records[0]
        instruction = _safe(lambda: self.source.instruction(first), "")
        dest = self.assets.collage(f"{split}/{task_id}.webp")
        try:
            make_collage(_safe(lambda: self.source.references(first), []), tiles_by_model(records, self._candidate), dest, title=instruction)
        except OSError:
            return None
        caption = f"{split} / {task_id}: {instruction}"
        if self.self_contained:
            return caption, self.assets.inline(dest, "image/webp"), ""
        url = self.assets.url(dest)
        return caption, url, url

    def _candidate(self, record: Record) -> Path | None:
        return _safe(lambda: self.source.candidate(record), None)


def gallery_source(config: pytest.Config) -> GallerySource:
    """The gallery's view of a benchmark run: the run config, the runner's references, the session."""
    from ..stash import RUN_KEY, RUNNER_KEY, SESSION_KEY

    run = config.stash[RUN_KEY]
    tasks = {(split.name, task.task_id): task for split in run.splits for task in split.tasks}

    def references(record: Record) -> list[Path]:
        return config.stash[RUNNER_KEY].references(tasks[(record.split, record.task_id)])

    def candidate(record: Record) -> Path | None:
        return run.outputs / record.split / record.model / record.task_id / record.candidate if record.candidate else None

    def instruction(record: Record) -> str:
        task = tasks.get((record.split, record.task_id))
        return task.instruction if task else ""

    def session_attr(name: str, default):
        return getattr(config.stash.get(SESSION_KEY, None), name, default)

    from ..ci import GATES_KEY

    return GallerySource(
        references=references,
        candidate=candidate,
        instruction=instruction,
        results=lambda: session_attr("results", None),
        records=lambda: list((session_attr("records", None) or {}).values()),
        gate_lines=lambda: config.stash.get(GATES_KEY, []),
    )
