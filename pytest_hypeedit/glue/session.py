"""The one session object on the controller: records in, metrics and reports out.

Registered only where tests are not run by an xdist worker, so it sees every
report exactly once (a worker's reports are replayed on the controller).
Records ride on the reports, so the results are the same with and without -n.

The end of the run is one sequence of plain calls (``end_of_run``, the package's one ``pytest_sessionfinish``,
then ``BenchmarkSession.finish``), not an order of hooks: the pool's calls end, the results are built, the
analyses add to them in a fixed order, ``pytest_hypeedit_results`` lets other plugins add theirs, the results are
written, the gates set the exit status, the junit XML and the HTML report get theirs.  The terminal's part is
glue/terminal_layout.py, the one ``pytest_terminal_summary``.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

import pytest

from ..config import RunConfig
from ..engine.provenance import CHANGED
from ..engine.records import DISCARDED, ERROR, PROPERTY_KEY, Record, cleaned_copy, now_iso, records_from_properties
from ..engine.store import Store
from ..errors import HypeEditError
from ..judges.versions import judge_versions, version_warnings
from ..options import settings_of
from ..report.release_text import same_release_lines
from ..report.terminal_table import summary_lines, title
from ..text import ERROR_LIMIT, clean_text
from .items import parse_nodeid
from .stash import SESSION_KEY, run_id

if TYPE_CHECKING:
    from ..engine.jobs import Key
    from ..report.results import Coverage, Unreported
    from ..report.results_model import Results
    from .agreement_plugin import AgreementPlugin
    from .ci import CiPlugin
    from .control_run import ControlsPlugin
    from .human_labels import HumanLabelsPlugin

#: An analysis adds its part to the results (report/results_model.py, the dict as written): one step of the end of
#: the run.
Analysis = Callable[["Results"], None]


def end_of_run(session: pytest.Session) -> None:
    """What every process of a benchmark run does when its session finishes, in order: its pool's calls end (the
    serial session and each xdist worker), then the controller's session finishes (results, gates, reports), then
    the xdist controller says what the workers left in flight after a signal."""
    config = session.config
    pool = config.pluginmanager.get_plugin("hypeedit-pool")
    if pool is not None:
        pool.finish()
    benchmark = config.stash.get(SESSION_KEY, None)
    if benchmark is not None:
        benchmark.finish(session)
    stop_signal = config.pluginmanager.get_plugin("hypeedit-stop")
    if stop_signal is not None:
        stop_signal.finish()


class BenchmarkSession:
    def __init__(self, config: pytest.Config, run: RunConfig, ci: CiPlugin):
        self.config, self.run, self.ci = config, run, ci
        # the optional analyses, given by plugin.py when their option is on (each reads its panel at start-up)
        self.agreement: AgreementPlugin | None = None
        self.calibration: HumanLabelsPlugin | None = None
        self.controls: ControlsPlugin | None = None
        self.records: dict[Key, Record] = {}
        self.results: Results | None = None
        self.results_path: Path | None = None
        self.write_failed: str | None = None  # the one line saying why the results files were not written
        self.started_at = now_iso()  # records on disk stamped since were bought by this run
        self.selected: set[Key] | None = None  # the items left after -k, -m, --lf, --sw, --deselect
        self.interrupted: str | None = None
        self._handed: dict[str, tuple[Record, str]] = {}  # nodeid -> (record, its property's text): see hand_over

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """The serial session's selection (under -n the controller collects nothing: the workers tell it)."""
        self.selected = keys_of(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under -n: each worker's collection, after its -k/-m/--lf (every worker collects the same)."""
        self.selected = (self.selected or set()) | keys_of(ids)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        if not isinstance(excinfo.value, pytest.Session.Interrupted):  # --sw's stop is one too: its reason is kept
            self.interrupted = "interrupted (Ctrl-C)"

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # The teardown report carries every property the item gathered (pytest copies item.user_properties onto
        # each phase's report), so the record is decoded once per item, not once per phase.
        if report.when == "teardown":
            for record in self._records_of(report):
                self.records[record.key] = record
                self.config.hook.pytest_hypeedit_record(config=self.config, record=record)
        elif str(report.when) == "???":  # an xdist worker crashed while running this item (not a when pytest types)
            self._record_crash(report)

    def hand_over(self, nodeid: str, record: Record, text: str) -> None:
        """An item of this process (no -n) hands over its record with the text of the property it put on its
        report: while that property is untouched, the record is taken without being parsed and checked again
        (a sixth of what a 7,000-candidate replay spends on its items); its outside texts are still cleaned."""
        self._handed[nodeid] = (record, text)

    def _records_of(self, report: pytest.TestReport) -> list[Record]:
        handed = self._handed.pop(report.nodeid, None)
        carried = [value for key, value in report.user_properties if key == PROPERTY_KEY]
        if handed is not None and len(carried) == 1 and carried[0] is handed[1]:
            return [cleaned_copy(handed[0])]
        return records_from_properties(report.user_properties)  # a worker's report, or one changed on its way

    def _record_crash(self, report: pytest.TestReport) -> None:
        key = parse_nodeid(report.nodeid)
        if key and key not in self.records:
            split, model, task_id, repeat = key
            self.records[key] = Record(split, model, task_id, repeat, outcome=ERROR, error="the worker running it crashed")

    def finish(self, session: pytest.Session) -> None:
        """The end of the run on the controller, in this order: build the results; the analyses (``analyses``);
        other plugins' ``pytest_hypeedit_results``, which see the finished results; write them; the gates and the
        exit status (which needs to know whether the results were written); the junit XML's properties and the
        HTML report, before junitxml and pytest-html write their files (their own session finish comes after)."""
        if not settings_of(self.config).collect_only:
            self.results = self._build(session)
            if self.results is not None:
                for analysis in self.analyses():
                    analysis(self.results)
                self.config.hook.pytest_hypeedit_results(config=self.config, results=self.results)
                self._write_results()
            self.ci.decide(session, self.results, write_failed=self.write_failed is not None)
        report = self.config.pluginmanager.get_plugin("hypeedit-html")
        if report is not None:
            report.finish(session)

    def analyses(self) -> list[Analysis]:
        """What is added to the built results, in order: a new analysis is one more entry here.  The order is
        that of the results JSON's keys (judge_controls, then each row's calibration, agreement, each row's
        intervals and comparisons, sequential) and each may read what those before it added."""
        steps: list[Analysis] = []
        if self.controls is not None:
            steps.append(self.controls.add_to)
        if self.calibration is not None:
            steps.append(self.calibration.add_to)
        if self.agreement is not None:
            steps.append(self.agreement.add_to)
        return [*steps, self.ci.add_statistics, self.ci.add_sequential]

    def _build(self, session: pytest.Session) -> Results | None:
        """The results of the records (report/results.py), None when the run has neither records nor items."""
        run = self.run
        from ..report.results import build_results  # numpy: only once the records are in

        coverage = self._coverage(session)
        if not self.records and not coverage.unreported and not coverage.chosen:
            return None
        results = build_results(
            self.records.values(),
            models=run.models,
            split_names=[s.name for s in run.splits],
            settings=run.metric_settings,
            settings_json=run.settings_json(),
            coverage=coverage,
            run_id=run_id(self.config),
        )
        # which model answered each judge (judges/versions.py): a provider may serve the id asked for with another
        results["judge_versions"] = judge_versions(self.records.values())
        return results

    def _write_results(self) -> None:
        """results.json and .md; beside a complete run's as results.partial.json when this run is not complete.
        A full disk (or any OSError) is one line naming the folder, and a non-zero exit status (glue/ci.py)."""
        from ..report.results import where_to_write, write_results

        results: Results = self.results or {}
        path = where_to_write(results, self.run.results)
        try:
            write_results(results, path)
        except OSError as exc:
            remedy = "free space there" if exc.errno == errno.ENOSPC else "make it writable"
            self.write_failed = (f"hypeedit: could not write the results into {path.parent} "
                                 f"({exc.strerror or exc}): {remedy} (or pass --results PATH elsewhere) and run "
                                 "again; every candidate and verdict is on disk, nothing is bought again")
            return
        self.results_path = path
        if results.get("complete"):  # a partial run's file beside it would now contradict it
            remove_partial(path)

    def _coverage(self, session: pytest.Session) -> Coverage:
        """What the run was asked for, what was selected, why it stopped, and what was bought ahead unreported."""
        from ..report.results import Coverage

        planned = frozenset(planned_keys(self.run))
        selected = frozenset(self.selected & planned) if self.selected is not None else None
        chosen = planned if selected is None else selected
        missing = [key for key in chosen if key not in self.records]
        return Coverage(planned, selected, self._stop_reason(session),
                        tuple(unreported_on_disk(self.run_store(), missing, self.started_at, run_id(self.config))))

    def _stop_reason(self, session: pytest.Session) -> str | None:
        """Why the run stopped early: a signal (the stop file every process of the run shares), -x, --maxfail."""
        from .stopping import read_stop, state_dir

        try:
            written = read_stop(state_dir(self.config))
        except RuntimeError:  # pragma: no cover - startup always configures it
            written = None
        from .early_stop import vouched_stop

        written = vouched_stop(self.config, written)  # a decision is the controller's, never a file's say-so
        reason = written or session.shouldfail or session.shouldstop or self.interrupted
        if not reason and session.exitstatus == pytest.ExitCode.INTERRUPTED:
            reason = "interrupted"
        return str(reason) if reason else None

    def write_details(self, terminalreporter: pytest.TerminalReporter) -> None:
        """What the analyses say above the table: the intervals and comparisons, the agreement, the calibration
        and the judge's stability, the judge controls, then the HTML report's notes; printed by
        glue/terminal_layout.py before pytest's short summary."""
        self.ci.write_details(terminalreporter)
        for part in (self.agreement, self.calibration, self.controls):
            if part is not None:
                part.write_summary(terminalreporter)
        report = self.config.pluginmanager.get_plugin("hypeedit-html")
        if report is not None:
            report.write_summary(terminalreporter)

    def write_table(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The results table and the run's totals: printed last, by glue/terminal_layout.py."""
        if not self.results:
            return
        terminalreporter.write_sep("=", title(self.results))
        for line in summary_lines(self.results):
            terminalreporter.write_line(line)
        if self.results_path is not None:
            shown = shown_path(self.results_path, Path(self.config.invocation_params.dir))
            terminalreporter.write_line(f"results: {shown} (+ {self.results_path.with_suffix('.md').name})"
                                        + self._kept_note())
        from .terminal_layout import write_folded

        records = self.records.values()
        store = self.run_store()
        write_folded(terminalreporter, same_release_lines(self.results["rows"])
                     + stray_lines(records, store) + changed_lines(records, store)
                     + discarded_lines(records, store)
                     + version_warnings(self.results.get("judge_versions") or {}), yellow=True)

    def run_store(self) -> Store:
        """The run's outputs, each model's candidates in the folder of the run's release (engine/release.py)."""
        return Store(self.run.outputs, folders=self.run.folders)

    def _kept_note(self) -> str:
        if self.results_path == self.run.results:
            return ""
        return f"; {self.run.results} holds a complete run's results and is kept (a partial run never replaces it)"

    def write_verdict(self, terminalreporter: pytest.TerminalReporter, exitstatus: int) -> None:
        """The run's last lines: results not written (a full disk), and an incomplete run, why, with counts and
        the exit status the process returns; printed last, by glue/terminal_layout.py."""
        from .terminal_layout import write_folded

        if self.write_failed:
            write_folded(terminalreporter, [self.write_failed], red=True, bold=True)
        if self.results and not self.results.get("complete", True):
            write_folded(terminalreporter, [incomplete_line(self.results, exitstatus)], red=True, bold=True)


def remove_partial(path: Path) -> None:
    from ..report.results import partial_path

    for stale in (partial_path(path), partial_path(path).with_suffix(".md")):
        try:
            stale.unlink(missing_ok=True)
        except OSError:  # left in place: it says what it covered
            pass


def incomplete_line(results: Mapping[str, Any], exitstatus: int) -> str:
    """``run INCOMPLETE: interrupted (Ctrl-C); 100 of 200 selected items ended without a record; ...``"""
    reasons = [r["detail"] for r in (results.get("coverage") or {}).get("reasons") or []]
    if not reasons:  # no coverage (a results dict from elsewhere): what the rows say
        reasons = ["errors or skipped candidates"]
    covered = results.get("coverage") or {}
    counts = ""
    if covered:
        counts = f" ({covered.get('recorded', 0)} of {covered.get('planned', 0)} planned items have a record)"
    return f"run INCOMPLETE{counts}: " + "; ".join(reasons) + f"; exit status {int(exitstatus)}"


def keys_of(nodeids: Iterable[str]) -> set[Key]:
    return {key for key in map(parse_nodeid, nodeids) if key is not None}


def planned_keys(run: RunConfig) -> Iterator[Key]:
    """Every item the run was asked for: splits x tasks x models x repeats (as glue/items.py makes them)."""
    for split in run.splits:
        for task in split.tasks:
            for spec in run.models:
                for repeat in range(1, run.repeats + 1):
                    yield (split.name, spec.name, task.task_id, repeat)


#: What reading an untrusted record may raise (engine/store.py, and records.py's validation of its fields).
UNREADABLE = (OSError, ValueError, TypeError, AttributeError, KeyError, RecursionError, HypeEditError)


def unreported_on_disk(store: Store, keys: Iterable[Key], since: str, run: str) -> Iterator[Unreported]:
    """The records on disk of items without a report that show money paid by this run (``run``, which started at
    ``since``): the pool bought them ahead before the run stopped.  Records on disk are untrusted: one that cannot
    be read is absent."""
    from ..report.results import Unreported

    for key in keys:
        try:
            record = store.read_record(*key)
            found = paid_since(record, since, run) if record is not None else None
        except UNREADABLE:  # a malformed record is absent, never a crash at the end of a paid run
            found = None
        if found:
            yield Unreported(key, *found)


def paid_since(record: Record, since: str, run: str) -> tuple[float, float, float] | None:
    """(spent, bought by this run, pending price) of a record this run bought for; None when it shows nothing
    paid by it.  What the run bought is what the record says (its ledger's entries naming the run); a paid call it
    sent and never heard back from is its pending entry, sent since ``since`` (ISO strings in UTC, records.now_iso,
    compared as text)."""
    from ..engine import call_ledger

    this_run = call_ledger.spent_in_run(record, run)
    pending = record.open_call or {}
    sent = pending.get("sent_at")
    open_price = call_ledger.open_price(pending) if isinstance(sent, str) and sent >= since else 0.0
    if not this_run and not open_price:
        return None
    return record.spent, this_run, open_price


#: Stray files named one per line, at most; the rest are counted.
MAX_STRAY_LINES = 20


def capped(lines: list[str], what: str) -> list[str]:
    """At most MAX_STRAY_LINES warnings of one kind, then one line counting the rest."""
    if len(lines) > MAX_STRAY_LINES:
        lines[MAX_STRAY_LINES:] = [f"hypeedit: warning: ... and {len(lines) - MAX_STRAY_LINES} more {what}"]
    return lines


def stray_lines(records: Iterable[Record], store: Store) -> list[str]:
    """A warning per image found beside a candidate that its record does not name (engine/store.py)."""
    lines = []
    for record in records:
        for name in record.extra.get("strays") or ():
            path = store.task_dir(record.split, record.model, record.task_id) / str(name)
            named = f"the candidate is {record.candidate}" if record.candidate else "no candidate yet"
            lines.append(f"hypeedit: warning: {path}: not the file its record names ({named}); ignored, never "
                         "adopted over a paid verdict: move it away")
    return capped(lines, "stray images")


def changed_lines(records: Iterable[Record], store: Store) -> list[str]:
    """A warning per candidate whose bytes were not those its record's verdict judged (engine/provenance.py)."""
    lines = []
    for record in records:
        found = record.extra.get(CHANGED)
        if isinstance(found, dict):
            path = store.task_dir(record.split, record.model, record.task_id) / str(found.get("file"))
            lines.append(f"hypeedit: warning: {path}: {found.get('why')}; the old verdict is not counted, the "
                         f"candidate was {found.get('then')}")
    return capped(lines, "changed candidates")


def discarded_lines(records: Iterable[Record], store: Store) -> list[str]:
    """A warning per record file on disk that was no record (engine/store.py): named, with why, treated as
    absent (the candidate on disk, if any, was adopted; the record rewritten)."""
    lines = []
    for record in records:
        problem = record.extra.get(DISCARDED)
        if problem:
            path = store.record_path(*record.key)
            lines.append(clean_text(f"hypeedit: warning: {path}: not a valid record ({problem}); ignored and "
                                    "rewritten", ERROR_LIMIT, multiline=False))
    return capped(lines, "invalid records")


def shown_path(path: Path, here: Path) -> Path:
    """``path`` as the user can type it from where pytest was started: relative when inside that folder (a
    shorter line), else as it is."""
    try:
        return Path(path).resolve().relative_to(here.resolve())
    except ValueError:
        return path
