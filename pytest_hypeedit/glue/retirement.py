"""The start-of-run warning for a model whose provider id shuts down within 30 days (retirements.py)."""

from __future__ import annotations

import pytest


class RetirementNotice:
    """Writes each warning under pytest's header, before the first item: also under ``-q``, since a run
    whose model goes away next week is worth a line even in a quiet log."""

    def __init__(self, lines: list[str]):
        self.lines = lines

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for line in self.lines:
            if reporter is not None:
                reporter.write_line(f"hypeedit: WARNING: {line}", yellow=True, bold=True)
