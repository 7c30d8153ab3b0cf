"""Which model differences are real, end to end: three offline models on one split, two of them equal.

The labels judge gives each (task, model, repeat) a known verdict: "twin-a" and "twin-b" pass the same 18 of 24
tasks on every repeat, "weaker" passes 6 of those.  The pair that differs is significant after Holm's correction,
the equal pair is not; results.json carries ``pairwise`` (strict JSON) and the terminal says which pairs cannot be
told apart."""

from __future__ import annotations

import json

import pytest
from benchdata import make_tasks, write_labels, write_split
from fake_models import models_conftest

CONFTEST = models_conftest(route="offline", log=None, seed="request", models=tuple(
    {"name": name, "route": "offline", "provider_model": name, "price": 0.04} for name in ("twin-a", "twin-b", "weaker")))
TASKS, REPEATS = 24, 2
MODELS = ("twin-a", "twin-b", "weaker")


def passes(model: str, task: int) -> bool:
    if model == "weaker":
        return task % 4 == 1
    return task % 4 != 0


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path):
    pytester.makeconftest(CONFTEST)
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    verdicts = {(f"task-{t:02d}", m, r): passes(m, t)
                for t in range(TASKS) for m in MODELS for r in range(1, REPEATS + 1)}
    write_labels(pytester.path / "r1.json", verdicts)
    return pytester


def run(bench, *extra: str):
    models = [arg for name in MODELS for arg in ("--model", name)]
    return bench.runpytest("--tasks", "mini.json", "--images-base", "images", "--repeats", str(REPEATS),
                           "--outputs", "out", "--judge", "labels:r1.json", "-p", "no:randomly", *models, *extra)


def entry(found: list[dict], a: str, b: str, metric: str) -> dict:
    return next(e for e in found if {e["a"], e["b"]} == {a, b} and e["metric"] == metric)


def test_two_equal_models_and_one_that_differs(bench):
    result = run(bench)
    text = (bench.path / "out" / "results.json").read_text()
    data = json.loads(text, parse_constant=lambda name: pytest.fail(f"not strict JSON: {name}"))
    found = data["pairwise"]
    assert {e["split"] for e in found} == {"mini"}
    assert {e["metric"] for e in found} == {"pass_rate", "pass_at_4", "pass_at_10", "expected_attempts",
                                            "effective_cost", "hype_gap"}
    twins = entry(found, "twin-a", "twin-b", "pass_rate")
    assert twins["difference"] == 0.0 and twins["significant"] is False and twins["p_adjusted"] == 1.0
    for twin in ("twin-a", "twin-b"):
        differs = entry(found, twin, "weaker", "pass_rate")
        sign = 1 if differs["a"] == twin else -1
        assert sign * differs["difference"] == pytest.approx(0.5)  # 18/24 - 6/24
        assert differs["significant"] is True and differs["p_adjusted"] < 0.05
        low, high = differs["interval"]
        assert low <= differs["difference"] <= high
    assert any("indistinguishable on pass_rate (mini): twin-a ~ twin-b" in line for line in result.stdout.lines)
    assert not any("~ weaker" in line or "weaker ~" in line for line in result.stdout.lines)
    assert all(len(line) <= 100 for line in result.stdout.lines if "pass_rate" in line)
    markdown = (bench.path / "out" / "results.md").read_text()
    assert "Cannot be told apart on pass rate (paired over tasks, Holm-adjusted" in markdown
    assert "twin-a ~ twin-b." in markdown


def test_one_model_has_no_pairwise(bench):
    bench.runpytest("--tasks", "mini.json", "--images-base", "images", "--repeats", "1", "--outputs", "out",
                    "--judge", "labels:r1.json", "--model", "twin-a")
    assert "pairwise" not in json.loads((bench.path / "out" / "results.json").read_text())


def test_the_html_report_groups_the_models_that_cannot_be_told_apart(bench):
    run(bench, "--html", "rep/report.html")
    text = (bench.path / "rep" / "report.html").read_text()
    assert "Which differences are real" in text
    # best first: the twins share group a, the weaker model is apart
    row = text[text.index("<td>Pass rate</td>", text.index("Which differences are real")):]
    assert row.startswith('<td>Pass rate</td><td class="hx-group">a</td><td class="hx-group">a</td>'
                          '<td class="hx-group">b</td>')
