"""One model's PASS rate between two runs on the same tasks (``--baseline``): a first run whose loopback stand-in
(fake_models.ServingProvider) passes at 0.8, a second at 0.5 given the first's results as its baseline: the
between-runs comparison under ``serving.runs`` is significant, named in the terminal and the report; two runs
of equal serving (other coins) are not."""

from __future__ import annotations

import json

import pytest
from benchdata import make_tasks, write_split
from fake_judges import judges_conftest
from fake_models import models_conftest

SERVED = {"name": "served", "route": "serve-a", "provider_model": "served-v1", "price": 0.0}


def run(pytester, outputs: str, rate: float, salt: str, *extra: str):
    pytester.makeconftest(models_conftest("ServingProvider", (SERVED,), pass_rates={"serve-a": rate}, salt=salt)
                          + judges_conftest("PixelJudge"))
    return pytester.runpytest("-p", "no:cacheprovider", "--model", "served", "--tasks", "mini.json", "--images-base",
                              "images", "--repeats", "10", "--outputs", outputs, "--judge", "pixeljudge", *extra)


def two_runs(pytester, monkeypatch, tmp_path, first: float, second: float):
    write_split(pytester.path, "mini", make_tasks(12), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    run(pytester, "out1", first, "first run ")
    result = run(pytester, "out2", second, "second run ", "--baseline", "out1/results.json",
                 "--html", "rep/report.html")
    return result, json.loads((pytester.path / "out2" / "results.json").read_text())


def flat(result) -> str:
    return " ".join(result.stdout.str().split())


def test_a_run_passing_at_half_after_one_at_80_percent_is_a_significant_drift_between_runs(pytester, monkeypatch,
                                                                                            tmp_path):
    result, results = two_runs(pytester, monkeypatch, tmp_path, 0.8, 0.5)
    [entry] = results["serving"]["runs"]
    assert (entry["model"], entry["split"], entry["run_a"], entry["run_b"]) == ("served", "mini", "this run",
                                                                                "out1/results.json")
    assert entry["tasks"] == 12 and entry["judged_a"] == entry["judged_b"] == 120
    assert -0.5 < entry["difference"] < -0.1 and entry["significant"] and entry["interval"][1] < 0
    assert entry["difference"] == pytest.approx(results["rows"][0]["baseline"]["pass_rate"]["difference"])
    first = json.loads((pytester.path / "out1" / "results.json").read_text())
    day = first["serving"]["bought"]["last"][:10]
    assert entry["sentence"].startswith(f"served passed {abs(entry['difference']) * 100:.1f} points less in this run "
                                        f"than in the baseline run of {day} (paired over 12 tasks, p = ")
    assert entry["judges"]["a"]["judge"] == entry["judges"]["b"]["judge"] and not entry["judge_changed"]
    shown = flat(result)
    assert ("served (mini, 12 tasks; 120 and 120 verdicts): this run - out1/results.json: pass rate "
            f"{entry['difference'] * 100:+.1f} points") in shown
    assert entry["sentence"] in shown and "(runs: a change between two runs on the same tasks" in shown
    page = (pytester.path / "rep" / "report.html").read_text()
    assert "<h4>Between runs, on the same tasks</h4>" in page[page.index('id="hx-serving"'):]


def test_two_runs_of_equal_serving_are_not_reported_different(pytester, monkeypatch, tmp_path):
    result, results = two_runs(pytester, monkeypatch, tmp_path, 0.65, 0.65)
    [entry] = results["serving"]["runs"]
    assert entry["difference"] != 0  # other coins: the runs differ by chance, not by serving
    assert not entry["significant"] and entry["interval"][0] < 0 < entry["interval"][1] and "sentence" not in entry
    assert "this run - out1/results.json: pass rate" in flat(result) and ", not significant" in flat(result)
