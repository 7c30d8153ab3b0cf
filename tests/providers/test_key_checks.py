"""Each route's (and judge's) free key check: the request its provider documents, against a loopback stand-in.

For every provider with a free call that proves a key, the check sends exactly that request (method, path, the key
in the provider's own auth header) to the stand-in, once; the right key is accepted, a wrong one rejected, and a
check that cannot tell (the endpoint down, the network gone) is "unsure", never a rejection, in a bounded time.
ModelArk and DashScope document no such call: they have none.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import httpx
import pytest
from genai_fakes import FakeChat, FakeGemini
from providers_fakes.bfl import FakeBfl
from providers_fakes.fal import FakeFal
from providers_fakes.openai import FakeOpenAI
from providers_fakes.openrouter import FakeOpenRouter
from providers_fakes.replicate import FakeReplicate
from providers_fakes.runware import FakeRunware

from pytest_hypeedit.judges import JudgeOptions
from pytest_hypeedit.judges.gemini import GeminiJudge
from pytest_hypeedit.judges.openai_compat import OpenAICompatJudge
from pytest_hypeedit.providers.ark import ArkProvider
from pytest_hypeedit.providers.bfl import BflProvider
from pytest_hypeedit.providers.dashscope import DashScopeProvider
from pytest_hypeedit.providers.fal import FalProvider
from pytest_hypeedit.providers.gemini import GeminiProvider
from pytest_hypeedit.providers.openai import OpenAIProvider
from pytest_hypeedit.providers.openrouter import OpenRouterProvider
from pytest_hypeedit.providers.replicate import ReplicateProvider
from pytest_hypeedit.providers.runware import RunwareProvider
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.transport.keycheck import ACCEPTED, REJECTED, UNSURE, prove_keys, rejections, warnings_of

WRONG = "wrong-key-0123456789abcdef"


@dataclass
class Case:
    fake: Callable[[], object]
    adapter: Callable[[ModelSpec], object]
    spec: ModelSpec
    method: str
    path: str
    auth: tuple[str, str]  # header, value with {key}


CASES = {
    "openai": Case(FakeOpenAI, OpenAIProvider, ModelSpec("m", "openai", "gpt-image-1.5", 0.1), "GET",
                   "/v1/models/gpt-image-1.5", ("authorization", "Bearer {key}")),
    "openrouter": Case(FakeOpenRouter, OpenRouterProvider,
                       ModelSpec("m", "openrouter", "google/gemini-3-pro-image-preview", 0.1), "GET", "/api/v1/key",
                       ("authorization", "Bearer {key}")),
    "replicate": Case(FakeReplicate, ReplicateProvider, ModelSpec("m", "replicate", "bytedance/seedream-4.5", 0.1),
                      "GET", "/v1/account", ("authorization", "Bearer {key}")),
    "bfl": Case(FakeBfl, BflProvider, ModelSpec("m", "bfl", "flux-2-max", 0.1), "GET", "/v1/credits",
                ("x-key", "{key}")),
    "fal": Case(FakeFal, FalProvider, ModelSpec("m", "fal", "fal-ai/bytedance/seedream/v4.5/edit", 0.1), "GET",
                "/v1/models/pricing", ("authorization", "Key {key}")),
    "runware": Case(FakeRunware, RunwareProvider, ModelSpec("m", "runware", "sourceful:riverflow-2.0@pro", 0.15),
                    "POST", "/v1", ("authorization", "Bearer {key}")),
}


def served(fake, monkeypatch, key: str) -> None:
    monkeypatch.setenv(fake.env, fake.base)
    monkeypatch.setenv(fake.key_env, key)
    if isinstance(fake, FakeFal):
        monkeypatch.setenv("HYPEEDIT_FAL_PLATFORM_BASE_URL", fake.platform)


@pytest.mark.parametrize("route", sorted(CASES))
def test_the_right_key_is_accepted_with_the_documented_request(route, monkeypatch):
    case = CASES[route]
    with case.fake() as fake:
        served(fake, monkeypatch, fake.key)
        [found] = prove_keys([case.adapter(case.spec).key_probe()])
    assert found.verdict == ACCEPTED, found
    [seen] = fake.key_checks
    assert (seen.method, seen.path) == (case.method, case.path)
    header, value = case.auth
    assert seen.headers[header] == value.format(key=fake.key)
    assert fake.requests == []  # nothing else was sent, nothing paid
    if route == "runware":
        [task] = seen.json()
        assert (task["taskType"], task["operation"]) == ("accountManagement", "getDetails")
    if route == "fal":
        assert seen.query == "endpoint_id=fal-ai%2Fbytedance%2Fseedream%2Fv4.5%2Fedit"


@pytest.mark.parametrize("route", sorted(CASES))
def test_a_wrong_key_is_rejected(route, monkeypatch):
    case = CASES[route]
    with case.fake() as fake:
        served(fake, monkeypatch, WRONG)
        checks = prove_keys([case.adapter(case.spec).key_probe()])
    assert [c.verdict for c in checks] == [REJECTED]
    [message] = rejections(checks)
    assert message.startswith(f"{fake.key_env} was rejected (HTTP 401")
    assert f"route {route}" in message and WRONG not in message
    assert len(fake.key_checks) == 1  # a rejection is final: not asked again


def test_gemini_route_and_judge_are_checked_with_models_get(monkeypatch):
    with FakeGemini(expected_key="right-gemini-key-0123") as fake:
        monkeypatch.setenv("HYPEEDIT_GEMINI_BASE_URL", fake.url)
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        monkeypatch.setenv("GEMINI_API_KEY", "right-gemini-key-0123")
        probes = [GeminiProvider(ModelSpec("g", "gemini", "gemini-3-pro-image", 0.134)).key_probe(),
                  GeminiJudge(JudgeOptions()).key_probe()]
        assert [c.verdict for c in prove_keys(probes)] == [ACCEPTED, ACCEPTED]
        assert sorted((s.method, s.path) for s in fake.key_checks) == [
            ("GET", "/v1beta/models/gemini-3-flash-preview"), ("GET", "/v1beta/models/gemini-3-pro-image")]
        assert {s.headers["x-goog-api-key"] for s in fake.key_checks} == {"right-gemini-key-0123"}
        assert fake.requests == []


def test_a_wrong_gemini_key_is_one_rejection_naming_both_users(monkeypatch):
    """Google answers a wrong key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID: rejected, not "unsure"."""
    with FakeGemini(expected_key="right-gemini-key-0123") as fake:
        monkeypatch.setenv("HYPEEDIT_GEMINI_BASE_URL", fake.url)
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        monkeypatch.setenv("GEMINI_API_KEY", WRONG)
        checks = prove_keys([GeminiProvider(ModelSpec("g", "gemini", "gemini-3-pro-image", 0.134)).key_probe(),
                             GeminiJudge(JudgeOptions()).key_probe()])
    assert [c.verdict for c in checks] == [REJECTED, REJECTED]
    [message] = rejections(checks)
    assert message.startswith("GEMINI_API_KEY was rejected (HTTP 400 INVALID_ARGUMENT")
    assert "API_KEY_INVALID" in message and "route gemini and judge gemini-3-flash" in message
    assert WRONG not in message


def test_the_openai_judge_is_checked_on_openais_api_only(monkeypatch):
    with FakeChat(expected_key="sk-right-judge-0123456") as fake:
        monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", fake.base_url)  # "OpenAI's API" moved to the stand-in
        monkeypatch.setenv("OPENAI_API_KEY", "sk-right-judge-0123456")
        judge = OpenAICompatJudge("gpt-4.1", JudgeOptions(openai_base_url=fake.base_url))
        [found] = prove_keys([judge.key_probe()])
        assert found.verdict == ACCEPTED
        [seen] = fake.key_checks
        assert (seen.method, seen.path, seen.headers["authorization"]) == (
            "GET", "/v1/models/gpt-4.1", "Bearer sk-right-judge-0123456")
    monkeypatch.delenv("HYPEEDIT_OPENAI_BASE_URL")
    # another server (vLLM, Ollama) documents no such call: the first rejected key stops the judge instead
    assert OpenAICompatJudge("m", JudgeOptions(openai_base_url="http://127.0.0.1:9/v1")).key_probe() is None


@pytest.mark.parametrize("adapter,spec", [(ArkProvider, ModelSpec("m", "ark", "seedream-4-5-251128", 0.04)),
                                          (DashScopeProvider, ModelSpec("m", "dashscope", "qwen-image-edit", 0.03))])
def test_routes_whose_provider_documents_no_free_call_have_no_check(adapter, spec):
    assert adapter(spec).key_probe() is None


def test_fal_with_its_queue_moved_and_no_platform_url_is_not_checked(monkeypatch):
    """The Platform API is another host than the queue's: a moved queue (a proxy) says nothing of where it is,
    so the key is not sent to a guess."""
    monkeypatch.setenv("HYPEEDIT_FAL_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("HYPEEDIT_FAL_PLATFORM_BASE_URL", raising=False)
    monkeypatch.setenv("FAL_KEY", "fal-key-0123456789")
    assert FalProvider(CASES["fal"].spec).key_probe() is None


# --------------------------------------------------------------------------- a check that cannot tell


def test_a_check_endpoint_that_is_down_is_unsure_not_rejected(monkeypatch):
    with FakeOpenAI() as fake:
        served(fake, monkeypatch, fake.key)
        fake.inject("status", path="/v1/models", status=503, count=5)
        checks = prove_keys([OpenAIProvider(CASES["openai"].spec).key_probe()])
    assert [c.verdict for c in checks] == [UNSURE]
    assert len(fake.key_checks) == 2  # one retry, then it gives up: never blocks the run
    [line] = warnings_of(checks)
    assert "OPENAI_API_KEY of route openai could not be checked before paying (HTTP 503" in line
    assert rejections(checks) == []


def test_a_network_failure_of_the_check_is_unsure_and_bounded(monkeypatch):
    def unreachable(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    monkeypatch.setenv("OPENAI_API_KEY", "sk-some-key-0123456789")
    monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    started = time.monotonic()
    [found] = prove_keys([OpenAIProvider(CASES["openai"].spec).key_probe()], transport=httpx.MockTransport(unreachable))
    assert found.verdict == UNSURE and "ConnectError" in found.detail
    assert time.monotonic() - started < 5  # one retry after half a second or so, not the paid calls' patience


def test_a_model_the_check_does_not_know_is_unsure(monkeypatch):
    """A 404 from models retrieve says nothing against the key: the run's own retirement checks speak of ids."""
    with FakeOpenAI() as fake:
        served(fake, monkeypatch, fake.key)
        [found] = prove_keys([OpenAIProvider(ModelSpec("m", "openai", "gpt-image-9", 0.1)).key_probe()])
    assert found.verdict == UNSURE and "model_not_found" in found.detail


