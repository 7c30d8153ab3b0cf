"""Judges: the --judge grammar, gemini-3-flash and openai:MODEL against loopback fakes, the majority panel."""

from __future__ import annotations

import io
import json
import time
from dataclasses import replace

import pytest
from genai_fakes.chat import (
    chat_reply,
    error_reply as chat_error,
    malformed_reply as chat_malformed,
    verdict_reply as chat_verdict,
)
from genai_fakes.fixtures import FAKE_GEMINI_KEY, FAKE_OPENAI_KEY, fake_chat, fake_gemini  # noqa: F401 - fixtures
from genai_fakes.gemini import block_reply, error_reply, malformed_reply, png_bytes, text_reply, verdict_reply
from PIL import Image
from upstream_stub import sha256, upstream_stub  # noqa: F401 - fixture

from pytest_hypeedit.errors import ConfigError, JudgeError
from pytest_hypeedit.judges import BUILTIN_JUDGES, JudgeOptions, builtin_judge, make_judge, parse_judge_spec
from pytest_hypeedit.judges.base import Judge, JudgeRequest, Verdict
from pytest_hypeedit.judges.gemini import GeminiJudge
from pytest_hypeedit.judges.majority import MajorityJudge
from pytest_hypeedit.judges.openai_compat import OpenAICompatJudge
from pytest_hypeedit.judges.prompting import RUBRIC, UnparseableReply, parse_verdict
from pytest_hypeedit.tasks import Task
from pytest_hypeedit.transport.http import RetryPolicy

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=0.0)
OPTIONS = JudgeOptions(policy=FAST, timeout_s=5)


@pytest.fixture
def request_(tmp_path):
    buffer = io.BytesIO()
    Image.new("RGB", (10, 10), (1, 2, 3)).save(buffer, format="WEBP")
    (tmp_path / "001.webp").write_bytes(buffer.getvalue())
    (tmp_path / "002.png").write_bytes(png_bytes())
    (tmp_path / "cand.png").write_bytes(png_bytes(color=(0, 0, 255)))
    task = Task("task-9", ("001.webp", "002.png"), ("edit",), "Make the mug blue.", 1024, 1024, "public")
    return JudgeRequest(task, "seedream-4.5", 3, tmp_path / "cand.png", (tmp_path / "001.webp", tmp_path / "002.png"))


# --------------------------------------------------------------------------- the --judge grammar


@pytest.mark.parametrize("text, expected", [
    ("gemini-3-flash", [("gemini-3-flash", None)]),
    ("openai:qwen2.5-vl", [("openai", "qwen2.5-vl")]),
    ("openai:Qwen/Qwen2.5-VL-72B-Instruct", [("openai", "Qwen/Qwen2.5-VL-72B-Instruct")]),
    ("labels:a.json,b.json", [("labels", "a.json,b.json")]),
    ("labels:a.json, b.json ,gemini-3-flash", [("labels", "a.json,b.json"), ("gemini-3-flash", None)]),
    ("labels:r/a.json,./panel,openai:Qwen/VL", [("labels", "r/a.json,./panel"), ("openai", "Qwen/VL")]),
    ("labels:a.json,myjudge:x", [("labels", "a.json"), ("myjudge", "x")]),
    ("gemini-3-flash,openai:gpt-4.1,openai:qwen", [("gemini-3-flash", None), ("openai", "gpt-4.1"), ("openai", "qwen")]),
])
def test_parse_judge_spec(text, expected):
    assert parse_judge_spec(text) == expected


def test_plugin_judge_names_read_as_jurors_after_labels():
    assert parse_judge_spec("labels:a.json,x.json", names=["x.json"]) == [("labels", "a.json"), ("x.json", None)]


@pytest.mark.parametrize("text, words", [
    ("", "empty juror"), ("gemini-3-flash,,openai:x", "empty juror"), ("openai:", "missing its argument"),
    ("!bad", "not NAME or NAME:ARGUMENT"),
])
def test_parse_judge_spec_errors(text, words):
    with pytest.raises(ConfigError, match=words):
        parse_judge_spec(text)


