"""--budget is a cap on what the providers charge: each call reserves the most it can cost, the judge's calls
included, and what is charged at the fakes never passes the budget.

Real runs of the plugin against a loopback BFL that charges FLUX.2 [max]'s per-megapixel price with every
reference image counted (the case that once spent $0.66 against --budget 0.5), judged by the real Gemini judge
against a loopback Gemini API whose replies report token usage (charged at the judge's token prices).
"""

from __future__ import annotations

import json

import pytest
from benchdata import make_tasks, write_split
from fake_models import fast_retries_conftest
from genai_fakes.fixtures import fake_gemini  # noqa: F401 - fixture
from genai_fakes.gemini import _usage, verdict_reply
from providers_fakes.bfl import FakeBfl, bfl_credits
from terminal_text import said

from pytest_hypeedit.judges.gemini import FLASH_MODEL, PRICES

TASKS, REPEATS, REFERENCES = 4, 2, 3
FAST = fast_retries_conftest(max_attempts=2, max_delay=0.02)
FAST_POLLS = "models:\n  flux-2-max: {options: {poll_s: 0.01, poll_max_s: 0.05, max_wait_s: 30}}\n"
#: What each verdict's reply reports, and so what the judge's fake charges for it.
USAGE = {"prompt": 3000, "candidates": 200, "thoughts": 500}
JUDGE_PRICE = USAGE["prompt"] * PRICES[FLASH_MODEL][0] + (USAGE["candidates"] + USAGE["thoughts"]) * PRICES[FLASH_MODEL][1]


@pytest.fixture
def paid(pytester: pytest.Pytester, monkeypatch, tmp_path, fake_gemini):
    pytester.makeconftest(FAST)
    (pytester.path / "fast.yaml").write_text(FAST_POLLS)
    tasks = [{**task, "input_images": [f"{n:03d}.png" for n in range(1, REFERENCES + 1)]} for task in make_tasks(TASKS)]
    write_split(pytester.path, "mini", tasks, pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    fake_gemini.default = verdict_reply("PASS", "judged by the fake", usage=_usage(**USAGE))
    with FakeBfl(credits=bfl_credits) as bfl:
        monkeypatch.setenv("HYPEEDIT_BFL_BASE_URL", bfl.base)
        monkeypatch.setenv("BFL_API_KEY", bfl.key)
        yield pytester, bfl, fake_gemini


def args(*extra: str) -> list[str]:
    return ["-p", "no:cacheprovider", "--model", "flux-2-max", "--tasks", "mini.json", "--images-base", "images",
            "--repeats", str(REPEATS), "--outputs", "out", "--judge", "gemini-3-flash-rubric",
            "--models-file", "fast.yaml", *extra]


def charged(bfl, gemini) -> tuple[float, float]:
    """(USD charged by the image model, USD charged by the judge), as the fakes count them."""
    return sum(bfl.charged) * 0.01, len(gemini.requests) * JUDGE_PRICE


def row(pytester) -> dict:
    return json.loads((pytester.path / "out" / "results.json").read_text())["rows"][0]


@pytest.mark.parametrize("budget, workers", [(0.45, ()), (0.5, ()), (1.0, ("-n", "2"))])
def test_what_the_fakes_charge_never_passes_the_budget(paid, budget, workers):
    pytester, bfl, gemini = paid
    result = pytester.runpytest(*args("--budget", str(budget), *workers))
    generation, judge = charged(bfl, gemini)
    assert generation + judge <= budget
    # each candidate here costs 0.16 (1 MP out + 3 references): some were bought and judged, the rest skipped
    assert bfl.charged and set(bfl.charged) == {16.0} and len(gemini.requests) == len(bfl.charged)
    outcomes = result.parseoutcomes()
    assert outcomes["skipped"] == TASKS * REPEATS - len(bfl.charged)
    spent = row(pytester)
    assert spent["spent"] == pytest.approx(generation + judge)
    assert spent["spent_breakdown"]["generation"] == pytest.approx(generation)
    assert spent["spent_breakdown"]["judge"] == pytest.approx(judge)


def test_budget_zero_makes_no_paid_judge_call_even_with_rejudge(paid):
    pytester, bfl, gemini = paid
    pytester.runpytest(*args()).assert_outcomes(passed=TASKS * REPEATS)
    calls = (len(bfl.charged), len(gemini.requests))
    assert calls == (TASKS * REPEATS, TASKS * REPEATS)
    again = pytester.runpytest(*args("--budget", "0", "--rejudge", "-rs"))
    again.assert_outcomes(skipped=TASKS * REPEATS)
    assert (len(bfl.charged), len(gemini.requests)) == calls  # nothing more paid, to either
    again.stdout.fnmatch_lines(["*--budget 0 USD reached: judge gemini-3-flash-rubric on flux-2-max * could cost up to*"])
    # a run that judged nothing is not complete: its results go beside the complete run's, never over them
    partial = json.loads((pytester.path / "out" / "results.partial.json").read_text())["rows"][0]
    assert partial["spent_this_run"] == 0
    assert row(pytester)["spent_this_run"] > 0  # the complete run's file, kept


def test_spent_counts_the_judge_and_shows_it_apart(paid):
    pytester, bfl, gemini = paid
    result = pytester.runpytest(*args())
    generation, judge = charged(bfl, gemini)
    spent = row(pytester)
    assert spent["spent_breakdown"] == {"generation": pytest.approx(generation), "judge": pytest.approx(judge),
                                        "resubmitted": 0, "possibly_paid": 0}
    assert spent["spent"] == pytest.approx(generation + judge)
    said(result, f"spent ${generation + judge:.2f} (${generation + judge:.2f} in this run; generation "
                 f"${generation:.2f}, judge ${judge:.2f})")