def test_the_same_request_is_sent_once(monkeypatch):
    with FakeOpenAI() as fake:
        served(fake, monkeypatch, fake.key)
        probe = OpenAIProvider(CASES["openai"].spec).key_probe()
        assert [c.verdict for c in prove_keys([probe, probe])] == [ACCEPTED, ACCEPTED]
    assert len(fake.key_checks) == 1


def test_a_probe_never_sends_its_key_off_its_origin(monkeypatch):
    """The check goes through the one HTTP policy: a redirect off the origin is not followed with the key."""
    with FakeOpenAI() as fake, FakeOpenAI() as stranger:
        served(fake, monkeypatch, fake.key)
        fake.inject("redirect", path="/v1/models", status=307, body=stranger.url + "{path}")
        [found] = prove_keys([OpenAIProvider(CASES["openai"].spec).key_probe()])
    assert found.verdict == UNSURE and "not followed" in found.detail
    assert stranger.key_checks == [] and stranger.requests == []
    assert fake.key not in found.detail


# --------------------------------------------------------------------------- a paid call's rejected key


def test_googles_invalid_key_in_a_paid_call_is_a_rejected_key(monkeypatch, tmp_path):
    """Gemini's 400 INVALID_ARGUMENT with reason API_KEY_INVALID, through google-genai: a rejected key (the route
    stops at it), not a plain bad request."""
    from providers_fakes.contract import make_request

    from pytest_hypeedit.engine.rejected_keys import key_rejected
    from pytest_hypeedit.errors import ProviderError

    with FakeGemini(expected_key="right-gemini-key-0123") as fake:
        monkeypatch.setenv("HYPEEDIT_GEMINI_BASE_URL", fake.url)
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        monkeypatch.setenv("GEMINI_API_KEY", WRONG)
        spec = ModelSpec("g", "gemini", "gemini-3-pro-image", 0.134)
        with pytest.raises(ProviderError) as caught:
            GeminiProvider(spec).generate(make_request(tmp_path, spec))
    assert caught.value.status == 400 and caught.value.key_invalid and key_rejected(caught.value)
    assert "API_KEY_INVALID" in str(caught.value) and WRONG not in str(caught.value)


