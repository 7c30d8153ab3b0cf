"""``--judge-tier``: the Gemini judge on Flex, asked as google-genai asks it, against the loopback Gemini fake that
speaks Flex (sheds with 503, names the tier that served each reply and bills at it): each verdict is billed at the
tier its reply names, a shed request is retried on Flex (never silently at standard), and only flex-or-standard
falls back.  Judges without Flex do not accept it, by name."""

from __future__ import annotations

import io

import pytest
from genai_fakes.fixtures import FAKE_GEMINI_KEY, fake_chat, fake_gemini  # noqa: F401 - fixtures
from genai_fakes.gemini import verdict_reply
from PIL import Image
from upstream_stub import upstream_stub  # noqa: F401 - fixture

from pytest_hypeedit.errors import ConfigError, JudgeError
from pytest_hypeedit.judges import JudgeOptions, make_judge
from pytest_hypeedit.judges.base import JudgeRequest
from pytest_hypeedit.judges.gemini import GeminiJudge, served_tier
from pytest_hypeedit.judges.judge_tiers import parse_judge_tier
from pytest_hypeedit.tasks import Task
from pytest_hypeedit.transport.http import RetryPolicy

POLICY = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=0.0)


def options(tier: str = "standard") -> JudgeOptions:
    return JudgeOptions(policy=POLICY, timeout_s=5, tier=tier)


@pytest.fixture
def request_(tmp_path):
    buffer = io.BytesIO()
    Image.new("RGB", (10, 10), (1, 2, 3)).save(buffer, format="PNG")
    (tmp_path / "001.png").write_bytes(buffer.getvalue())
    (tmp_path / "cand.png").write_bytes(buffer.getvalue())
    task = Task("task-9", ("001.png",), ("edit",), "Make the mug blue.", 1024, 1024, "public")
    return JudgeRequest(task, "seedream-4.5", 1, tmp_path / "cand.png", (tmp_path / "001.png",))


def verdict_of(tier: str, request_):
    judge = GeminiJudge(options(tier))
    try:
        judge.prepare()
        return judge.judge(request_)
    finally:
        judge.close()


def test_flex_is_asked_as_the_sdk_sends_it_and_billed_at_flex(fake_gemini, request_, upstream_stub):
    fake_gemini.default = verdict_reply("PASS", "ok")
    verdict = verdict_of("flex", request_)
    seen = fake_gemini.requests[0]
    assert seen.json["serviceTier"] == "flex" and "serviceTier" not in seen.json.get("generationConfig", {})
    assert verdict.extra["service_tier"] == "flex"
    assert verdict.cost == pytest.approx(fake_gemini.billed_usd()) and fake_gemini.billed_usd("flex") > 0


def test_standard_sends_no_tier_and_is_billed_at_standard(fake_gemini, request_, upstream_stub):
    fake_gemini.default = verdict_reply("PASS", "ok")
    verdict = verdict_of("standard", request_)
    assert "serviceTier" not in fake_gemini.requests[0].json
    assert verdict.extra["service_tier"] == "standard"
    assert verdict.cost == pytest.approx(fake_gemini.billed_usd("standard")) and fake_gemini.billed_usd() > 0


def test_flex_costs_half_of_standard_for_the_same_reply(fake_gemini, request_, upstream_stub):
    fake_gemini.default = verdict_reply("PASS", "ok")
    standard = verdict_of("standard", request_).cost
    assert verdict_of("flex", request_).cost == pytest.approx(standard / 2)


def test_a_verdict_served_at_standard_when_flex_was_asked_is_billed_and_recorded_at_standard(
        fake_gemini, request_, upstream_stub):
    fake_gemini.default = verdict_reply("FAIL", "no")
    fake_gemini.flex_served_as = "STANDARD"  # the reply's usage says which tier served it, whatever was asked
    verdict = verdict_of("flex", request_)
    assert verdict.extra["service_tier"] == "standard"
    assert verdict.cost == pytest.approx(fake_gemini.billed_usd("standard")) and fake_gemini.billed_usd("flex") == 0


