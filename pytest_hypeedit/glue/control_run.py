"""``--judge-controls`` in a run (the controller only): the controls judged before the first item, their figures
in the results (``judge_controls``), their table in the terminal, the drift warning against ``--baseline``.

The controls are judged once per run, on the controller at session start (engine/controls.py), before pytest-xdist
starts its workers (its session start comes last): under ``-n`` no worker judges them, and every verdict of theirs
goes through the same runner (judge, budget ledger, run id) as the items'.  Their records never reach the
session's (glue/session.py): no model's figure counts them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..config import RunConfig
from ..engine.records import Record
from ..errors import HypeEditError
from ..options import settings_of
from ..tasks import Task
from .stash import RUNNER_KEY

if TYPE_CHECKING:
    from ..engine.controls import PassedBy
    from ..labels import Panel
    from ..report.results_model import JudgeControls, Results

#: The name the plugin is registered under.
PLUGIN_NAME = "hypeedit-judge-controls"


class ControlsPlugin:
    def __init__(self, config: pytest.Config, run: RunConfig):
        self.config, self.run = config, run
        self.records: list[Record] = []
        self.judge_id: str | None = None
        self.problem: str | None = None  # why the controls were not judged
        self.entry: JudgeControls | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if settings_of(self.config).collect_only:
            return
        from ..engine.controls import controls_price, judge_controls, price_line

        runner = self.config.stash[RUNNER_KEY]
        tasks = [task for split in self.run.splits for task in split.tasks]
        try:
            self.judge_id = runner.judge.id
            passed = passed_by_people(self.config, self.run)
            calls, usd = controls_price(runner, self.run.outputs, tasks, passed)
            if calls:  # the price before paying, as the items' price line
                terminal = self.config.pluginmanager.get_plugin("terminalreporter")
                if terminal is not None:
                    terminal.write_line(price_line(calls, usd))
            self.records = judge_controls(runner, self.run.outputs, tasks, passed)
        except HypeEditError as exc:
            self.problem = str(exc)

    def add_to(self, results: Results) -> None:
        results["judge_controls"] = self.results_entry()

    def results_entry(self) -> JudgeControls:
        from ..analysis.judge_controls import drift, summarize
        from ..engine.controls import verdicts_of

        if self.entry is not None:
            return self.entry
        entry = summarize(verdicts_of(self.records, self.judge_id or "", self.run.outputs)) if self.judge_id else {
            "judges": {}}
        if self.problem:
            entry["problem"] = self.problem
        baseline = getattr(self.config.pluginmanager.get_plugin("hypeedit-ci"), "baseline", None)
        if isinstance(baseline, dict):
            old = baseline.get("judge_controls")
            entry["drift"] = drift(entry, old if isinstance(old, dict) else None)
        self.entry = entry
        return entry

    def write_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        from ..analysis.judge_controls import drift_warnings, table_lines
        from .terminal_layout import write_folded

        if settings_of(self.config).collect_only:
            return
        entry = self.results_entry()
        terminalreporter.write_sep("-", "judge controls (no model's figures; results: judge_controls)")
        if self.problem:
            write_folded(terminalreporter, [f"WARNING: the judge controls were not judged: {self.problem}"],
                         yellow=True)
        write_folded(terminalreporter, table_lines(entry))
        write_folded(terminalreporter, [f"WARNING: {line}" for line in drift_warnings(entry)], yellow=True)


def estimate_lines(config: pytest.Config, run: RunConfig) -> list[str]:
    """``--estimate`` with ``--judge-controls``: the controls' price line (judge calls only)."""
    if not settings_of(config).judge_controls:
        return []
    from ..engine.controls import controls_price, price_line

    calls, usd = controls_price(config.stash[RUNNER_KEY], run.outputs,
                                [task for split in run.splits for task in split.tasks], passed_by_people(config, run))
    return [price_line(calls, usd)]


def passed_by_people(config: pytest.Config, run: RunConfig) -> PassedBy | None:
    """The positive controls' source, when the run has human labels (``--agreement``, ``--calibrate``): per task,
    the first candidate (by model and repeat) the panel's majority passed whose image is in the outputs."""
    from ..engine.store import Store
    from .human_labels import label_folder

    plugin = config.pluginmanager.get_plugin("hypeedit-calibration")
    panel = plugin.panel() if plugin is not None else labels_of_the_options(config, run)
    if panel is None:
        return None
    passed_keys = sorted(key for key in panel.keys() if (verdict := panel.verdict(*key)) and verdict.passed)
    store = Store(run.outputs)  # given each label's folder (label_folder): the run's release's or another's

    def passed(task: Task) -> Path | None:
        for task_id, name, repeat in passed_keys:
            folder = label_folder(name, task.split, run) if task_id == task.task_id else None
            if folder is None:
                continue
            record = store.read_record(task.split, folder, task_id, repeat)
            found = store.find(task.split, folder, task_id, repeat, named=record.candidate if record else None)
            if found.candidate is not None:
                return found.candidate
        return None

    return passed


def labels_of_the_options(config: pytest.Config, run: RunConfig) -> Panel | None:
    """The panel of ``--calibrate``, else of ``--agreement``, read from the options: ``--estimate`` registers none
    of the controller's plugins (it pays nothing and writes no results), yet prices the positive controls those
    labels give (without this, it left them out: 32 control verdicts priced where the run bought 40)."""
    from ..report.agreement_check import AgreementCheck
    from ..report.calibrated_rows import HumanSample
    from .human_labels import read_labels_option

    settings = settings_of(config)
    sample = read_labels_option(HumanSample.from_option, settings.calibrate, run)
    if sample is not None:
        return sample.panel
    check = read_labels_option(AgreementCheck.from_option, settings.agreement, run)
    return check.panel if check is not None else None


def register_controls(config: pytest.Config, run: RunConfig) -> ControlsPlugin | None:
    if not settings_of(config).judge_controls:
        return None
    plugin = ControlsPlugin(config, run)
    config.pluginmanager.register(plugin, PLUGIN_NAME)
    return plugin
