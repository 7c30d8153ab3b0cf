"""Is a model served the same everywhere: one model bought through two routes (``--model NAME@ROUTE``), and a model
whose pass rate falls with its replies' latency, on loopback stand-ins (fake_models.ServingProvider: a seeded coin
per route, task and repeat, so a run's verdicts are the same every time; fake_judges.PixelJudge reads them)."""

from __future__ import annotations

import json

import pytest
from benchdata import make_tasks, write_split
from fake_judges import judges_conftest
from fake_models import models_conftest

SERVED = {"name": "served", "route": "serve-a", "provider_model": "served-v1", "price": 0.0,
          "routes": {"serve-b": {"provider_model": "served-v1"}}}


def bench(pytester, monkeypatch, tmp_path, tasks: int, **knobs) -> pytest.Pytester:
    pytester.makeconftest(models_conftest("ServingProvider", (SERVED,), **knobs) + judges_conftest("PixelJudge"))
    write_split(pytester.path, "mini", make_tasks(tasks), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    return pytester


def run(pytester, *models, repeats: int = 10, extra: tuple[str, ...] = ()):
    arguments = [part for model in models for part in ("--model", model)]
    return pytester.runpytest("-p", "no:cacheprovider", *arguments, "--tasks", "mini.json", "--images-base", "images",
                              "--repeats", str(repeats), "--outputs", "out", "--judge", "pixeljudge", *extra)


def serving(pytester) -> dict:
    return json.loads((pytester.path / "out" / "results.json").read_text())["serving"]


def flat(result) -> str:
    """The terminal's text with its folded lines joined."""
    return " ".join(result.stdout.str().split())


def pass_rate_entry(found: dict) -> dict:
    return next(entry for entry in found["routes"] if entry["metric"] == "pass_rate")


def test_two_routes_passing_at_80_and_50_percent_differ_significantly(pytester, monkeypatch, tmp_path):
    bench(pytester, monkeypatch, tmp_path, 12, pass_rates={"serve-a": 0.8, "serve-b": 0.5})
    result = run(pytester, "served", "served@serve-b",
                 extra=("--gate", "served@serve-b:pass_rate>=0.7", "--gate", "served@mini:pass_rate>=0.7"))
    result.stdout.fnmatch_lines(["FAIL gate 'served@serve-b:pass_rate>=0.7' on served@serve-b (mini)*",
                                 "PASS gate 'served@mini:pass_rate>=0.7' on served (mini)*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    results = json.loads((pytester.path / "out" / "results.json").read_text())
    assert [(row["model"], row["release"]["route"]) for row in results["rows"]] == [
        ("served", "serve-a"), ("served@serve-b", "serve-b")]
    assert (pytester.path / "out" / "mini" / "served@serve-b").is_dir()  # its own folder, its own release
    assert results["rows"][0]["release"]["id"] != results["rows"][1]["release"]["id"]
    entry = pass_rate_entry(results["serving"])
    assert (entry["a"], entry["b"], entry["route_a"], entry["route_b"]) == ("served", "served@serve-b", "serve-a",
                                                                            "serve-b")
    assert 0.2 < entry["difference"] < 0.4 and entry["significant"] and entry["tasks"] == 12
    assert entry["interval"][0] > 0
    assert {e["metric"] for e in results["serving"]["routes"]} >= {"pass_rate", "latency_s"}
    # the title names what the section holds: the routes, and drift too when the run's timing showed some
    drift = any(e.get("significant") and e.get("sentence") for e in results["serving"].get("drift", []))
    title = "routes and drift" if drift else "routes"
    result.stdout.fnmatch_lines([f"*serving: {title} (not a model's score; results: serving)*"])
    shown = (f"served via serve-a vs via serve-b (served - served@serve-b, mini, 12 tasks): pass rate "
             f"+{entry['difference'] * 100:.1f} points [+{entry['interval'][0] * 100:.1f}, "
             f"+{entry['interval'][1] * 100:.1f}], significant;")
    assert shown in flat(result)


def test_two_equal_routes_are_not_reported_different(pytester, monkeypatch, tmp_path):
    bench(pytester, monkeypatch, tmp_path, 12, pass_rates={"serve-a": 0.65, "serve-b": 0.65})
    result = run(pytester, "served@serve-a", "served@serve-b")
    entry = pass_rate_entry(serving(pytester))
    assert (entry["a"], entry["b"]) == ("served@serve-a", "served@serve-b")
    assert not entry["significant"] and entry["interval"][0] < 0 < entry["interval"][1]
    assert "served via serve-a vs via serve-b (served@serve-a - served@serve-b, mini, 12 tasks): pass rate" in flat(result)
    assert ", not significant; latency" in flat(result)


def test_a_route_the_model_does_not_have_is_a_usage_error_naming_its_routes(pytester, monkeypatch, tmp_path):
    bench(pytester, monkeypatch, tmp_path, 2)
    result = run(pytester, "served@serve-c", repeats=1)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--model served@serve-c: model served has no route 'serve-c'; its routes: serve-a, "
                                 "serve-b*"])


def test_a_pass_rate_that_falls_with_latency_is_found(pytester, monkeypatch, tmp_path):
    bench(pytester, monkeypatch, tmp_path, 10, pass_rates={"serve-a": 0.9}, slow_s=0.25, slow_pass_rate=0.1)
    result = run(pytester, "served", repeats=6, extra=("--html", "rep/report.html"))
    entry = next(e for e in serving(pytester)["drift"] if e["by"] == "latency")
    assert entry["candidates"] == 60 and entry["tasks"] == 10
    page = (pytester.path / "rep" / "report.html").read_text()
    section = page[page.index('id="hx-serving"'):]
    assert "<h4>served: PASS rate by third</h4>" in section and "slowest: " in section
    assert entry["significant"] and entry["difference"] < -0.5 and entry["interval"][1] < 0
    assert [third["third"] for third in entry["thirds"]] == ["fastest", "middle", "slowest"]
    result.stdout.fnmatch_lines(["*serving: drift (not a model's score; results: serving)*"])
    assert (f"served passed {abs(entry['difference']) * 100:.0f} points less in the slowest third of replies than in "
            "the fastest (task-adjusted") in flat(result)
    assert "(latency: latency is a proxy for the provider's load" in flat(result)


def test_a_flat_pass_rate_is_no_drift_and_prints_nothing(pytester, monkeypatch, tmp_path):
    bench(pytester, monkeypatch, tmp_path, 10, pass_rates={"serve-a": 0.6}, slow_s=0.25)
    result = run(pytester, "served", repeats=6)
    entries = serving(pytester)["drift"]
    assert {e["by"] for e in entries} == {"time", "latency"}
    assert not any(e.get("significant") for e in entries)
    assert serving(pytester)["routes"] == []
    assert "serving: " not in result.stdout.str()
