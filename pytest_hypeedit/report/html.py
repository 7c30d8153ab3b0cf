"""The HTML report on top of pytest-html (``--html report.html``): summary, failure gallery, collages.

- The summary on top: metrics per model and split with 95% intervals, per
  task type, sensitivity and baseline tables, gate lines and bar charts (SVG).
- The failure gallery (``gallery.py``): every failed, refused or errored
  candidate with its instruction, reference(s) and candidate side by side, the
  judge's reasoning and votes, route, seed, cost and latency; then one collage
  per task with a failure.  Static HTML in the summary, not pytest-html rows:
  pytest-html builds each row in the browser, too slow for thousands.
- pytest-html's own table opens showing errors and skips only (its documented
  ``?visible=`` filter, set by a line of script when the URL has none): passed
  and failed candidates are one tick away, and each failed row links to its
  gallery entry.
- Images (``assets.py``) are files under ``<report dir>/hypeedit-assets/``:
  thumbnails, a full-size view of every failure and the collages, built on a
  thread pool while the run goes on and reused across reruns by content hash.
  The report's folder is complete on its own: upload it as the CI artifact.
- ``--self-contained-html`` still works: thumbnails and collages are inlined as
  data URIs (no full-size views), and the run warns when the file grows large.

Every string from a task, a provider or a judge goes through ``html.escape``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import tempfile
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import pytest

from ..engine.records import Record
from .assets import ASSETS_DIR, VIEW_FLOOR, AssetBuilder, clear_folder
from .charts import CHART_METRICS, format_value, metric_charts_svg
from .gallery import GALLERY_OUTCOMES, STYLE as GALLERY_STYLE, EntryImages, Urls, collage_section, entry_html, entry_id, gallery_html

SELF_CONTAINED_WARN_BYTES = 20 * 1024 * 1024
#: The report folder's size goal (--html-max-mb): what a CI artifact of a leaderboard-size run may weigh.
DEFAULT_MAX_MB = 60.0
#: What pytest-html's page weighs per candidate (measured: about 1.7 KB a row), set aside from the views' budget.
HTML_BYTES_PER_CANDIDATE = 2000

STYLE = """<style>
.hypeedit-summary table{border-collapse:collapse;margin:4px 0 12px}
.hypeedit-summary th,.hypeedit-summary td{border:1px solid #ccc;padding:2px 6px;text-align:right}
.hypeedit-summary th:first-child,.hypeedit-summary td:first-child{text-align:left}
.hypeedit-summary .ci{color:#666;font-size:85%}
</style>""" + GALLERY_STYLE

#: pytest-html's table lists these outcomes when the page opens (its ``?visible=`` parameter);
#: passed and failed candidates are in the gallery, and one tick away in the table.
TABLE_VISIBLE = "error,skipped,xfailed,xpassed,rerun"
TABLE_FILTER_SCRIPT = (
    "<script>(function(){var u=new URL(window.location.href);"
    "if(!u.searchParams.has('visible')){u.searchParams.set('visible','" + TABLE_VISIBLE + "');"
    "window.history.replaceState(null,'',u.href);}})();</script>"
)


@dataclass(frozen=True)
class GallerySource:
    """Where the gallery finds what it shows; built from the run (``gallery_source``) or by a test."""

    references: Callable[[Record], list[Path]]
    candidate: Callable[[Record], Path | None]
    instruction: Callable[[Record], str]
    results: Callable[[], Mapping[str, Any] | None] = lambda: None
    records: Callable[[], Iterable[Record]] = lambda: ()
    gate_lines: Callable[[], list[str]] = lambda: []


def _safe(make: Callable[[], Any], default: Any) -> Any:
    try:
        return make()
    except Exception:  # a missing reference must not cost the whole report; the entry shows the gap
        return default


def _text(value: Any) -> str:
    return escape("" if value is None else str(value))


# --------------------------------------------------------------------------- summary


def summary_html(results: Mapping[str, Any] | None, gate_lines: list[str], below: str = "") -> str:
    """The block on top of the report: gates, charts, metric tables, task types; then ``below``
    (the gallery and the collages) and the line that sets pytest-html's table filter."""
    if not results or not results.get("rows"):
        return STYLE + f'<div class="hypeedit-summary"><p>HYPE-EDIT-1: no candidate was judged.</p>{below}</div>'
    rows = list(results["rows"])
    parts = [STYLE, TABLE_FILTER_SCRIPT, '<div class="hypeedit-summary">', "<h2>HYPE-EDIT-1 results</h2>"]
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
    parts.append(_table_note(rows))
    parts.append(below)
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


def _table_note(rows: list[Mapping[str, Any]]) -> str:
    return ('<p class="ci">The results table at the bottom lists errored and skipped candidates; tick '
            "<i>Failed</i> or <i>Passed</i> above it to list those too (slow for thousands of rows). "
            "The failed ones are in the gallery below.</p>")


# --------------------------------------------------------------------------- the pytest plugin


def report_dir(config: pytest.Config) -> Path | None:
    """Where pytest-html writes the report (it resolves the path the same way)."""
    path = config.getoption("htmlpath", default=None)
    if not path:
        return None
    return (Path.cwd() / Path(os.path.expandvars(path)).expanduser()).parent


def register_gallery(config: pytest.Config, controller: bool) -> None:
    """``--html``: every process links failed rows to the gallery; the controller builds the gallery."""
    config.pluginmanager.register(GalleryLinks(), "hypeedit-html-links")
    if controller:
        config.pluginmanager.register(GalleryPlugin(config, gallery_source(config)), "hypeedit-html")


class GalleryLinks:
    """A failed benchmark item's row in pytest-html gets a link to its entry in the gallery."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call):
        outcome = yield
        report = outcome.get_result()
        if report.failed and report.when in ("setup", "call"):
            from ..glue.items import parse_nodeid

            key = parse_nodeid(report.nodeid)
            if key:
                anchor = entry_id(Record(*key))
                link = f'<a class="hypeedit-link" href="#{escape(anchor)}">show in the failure gallery</a>'
                extra = {"name": "HYPE-EDIT gallery", "format_type": "html", "content": link,
                         "mime_type": None, "extension": None}
                report.extras = list(getattr(report, "extras", [])) + [extra]


class GalleryPlugin:
    """The controller's part of ``--html``: images on a pool while the run goes on, then the summary."""

    def __init__(self, config: pytest.Config, source: GallerySource):
        self.config, self.source = config, source
        self.self_contained = bool(config.getoption("self_contained_html", default=False))
        view_side = _view_side(config)
        root = Path(tempfile.mkdtemp(prefix="hypeedit-assets-")) if self.self_contained else report_dir(config) / ASSETS_DIR
        self.builder = AssetBuilder(root, view_side=0 if self.self_contained else view_side,
                                    use_cache=not self.self_contained)
        self.urls = Urls(root, inline=self.self_contained)
        self.pairs: dict[tuple, Any] = {}  # record key -> Future[ImagePair]
        self.references: dict[tuple[str, str], list[tuple[str, Any]]] = {}  # (split, task) -> [(name, Future)]
        self.max_bytes = _max_bytes(config)
        self.views: dict[str, Any] = {}  # thumbnail name -> the Built full-size view
        self.below = ""
        self.tally: tuple[int, int] | None = None  # images written, reused

    def pytest_hypeedit_record(self, config: pytest.Config, record: Record) -> None:
        if record.outcome in GALLERY_OUTCOMES:  # start on its images now, while the run goes on
            self._submit_images(record)

    def _submit_images(self, record: Record) -> None:
        task = (record.split, record.task_id)
        if task not in self.references:
            self.references[task] = [
                (path.name, self.builder.image_pair(path, f"{record.split}/references/{record.task_id}/{path.name}"))
                for path in _safe(lambda: self.source.references(record), [])
            ]
        candidate = _safe(lambda: self.source.candidate(record), None)
        if record.key not in self.pairs and candidate is not None and candidate.is_file():
            stem = f"{record.split}/{record.model}/{record.task_id}/{record.repeat:03d}"
            self.pairs[record.key] = self.builder.image_pair(candidate, stem)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        records = sorted(self.source.records(), key=lambda r: r.key)
        failures = [r for r in records if r.outcome in GALLERY_OUTCOMES]
        for record in failures:
            self._submit_images(record)  # no-op for those submitted as they arrived
        for pair in self.pairs.values():
            pair.result()  # thumbnails first: the collages draw failures from them
        collages = self._submit_collages(records)
        for _, future in collages:
            future.result()
        self._build_views(len(records))
        self.tally = self.builder.finish()
        entries = {r.key: entry_html(r, _safe(lambda: self.source.instruction(r), ""), self._images(r), self.urls)
                   for r in failures}
        self.below = gallery_html(records, entries) + collage_section(
            [(caption, future.result()) for caption, future in collages], self.urls)
        if self.self_contained:
            clear_folder(self.builder.root)  # its images are inlined now

    def _build_views(self, candidates: int) -> None:
        """The full-size views, last: each gets an even share of what the thumbnails, the collages and the
        page leave of the folder's budget."""
        pairs = [future.result() for future in self.pairs.values()]
        pairs += [future.result() for entries in self.references.values() for _, future in entries]
        budget = None
        if self.max_bytes is not None:
            page = HTML_BYTES_PER_CANDIDATE * candidates
            budget = max(0, self.max_bytes - self.builder.used_bytes() - page)
        self.views = {name: future.result() for name, future in self.builder.views(pairs, budget).items()}

    def _with_view(self, pair):
        if pair is None or pair.thumb.name not in self.views:
            return pair
        return dataclasses.replace(pair, view=self.views[pair.thumb.name])

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.builder.cancel()  # after an internal error there was no session finish: leave at once

    def _images(self, record: Record) -> EntryImages:
        references = [(name, self._with_view(future.result()))
                      for name, future in self.references.get((record.split, record.task_id), [])]
        candidate = self.pairs.get(record.key)
        return EntryImages(references, self._with_view(candidate.result()) if candidate else None)

    def _submit_collages(self, records: list[Record]) -> list[tuple[str, Any]]:
        by_task: dict[tuple[str, str], list[Record]] = {}
        for record in records:
            by_task.setdefault((record.split, record.task_id), []).append(record)
        return [self._submit_collage(split, task_id, group) for (split, task_id), group in by_task.items()
                if any(r.outcome in GALLERY_OUTCOMES for r in group)]

    def _submit_collage(self, split: str, task_id: str, records: list[Record]) -> tuple[str, Any]:
        from .collage import REPORT_TILE_SIZE, tiles_by_model

        instruction = _safe(lambda: self.source.instruction(records[0]), "")
        references = _safe(lambda: self.source.references(records[0]), [])
        originals = tiles_by_model(records, lambda r: _safe(lambda: self.source.candidate(r), None))
        recipe = json.dumps([instruction, REPORT_TILE_SIZE, [(m, [(t.status, t.caption) for t in ts]) for m, ts in originals]])
        inputs = [*references, *(tile.image for _, model_tiles in originals for tile in model_tiles)]
        # a failure's tile is drawn from its thumbnail: a few times cheaper than decoding the original again
        draw = functools.partial(_draw_collage, references, tiles_by_model(records, self._tile_image), instruction)
        future = self.builder.collage(f"collages/{split}/{task_id}.webp", draw, inputs, recipe)
        return f"{split} / {task_id}: {instruction}", future

    def _tile_image(self, record: Record) -> Path | None:
        pair = self.pairs.get(record.key)
        if pair is not None and pair.done() and not pair.result().thumb.error:
            return self.builder.root / pair.result().thumb.name
        return _safe(lambda: self.source.candidate(record), None)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list, summary: list, postfix: list, session) -> None:
        prefix.append(summary_html(self.source.results(), self.source.gate_lines(), self.below))

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter) -> None:
        path = self.config.getoption("htmlpath", default=None)
        if self.tally is not None and not self.self_contained:
            written, reused = self.tally
            terminalreporter.write_line(f"HTML report images in {self.builder.root}: {written} written, "
                                        f"{reused} reused from an earlier run")
            self._say_if_over(terminalreporter, Path(path) if path else None)
        if not self.self_contained or not path or not Path(path).is_file():
            return
        size = Path(path).stat().st_size
        if size > SELF_CONTAINED_WARN_BYTES:
            terminalreporter.write_line(
                f"WARNING: the self-contained HTML report is {size / 1e6:.1f} MB; browsers slow down on large "
                "files. For big runs drop --self-contained-html: images then stay files in hypeedit-assets/.",
                yellow=True, bold=True,
            )


    def _say_if_over(self, terminalreporter, page: Path | None) -> None:
        """The folder's goal is met by sizing the views; when even the smallest views overrun it, say so."""
        if self.max_bytes is None:
            return
        used = sum(f.stat().st_size for f in self.builder.root.rglob("*") if f.is_file())
        used += page.stat().st_size if page is not None and page.is_file() else 0
        if used > self.max_bytes * 1.05:
            terminalreporter.write_line(
                f"WARNING: the report folder weighs {used / 1e6:.0f} MB, over --html-max-mb "
                f"{self.max_bytes / 1e6:g}: the views are at their smallest ({VIEW_FLOOR} px). Raise --html-max-mb, "
                "or keep no views with --html-views 0 (the originals stay in the outputs folder).",
                yellow=True, bold=True)


