"""The end of the run (glue/session.py ``BenchmarkSession.finish``): ``pytest_hypeedit_results`` is for other
plugins, called once, after every built-in analysis, so a plugin sees the finished results whatever its hook order
(``tryfirst`` below: before the built-in steps were plain calls, it ran before the intervals and the agreement were
added) and what it adds is written; the details print before pytest's own short summary, the answer after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TINY = Path(__file__).resolve().parents[2] / "examples" / "tiny-split"
ARGS = ("--model", "identity", f"--tasks={TINY / 'tiny.json'}", f"--images-base={TINY / 'images'}",
        "--judge", f"labels:{TINY / 'rater1.json'}", "--outputs", "out", "--repeats", "2", "--bootstrap", "50",
        "--agreement", f"labels:{TINY / 'rater1.json'}", "--gate", "pass_rate>=0.1")
THIRD_PARTY = """
import json, os
import pytest

@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_hypeedit_results(config, results):
    seen = {"keys": sorted(results), "row": sorted(results["rows"][0])}
    with open(os.environ["SEEN_LOG"], "a") as log:
        log.write(json.dumps(seen) + "\\n")
    results["third_party"] = {"rows": len(results["rows"])}
"""


@pytest.fixture
def env(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SEEN_LOG", str(tmp_path / "seen.log"))
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    return tmp_path


def test_a_third_party_plugin_sees_the_finished_results_once_and_its_key_is_written(pytester, env):
    pytester.makeconftest(THIRD_PARTY)
    pytester.runpytest(*ARGS)
    calls = [json.loads(line) for line in (env / "seen.log").read_text().splitlines()]
    assert len(calls) == 1  # once, on the controller
    seen = calls[0]
    assert {"rows", "coverage", "judge_versions", "agreement"} <= set(seen["keys"])  # the built-in steps are done
    assert {"intervals", "task_tallies", "pass_rate"} <= set(seen["row"])  # every row's intervals too
    results = json.loads((pytester.path / "out" / "results.json").read_text())
    assert results["third_party"] == {"rows": len(results["rows"])}  # what it added is in the file
    assert list(results)[-1] == "third_party"  # added last: after every built-in key


def test_the_details_come_before_pytests_short_summary_and_the_answer_after_it(pytester, env):
    result = pytester.runpytest(*ARGS, "-rf")
    lines = result.outlines

    def at(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)

    assert at("95% intervals over tasks") < at("judge vs human panel (--agreement)") < at("short test summary info")
    assert at("short test summary info") < at("FAILED hypeedit::") < at("HYPE-EDIT-1 results") < at("HYPE-EDIT-1 gates")
    assert sum("95% intervals over tasks" in line for line in lines) == 1  # printed once
