"""The price before paying (issue 23): a paid run's first line says what it will buy, the most that can cost and
about how long it takes; ``--estimate`` prints the same per model and route and exits 0 having called nothing.

Real runs of the plugin against a loopback ModelArk (seedream-4.5 at its list price, $0.04 a candidate, no
per-reference fee) judged by the Gemini rubric judge against a loopback Gemini API.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from benchdata import make_tasks, write_split
from genai_fakes.fixtures import fake_gemini  # noqa: F401 - fixture
from genai_fakes.gemini import verdict_reply
from providers_fakes.ark import FakeArk

from pytest_hypeedit.engine.estimate import (
    GENERATION_SECONDS,
    Estimate,
    Purchase,
    RouteLoad,
    route_load,
)
from pytest_hypeedit.judges import JudgeOptions, builtin_judge
from pytest_hypeedit.judges.base import JudgeRequest
from pytest_hypeedit.registry import RouteLimits
from pytest_hypeedit.report.price_text import about, estimate_lines, price_lines
from pytest_hypeedit.tasks import Task

TASKS, REPEATS, PRICE = 3, 2, 0.04


@pytest.fixture
def ark_run(pytester: pytest.Pytester, monkeypatch, tmp_path, fake_gemini):
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    fake_gemini.default = verdict_reply("PASS", "judged by the fake")
    with FakeArk() as ark:
        monkeypatch.setenv("HYPEEDIT_ARK_BASE_URL", ark.base)
        monkeypatch.setenv("ARK_API_KEY", ark.key)
        yield pytester, ark, fake_gemini


def args(*extra: str) -> list[str]:
    return ["-p", "no:cacheprovider", "--model", "seedream-4.5", "--tasks", "mini.json", "--images-base", "images",
            "--repeats", str(REPEATS), "--outputs", "out", "--judge", "gemini-3-flash-rubric", *extra]


def judge_worst_case(tasks=range(TASKS)) -> float:
    """What the rubric judge reserves for one verdict of each task, summed over the repeats (its own formula is
    tested by hand in test_worst_case.py)."""
    judge = builtin_judge("gemini-3-flash-rubric", None, JudgeOptions())
    total = 0.0
    for task in make_tasks(TASKS):
        if int(task["task_id"][-2:]) in tasks:
            spec = Task(task["task_id"], ("001.png",), ("edit",), task["instruction"], 640, 480, "mini")
            request = JudgeRequest(spec, "seedream-4.5", 1, Path("c.png"), (Path("r.png"),))
            total += REPEATS * judge.worst_case_cost(request)
    return total


def hypeedit_lines(result) -> list[str]:
    return [line for line in result.outlines if line.startswith("hypeedit: ")]


def test_estimate_prints_the_price_and_calls_nothing(ark_run, monkeypatch):
    pytester, ark, gemini = ark_run
    monkeypatch.delenv("ARK_API_KEY")  # an estimate needs no key
    monkeypatch.delenv("GEMINI_API_KEY")
    result = pytester.runpytest(*args("--estimate"))
    assert result.ret == 0, result.outlines
    assert ark.requests == [] and gemini.requests == []
    assert not (pytester.path / "out" / "mini").exists()  # nothing bought, nothing written
    lines = hypeedit_lines(result)
    generation, judge = TASKS * REPEATS * PRICE, judge_worst_case()
    assert judge > 0
    assert lines[0] == (f"hypeedit: {TASKS * REPEATS} candidates to buy for seedream-4.5 (mini): at most "
                        f"${generation:.2f} generation + ${judge:.2f} judge; about 12 s at ark's limits (8 in flight)")
    assert f"hypeedit: route ark: {TASKS * REPEATS} calls, 8 in flight, 120/min, about 15 s a call: about 12 s" in lines
    assert any(line.startswith("hypeedit: route gemini-judge: 6 calls") for line in lines), lines
    assert lines[-1].startswith("hypeedit: --estimate: nothing was paid for and no provider was called")
    assert not [line for line in result.outlines if "passed" in line or "failed" in line]


def test_estimate_under_xdist_prints_once_and_starts_no_worker(ark_run):
    pytester, ark, gemini = ark_run
    result = pytester.runpytest(*args("--estimate", "-n", "2"))
    assert result.ret == 0, result.outlines
    assert ark.requests == [] and gemini.requests == []
    assert len([line for line in hypeedit_lines(result) if "candidates to buy" in line]) == 1
    # xdist says "created: 2/2 workers" and "[gw0] ..." when it starts workers (the rootdir may hold "gw1" when
    # this suite itself runs under -n)
    assert not [line for line in result.outlines if re.search(r"\[gw\d|\bworkers\b", line)], result.outlines


def test_a_paid_run_starts_with_its_price_and_the_next_estimate_sees_the_disk(ark_run):
    pytester, ark, _gemini = ark_run
    first = pytester.runpytest(*args("-k", "task-00"))  # 2 of the 6 candidates
    first.assert_outcomes(passed=REPEATS)
    [line] = [line for line in first.outlines if "candidates to buy" in line]
    assert line.startswith(f"hypeedit: {REPEATS} candidates to buy for seedream-4.5 (mini): at most "
                           f"${REPEATS * PRICE:.2f} generation + ${judge_worst_case([0]):.2f} judge; about ")
    # the price comes before any item's result, and before the results table
    assert first.outlines.index(line) < min(i for i, text in enumerate(first.outlines) if "PASSED" in text
                                            or re.search(r"\.\.\s+\[", text) or "HYPE-EDIT-1 results" in text)
    paid = len(ark.seen("/images/generations"))
    assert paid == REPEATS

    later = pytester.runpytest(*args("--estimate"))
    assert len(ark.seen("/images/generations")) == paid  # the estimate called nothing
    left = (TASKS - 1) * REPEATS
    assert hypeedit_lines(later)[0].startswith(f"hypeedit: {left} candidates to buy for seedream-4.5 (mini): at "
                                               f"most ${left * PRICE:.2f} generation + "
                                               f"${judge_worst_case([1, 2]):.2f} judge")


def test_a_paid_run_under_xdist_states_its_price_once(ark_run):
    pytester, _ark, _gemini = ark_run
    result = pytester.runpytest(*args("-n", "2"))
    result.assert_outcomes(passed=TASKS * REPEATS)
    lines = [line for line in result.outlines if "candidates to buy" in line]
    assert lines == [(f"hypeedit: {TASKS * REPEATS} candidates to buy for seedream-4.5 (mini): at most "
                      f"${TASKS * REPEATS * PRICE:.2f} generation + ${judge_worst_case():.2f} judge; about 12 s at "
                      "ark's limits (8 in flight)")]


def test_the_ini_key_asks_for_the_estimate_too(ark_run):
    pytester, ark, gemini = ark_run
    result = pytester.runpytest(*args("-o", "hypeedit_estimate=true"))
    assert result.ret == 0 and ark.requests == [] and gemini.requests == []
    assert hypeedit_lines(result)[0].startswith(f"hypeedit: {TASKS * REPEATS} candidates to buy")


def test_a_replay_from_disk_states_no_price(ark_run):
    pytester, _ark, _gemini = ark_run
    pytester.runpytest(*args()).assert_outcomes(passed=TASKS * REPEATS)
    again = pytester.runpytest(*args())
    assert not [line for line in again.outlines if "candidates to buy" in line]
    assert hypeedit_lines(pytester.runpytest(*args("--estimate")))[0] == \
        "hypeedit: nothing to buy: every candidate of the run and its verdict are on disk ($0.00)"
    # --rejudge: every candidate is on disk, every verdict is paid for again
    assert hypeedit_lines(pytester.runpytest(*args("--estimate", "--rejudge")))[0].startswith(
        f"hypeedit: 0 candidates to buy and {TASKS * REPEATS} verdicts for seedream-4.5 (mini): at most $0.00 "
        f"generation + ${judge_worst_case():.2f} judge; about ")


# --------------------------------------------------------------------------- the figures (pure)


def test_the_time_is_the_slowest_of_the_slots_and_the_rate():
    slots = route_load("ark", 500, RouteLimits(rpm=120, inflight=8), 32, GENERATION_SECONDS)
    assert slots.inflight == 8 and slots.seconds == pytest.approx(500 * 15 / 8)  # 937 s: the slots hold it
    rate = route_load("openai", 500, RouteLimits(rpm=10, inflight=8), 32, GENERATION_SECONDS)
    assert rate.seconds == pytest.approx(500 * 6)  # 10 a minute
    capped = route_load("bfl", 500, RouteLimits(inflight=64), 32, GENERATION_SECONDS)
    assert capped.inflight == 32  # --concurrency caps every route
    assert about(40) == "40 s" and about(937) == "16 min" and about(9000) == "2.5 h"


def test_several_models_get_a_line_each_and_one_for_the_run():
    loads = (RouteLoad("ark", 1000, 8, 120.0, 15.0), RouteLoad("bfl", 500, 24, 60.0, 15.0),
             RouteLoad("gemini-judge", 1500, 32, None, 8.0))
    estimate = Estimate((Purchase("seedream-4.5", "public", "ark", 500, 500, 20.0, 1.25),
                         Purchase("seedream-4.0", "public", "ark", 500, 500, 15.0, 1.25),
                         Purchase("flux-2-max", "public", "bfl", 500, 500, 50.0, 1.25)), loads, 32)
    lines = price_lines(estimate)
    assert lines[0] == ("hypeedit: 500 candidates to buy for seedream-4.5 (public): at most $20.00 generation + "
                        "$1.25 judge; about 16 min at ark's limits (8 in flight)")
    assert lines[2].endswith("about 8 min at bfl's limits (24 in flight, 60/min)")  # the rate holds bfl
    assert lines[3] == ("hypeedit: in all: 1500 candidates to buy: at most $85.00 generation + $3.75 judge; "
                        "about 31 min at ark's limits (8 in flight)")  # two models share ark's 8 slots
    assert len(estimate_lines(estimate)) == 4 + 3 + 1