def test_a_reply_that_calls_the_key_invalid_is_a_rejected_key_whatever_its_status():
    from pytest_hypeedit.engine.rejected_keys import key_rejected
    from pytest_hypeedit.errors import ProviderError
    from pytest_hypeedit.transport.httperrors import raise_for_status

    request = httpx.Request("POST", "https://api.runware.ai/v1")
    reply = httpx.Response(400, json={"errors": [{"code": "invalidApiKey", "message": "Invalid API key."}]},
                           request=request)
    with pytest.raises(ProviderError) as caught:
        raise_for_status(reply, route="runware", model="m")
    assert key_rejected(caught.value) and "check RUNWARE_API_KEY" in str(caught.value)
    plain = httpx.Response(400, json={"errors": [{"code": "invalidParameter", "message": "width"}]}, request=request)
    with pytest.raises(ProviderError) as caught:
        raise_for_status(plain, route="runware", model="m")
    assert not key_rejected(caught.value)


def test_a_request_id_the_message_quotes_is_not_added_again():
    from pytest_hypeedit.errors import ProviderError
    from pytest_hypeedit.transport.httperrors import raise_for_status

    request = httpx.Request("POST", "https://ark.ap-southeast.bytepluses.com/api/v3/images/generations")
    reply = httpx.Response(401, json={"error": {"code": "AuthenticationError",
                                                "message": "The API key is missing or invalid. Request id: 0217abc"}},
                           headers={"x-request-id": "0217abc"}, request=request)
    with pytest.raises(ProviderError) as caught:
        raise_for_status(reply, route="ark", model="m")
    assert str(caught.value).count("0217abc") == 1