@pytest.mark.parametrize("name, argument, words", [
    ("nope", None, "unknown judge 'nope'"), ("gemini-3-flash", "x", "takes no argument"),
    ("openai", None, "openai:gpt-4.1"), ("labels", None, "labels:rater1.json"),
    ("gemini-3-flash-rubric", "x", "takes no argument"), ("openai-rubric", None, "openai-rubric:gpt-4.1"),
])
def test_builtin_judge_errors(name, argument, words):
    with pytest.raises(ConfigError, match=words):
        builtin_judge(name, argument, OPTIONS)


def test_builtin_judges_and_make_judge(tmp_path):
    for rater in ("ann", "bob"):
        labels = {"schema_version": 2, "models": {"M01": "seedream-4.5"},
                  "judgements": {"task-9": {"M01": {"003.webp": {"verdict": "PASS"}}}}}
        (tmp_path / f"{rater}.json").write_text(json.dumps(labels))
    options = JudgeOptions(known_models=("seedream-4.5",))
    assert isinstance(builtin_judge("gemini-3-flash", None, options), GeminiJudge)
    assert builtin_judge("gemini-3-flash", None, options).id == "gemini-3-flash"
    assert builtin_judge("gemini-3-flash-rubric", None, options).id == "gemini-3-flash-rubric"
    assert builtin_judge("openai-rubric", "qwen2.5-vl", options).id == "openai-rubric:qwen2.5-vl"
    assert builtin_judge("gemini", "gemini-3-pro-preview", options).id == "gemini:gemini-3-pro-preview"
    assert builtin_judge("openai", "qwen2.5-vl", options).id == "openai:qwen2.5-vl"
    labels = builtin_judge("labels", f"{tmp_path}/ann.json,{tmp_path}/bob.json", options)
    assert labels.id == "labels[2 raters]"
    panel = make_judge(f"labels:{tmp_path}/ann.json,gemini-3-flash,openai:q", options)
    assert isinstance(panel, MajorityJudge) and panel.id == "labels[1 rater],gemini-3-flash,openai:q"
    # openai:q asks OpenAI's own API (no --judge-base-url here), which needs its key
    assert panel.key_env == ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY") and panel.needs_images
    assert set(BUILTIN_JUDGES) >= {"gemini-3-flash", "openai", "labels"}


def test_make_judge_uses_the_factory_and_reports_unknown_names():
    made = make_judge("a,b", OPTIONS, factory=lambda name, argument: Stub(name, True))
    assert made.id == "a,b"
    with pytest.raises(ConfigError, match="unknown judge 'b'"):
        make_judge("a,b", OPTIONS, factory=lambda name, argument: Stub(name, True) if name == "a" else None)


def test_judge_options_validate_the_base_url():
    with pytest.raises(ConfigError, match="--judge-base-url"):
        JudgeOptions(openai_base_url="localhost:8000")


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize("text, passed", [
    ('{"verdict": "PASS", "reasoning": "ok"}', True),
    ('{"verdict": "fail", "reasoning": "The mug is still red."}', False),
    ('```json\n{"verdict": "FAIL", "reasoning": "r"}\n```', False),
    ('Here you go: {"reasoning": "fine", "verdict": "PASS"} done', True),
])
def test_parse_verdict(text, passed):
    assert parse_verdict(text)[0] is passed


@pytest.mark.parametrize("text", [
    "PASS", '{"verdict": "MAYBE", "reasoning": "r"}', '{"verdict": "PASS"}', '{"verdict": "PASS", "reasoning": " "}',
    "", None, '["PASS"]',
    # cut short before the verdict, or before any reasoning: upstream would call these FAIL, a guess
    '{"reasoning": "The mug is blue", "verdict": "PA', '{"verdict": "PASS", "reasoning": "', '{"verdict": "PASS", "reas',
])
def test_unparseable_verdicts(text):
    with pytest.raises(UnparseableReply):
        parse_verdict(text)


