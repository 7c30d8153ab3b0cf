"""The HTML report on top of pytest-html (``--html report.html``): the summary, then the failure browser.
The pytest side of it lives here, in glue/ (pytest-html's hooks, the run's stash); what it draws is report/'s.

- The summary on top (report/summary.py): gates (a failed one highlighted), metrics per model and split
  with their intervals (calibrated figures first when the run has them), charts, the judge and the
  pixel signals when measured, the baseline comparison with the tasks that got worse.
- The failure browser (report/browser/): one card per task, a row per model with every repeat as a
  thumbnail and its badge; a click opens the candidate's full view with the judge's reasoning, the
  human votes and notes and its facts; filters, keyboard navigation and a shareable address.  Drawn
  by a script from a JSON block a few tasks at a time: pytest-html builds each of its own rows in the
  browser, too slow for thousands, so the browser is not made of pytest-html rows.
- pytest-html's own table comes last.  When some items errored or were skipped it opens listing those
  (its documented ``?visible=`` filter, set by a line of script when the address has none); when none
  did, it is folded with a note and a button that lists the failed items.  Each failed row links to
  its candidate in the browser.
- Images (report/assets.py) are files under ``<report dir>/hypeedit-assets/``: a thumbnail of every
  candidate and a full-size view of every failure, built on a thread pool while the run goes on and
  reused across reruns by content hash.  The report's folder is complete on its own.
- ``--self-contained-html`` still works: thumbnails are inlined as data URIs (no full-size views),
  and the run warns when the file grows large.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generator, Iterable, Mapping, Protocol, overload
from urllib.parse import quote

import pytest

from ..engine.records import ERROR, FAIL, REFUSED, Record
from ..engine.store import Store
from ..options import settings_of
from ..report.assets import ASSETS_DIR, VIEW_FLOOR, VIEW_QUALITIES, AssetBuilder, Built, ImagePair, clear_folder
from ..report.baseline import (
    BaselineOutputs,
    baseline_models,
    baseline_releases,
    counterpart,
    read_candidates,
    repeats_of,
    worse_tasks,
)
from ..report.browser.data import Images, browser_data
from ..report.browser.page import Urls, browser_html, data_script, style_html
from ..report.summary import RunSpan, run_span, summary_html
from ..report.tables import split_order

if TYPE_CHECKING:
    from concurrent.futures import Future

    import pluggy

    from ..report.results import Key
    from ..report.results_model import Results

SELF_CONTAINED_WARN_BYTES = 20 * 1024 * 1024
#: The report folder's size goal when --html-max-mb is not given: what a CI artifact carries per run.  55 MB for a
#: run of up to 500 candidates (the public split once: its ~300 failures' views at about 700 px of a heavy 4K
#: picture), 13 KB more per candidate beyond (a view near its floor and a thumbnail), at most 140 MB: the
#: paper's full table (7,000 candidates, ~4,300 failures) stays under 150 MB (bench/bench_report.py).
AUTO_BASE_MB, AUTO_BASE_CANDIDATES, AUTO_KB_PER_CANDIDATE, AUTO_MAX_MB = 55.0, 500, 13.0, 140.0
#: What pytest-html's own part of the page weighs per candidate (measured: about 1.7 KB a row).
HTML_BYTES_PER_CANDIDATE = 2000
#: A full-size view's entry in the browser's data (its URL and size), set aside with the page.
VIEW_ENTRY_BYTES = 90
#: Candidates whose full-size view the report keeps.
VIEW_OUTCOMES = (FAIL, REFUSED, ERROR)
#: pytest-html's outcomes that its table lists when the page opens (its ``?visible=`` parameter).
TABLE_VISIBLE = ("error", "skipped", "xfailed", "xpassed", "rerun")


@dataclass(frozen=True)
class ReportSource:
    """Where the report finds what it shows; built from the run (``report_source``) or by a test."""

    references: Callable[[Record], list[Path]]
    candidate: Callable[[Record], Path | None]
    instruction: Callable[[Record], str]
    results: Callable[[], Results | None] = lambda: None
    records: Callable[[], Iterable[Record]] = lambda: ()
    gate_lines: Callable[[], list[str]] = list
    #: the outputs folder: a candidate is read only as a regular file inside it (files.open_regular), never
    #: through a symbolic link; None (a test's source): read as given
    outputs: Path | None = None
    #: (split, task id) -> the task's position in its task file: the browser's "task order"
    task_order: Mapping[tuple[str, str], int] = dataclasses.field(default_factory=dict)
    #: --baseline: the release compared with, and where its outputs are (None without one)
    baseline: Callable[[], "BaselineSource | None"] = lambda: None


@dataclass(frozen=True)
class BaselineSource:
    """The --baseline results file (its path as given, its settings) and where its candidates were found."""

    path: str
    settings: Mapping[str, Any]
    outputs: BaselineOutputs


def _safe(make: Callable[[], Any], default: Any) -> Any:
    try:
        return make()
    except Exception:  # a missing reference must not cost the whole report; the row shows the gap
        return default


def candidate_anchor(key: Key) -> str:
    """The address fragment that opens a candidate in the browser (``<split>/<task>/<model>/<repeat>``)."""
    split, model, task_id, repeat = key
    return "#open=" + quote(f"{split}/{task_id}/{model}/{int(repeat)}", safe="/")


# --------------------------------------------------------------------------- pytest-html's table


def table_script(listed: int) -> str:
    """Before pytest-html's script runs: its environment table folded (one click opens it), so the summary
    comes first; its results filter set when the address has none: the errored and skipped items, or, with
    none of those, the table folded (it would open on "No results found")."""
    fold = "document.body.classList.add('hx-table-folded');" if not listed else ""
    return ("<script>(function(){var e=document.getElementById('environment'),"
            "h=document.getElementById('environment-header');if(e&&h){e.classList.add('hidden');"
            "h.classList.add('collapsed');}var u=new URL(window.location.href);if(u.searchParams.has('visible'))return;"
            f"u.searchParams.set('visible','{','.join(TABLE_VISIBLE)}');"
            f"window.history.replaceState(window.history.state,'',u.href);{fold}}})();</script>")


def table_note(counts: Mapping[str, int], listed: int) -> str:
    """The line above pytest-html's table: what it lists, and how to list the rest."""
    total = sum(counts.values())
    failed = counts.get("failed", 0)
    if listed:
        text = (f"pytest-html's table below lists the {listed} of {total} items that errored or were skipped. "
                "Tick <i>Failed</i> or <i>Passed</i> above it to list those too; every candidate is in the "
                "failure browser above.")
        return f'<div class="hx-table-note"><p>{text}</p></div>'
    return (f'<div class="hx-table-note" id="hx-table-note"><p>pytest-html\'s table of the {total} items is folded: '
            "none errored or was skipped, and every candidate is in the failure browser above. "
            f'<button type="button" id="hx-table-show">List the {failed} failed items</button> '
            "(or tick a box above; thousands of rows take a few seconds).</p></div>"
            "<script>(function(){function unfold(){document.body.classList.remove('hx-table-folded');}"
            "document.getElementById('hx-table-show').addEventListener('click',function(){unfold();"
            "var box=document.querySelector('input[data-test-result=\"failed\"]');if(box&&!box.checked)box.click();});"
            "document.addEventListener('click',function(e){if(e.target&&e.target.name==='filter_checkbox')unfold();});"
            "})();</script>")