def test_shed_requests_are_retried_on_flex_and_only_the_answer_is_billed(fake_gemini, request_, upstream_stub):
    fake_gemini.default = verdict_reply("PASS", "ok")
    fake_gemini.shed = 2
    verdict = verdict_of("flex", request_)
    assert [r.json.get("serviceTier") for r in fake_gemini.requests] == ["flex"] * 3  # never standard, silently
    assert len(fake_gemini.bills) == 1 and verdict.cost == pytest.approx(fake_gemini.billed_usd("flex"))


def test_flex_that_keeps_shedding_is_an_error_that_says_what_to_do_never_a_standard_call(
        fake_gemini, request_, upstream_stub):
    fake_gemini.default = verdict_reply("PASS", "ok")
    fake_gemini.shed = 10
    with pytest.raises(JudgeError) as caught:
        verdict_of("flex", request_)
    assert caught.value.retryable and "--judge-tier flex-or-standard" in str(caught.value)
    assert {r.json.get("serviceTier") for r in fake_gemini.requests} == {"flex"} and not fake_gemini.bills
    assert FAKE_GEMINI_KEY not in str(caught.value)


def test_flex_or_standard_asks_at_standard_only_after_flex_kept_shedding(fake_gemini, request_, upstream_stub):
    fake_gemini.default = verdict_reply("PASS", "ok")
    fake_gemini.shed = 3  # every retry of the policy (3 attempts)
    verdict = verdict_of("flex-or-standard", request_)
    assert [r.json.get("serviceTier") for r in fake_gemini.requests] == ["flex", "flex", "flex", None]
    assert verdict.extra["service_tier"] == "standard"
    assert verdict.cost == pytest.approx(fake_gemini.billed_usd("standard")) and len(fake_gemini.bills) == 1


def test_flex_or_standard_stays_on_flex_when_flex_answers(fake_gemini, request_, upstream_stub):
    fake_gemini.default = verdict_reply("PASS", "ok")
    fake_gemini.shed = 1
    verdict = verdict_of("flex-or-standard", request_)
    assert verdict.extra["service_tier"] == "flex" and fake_gemini.billed_usd("standard") == 0


def test_flex_gets_the_longer_timeout_flex_needs(fake_gemini, upstream_stub):
    judge = GeminiJudge(options("flex"))
    try:
        assert judge.session.http.timeout.read >= 600  # "increase client-side timeouts to 10 minutes or more"
    finally:
        judge.close()


@pytest.mark.parametrize("wire, tier", [("flex", "flex"), ("FLEX", "flex"), ("SERVICE_TIER_FLEX", "flex"),
                                        ("standard", "standard"), ("priority", "unknown"), (7, "unknown"),
                                        (None, None)])
def test_the_served_tier_is_read_in_any_spelling_and_anything_else_is_unknown(wire, tier):
    assert served_tier(wire) == tier


@pytest.mark.parametrize("spec", ["openai:gpt-4.1", "labels:a.json", "gemini-3-flash,openai:gpt-4.1"])
def test_a_judge_without_flex_does_not_accept_it_naming_itself_and_its_tiers(spec, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.json").write_text('{"schema_version": 2, "models": {}, "judgements": {}}')
    with pytest.raises(ConfigError) as caught:
        make_judge(spec, options("flex"))
    message = str(caught.value)
    assert "--judge-tier flex" in message and "has only the tier(s) standard" in message
    assert {"openai:gpt-4.1": "judge openai:gpt-4.1 has", "labels:a.json": "judge labels",
            "gemini-3-flash,openai:gpt-4.1": "a majority of several judges (gemini-3-flash,openai:gpt-4.1)"}[spec] \
        in message


def test_batch_is_not_accepted_with_the_tiers_there_are():
    with pytest.raises(ConfigError, match="no batch tier yet; give one of standard, flex, flex-or-standard"):
        parse_judge_tier("batch")
    with pytest.raises(ConfigError, match="give one of standard, flex, flex-or-standard"):
        parse_judge_tier("cheap")
    assert parse_judge_tier(None) == "standard" and parse_judge_tier(" FLEX ") == "flex"