@pytest.mark.parametrize("text, passed, reasoning", [
    ('{"verdict": "FAIL", "reasoning": "The logo is missing and', False, "The logo is missing and"),
    ('{"verdict":"pass","reasoning":"Every edit is there.\\nNothing else', True, "Every edit is there.\nNothing else"),
    ('{"verdict": "FAIL", "reasoning": "It says \\"SALE', False, "It says"),
])
def test_a_reply_cut_short_after_its_verdict_is_read_as_upstream_reads_it(text, passed, reasoning):
    reading = parse_verdict(text)
    assert (reading.passed, reading.reasoning, reading.recovered) == (passed, reasoning, True)
    assert parse_verdict('{"verdict": "FAIL", "reasoning": "whole"}').recovered is False


def test_prompt_states_the_rubric():
    for words in ("every required change", "nothing else changed", "FAIL", '"verdict"', "Be conservative"):
        assert words in RUBRIC


# --------------------------------------------------------------------------- gemini-3-flash


@pytest.fixture
def gemini_judge(upstream_stub):
    judge = GeminiJudge(OPTIONS)
    yield judge
    judge.close()


def test_gemini_judge_request_and_verdict(fake_gemini, gemini_judge, request_, upstream_stub):
    fake_gemini.queue(verdict_reply("PASS", "The mug is blue and nothing else changed.",
                                    thoughts="Comparing the mug in both images."))
    verdict = gemini_judge.judge(request_)
    assert verdict.passed and verdict.reasoning == "The mug is blue and nothing else changed."
    assert verdict.judge == "gemini-3-flash"
    assert verdict.cost == pytest.approx(2400 * 0.50e-6 + (80 + 300) * 3e-6)
    assert verdict.extra["judge_model"] == "gemini-3-flash-preview" and verdict.extra["prompt"] == "upstream"
    assert verdict.extra["prompt_sha256"] == sha256(upstream_stub.prompt) and verdict.extra["attempts"] == 1
    # the thoughts are kept for audit, never as the reasoning
    assert verdict.extra["thoughts"] == "Comparing the mug in both images." and verdict.extra["finish_reason"] == "STOP"
    seen = fake_gemini.requests[0]
    assert seen.path == "/v1beta/models/gemini-3-flash-preview:generateContent"
    texts = seen.parsed["texts"]
    assert texts[0] == texts[-1] == upstream_stub.prompt  # the upstream prompt, first and last
    assert texts[1:5] == ["Reference image 1:", "Reference image 2:", "Instruction:\nMake the mug blue.",
                          "Candidate output image:"]
    assert [mime for mime, _ in seen.parsed["images"]] == ["image/webp", "image/png", "image/png"]
    assert seen.parsed["images"][-1][1] == request_.candidate.read_bytes()
    assert seen.parsed["media_resolutions"] == ["MEDIA_RESOLUTION_HIGH"] * 3  # per part, as upstream sends it
    assert seen.parsed["config"] == {  # upstream's settings, and nothing else (no schema, no global resolution)
        "temperature": 0, "max_output_tokens": 4096, "response_modalities": ["TEXT"],
        "response_mime_type": "application/json",
        "thinking_config": {"include_thoughts": True, "thinking_level": "MEDIUM"},
    }


def test_gemini_judge_fail_verdict(fake_gemini, gemini_judge, request_):
    fake_gemini.queue(verdict_reply("FAIL", "The mug is still red."))
    verdict = gemini_judge.judge(request_)
    assert not verdict.passed and verdict.label == "FAIL"


def test_an_unparseable_reply_is_asked_again_once(fake_gemini, gemini_judge, request_):
    fake_gemini.queue(text_reply("I think it passes."), verdict_reply("PASS", "ok"))
    verdict = gemini_judge.judge(request_)
    assert verdict.passed and verdict.extra["attempts"] == 2 and len(fake_gemini.requests) == 2
    assert verdict.cost == pytest.approx((1290 * 0.5e-6 + 60 * 3e-6) + (2400 * 0.5e-6 + 380 * 3e-6))


