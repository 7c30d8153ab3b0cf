"""The HTTP adapters inside a real run: --budget across xdist workers, resume, and no key in any output."""

from __future__ import annotations

import json

import pytest
from paid_benches import ark_bench

TASKS, REPEATS = 4, 3


@pytest.fixture
def ark_run(pytester: pytest.Pytester, monkeypatch, tmp_path):
    with ark_bench(pytester, monkeypatch, tmp_path, TASKS, REPEATS, lambda t, r: t % 2 == 0) as fake:
        yield pytester, fake


def args(*extra: str) -> list[str]:
    return ["--tasks", "mini.json", "--images-base", "images", "--repeats", str(REPEATS), "--outputs", "out",
            "--model", "seedream-4.5", "--judge", "labels:r1.json", *extra]


def generation_calls(fake) -> list:
    return fake.seen("/images/generations")


def results(pytester) -> dict:
    return json.loads((pytester.path / "out" / "results.json").read_text())


def all_output_text(root) -> str:
    return "\n".join(path.read_bytes().decode("utf-8", "replace") for path in root.rglob("*") if path.is_file())


def test_budget_caps_paid_calls_across_workers_and_a_rerun_completes(ark_run):
    pytester, fake = ark_run
    # 0.2 USD at 0.04 per candidate: exactly 5 of the 12 candidates may be bought.
    first = pytester.runpytest(*args("--budget", "0.2", "-n", "2"))
    assert len(generation_calls(fake)) == 5
    assert first.parseoutcomes()["skipped"] == 7
    first_results = results(pytester)
    assert (first_results["rows"][0]["skipped"], first_results["complete"]) == (7, False)
    assert "run INCOMPLETE" in first.stdout.str()
    second = pytester.runpytest(*args("--budget", "10"))
    assert len(generation_calls(fake)) == TASKS * REPEATS  # the 5 paid ones were not bought again
    second.assert_outcomes(passed=6, failed=6)
    assert (results(pytester)["rows"][0]["skipped"], results(pytester)["complete"]) == (0, True)


def test_refusals_and_faults_end_judged_or_refused_with_no_key_anywhere(ark_run):
    pytester, fake = ark_run
    fake.inject("refusal")
    # a moderation refusal whose message quotes the key, so the check below can fail
    fake.inject("status", status=400, path="/images/generations", body={"error": {
        "code": "InputImageSensitiveContentDetected", "type": "BadRequest",
        "message": f"the request signed with {fake.key} may contain sensitive information"}})
    fake.inject("status", status=429, retry_after="0.1", path="/images/generations")
    fake.inject("status", status=503, path="/images/generations")
    result = pytester.runpytest(*args("--junitxml", "junit.xml"))
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == TASKS * REPEATS
    assert "error" not in outcomes and "errors" not in outcomes
    assert results(pytester)["rows"][0]["refusals"] == 2
    assert fake.key not in result.stdout.str() + all_output_text(pytester.path)
    assert "the request signed with *** may contain" in result.stdout.str()  # it was echoed, and masked


def test_rate_limit_option_holds_in_flight_calls_across_workers(ark_run):
    pytester, fake = ark_run
    fake.inject("slow", path="/images/generations", delay=0.25, count=TASKS * REPEATS)
    result = pytester.runpytest(*args("-n", "2", "--rate-limit", "ark=/1"))
    result.assert_outcomes(passed=6, failed=6)
    arrivals = sorted(seen.at for seen in generation_calls(fake))
    # one request in flight across both workers: each starts after the previous 0.25 s reply
    assert min(b - a for a, b in zip(arrivals, arrivals[1:])) >= 0.24


def test_rate_limit_option_is_validated(ark_run):
    pytester, _ = ark_run
    result = pytester.runpytest(*args("--rate-limit", "ark=fast"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rate-limit ark=fast: expected ROUTE=RPM[[]/INFLIGHT], e.g. ark=120/8*"])
