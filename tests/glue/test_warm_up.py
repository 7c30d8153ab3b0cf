"""glue/warm_up.py: a run imports numpy while its first calls wait, not before them."""

from __future__ import annotations

import sys

import pytest

from pytest_hypeedit.glue.warm_up import warm_up

START_PROBE = """
import pathlib, sys

def pytest_collection_finish(session):
    # configure and collection are over: what a run imported before its first call
    pathlib.Path("numpy-before-calls").write_text(str("numpy" in sys.modules))
"""


def test_a_run_imports_no_numpy_before_its_first_call(pytester, tmp_path):
    """numpy takes 0.1 s to import at idle and half a second on a busy machine, in every process of the run
    (each xdist worker too), before the first call could start; nothing before it needs numpy."""
    from benchdata import make_tasks, write_labels, write_split

    pytester.makeconftest(START_PROBE)
    write_split(pytester.path, "mini", make_tasks(1), pytester.path / "images")
    write_labels(pytester.path / "r.json", {("task-00", "identity", 1): True})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json", "--images-base", "images",
            "--repeats", "1", "--judge", "labels:r.json", "--outputs", "out")
    result.assert_outcomes(passed=1)  # the candidate's signals (numpy) were measured all the same
    assert (pytester.path / "numpy-before-calls").read_text() == "False"


def test_the_modules_are_imported_on_a_thread_of_their_own_after_the_delay():
    sys.modules.pop("json.tool", None)
    thread = warm_up(("json.tool", "pytest_hypeedit.glue.no_such_module"), after=0.0)
    thread.join(10)
    assert not thread.is_alive() and "json.tool" in sys.modules  # and the missing one was left for its user
    assert thread.daemon  # a process that must leave does not wait for it


def test_the_xdist_controller_warms_the_results_imports_once_at_its_first_report(monkeypatch):
    from pytest_hypeedit.glue import warm_up as module

    started = []
    monkeypatch.setattr(module, "warm_up", lambda modules, after: started.append((modules, after)) or object())
    plugin = module.ResultsWarmUp()
    for _ in range(3):
        plugin.pytest_runtest_logreport(None)  # type: ignore[arg-type]  # any report: the first one counts
    assert started == [(module.FOR_RESULTS, 0.0)]
