"""A small benchmark for plugin-level tests of gates, statistics, junit and the HTML report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchdata import make_tasks, write_labels, write_split
from fake_judges import judges_conftest
from fake_models import models_conftest

#: The flaky model (task-00 repeat 1 fails with a 503 while $FLAKY is set) and fake_judges.HtmlJudge (odd repeats
#: fail, with a reasoning full of HTML).
CONFTEST = models_conftest(route="flaky", flaky="FLAKY", seed=1234, log=None, models=(
    {"name": "flaky", "route": "flaky", "provider_model": "flaky-v1", "price": 0.05},)) + judges_conftest("HtmlJudge")

SCRIPT_INSTRUCTION = "<script>alert(1)</script> Remove the car."


def setup_bench(pytester, monkeypatch, tmp_path, tasks: int = 4, repeats: int = 3, passed=None) -> None:
    """Split 'mini' (task-01 has a script tag in its instruction) and a labels file r1.json."""
    pytester.makeconftest(CONFTEST)
    task_list = make_tasks(tasks)
    task_list[1]["instruction"] = SCRIPT_INSTRUCTION
    write_split(pytester.path, "mini", task_list, pytester.path / "images")
    passed = passed or (lambda t, m, r: (t + r) % 3 == 0)
    labels = {(f"task-{t:02d}", m, r): passed(t, m, r) for t in range(tasks) for m in ("identity", "flaky")
              for r in range(1, repeats + 1)}
    write_labels(pytester.path / "r1.json", labels)
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def bench(pytester, monkeypatch, tmp_path):
    """The pytester folder set up by :func:`setup_bench` (import it into a test module as a fixture)."""
    setup_bench(pytester, monkeypatch, tmp_path)
    return pytester


def html_run(bench, *extra):
    """A run judged by htmljudge (it fails odd repeats: repeats 1 and 3 of 4 tasks, 8 failures) with its report
    at rep/report.html."""
    return bench.runpytest(*args("--html", "rep/report.html", *extra, judge="htmljudge"))


def args(*extra: str, repeats: int = 3, model: str = "identity", judge: str = "labels:r1.json") -> list[str]:
    return ["-p", "no:cacheprovider", "--model", model, "--tasks", "mini.json", "--images-base", "images",
            "--repeats", str(repeats), "--outputs", "out", "--judge", judge, *extra]


def results(pytester, name: str = "out/results.json") -> dict:
    return json.loads((Path(pytester.path) / name).read_text())