def table_counts(config: pytest.Config) -> dict[str, int]:
    """Items per pytest outcome, as pytest-html counts its rows (from the terminal reporter's tally)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", {}) or {}
    return {name: len(stats.get(name, [])) for name in ("passed", "failed", *TABLE_VISIBLE)}


# --------------------------------------------------------------------------- the pytest plugin


def report_dir(config: pytest.Config) -> Path | None:
    """Where pytest-html writes the report (it resolves the path the same way)."""
    path = settings_of(config).html_path
    if not path:
        return None
    return (Path.cwd() / Path(os.path.expandvars(path)).expanduser()).parent


def register_gallery(config: pytest.Config, controller: bool) -> None:
    """``--html``: every process links failed rows to the browser; the controller builds the report."""
    config.pluginmanager.register(TableLinks(), "hypeedit-html-links")
    if controller:
        config.pluginmanager.register(ReportPlugin(config, report_source(config)), "hypeedit-html")


class _Titled(Protocol):
    """pytest-html's report object, as its title hook hands it over."""

    title: str


class TableLinks:
    """A failed benchmark item's row in pytest-html's table gets a link to its candidate in the browser."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
        outcome = yield
        report = outcome.get_result()
        if report.failed and report.when in ("setup", "call"):
            from .items import parse_nodeid

            key = parse_nodeid(report.nodeid)
            if key:
                link = f'<a class="hypeedit-link" href="{escape(candidate_anchor(key))}">open in the failure browser</a>'
                extra = {"name": "HYPE-EDIT browser", "format_type": "html", "content": link,
                         "mime_type": None, "extension": None}
                # pytest-html reads this attribute, which a TestReport does not declare
                report.extras = list(getattr(report, "extras", [])) + [extra]  # type: ignore[attr-defined]


class ReportPlugin:
    """The controller's part of ``--html``: images on a pool while the run goes on, then the page."""

    def __init__(self, config: pytest.Config, source: ReportSource):
        self.config, self.source = config, source
        self.self_contained = settings_of(config).self_contained_html
        view_side = _view_side(config)
        # Made for --html only, so report_dir names a folder.
        root = (Path(tempfile.mkdtemp(prefix="hypeedit-assets-")) if self.self_contained
                else report_dir(config) / ASSETS_DIR)  # type: ignore[operator]
        self.builder = AssetBuilder(root, view_side=0 if self.self_contained else view_side,
                                    use_cache=not self.self_contained,
                                    full_resolution=settings_of(config).html_full_resolution)
        self.urls = Urls(root, inline=self.self_contained)
        self.thumbs: dict[Key, Future[ImagePair]] = {}
        self.references: dict[tuple[str, str], list[tuple[str, Any]]] = {}  # (split, task) -> [(name, Future)]
        self.max_bytes: int | None = None  # the folder's size goal, set once the candidates are counted
        self.max_mb = _max_mb(config)
        self.browser = ""
        self.span: RunSpan | None = None  # when the records shown were made (summary.run_span)
        self.notes: list[str] = []  # what the report says once, above the gates (a baseline without images)
        self.tally: tuple[int, int] | None = None  # images written, reused

    def pytest_hypeedit_record(self, config: pytest.Config, record: Record) -> None:
        self._submit_images(record)  # start on its thumbnail now, while the run goes on

    def _submit_images(self, record: Record) -> None:
        task = (record.split, record.task_id)
        if task not in self.references:
            self.references[task] = [
                (path.name, self.builder.image_pair(path, f"{record.split}/references/{record.task_id}/{path.name}"))
                for path in _safe(lambda: self.source.references(record), [])
            ]
        candidate = _safe(lambda: self.source.candidate(record), None)
        if record.key not in self.thumbs and candidate is not None and os.path.lexists(candidate):
            stem = f"{record.split}/{record.model}/{record.task_id}/{record.repeat:03d}"
            # a link is not followed: the row says so instead of a picture (assets.py)
            self.thumbs[record.key] = self.builder.image_pair(candidate, stem, root=self.source.outputs)

    def finish(self, session: pytest.Session) -> None:
        """Called by the session's end of the run (glue/session.py), before pytest-html writes the page."""
        records = sorted(self.source.records(), key=lambda r: r.key)
        for record in records:
            self._submit_images(record)  # no-op for those submitted as they arrived
        baseline = self._baseline_thumbs(records)
        images = Images({key: future.result() for key, future in self.thumbs.items()},
                        {task: [(name, future.result()) for name, future in entries]
                         for task, entries in self.references.items()},
                        baseline={group: (old, [(record, future.result() if future else None)
                                                for record, future in entries])
                                  for group, (old, entries) in baseline.items()})
        self.max_bytes = goal_bytes(self.max_mb, len(records) + sum(len(e) for _, e in images.baseline.values()))
        images = self._with_views(records, images)
        self.tally = self.builder.finish()
        self.browser = browser_html(self._data(records, images))
        self.span = run_span(stamp for r in records for stamp in (r.generated_at, r.judged_at) if stamp)
        if self.self_contained:
            clear_folder(self.builder.root)  # its images are inlined now

    def _data(self, records: list[Record], images: Images) -> dict[str, Any]:
        rows = (self.source.results() or {}).get("rows") or []
        return browser_data(records, instruction=self.source.instruction, images=images, url=self.urls.of,
                            models=[str(r.get("model")) for r in rows], splits=split_order(rows),
                            self_contained=self.self_contained, task_order=self.source.task_order)

    def _baseline_thumbs(self, records: list[Record]
                         ) -> dict[tuple[str, str, str], tuple[str, list[tuple[Record, Future[ImagePair] | None]]]]:
        """--baseline: per (split, model, task) of this run, the baseline model compared with and its candidates
        of that task, each with its thumbnail started (``baseline/<split>/<model>/<task>/<NNN>``)."""
        source = _safe(self.source.baseline, None)
        rows = (self.source.results() or {}).get("rows") or []
        models, releases = baseline_models(rows), baseline_releases(rows)
        if source is None or not models or self.self_contained:
            return {}
        root = source.outputs.root
        if root is None:
            self.notes.append(source.outputs.missing_note(source.path))
            return {}
        repeats = repeats_of(source.settings, max((r.repeat for r in records), default=1))
        found = {}
        for split, model, task_id in dict.fromkeys((r.split, r.model, r.task_id) for r in records):
            old = models.get((model, split))
            if old is None:
                continue
            entries = [(c.record, self.builder.image_pair(c.image, f"baseline/{split}/{old}/{task_id}/{c.record.repeat:03d}",
                                                          root=root)  # a regular file inside its outputs, no link
                        if c.image else None)
                       for c in read_candidates(root, split, old, task_id, repeats, releases.get((model, split)))]
            found[(split, model, task_id)] = (old, entries)
        return found

    def _with_views(self, records: list[Record], images: Images) -> Images:
        """The full-size views, last: of the failures, of every candidate of a task that got worse against the
        baseline and of its baseline counterpart, and of the references; each gets an even share of what the
        thumbnails and the page leave of the folder's budget (the difference images count as views)."""
        worse = worse_tasks((self.source.results() or {}).get("rows") or []) if images.baseline else set()
        wanted = {r.key for r in records if r.outcome in VIEW_OUTCOMES or (r.model, r.split, r.task_id) in worse}
        pairs = [pair for key, pair in images.candidates.items() if key in wanted]
        against = {key: pair for key in wanted if (pair := _counterpart_pair(images, key)) is not None}
        pairs += list({pair.thumb.name: pair for pair in against.values()}.values())
        pairs += [pair for entries in images.references.values() for _, pair in entries if pair is not None]
        budget = None
        if self.max_bytes is not None and pairs:
            page = (HTML_BYTES_PER_CANDIDATE * len(records) + len(data_script(self._data(records, images)))
                    + VIEW_ENTRY_BYTES * (len(pairs) + len(against)))
            budget = max(0, self.max_bytes - self.builder.used_bytes() - page) * len(pairs) // (len(pairs) + len(against))
        views = {name: future.result() for name, future in self.builder.views(pairs, budget).items()}
        return Images({key: _with_view(pair, views) for key, pair in images.candidates.items()},
                      {task: [(name, _with_view(pair, views)) for name, pair in entries]
                       for task, entries in images.references.items()},
                      baseline={group: (old, [(record, _with_view(pair, views)) for record, pair in entries])
                                for group, (old, entries) in images.baseline.items()},
                      diffs=self._differences(images, against, views))

    def _differences(self, images: Images, against: Mapping[Key, ImagePair],
                     views: Mapping[str, Built]) -> dict[Key, Built]:
        """Each candidate's difference image from its baseline counterpart, where both have a view."""
        futures = {}
        for key, old in against.items():
            pair = images.candidates.get(key)
            mine, theirs = views.get(pair.thumb.name) if pair else None, views.get(old.thumb.name)
            if mine is not None and theirs is not None and not mine.error and not theirs.error:
                split, model, task_id, repeat = key
                futures[key] = self.builder.difference(mine, theirs, f"{split}/{model}/{task_id}/{repeat:03d}")
        return {key: future.result() for key, future in futures.items()}

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.builder.cancel()  # after an internal error there was no session finish: leave at once

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_report_title(self, report: _Titled) -> None:
        report.title = f"HYPE-EDIT-1 report ({report.title})"

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list[str], summary: list[str], postfix: list[str],
                                    session: pytest.Session) -> None:
        counts = table_counts(self.config)
        listed = sum(counts.get(name, 0) for name in TABLE_VISIBLE)
        prefix.append(style_html() + table_script(listed)
                      + summary_html(self.source.results(), self.source.gate_lines(), self.span, self.notes)
                      + self.browser)
        postfix.append(table_note(counts, listed))

    def write_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        path = settings_of(self.config).html_path
        for note in self.notes:
            terminalreporter.write_line(f"HTML report: {note}", yellow=True)
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

    def _say_if_over(self, terminalreporter: pytest.TerminalReporter, page: Path | None) -> None:
        """The folder's goal is met by sizing the views; when even the smallest views overrun it, say so."""
        if self.max_bytes is None:
            return
        used = sum(f.stat().st_size for f in self.builder.root.rglob("*") if f.is_file())
        used += page.stat().st_size if page is not None and page.is_file() else 0
        if used > self.max_bytes * 1.05:
            terminalreporter.write_line(
                f"WARNING: the report folder weighs {used / 1e6:.0f} MB, over --html-max-mb "
                f"{self.max_bytes / 1e6:.0f}: the views are at their smallest ({VIEW_FLOOR} px, WebP quality "
                f"{VIEW_QUALITIES[-1]}). Raise --html-max-mb, "
                "or keep no views with --html-views 0 (the originals stay in the outputs folder).",
                yellow=True, bold=True)


