"""The one session object on the controller: records in, metrics and reports out.

Registered only where tests are not run by an xdist worker, so it sees every
report exactly once (a worker's reports are replayed on the controller).
Records ride on the reports, so the results are the same with and without -n.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..config import RunConfig
from .items import parse_nodeid
from ..engine.records import ERROR, Record, records_from_properties
from ..report.terminal import summary_lines, title


class BenchmarkSession:
    def __init__(self, config: pytest.Config, run: RunConfig):
        self.config, self.run = config, run
        self.records: dict[tuple, Record] = {}
        self.results: dict | None = None
        self.results_path: Path | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # The teardown report carries every property the item gathered (pytest-notes §1),
        # so the record is decoded once per item, not once per phase.
        if report.when == "teardown":
            for record in records_from_properties(report.user_properties):
                self.records[record.key] = record
                self.config.hook.pytest_hypeedit_record(config=self.config, record=record)
        elif report.when == "???":  # an xdist worker crashed while running this item
            self._record_crash(report)

    def _record_crash(self, report) -> None:
        key = parse_nodeid(report.nodeid)
        if key and key not in self.records:
            split, model, task_id, repeat = key
            self.records[key] = Record(split, model, task_id, repeat, outcome=ERROR, error="the worker running it crashed")

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.records:
            return
        run = self.run
        from ..report.results import build_results, write_results  # numpy: only once the records are in

        self.results = build_results(
            self.records.values(),
            models=run.models,
            split_names=[s.name for s in run.splits],
            settings=run.metric_settings,
            settings_json=run.settings_json(),
        )
        self.config.hook.pytest_hypeedit_results(config=self.config, results=self.results)
        self.results_path = run.results
        write_results(self.results, run.results)

    def write_table(self, terminalreporter) -> None:
        """The results table and the run's totals: printed last, by glue/terminal.py."""
        if not self.results:
            return
        terminalreporter.write_sep("=", title(self.results))
        for line in summary_lines(self.results):
            terminalreporter.write_line(line)
        shown = shown_path(self.results_path, Path(self.config.invocation_params.dir))
        terminalreporter.write_line(f"results: {shown} (+ {self.results_path.with_suffix('.md').name})")
        from .terminal import write_folded

        write_folded(terminalreporter, stray_lines(self.records.values(), self.run.outputs), yellow=True)


def shown_path(path: Path, here: Path) -> Path:
    """``path`` as the user can type it from where pytest was started: relative when inside that folder (a
    shorter line), else as it is."""
    try:
        return Path(path).resolve().relative_to(here.resolve())
    except ValueError:
        return path


#: Stray files named one per line, at most; the rest are counted.
MAX_STRAY_LINES = 20


def stray_lines(records, outputs: Path) -> list[str]:
    """A warning per image found beside a candidate that its record does not name (engine/store.py)."""
    lines = []
    for record in records:
        for name in record.extra.get("strays") or ():
            path = outputs / record.split / record.model / record.task_id / str(name)
            named = f"the candidate is {record.candidate}" if record.candidate else "no candidate yet"
            lines.append(f"hypeedit: warning: {path}: not the file its record names ({named}); ignored, never "
                         "adopted over a paid verdict: move it away")
    if len(lines) > MAX_STRAY_LINES:
        lines[MAX_STRAY_LINES:] = [f"hypeedit: warning: ... and {len(lines) - MAX_STRAY_LINES} more stray images"]
    return lines
