"""A pytest plugin for bench_providers.py --timeline: when each phase of a pytest process began and ended.

Loaded with ``-p benchclock`` (the bench puts this folder on PYTHONPATH) in the pytest process and, under -n, in
every worker; each process appends ``<pid> <role> <event> <time.time()>`` lines to the file named by
``HYPEEDIT_BENCH_CLOCK``.  It reads nothing of the plugin's and changes nothing: it only writes down when pytest's
own hooks ran, so the bench can say where a run's seconds went before its first call and after its last verdict.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from typing import Any, Generator

import pytest

_PATH = os.environ.get("HYPEEDIT_BENCH_CLOCK")
_ROLE = "worker" if os.environ.get("PYTEST_XDIST_WORKER") else "main"


def mark(event: str) -> None:
    if _PATH:
        with open(_PATH, "a", encoding="utf-8") as out:  # one short line per write: appends do not interleave
            out.write(f"{os.getpid()} {_ROLE} {event} {time.time():.4f}\n")


mark("plugin-imported")  # pytest and its own plugins are imported by now; ours are not yet configured
atexit.register(lambda: mark("exit"))


def _wrap(name: str) -> Any:
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def hook() -> Generator[None, Any, None]:  # pluggy passes a hook only the arguments it names: none
        mark(f"{name}-start")
        yield
        mark(f"{name}-end")

    hook.__name__ = name
    return hook


for _hook in ("pytest_sessionstart", "pytest_collection", "pytest_runtestloop",
              "pytest_sessionfinish", "pytest_unconfigure"):
    setattr(sys.modules[__name__], _hook, _wrap(_hook))

@pytest.hookimpl(tryfirst=True)  # historic: no wrapper; the session's start is the end of every configure
def pytest_configure() -> None:
    mark("pytest_configure-start")


_reported: list[float] = []  # when each item of this process was reported


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """The first and the last item reported by this process (the controller's too, under -n)."""
    if report.when == "teardown":
        _reported.append(time.time())
        if len(_reported) == 1:
            mark("first-item-reported")
        mark("last-item-reported")  # the last line of this event is the last item's
