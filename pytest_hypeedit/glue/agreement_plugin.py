"""pytest glue of ``--agreement``: collects the run's records, adds ``results["agreement"]``, prints it.

Registered on the controller only (plugin.py), and only when ``--agreement``
is given.  It rides on the plugin's own hooks (``pytest_hypeedit_record``,
``pytest_hypeedit_results``), so the session object needs no change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ..errors import HypeEditError
from ..report.agreement_check import AgreementCheck, terminal_lines
from .terminal_layout import write_folded

if TYPE_CHECKING:
    from ..engine.records import Record

PLUGIN_NAME = "hypeedit-agreement"


class AgreementPlugin:
    def __init__(self, check: AgreementCheck, judge: str):
        self.check, self.judge = check, judge
        self.records: dict[tuple[str, str, str, int], Record] = {}
        self.results: dict | None = None

    def pytest_hypeedit_record(self, config: pytest.Config, record) -> None:
        self.records[record.key] = record

    def pytest_hypeedit_results(self, config: pytest.Config, results: dict) -> None:
        results["agreement"] = self.check.results(self.records.values(), self.judge)
        self.results = results

    @pytest.hookimpl(trylast=True)  # after the results table
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.results:
            return
        terminalreporter.write_sep("=", "judge vs human panel (--agreement)")
        write_folded(terminalreporter, terminal_lines(self.results))


def register_agreement(config: pytest.Config, run) -> None:
    """Read the panel now, so a bad labels file stops the run before anything is paid for."""
    value = config.getoption("hypeedit_agreement", default=None)
    try:
        check = AgreementCheck.from_option(value, tuple(run.registry.models))
    except HypeEditError as exc:
        raise pytest.UsageError(str(exc)) from None
    if check is not None:
        config.pluginmanager.register(AgreementPlugin(check, run.judge), PLUGIN_NAME)
