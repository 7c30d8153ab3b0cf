"""The price line's time knows the tier (engine/estimate.py ``Stated``): a batch run is done within its provider's
stated window, not "about 12 s" one line below "results within hours"; a Flex judge's verdicts take Google's
target of 1-15 minutes each, not the standard tier's seconds."""

from __future__ import annotations

import pytest
from benchdata import make_tasks, write_split
from genai_fakes.fixtures import fake_gemini  # noqa: F401 - fixture
from tiny_batch import tiny_batch_bench

from pytest_hypeedit.engine.estimate import (
    FLEX_TARGET,
    GENERATION_SECONDS,
    VERDICT_SECONDS,
    Estimate,
    Purchase,
    batch_window,
    route_load,
)
from pytest_hypeedit.registry import RouteLimits, load_registry
from pytest_hypeedit.report.price_text import about, estimate_lines, price_lines, tier_lines


def hypeedit_lines(result) -> list[str]:
    return [line for line in result.outlines if line.startswith("hypeedit: ")]


# --------------------------------------------------------------------------- the figures (pure)


def test_a_batch_route_takes_its_providers_window_not_seconds_at_its_limits():
    load = route_load("openai", 20, RouteLimits(rpm=50, inflight=8), 32, GENERATION_SECONDS, batch_window("openai"))
    assert load.seconds == 24 * 3600 and load.least_seconds == 0
    estimate = Estimate((Purchase("gpt-image-2", "public", "openai", 20, 20, 1.9, 0.0),), (load,), 32)
    (line,) = price_lines(estimate)
    assert line.endswith("; within 24 h (OpenAI's batch window), each item waiting for its line of the batch")
    assert "about" not in line
    assert "hypeedit: route openai: 20 calls in batches: within 24 h (OpenAI's batch window)" in estimate_lines(estimate)
    nothing = route_load("openai", 0, RouteLimits(rpm=50, inflight=8), 32, GENERATION_SECONDS, batch_window("openai"))
    assert nothing.seconds == 0  # a route with nothing to buy waits for no window


def test_gemini_states_its_own_target_and_an_unknown_route_a_day():
    assert batch_window("gemini").high_s == 24 * 3600 and "48 h" in batch_window("gemini").source
    assert batch_window("plugin-route").high_s == 24 * 3600


def test_a_flex_judge_takes_one_to_fifteen_minutes_a_verdict_at_its_limits():
    # Planted: estimate() without judge_tier: 100 verdicts at 8 s each, 8 in flight: "about 100 s".
    standard = route_load("gemini-judge", 100, RouteLimits(inflight=8), 32, VERDICT_SECONDS)
    flex = route_load("gemini-judge", 100, RouteLimits(inflight=8), 32, VERDICT_SECONDS, FLEX_TARGET)
    assert standard.seconds == pytest.approx(100 * 8 / 8)
    assert flex.least_seconds == pytest.approx(100 * 60 / 8) and flex.seconds == pytest.approx(100 * 900 / 8)
    estimate = Estimate((Purchase("seedream-4.5", "public", "ark", 0, 100, 0.0, 0.5),), (flex,), 32)
    text = "; ".join(estimate_lines(estimate))
    assert (f"route gemini-judge: 100 calls, 8 in flight, no per-minute limit, Flex: 1-15 min a verdict, Google's "
            f"target: about {about(750)} to {about(11250)}") in text
    assert about(11250) == "3.1 h" and about(86400) == "24 h" and about(9000) == "2.5 h"


def test_the_tier_line_names_the_window():
    registry = load_registry()
    lines = tier_lines("batch", [registry.get("gpt-image-2"), registry.get("seedream-4.5")])
    assert "results within 24 h (OpenAI's batch window)" in lines[0] and "hours" not in lines[0]


# --------------------------------------------------------------------------- --estimate, end to end


def test_a_batch_estimate_says_the_window(pytester, monkeypatch, tmp_path):
    # Planted: glue/price_line.py not passing --tier to estimate(): "about 12 s at openai's limits".
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    result = pytester.runpytest(*tiny_batch_bench(pytester.path, "gpt-image-2", 2), "--tier", "batch", "--estimate")
    assert result.ret == 0, result.outlines
    lines = hypeedit_lines(result)
    bought = next(line for line in lines if "candidates to buy" in line)
    assert bought.endswith("within 24 h (OpenAI's batch window), each item waiting for its line of the batch")
    assert not any(" s at openai's limits" in line for line in lines), lines


def test_a_flex_judge_estimate_says_minutes_a_verdict(pytester, monkeypatch, tmp_path, fake_gemini):
    write_split(pytester.path, "mini", make_tasks(3), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    base = ["-p", "no:cacheprovider", "--model", "seedream-4.5", "--tasks", "mini.json", "--images-base", "images",
            "--repeats", "2", "--outputs", "out", "--judge", "gemini-3-flash-rubric", "--estimate"]
    standard = hypeedit_lines(pytester.runpytest(*base))
    flex = hypeedit_lines(pytester.runpytest(*base, "--judge-tier", "flex"))
    judge_line = next(line for line in flex if line.startswith("hypeedit: route gemini-judge: 6 calls"))
    assert "Flex: 1-15 min a verdict, Google's target: about" in judge_line, flex
    assert not any("Flex" in line for line in standard), standard
    assert fake_gemini.requests == []