def _counterpart_pair(images: Images, key: Key) -> ImagePair | None:
    """The baseline candidate a candidate is compared with (``baseline.counterpart``), when it has a thumbnail."""
    split, model, task_id, repeat = key
    _, entries = images.baseline.get((split, model, task_id), (None, []))
    found = counterpart([(record.repeat, pair) for record, pair in entries if pair is not None], repeat)
    return found if found is not None and not found.thumb.error else None


@overload
def _with_view(pair: ImagePair, views: Mapping[str, Any]) -> ImagePair: ...
@overload
def _with_view(pair: None, views: Mapping[str, Any]) -> None: ...
def _with_view(pair: ImagePair | None, views: Mapping[str, Any]) -> ImagePair | None:
    if pair is None or pair.thumb.name not in views:
        return pair
    return dataclasses.replace(pair, view=views[pair.thumb.name])


def _view_side(config: pytest.Config) -> int:
    from ..report.assets import THUMB_SIZE, VIEW_SIDE

    side: int | None = settings_of(config).html_views
    side = VIEW_SIDE if side is None else side  # a namespace without the option (as getoption's default was)
    if side != 0 and side < THUMB_SIZE:
        raise pytest.UsageError(f"--html-views {side}: give the long side of the full-size views in pixels "
                                f"(at least {THUMB_SIZE}), or 0 to keep no views in the report folder")
    return side


