"""Retirement in a run: a model past its shutdown date is not accepted before any call, one within 30 days is
warned about at the start of the run (visible under -q too), and a replay from disk still works. The clock is
moved through ``retirements.today``."""

from __future__ import annotations

import datetime as dt

import pytest
from benchdata import make_tasks, write_labels, write_split
from providers_fakes.openai import FakeOpenAI

from pytest_hypeedit import retirements

DAY = dt.date


REPEATS = 2


@pytest.fixture
def openai_run(pytester, monkeypatch, tmp_path):
    write_split(pytester.path, "mini", make_tasks(2), pytester.path / "images")
    write_labels(pytester.path / "r1.json",
                 {(f"task-{t:02d}", "gpt-image-1.5", r): True for t in range(2) for r in range(1, REPEATS + 1)})
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    with FakeOpenAI() as fake:
        monkeypatch.setenv(fake.env, fake.base)
        monkeypatch.setenv(fake.key_env, fake.key)
        yield pytester, fake


def run(pytester, *extra):
    return pytester.runpytest("--tasks", "mini.json", "--images-base", "images", "--repeats", str(REPEATS),
                              "--outputs", "out", "--model", "gpt-image-1.5", "--judge", "labels:r1.json", *extra)


def on(monkeypatch, day: dt.date) -> None:
    monkeypatch.setattr(retirements, "today", lambda: day)


def test_a_model_past_its_shutdown_is_a_usage_error_before_any_call(openai_run, monkeypatch):
    pytester, fake = openai_run
    on(monkeypatch, DAY(2026, 12, 2))
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--model gpt-image-1.5: openai shut down gpt-image-1.5 on 2026-12-01*"
                                 "run --model gpt-image-2.6-sunburst instead*"])
    assert fake.requests == []


def test_a_model_within_30_days_is_warned_about_at_the_start_even_under_q(openai_run, monkeypatch):
    pytester, fake = openai_run
    on(monkeypatch, DAY(2026, 11, 23))
    result = run(pytester, "-q")
    lines = result.stdout.lines
    warning = next(i for i, line in enumerate(lines) if "hypeedit: WARNING: gpt-image-1.5" in line)
    assert "shuts down on 2026-12-01, in 8 days" in lines[warning]
    first_item = next(i for i, line in enumerate(lines) if line.startswith(".") or "passed" in line)
    assert warning < first_item
    assert len(fake.seen("/images/edits")) == 2 * REPEATS


def test_after_the_shutdown_a_run_from_disk_still_works_and_calls_nothing(openai_run, monkeypatch):
    pytester, fake = openai_run
    on(monkeypatch, DAY(2026, 11, 23))
    run(pytester).assert_outcomes(passed=2 * REPEATS)
    on(monkeypatch, DAY(2026, 12, 2))
    calls = len(fake.requests)
    result = run(pytester)
    result.assert_outcomes(passed=2 * REPEATS)
    assert len(fake.requests) == calls and "WARNING" not in result.stdout.str()


def test_a_model_far_from_its_shutdown_gets_no_warning(openai_run, monkeypatch):
    pytester, _ = openai_run
    on(monkeypatch, DAY(2026, 9, 1))
    result = run(pytester)
    result.assert_outcomes(passed=2 * REPEATS)
    assert "shuts down" not in result.stdout.str()


def test_on_issue_24s_today_the_warning_names_the_successors_openai_names(openai_run, monkeypatch):
    pytester, fake = openai_run
    on(monkeypatch, DAY(2026, 11, 26))
    result = run(pytester, "-q")
    result.assert_outcomes(passed=2 * REPEATS)
    text = " ".join(result.stdout.str().split())
    assert "hypeedit: WARNING: gpt-image-1.5 (openai gpt-image-1.5) shuts down on 2026-12-01, in 5 days" in text
    assert "successors are gpt-image-2.6-sunburst or gpt-image-2.6-flare: run --model gpt-image-2.6-sunburst" in text