def test_unparseable_twice_is_an_error_never_a_fail(fake_gemini, gemini_judge, request_):
    fake_gemini.default = text_reply('{"verdict": "MAYBE", "reasoning": "hmm"}')
    with pytest.raises(JudgeError, match="twice") as caught:
        gemini_judge.judge(request_)
    # the model asked, once; the runner names the judge and the item the candidate (glue/items.py)
    assert str(caught.value).startswith("gemini-3-flash-preview: the reply could not be read")
    assert "task-9" not in str(caught.value) and len(fake_gemini.requests) == 2


def test_a_malformed_body_counts_as_unparseable(fake_gemini, gemini_judge, request_):
    fake_gemini.queue(malformed_reply(), verdict_reply("FAIL", "r"))
    assert gemini_judge.judge(request_).extra["attempts"] == 2


def test_gemini_judge_rides_out_a_429(fake_gemini, gemini_judge, request_):
    fake_gemini.queue(error_reply(429, "slow down", "RESOURCE_EXHAUSTED", retry_after=0.05), verdict_reply())
    assert gemini_judge.judge(request_).passed


def test_gemini_judge_server_errors_are_redacted_judge_errors(fake_gemini, gemini_judge, request_):
    fake_gemini.default = error_reply(500, f"backend saw key {FAKE_GEMINI_KEY}", "INTERNAL")
    with pytest.raises(JudgeError) as caught:
        gemini_judge.judge(request_)
    assert caught.value.retryable and FAKE_GEMINI_KEY not in str(caught.value) and "HTTP 500" in str(caught.value)
    assert len(fake_gemini.requests) == FAST.max_attempts


def test_a_blocked_judge_prompt_is_an_error(fake_gemini, gemini_judge, request_):
    fake_gemini.queue(block_reply("SAFETY"))
    with pytest.raises(JudgeError, match="blocked"):
        gemini_judge.judge(request_)


# --------------------------------------------------------------------------- openai:MODEL


def test_openai_judge_request_and_verdict(fake_chat, request_, upstream_stub):
    fake_chat.queue(chat_verdict("FAIL", "The handle changed colour too."))
    judge = OpenAICompatJudge("qwen2.5-vl", OPTIONS)
    verdict = judge.judge(request_)
    judge.close()
    assert not verdict.passed and verdict.reasoning == "The handle changed colour too."
    assert verdict.judge == "openai:qwen2.5-vl" and verdict.extra["prompt_sha256"] == sha256(upstream_stub.prompt)
    assert verdict.extra["usage"] == {"prompt_tokens": 1500, "completion_tokens": 70}
    seen = fake_chat.requests[0]
    assert seen.headers["authorization"] == f"Bearer {FAKE_OPENAI_KEY}"
    assert seen.json["temperature"] == 0 and seen.json["response_format"] == {"type": "json_object"}
    assert seen.parsed["model"] == "qwen2.5-vl"
    assert seen.parsed["texts"][0] == seen.parsed["texts"][-1] == upstream_stub.prompt
    assert seen.parsed["texts"][-2] == "Candidate output image:"
    assert [mime for mime, _ in seen.parsed["images"]] == ["image/png"] * 3  # WebP sent as PNG


def test_openai_judge_without_a_key_sends_no_authorization(tmp_path, request_, monkeypatch, upstream_stub):
    from genai_fakes import FakeChat

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeChat() as server:
        server.queue(chat_reply('{"verdict": "PASS", "reasoning": "ok"}'))
        judge = OpenAICompatJudge("llava", JudgeOptions(openai_base_url=server.base_url, policy=FAST))
        assert judge.judge(request_).passed
        judge.close()
    assert "authorization" not in server.requests[0].headers


