"""pytest glue of the human labels beside a run: ``record.human`` on every record, and ``--calibrate``.

Registered on the controller only (plugin.py).  ``record.human`` is filled from the panel of ``--calibrate``,
else of ``--agreement``, else of a labels judge, as each record arrives (before the report's own hook reads it);
``--calibrate`` adds the calibrated figures to every results row (report/calibrated_rows.py) and prints them; the
judge's stability (``--judge-stability``, engine/stability.py) is printed here too.  ``read_labels_option`` reads
the labels of ``--calibrate`` or ``--agreement`` for their plugins and for ``--estimate`` (glue/control_run.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

import pytest

from ..errors import HypeEditError
from ..options import settings_of
from ..report.calibrated_rows import HumanSample, Settings, add_calibration, human_of, stability_lines, terminal_lines
from .terminal_layout import write_folded

if TYPE_CHECKING:
    from ..config import RunConfig
    from ..engine.records import Record
    from ..labels import Panel
    from ..report.results_model import Results

PLUGIN_NAME = "hypeedit-calibration"

Read = TypeVar("Read")


class HumanLabelsPlugin:
    def __init__(self, config: pytest.Config, sample: HumanSample | None):
        self.config, self.sample = config, sample
        self._panel: Panel | None = None
        self._looked = False
        self.results: Results | None = None

    def panel(self) -> Panel | None:
        """The panel whose labels go into ``record.human``: the calibration's, the agreement's, the judge's."""
        if not self._looked:
            self._looked = True
            self._panel = self.sample.panel if self.sample else _agreement_panel(self.config) or _judge_panel(self.config)
        return self._panel

    @pytest.hookimpl(tryfirst=True)  # before the report's own hook reads the record
    def pytest_hypeedit_record(self, config: pytest.Config, record: Record) -> None:
        record.human = human_of(self.panel(), record)

    def add_to(self, results: Results) -> None:
        self.results = results
        if self.sample is None:
            return
        from .stash import SESSION_KEY

        config = self.config
        ci = config.pluginmanager.get_plugin("hypeedit-ci")
        read = settings_of(config)
        settings = Settings(config.stash[SESSION_KEY].run.metric_settings, read.bootstrap, read.bootstrap_seed)
        records = config.stash[SESSION_KEY].records.values()
        add_calibration(results, records, self.sample, settings, getattr(ci, "baseline", None))

    def write_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.results:
            return
        if self.sample is not None:
            terminalreporter.write_sep("=", "calibrated with a human sample (--calibrate)")
            every = self.config.get_verbosity() > 0  # -v: every calibrated interval, else the pass rate's
            write_folded(terminalreporter, terminal_lines(self.results, every_interval=every))
        stability = stability_lines(self.results)
        if stability:
            terminalreporter.write_sep("=", "judge stability (--judge-stability)")
            write_folded(terminalreporter, stability)


def _agreement_panel(config: pytest.Config) -> Panel | None:
    plugin = config.pluginmanager.get_plugin("hypeedit-agreement")
    panel: Panel | None = plugin.check.panel if plugin is not None else None
    return panel


def _judge_panel(config: pytest.Config) -> Panel | None:
    """The panel of a labels judge, alone or as one juror of a majority."""
    from .stash import RUNNER_KEY

    runner = config.stash.get(RUNNER_KEY, None)
    judge = runner.made_judge if runner is not None else None  # built at start-up on the controller; never here
    for juror in getattr(judge, "jurors", [judge]):
        if getattr(juror, "panel", None) is not None:
            panel: Panel = juror.panel
            return panel
    return None


def register_calibration(config: pytest.Config, run: RunConfig) -> HumanLabelsPlugin:
    """Read the human sample now, so a bad labels or design file stops the run before anything is paid for."""
    sample = read_labels_option(HumanSample.from_option, settings_of(config).calibrate, run)
    plugin = HumanLabelsPlugin(config, sample)
    config.pluginmanager.register(plugin, PLUGIN_NAME)
    return plugin


def read_labels_option(read: Callable[[str | None, Iterable[str]], Read], value: str | None, run: RunConfig) -> Read:
    """What ``read`` (``HumanSample.from_option``, ``AgreementCheck.from_option``) makes of a labels option's
    ``value`` for the run's models: a bad labels or design file is a usage error, before anything is paid for."""
    try:
        return read(value, tuple(run.registry.models))
    except HypeEditError as exc:
        raise pytest.UsageError(str(exc)) from None
