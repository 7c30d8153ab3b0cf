"""Waits the server asks for: headers, Google's RetryInfo in the body, BFL's retry_after; and when not to wait.

The policy's waits go through ``http.pause``, replaced here by a recorder: the tests check what the policy
decided to wait, on a fake clock, without waiting it.
"""

from __future__ import annotations

import io
import json
import logging
from types import MappingProxyType

import pytest
from genai_fakes.fixtures import FAKE_GEMINI_KEY, fake_gemini  # noqa: F401 - fixture
from genai_fakes.gemini import image_reply, png_bytes, quota_reply, verdict_reply
from PIL import Image
from providers_fakes import FakeServer, Reply
from upstream_stub import upstream_stub  # noqa: F401 - fixture

from pytest_hypeedit.errors import JudgeError, ProviderError
from pytest_hypeedit.judges import JudgeOptions
from pytest_hypeedit.judges.base import JudgeRequest
from pytest_hypeedit.judges.gemini import GeminiJudge
from pytest_hypeedit.providers.base import GenerationRequest
from pytest_hypeedit.providers.gemini import GeminiProvider
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.tasks import Task
from pytest_hypeedit.transport import http
from pytest_hypeedit.transport.http import RetryPolicy, make_http_client, raise_for_status
from pytest_hypeedit.transport.waits import parse_duration, seconds

POLICY = RetryPolicy(max_attempts=5, base_delay=0.01, max_delay=0.02, jitter=0.0)
BFL_429 = {"error": "rate_limit_exceeded", "message": "Too many concurrent requests", "retry_after": 5}


@pytest.fixture
def waits(monkeypatch):
    """Every wait the policy decides, recorded instead of slept."""
    recorded: list[float] = []
    monkeypatch.setattr(http, "pause", recorded.append)
    return recorded


@pytest.fixture
def server():
    fake = FakeServer()
    fake.route("GET", "/v1/thing", lambda seen: Reply(200, {"ok": True}))
    with fake:
        yield fake


def get(server, policy=POLICY):
    with make_http_client("bfl", policy=policy) as client:
        return client.get(f"{server.url}/v1/thing")


# --------------------------------------------------------------------------- headers


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "-3", "1e400", "soon", "  "])
def test_an_unusable_retry_after_is_ignored_not_a_crash(server, waits, caplog, value):
    server.inject("status", status=503, retry_after=value)
    with caplog.at_level(logging.INFO, logger="pytest_hypeedit.http"):
        response = get(server)
    assert response.status_code == 200 and len(server.seen()) == 2
    assert len(waits) == 1 and waits[0] <= POLICY.max_delay  # the policy's own backoff
    if value.strip():
        assert any("bfl: ignoring Retry-After" in r.getMessage() for r in caplog.records)


def test_an_unusable_retry_after_ms_is_ignored_and_retry_after_used(server, waits):
    server.inject("status", status=429, retry_after="2", headers={"retry-after-ms": "nan"})
    assert get(server).status_code == 200
    assert waits[0] >= 2.0


def test_seconds_and_durations():
    assert [seconds(v) for v in ("7", 7, "0", "nan", "inf", -1, True, None, "x")] == [7.0, 7.0, 0.0] + [None] * 6
    assert [parse_duration(v) for v in ("34s", "45.837906927s", "900ms", "0s", "1m", "nans", "-3s", 34)] == \
        [34.0, 45.837906927, 0.9, 0.0, None, None, None, None]


# --------------------------------------------------------------------------- Google's RetryInfo, BFL's retry_after


def test_google_retry_info_in_the_body_is_waited_for(server, waits):
    server.inject("status", status=429, body=quota_reply("7s").body)
    assert get(server).status_code == 200
    assert waits == [pytest.approx(7.0)]


def test_a_fractional_or_millisecond_retry_delay(server, waits):
    server.inject("status", status=429, body=quota_reply("0.25s").body)
    server.inject("status", status=429, body=quota_reply("900ms").body)
    assert get(server).status_code == 200
    assert waits == [pytest.approx(0.25), pytest.approx(0.9)]


def test_a_wait_longer_than_the_policy_allows_returns_the_error_at_once(server, waits):
    server.inject("status", status=429, body=quota_reply("3600s").body)
    response = get(server)
    assert response.status_code == 429 and waits == [] and len(server.seen()) == 1
    with pytest.raises(ProviderError, match="asked to wait 3600 s, longer than the bfl policy waits") as info:
        raise_for_status(response, route="bfl", model="flux-2-max")
    assert info.value.retryable  # the next run may find the quota cleared


def test_a_per_day_quota_is_not_retried_and_says_why(server, waits):
    body = quota_reply("20s", quota_id="GenerateRequestsPerDayPerProjectPerModel-FreeTier").body
    server.inject("status", status=429, body=body)
    response = get(server)
    assert response.status_code == 429 and waits == [] and len(server.seen()) == 1
    with pytest.raises(ProviderError) as info:
        raise_for_status(response, route="gemini", model="gemini-3-pro-preview")
    message = str(info.value)
    assert "daily quota GenerateRequestsPerDayPerProjectPerModel-FreeTier is used up" in message
    assert "will not clear by waiting" in message and info.value.retryable is False