def test_openai_key_never_goes_to_another_judge_server(tmp_path, request_, monkeypatch, upstream_stub):
    # A local vLLM given with --judge-base-url is not OpenAI: OPENAI_API_KEY stays home; that server's own key
    # (HYPEEDIT_JUDGE_API_KEY) is what it gets, when there is one.
    from genai_fakes import FakeChat

    monkeypatch.delenv("HYPEEDIT_OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret-not-for-strangers")
    with FakeChat() as server:
        for own_key in (None, "local-vllm-key-123"):
            if own_key:
                monkeypatch.setenv("HYPEEDIT_JUDGE_API_KEY", own_key)
            server.queue(chat_reply('{"verdict": "PASS", "reasoning": "ok"}'))
            judge = OpenAICompatJudge("llava", JudgeOptions(openai_base_url=server.base_url, policy=FAST))
            assert judge.judge(request_).passed
            judge.close()
    assert [r.headers.get("authorization") for r in server.requests] == [None, "Bearer local-vllm-key-123"]


def test_openai_key_goes_by_origin_not_by_host_name(tmp_path, request_, monkeypatch, upstream_stub):
    # HYPEEDIT_OPENAI_BASE_URL moves OpenAI's API to a proxy on 127.0.0.1; a --judge-base-url server on the same
    # host but another port is another server: OPENAI_API_KEY stays with the proxy, the judge server gets
    # HYPEEDIT_JUDGE_API_KEY.
    from genai_fakes import FakeChat

    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret-for-the-proxy-only")
    monkeypatch.setenv("HYPEEDIT_JUDGE_API_KEY", "local-judge-key-456")
    with FakeChat() as proxy, FakeChat() as other:
        monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", proxy.base_url)
        assert "127.0.0.1" in proxy.base_url and "127.0.0.1" in other.base_url and proxy.base_url != other.base_url
        for server in (proxy, other):
            server.queue(chat_reply('{"verdict": "PASS", "reasoning": "ok"}'))
            judge = OpenAICompatJudge("llava", JudgeOptions(openai_base_url=server.base_url, policy=FAST))
            assert judge.judge(request_).passed
            judge.close()
    assert [r.headers.get("authorization") for r in proxy.requests] == ["Bearer sk-openai-secret-for-the-proxy-only"]
    assert [r.headers.get("authorization") for r in other.requests] == ["Bearer local-judge-key-456"]


@pytest.mark.parametrize("base, variable", [
    ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    ("https://API.openai.com:443/v1", "OPENAI_API_KEY"),  # the default port, written out
    ("http://api.openai.com/v1", "HYPEEDIT_JUDGE_API_KEY"),  # another scheme: another origin
    ("https://api.openai.com:8443/v1", "HYPEEDIT_JUDGE_API_KEY"),  # another port
    ("http://127.0.0.1:7001/v1", "OPENAI_API_KEY"),  # HYPEEDIT_OPENAI_BASE_URL itself
    ("http://127.0.0.1:7002/v1", "HYPEEDIT_JUDGE_API_KEY"),
    ("https://127.0.0.1:7001/v1", "HYPEEDIT_JUDGE_API_KEY"),
])
def test_the_judge_key_variable_is_chosen_by_origin(monkeypatch, base, variable):
    from pytest_hypeedit.judges.openai_compat import key_variable_for

    monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", "http://127.0.0.1:7001/v1")
    assert key_variable_for(base) == variable


def test_judge_base_url_option_wins_over_the_environment(fake_chat, request_, monkeypatch, upstream_stub):
    monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    # the chosen server is not OpenAI's origin (nor that of HYPEEDIT_OPENAI_BASE_URL): it gets its own key
    monkeypatch.setenv("HYPEEDIT_JUDGE_API_KEY", FAKE_OPENAI_KEY)
    fake_chat.queue(chat_verdict())
    judge = OpenAICompatJudge("m", JudgeOptions(openai_base_url=fake_chat.base_url, policy=FAST))
    assert judge.judge(request_).passed
    judge.close()


