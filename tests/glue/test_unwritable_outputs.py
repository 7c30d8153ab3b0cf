"""A run that cannot keep what it buys does not buy: the outputs, the cache and the run's state folder are proved
writable before the first paid call.  One usage error names the folder and what to do; nothing reaches the fake.

Root ignores file modes, so a folder is made unwritable in ways that hold for root too: a path under a regular
file (every user), or an immutable folder (``chattr +i`` as root, ``chmod`` otherwise).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from paid_benches import ark_bench

TASKS, REPEATS = 2, 2


@pytest.fixture
def ark_run(pytester: pytest.Pytester, monkeypatch, tmp_path):
    with ark_bench(pytester, monkeypatch, tmp_path, TASKS, REPEATS, lambda t, r: True) as fake:
        yield pytester, fake


def args(outputs: str = "out", *extra: str) -> list[str]:
    return ["--tasks", "mini.json", "--images-base", "images", "--repeats", str(REPEATS), "--outputs", outputs,
            "--model", "seedream-4.5", "--judge", "labels:r1.json", *extra]


def assert_not_accepted_unpaid(result, fake, folder_words: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([f"*cannot write into {folder_words}*: a run that cannot keep what it buys does not "
                                 "buy, and nothing was paid. Make it writable, or choose another with *"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert fake.seen("/images/generations") == []


@pytest.fixture
def read_only():
    """Make a folder fail writes, for root too; undone at the end (pytest must be able to delete it)."""
    made: list[tuple[Path, str]] = []

    def make(folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0 and shutil.which("chattr"):
            subprocess.run(["chattr", "+i", str(folder)], check=True, capture_output=True)
            made.append((folder, "chattr"))
        else:
            folder.chmod(0o555)
            made.append((folder, "chmod"))
        try:
            (folder / "probe").write_bytes(b"")
        except OSError:
            return folder
        pytest.skip("this machine cannot make a folder fail writes (root without chattr)")

    yield make
    for folder, how in reversed(made):
        if how == "chattr":
            subprocess.run(["chattr", "-i", str(folder)], check=False, capture_output=True)
        else:
            folder.chmod(0o755)


def test_outputs_under_a_regular_file_pay_nothing(ark_run):
    pytester, fake = ark_run
    (pytester.path / "blocker").write_text("a file where a folder should be")
    assert_not_accepted_unpaid(pytester.runpytest(*args("blocker/out")), fake, "the results folder blocker/out (Not a directory)")


def test_an_immutable_outputs_folder_pays_nothing_run_after_run(ark_run, read_only):
    pytester, fake = ark_run
    read_only(pytester.path / "out")
    for _ in range(2):  # each run used to pay for every candidate and throw it away
        result = pytester.runpytest(*args("out", "--results", "elsewhere/results.json"))
        assert_not_accepted_unpaid(result, fake, "the outputs folder out (")


def test_an_immutable_task_folder_inside_the_outputs_pays_nothing(ark_run, read_only):
    pytester, fake = ark_run
    read_only(pytester.path / "out" / "mini" / "seedream-4.5" / "task-01")
    result = pytester.runpytest(*args())
    assert_not_accepted_unpaid(result, fake, "the outputs folder out/mini/seedream-4.5/task-01 (")


def test_an_unwritable_cache_pays_nothing(ark_run, monkeypatch):
    pytester, fake = ark_run
    (pytester.path / "cachefile").write_text("not a folder")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(pytester.path / "cachefile" / "cache"))
    result = pytester.runpytest(*args())
    assert_not_accepted_unpaid(result, fake, "the cache folder")
    result.stderr.fnmatch_lines(["*--cache-dir DIR (or HYPEEDIT_CACHE_DIR)*"])


def test_a_replay_with_nothing_to_buy_may_read_a_read_only_outputs_folder(ark_run, read_only):
    pytester, fake = ark_run
    pytester.runpytest(*args()).assert_outcomes(passed=TASKS * REPEATS)
    paid = len(fake.seen("/images/generations"))
    read_only(pytester.path / "out")
    replay = pytester.runpytest(*args("out", "--results", "elsewhere/results.json"))
    replay.assert_outcomes(passed=TASKS * REPEATS)
    assert len(fake.seen("/images/generations")) == paid
    assert json.loads((pytester.path / "elsewhere" / "results.json").read_text())["complete"] is True
