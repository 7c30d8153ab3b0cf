"""Import while the first calls wait: the modules a process needs only once answers come back, or at the end.

A run imports nothing heavy before its first call that the first call does not need: numpy (the pixel signals,
every analysis) is not imported at start-up (finite.py ``format_metric`` is the one figure start-up writes).  It
is imported here, on a thread of its own, once the first wave of requests has gone out (``AFTER``): the calls
wait on the network then, and the interpreter has nothing else to do.  Without it, the first candidates to come
back would import it themselves, each waiting for the first (a tenth of a second at idle, half a second on a
busy machine, for every candidate of the first wave), and the session's end would import the analyses and the
results while the user waits for them.

Under -n the controller makes no call, and builds the results at the end while every process waits for it
(each worker's exit waits for the controller's word): ``ResultsWarmUp`` imports what that needs once the first
item is reported, when the workers are past their start (which the import would slow, on the same cores) and
their calls are under way.

An import that fails here is left for its real user, who raises it where it says what failed.
"""

from __future__ import annotations

import importlib
import threading
import time

import pytest

#: What a process that runs calls needs when the first answers come back (engine/signals.py: numpy, the previews).
FOR_ANSWERS = ("pytest_hypeedit.engine.signals",)
#: What the session's end needs: the results (report/results.py) and the analyses (analysis/enrich.py), on the
#: process that builds them (one process: itself; under -n, the controller, which makes no call).
FOR_RESULTS = ("pytest_hypeedit.report.results", "pytest_hypeedit.analysis.enrich",
               "pytest_hypeedit.report.leaderboard_markdown", "pytest_hypeedit.report.serving_view")
#: Seconds after the pool starts: its first requests are built and sent first (a few tenths of a second for 64).
AFTER = 0.5


def warm_up(modules: tuple[str, ...], after: float = AFTER) -> threading.Thread:
    """Import ``modules`` on a daemon thread, ``after`` seconds from now (the thread, for a test to join)."""
    thread = threading.Thread(target=_import_all, args=(modules, after), name="hypeedit-warm-up", daemon=True)
    thread.start()
    return thread


def _import_all(modules: tuple[str, ...], after: float) -> None:
    time.sleep(after)
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - its real user imports it again and says what failed
            continue


class ResultsWarmUp:
    """(The xdist controller.)  ``FOR_RESULTS`` imported when the first item is reported."""

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.thread is None:
            self.thread = warm_up(FOR_RESULTS, after=0.0)