def test_openai_judge_retries_once_then_errors(fake_chat, request_, upstream_stub):
    fake_chat.queue(chat_malformed(), chat_reply("PASS!"))
    judge = OpenAICompatJudge("m", OPTIONS)
    with pytest.raises(JudgeError, match="twice"):
        judge.judge(request_)
    judge.close()
    assert len(fake_chat.requests) == 2


def test_openai_judge_http_errors(fake_chat, request_, upstream_stub):
    judge = OpenAICompatJudge("m", OPTIONS)
    fake_chat.queue(chat_error(429, "Rate limit", "rate_limit_exceeded", retry_after=0.05), chat_verdict())
    assert judge.judge(request_).passed
    fake_chat.queue(lambda seen: chat_error(400, f"bad request from {seen.headers['authorization']}", "invalid"))
    with pytest.raises(JudgeError) as caught:
        judge.judge(request_)
    judge.close()
    assert not caught.value.retryable and FAKE_OPENAI_KEY not in str(caught.value) and "HTTP 400" in str(caught.value)


# --------------------------------------------------------------------------- majority


class Stub(Judge):
    def __init__(self, name, passed, cost=0.01, error=None):
        self._id, self.passed, self.cost, self.error, self.closed = name, passed, cost, error, False

    @property
    def id(self):
        return self._id

    def judge(self, request):
        if self.error:
            raise self.error
        return Verdict(self.passed, f"{self._id} thinks so", self._id, cost=self.cost)

    def close(self):
        self.closed = True


def test_majority_records_every_vote(request_):
    panel = MajorityJudge([Stub("a", True), Stub("b", False), Stub("c", True)])
    verdict = panel.judge(request_)
    assert verdict.passed and verdict.judge == "a,b,c" and verdict.cost == pytest.approx(0.03)
    assert verdict.votes == [{"judge": "a", "verdict": "PASS", "reasoning": "a thinks so", "cost": 0.01},
                             {"judge": "b", "verdict": "FAIL", "reasoning": "b thinks so", "cost": 0.01},
                             {"judge": "c", "verdict": "PASS", "reasoning": "c thinks so", "cost": 0.01}]
    assert verdict.reasoning.startswith("majority of 3 jurors: 2 PASS / 1 FAIL") and not verdict.extra["tie"]


def test_a_tie_is_a_fail_and_says_so(request_):
    verdict = MajorityJudge([Stub("a", True), Stub("b", False)]).judge(request_)
    assert not verdict.passed and verdict.extra["tie"] and "a tie counts as FAIL" in verdict.reasoning


def test_one_juror_error_makes_the_panel_an_error(request_):
    panel = MajorityJudge([Stub("a", True), Stub("b", True), Stub("c", None, error=JudgeError("boom", retryable=False))])
    with pytest.raises(JudgeError, match="juror c: boom") as caught:
        panel.judge(request_)
    assert not caught.value.retryable
    panel.close()
    assert all(juror.closed for juror in panel.jurors)


def test_majority_needs_distinct_jurors():
    with pytest.raises(ConfigError, match="twice"):
        MajorityJudge([Stub("a", True), Stub("a", True)])
    with pytest.raises(ConfigError, match="at least two"):
        MajorityJudge([Stub("a", True)])


def test_majority_of_real_judges_over_the_fakes(fake_gemini, fake_chat, request_, upstream_stub):
    fake_gemini.queue(verdict_reply("PASS", "fine"))
    fake_chat.queue(chat_verdict("FAIL", "The background changed."))
    panel = make_judge("gemini-3-flash,openai:qwen", OPTIONS)
    verdict = panel.judge(request_)
    panel.close()
    assert not verdict.passed and verdict.extra["tie"]
    assert [v["verdict"] for v in verdict.votes] == ["PASS", "FAIL"]
    assert verdict.cost == pytest.approx(2400 * 0.5e-6 + 380 * 3e-6)


