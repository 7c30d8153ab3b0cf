"""pytest glue of ``--agreement``: collects the run's records, adds ``results["agreement"]``, prints it.

Registered on the controller only (plugin.py), and only when ``--agreement``
is given.  It collects the records through the plugin's own ``pytest_hypeedit_record``; the session's end of
the run (glue/session.py) calls ``add_to`` and ``write_summary``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ..options import settings_of
from ..report.agreement_check import AgreementCheck, terminal_lines
from .human_labels import read_labels_option
from .terminal_layout import write_folded

if TYPE_CHECKING:
    from ..config import RunConfig
    from ..engine.records import Record
    from ..report.results_model import Results

PLUGIN_NAME = "hypeedit-agreement"


class AgreementPlugin:
    def __init__(self, check: AgreementCheck, judge: str):
        self.check, self.judge = check, judge
        self.records: dict[tuple[str, str, str, int], Record] = {}
        self.results: Results | None = None

    def pytest_hypeedit_record(self, config: pytest.Config, record: Record) -> None:
        self.records[record.key] = record

    def add_to(self, results: Results) -> None:
        results["agreement"] = self.check.results(self.records.values(), self.judge)
        self.results = results

    def write_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.results:
            return
        terminalreporter.write_sep("=", "judge vs human panel (--agreement)")
        write_folded(terminalreporter, terminal_lines(self.results))


def register_agreement(config: pytest.Config, run: RunConfig) -> AgreementPlugin | None:
    """Read the panel now, so a bad labels file stops the run before anything is paid for."""
    check = read_labels_option(AgreementCheck.from_option, settings_of(config).agreement, run)
    if check is None:
        return None
    plugin = AgreementPlugin(check, run.judge)
    config.pluginmanager.register(plugin, PLUGIN_NAME)
    return plugin