def _draw_collage(references, tiles, title: str, dest: Path) -> tuple[int, int]:
    from PIL import Image

    from .collage import REPORT_TILE_SIZE, make_collage

    make_collage(references, tiles, dest, tile_size=REPORT_TILE_SIZE, title=title)
    with Image.open(dest) as drawn:
        return drawn.size


def _view_side(config: pytest.Config) -> int:
    from .assets import THUMB_SIZE

    side = config.getoption("hypeedit_html_views", default=1024)
    if side != 0 and side < THUMB_SIZE:
        raise pytest.UsageError(f"--html-views {side}: give the long side of the full-size views in pixels "
                                f"(at least {THUMB_SIZE}), or 0 to keep no views in the report folder")
    return side


def _max_bytes(config: pytest.Config) -> int | None:
    megabytes = config.getoption("hypeedit_html_max_mb", default=DEFAULT_MAX_MB)
    if megabytes is None or megabytes == 0:
        return None
    if megabytes < 0:
        raise pytest.UsageError(f"--html-max-mb {megabytes:g}: give the report folder's size goal in megabytes "
                                "(default 60), or 0 for no goal (every view at --html-views pixels)")
    return int(megabytes * 1_000_000)


def gallery_source(config: pytest.Config) -> GallerySource:
    """The gallery's view of a benchmark run: the run config, the runner's references, the session."""
    from ..glue.ci import GATES_KEY
    from ..glue.stash import RUN_KEY, RUNNER_KEY, SESSION_KEY

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

    return GallerySource(
        references=references,
        candidate=candidate,
        instruction=instruction,
        results=lambda: session_attr("results", None),
        records=lambda: list((session_attr("records", None) or {}).values()),
        gate_lines=lambda: config.stash.get(GATES_KEY, []),
    )