def test_judges_take_the_runs_policy_and_their_own_route_limits(fake_gemini, request_, tmp_path, monkeypatch,
                                                                upstream_stub):
    from pytest_hypeedit.providers import runtime as runtime_module
    from pytest_hypeedit.registry import RouteLimits

    seen_routes = []

    def limits(spec):
        seen_routes.append(spec.route)
        return RouteLimits(rpm=6000, inflight=2)

    run = runtime_module.Runtime(state_dir=tmp_path, limits=limits, policy=FAST)
    fake_gemini.queue(verdict_reply())
    judge = GeminiJudge(JudgeOptions(runtime=run))
    assert judge.judge(request_).passed
    transport = judge.session.http._transport
    assert transport.policy is FAST and transport.limiter is not None
    judge.close()
    assert seen_routes == ["gemini-judge"]


def test_openai_judge_images_are_bounded_and_converted_once(fake_chat, tmp_path, monkeypatch, upstream_stub):
    """A large reference goes at most 2048 px a side (OpenAI scales to that anyway), and a WebP is made a PNG
    once, into the cache, not at every verdict; a small PNG or JPEG goes as it is."""
    from pytest_hypeedit.providers import images as images_module, runtime

    fits = []
    original_fit = images_module.fit
    monkeypatch.setattr(images_module, "fit", lambda *a, **k: fits.append(1) or original_fit(*a, **k))
    big = tmp_path / "big.jpg"
    Image.new("RGB", (4096, 1024), (9, 9, 9)).save(big, format="JPEG")
    webp = tmp_path / "ref.webp"
    Image.new("RGB", (64, 48), (1, 2, 3)).save(webp, format="WEBP")
    (tmp_path / "cand.png").write_bytes(png_bytes())
    task = Task("task-9", ("big.jpg", "ref.webp"), ("edit",), "Make the mug blue.", 1024, 1024, "public")
    request = JudgeRequest(task, "seedream-4.5", 1, tmp_path / "cand.png", (big, webp))
    judge = OpenAICompatJudge("qwen2.5-vl", replace(OPTIONS, runtime=runtime.Runtime(cache_dir=tmp_path / "prepared")))
    for _ in range(2):
        fake_chat.queue(chat_verdict("PASS", "fine"))
        judge.judge(request)
    judge.close()
    sizes = [Image.open(io.BytesIO(data)).size for _, data in fake_chat.requests[-1].parsed["images"]]
    assert 2040 <= sizes[0][0] <= 2048 and sizes[1] == (64, 48)
    assert [mime for mime, _ in fake_chat.requests[-1].parsed["images"]] == ["image/jpeg", "image/png", "image/png"]
    assert len(fits) == 2  # the big JPEG and the WebP, each once for two verdicts
    assert len(list((tmp_path / "prepared" / "openai-judge").glob("*.png"))) == 1  # the WebP, in the run's folder
    assert fake_chat.requests[-1].parsed["images"][2][1] == (tmp_path / "cand.png").read_bytes()


def test_a_reference_judged_by_many_threads_at_once_is_converted_once(tmp_path, monkeypatch):
    """The ten repeats of a task reach the judge together: its WebP reference is made a PNG once, not once per
    thread (each conversion of a 4K image holds hundreds of MB)."""
    import threading

    from pytest_hypeedit.judges import openai_compat
    from pytest_hypeedit.providers import images as images_module

    fits = []
    original_fit = images_module.fit

    def slow_fit(*args, **kwargs):
        fits.append(1)
        time.sleep(0.05)  # long enough for every thread to arrive while the first converts
        return original_fit(*args, **kwargs)

    monkeypatch.setattr(images_module, "fit", slow_fit)
    webp = tmp_path / "ref.webp"
    Image.new("RGB", (64, 48), (1, 2, 3)).save(webp, format="WEBP")
    urls = []
    folder = tmp_path / "prepared"
    threads = [threading.Thread(target=lambda: urls.append(str(openai_compat.data_url(webp, folder)))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(fits) == 1 and len(set(urls)) == 1 and urls[0].startswith("data:image/png;base64,")
