"""A whole run with ``--judge-tier flex`` against the loopback Gemini fake that speaks Flex as google-genai sends
it: every verdict is asked and billed at Flex, the results' judge spend is what the server billed, shed requests
are retried (on Flex) and nothing is paid twice; a rerun pays nothing; without the option nothing changes; a
judge without Flex and the batch tier are not accepted before anything is paid."""

from __future__ import annotations

import json

import pytest
from benchdata import make_tasks, write_split
from genai_fakes.fixtures import fake_gemini  # noqa: F401 - fixture
from genai_fakes.gemini import verdict_reply
from upstream_stub import upstream_stub  # noqa: F401 - fixture

import pytest_hypeedit.transport.http as http_module

TASKS = 3


@pytest.fixture
def bench(pytester, upstream_stub, fake_gemini, monkeypatch):
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    fake_gemini.default = verdict_reply("FAIL", "Nothing was edited.")
    monkeypatch.setattr(http_module, "pause", lambda seconds: None)  # the policy's backoff, not slept here
    return pytester


def run(bench, *extra: str):
    return bench.runpytest("-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json",
                           "--images-base", "images", "--repeats", "1", "--outputs", "out", *extra)


def results_of(bench) -> dict:
    return json.loads((bench.path / "out" / "results.json").read_text())


def records_of(bench) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((bench.path / "out" / "mini" / "identity").glob("*/001.json"))]


def test_a_flex_run_bills_every_verdict_at_flex_retries_shed_requests_and_pays_nothing_twice(bench, fake_gemini):
    fake_gemini.shed = 2
    result = run(bench, "--judge-tier", "flex")
    result.assert_outcomes(failed=TASKS)
    asked = [r.json.get("serviceTier") for r in fake_gemini.requests]
    assert asked == ["flex"] * (TASKS + 2)  # the two shed requests asked again, on Flex
    assert len(fake_gemini.bills) == TASKS and {b["tier"] for b in fake_gemini.bills} == {"flex"}
    row = results_of(bench)["rows"][0]
    assert row["spend_by_tier"]["judge"] == {"flex": pytest.approx(fake_gemini.billed_usd(), abs=1e-6)}
    assert row["spent_breakdown"]["judge"] == pytest.approx(fake_gemini.billed_usd(), abs=1e-6)
    assert results_of(bench)["settings"]["judge_tier"] == "flex"
    assert {r["judge_tier"] for r in records_of(bench)} == {"flex"}
    assert "judge flex $" in result.stdout.str()  # the terminal says what was spent at which tier
    summary = result.stdout.lines[next(i for i, line in enumerate(result.stdout.lines) if "HYPE-EDIT-1 results" in line):]
    assert max(len(line) for line in summary[1:]) <= 100  # the summary keeps to the terminal's 100 columns

    again = run(bench, "--judge-tier", "flex")  # the verdicts are on disk: nothing is asked again
    again.assert_outcomes(failed=TASKS)
    assert len(fake_gemini.requests) == TASKS + 2 and len(fake_gemini.bills) == TASKS


def test_without_the_option_nothing_changes(bench, fake_gemini):
    result = run(bench)
    result.assert_outcomes(failed=TASKS)
    assert all("serviceTier" not in r.json for r in fake_gemini.requests)
    row = results_of(bench)["rows"][0]
    assert row["spend_by_tier"]["judge"] == {"standard": pytest.approx(fake_gemini.billed_usd("standard"), abs=1e-6)}
    assert row["effective_cost"] == row["effective_cost_list"] and row["cost_per_candidate_paid"] == row[
        "cost_per_candidate"]
    assert {r["judge_tier"] for r in records_of(bench)} == {"standard"}
    assert "spend by tier" not in result.stdout.str()


def test_flex_or_standard_falls_back_only_for_a_verdict_flex_kept_shedding(bench, fake_gemini):
    fake_gemini.shed = 5  # the run's policy tries five times: the first verdict is shed throughout
    result = run(bench, "--judge-tier", "flex-or-standard", "--concurrency", "1")
    result.assert_outcomes(failed=TASKS)
    tiers = sorted(b["tier"] for b in fake_gemini.bills)
    assert tiers == ["flex"] * (TASKS - 1) + ["standard"]
    row = results_of(bench)["rows"][0]
    assert row["spend_by_tier"]["judge"] == {
        "standard": pytest.approx(fake_gemini.billed_usd("standard"), abs=1e-6),
        "flex": pytest.approx(fake_gemini.billed_usd("flex"), abs=1e-6)}
    assert sorted(r["judge_tier"] for r in records_of(bench)) == tiers


def test_a_judge_without_flex_does_not_accept_it_by_name_before_anything_is_paid(bench, fake_gemini):
    (bench.path / "rater.json").write_text(json.dumps({"schema_version": 2, "models": {}, "judgements": {}}))
    result = run(bench, "--judge", "labels:rater.json", "--judge-tier", "flex")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--judge-tier flex: judge labels* has only the tier(s) standard*"])
    assert not fake_gemini.requests and not (bench.path / "out" / "mini").exists()


def test_the_batch_tier_is_not_accepted_naming_the_tiers_there_are(bench, fake_gemini):
    result = bench.runpytest("-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json",
                             "--images-base", "images", "--judge-tier", "batch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--judge-tier batch: the judge has no batch tier yet; give one of standard, flex, "
                                 "flex-or-standard*"])
    assert not fake_gemini.requests


def test_the_ini_file_sets_the_judge_tier(bench, fake_gemini):
    bench.makeini("[pytest]\nhypeedit_judge_tier = flex\n")
    run(bench).assert_outcomes(failed=TASKS)
    assert {r.json.get("serviceTier") for r in fake_gemini.requests} == {"flex"}


def test_workers_ask_at_flex_too_and_the_results_are_the_same_as_without_n(bench, fake_gemini):
    # the rubric's prompt is the package's own: workers download nothing (the upstream stub is this process's)
    result = run(bench, "--judge-tier", "flex", "-n", "2", "--judge", "gemini-3-flash-rubric")
    result.assert_outcomes(failed=TASKS)
    assert [r.json.get("serviceTier") for r in fake_gemini.requests] == ["flex"] * TASKS
    row = results_of(bench)["rows"][0]
    assert row["spend_by_tier"]["judge"] == {"flex": pytest.approx(fake_gemini.billed_usd("flex"), abs=1e-6)}
    assert {r["judge_tier"] for r in records_of(bench)} == {"flex"}