def _max_mb(config: pytest.Config) -> float | None:
    """--html-max-mb: None (not given: the goal follows the candidates, ``goal_bytes``), 0 (no goal) or MB."""
    megabytes: float | None = settings_of(config).html_max_mb
    if megabytes is not None and megabytes < 0:
        raise pytest.UsageError(f"--html-max-mb {megabytes:g}: give the report folder's size goal in megabytes "
                                f"(default: {AUTO_BASE_MB:g} up to {AUTO_BASE_CANDIDATES} candidates, "
                                f"{AUTO_KB_PER_CANDIDATE:g} KB more per candidate beyond, at most {AUTO_MAX_MB:g}), "
                                "or 0 for no goal (every view at --html-views pixels)")
    return megabytes


def goal_bytes(megabytes: float | None, candidates: int) -> int | None:
    """The folder's size goal in bytes: ``megabytes`` when given (0: none), else the default for ``candidates``
    (those shown, the baseline's included)."""
    if megabytes is None:
        beyond = max(0, candidates - AUTO_BASE_CANDIDATES) * AUTO_KB_PER_CANDIDATE / 1000
        megabytes = min(AUTO_MAX_MB, AUTO_BASE_MB + beyond)
    return int(megabytes * 1_000_000) if megabytes else None


def report_source(config: pytest.Config) -> ReportSource:
    """The report's view of a benchmark run: the run config, the runner's references, the session."""
    from ..report.baseline import locate_outputs
    from ..report.results_files import load_results
    from .ci import GATES_KEY
    from .stash import RUN_KEY, RUNNER_KEY, SESSION_KEY

    run = config.stash[RUN_KEY]
    tasks = {(split.name, task.task_id): task for split in run.splits for task in split.tasks}
    task_order = {(split.name, task.task_id): at for split in run.splits for at, task in enumerate(split.tasks)}

    def references(record: Record) -> list[Path]:
        return config.stash[RUNNER_KEY].references(tasks[(record.split, record.task_id)])

    def candidate(record: Record) -> Path | None:
        """The file the record names, as the run chose it (Store.find): never a stray beside it."""
        if not record.candidate:
            return None
        store = Store(run.outputs, folders=run.folders)
        found = store.find(*record.key, named=record.candidate)
        return found.candidate or (store.task_dir(*record.key[:3]) / record.candidate if found.unusable else None)

    def instruction(record: Record) -> str:
        task = tasks.get((record.split, record.task_id))
        return task.instruction if task else ""

    def baseline() -> BaselineSource | None:
        path = settings_of(config).baseline
        if not path:
            return None
        old = load_results(Path(path))  # glue/ci.py did not accept an unreadable one at start
        outputs = locate_outputs(Path(path), old.get("settings"), settings_of(config).baseline_outputs,
                                 [split.name for split in run.splits])
        settings = old.get("settings")
        return BaselineSource(str(path), settings if isinstance(settings, Mapping) else {}, outputs)

    def session_attr(name: str, default: Any) -> Any:
        return getattr(config.stash.get(SESSION_KEY, None), name, default)

    return ReportSource(
        references=references,
        candidate=candidate,
        instruction=instruction,
        results=lambda: session_attr("results", None),
        records=lambda: list((session_attr("records", None) or {}).values()),
        gate_lines=lambda: config.stash.get(GATES_KEY, []),
        outputs=run.outputs,
        task_order=task_order,
        baseline=baseline,
    )