def test_bfl_retry_after_in_the_body_is_waited_for(server, waits):
    server.inject("status", status=429, body=BFL_429)
    assert get(server).status_code == 200
    assert waits == [pytest.approx(5.0)]


def test_a_header_wins_over_the_body(server, waits):
    server.inject("status", status=429, body=BFL_429, retry_after="2")
    assert get(server).status_code == 200
    assert waits == [pytest.approx(2.0)]


def test_bfl_retry_after_nan_in_the_body_is_ignored(server, waits):
    server.inject("status", status=429, body={**BFL_429, "retry_after": "nan"})
    assert get(server).status_code == 200
    assert waits and waits[0] <= POLICY.max_delay


# --------------------------------------------------------------------------- the Gemini image model and the judge


SPEC = ModelSpec("gemini-3-pro-preview", "gemini", "gemini-3-pro-image", 0.134, MappingProxyType({}))


@pytest.fixture
def references(tmp_path):
    buffer = io.BytesIO()
    Image.new("RGB", (10, 10), (1, 2, 3)).save(buffer, format="WEBP")
    (tmp_path / "001.webp").write_bytes(buffer.getvalue())
    return (tmp_path / "001.webp",)


def image_request(references):
    task = Task("task-1", ("001.webp",), ("edit",), "Make the mug blue.", 1600, 900, "public")
    return GenerationRequest(task, 1, 1234, references, SPEC)


def test_the_gemini_image_model_waits_what_retry_info_asks(fake_gemini, references, waits):
    fake_gemini.queue(quota_reply("7s"), quota_reply("11.5s"), image_reply(png_bytes()))
    provider = GeminiProvider(SPEC, policy=POLICY, timeout_s=5)
    try:
        generation = provider.generate(image_request(references))
    finally:
        provider.close()
    assert generation.ext == "png" and len(fake_gemini.requests) == 3
    assert waits == [pytest.approx(7.0), pytest.approx(11.5)]


def test_the_gemini_image_model_does_not_retry_a_used_up_daily_quota(fake_gemini, references, waits):
    fake_gemini.default = quota_reply("30s", quota_id="GenerateRequestsPerDayPerProjectPerModel")
    provider = GeminiProvider(SPEC, policy=POLICY, timeout_s=5)
    try:
        with pytest.raises(ProviderError) as info:
            provider.generate(image_request(references))
    finally:
        provider.close()
    assert len(fake_gemini.requests) == 1 and waits == []
    assert info.value.retryable is False and "daily quota GenerateRequestsPerDayPerProjectPerModel is used up" \
        in str(info.value)
    assert FAKE_GEMINI_KEY not in str(info.value)


@pytest.fixture
def judge_request(tmp_path):
    (tmp_path / "ref.png").write_bytes(png_bytes())
    (tmp_path / "cand.png").write_bytes(png_bytes(color=(0, 0, 255)))
    task = Task("task-9", ("ref.png",), ("edit",), "Make the mug blue.", 1024, 1024, "public")
    return JudgeRequest(task, "seedream-4.5", 3, tmp_path / "cand.png", (tmp_path / "ref.png",))


def test_the_gemini_judge_waits_what_retry_info_asks(fake_gemini, upstream_stub, judge_request, waits):
    fake_gemini.queue(quota_reply("7s"), quota_reply("7s"), verdict_reply("PASS", "ok"))
    judge = GeminiJudge(JudgeOptions(policy=POLICY, timeout_s=5))
    try:
        assert judge.judge(judge_request).passed
    finally:
        judge.close()
    assert waits == [pytest.approx(7.0)] * 2


def test_the_gemini_judge_stops_on_a_used_up_daily_quota(fake_gemini, upstream_stub, judge_request, waits):
    fake_gemini.default = quota_reply(None, quota_id="GenerateRequestsPerDayPerProjectPerModel-FreeTier")
    judge = GeminiJudge(JudgeOptions(policy=POLICY, timeout_s=5))
    try:
        with pytest.raises(JudgeError, match="daily quota .* is used up") as info:
            judge.judge(judge_request)
    finally:
        judge.close()
    assert info.value.retryable is False and len(fake_gemini.requests) == 1 and waits == []


# --------------------------------------------------------------------------- a whole run of the judge under bursts


def test_the_gemini_judge_under_bursts_of_429_finishes_with_no_error_and_waits_what_was_asked(
        pytester, upstream_stub, fake_gemini, waits):
    from benchdata import make_tasks, write_split

    write_split(pytester.path, "mini", make_tasks(3), pytester.path / "images")
    asked = ["7s", "12s", "3.5s"]
    for delay in asked:  # every verdict comes after a burst of two 429s
        fake_gemini.queue(quota_reply(delay), quota_reply(delay), verdict_reply("FAIL", "Nothing was edited."))
    result = pytester.runpytest("-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json",
                                "--images-base", "images", "--repeats", "1", "--outputs", "out",
                                "--concurrency", "1", "--judge", "gemini-3-flash")
    result.assert_outcomes(failed=3)  # judged FAIL, none an error
    assert len(fake_gemini.requests) == 9
    expected = [float(d[:-1]) for d in asked for _ in range(2)]
    assert len(waits) == 6 and all(got >= want for got, want in zip(waits, expected)), waits
    results = json.loads((pytester.path / "out" / "results.json").read_text())
    assert results["rows"][0]["errors"] == 0 and results["rows"][0]["judged"] == 3
