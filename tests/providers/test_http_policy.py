import time

import httpx
import pytest
from providers_fakes import FakeServer, Reply

from pytest_hypeedit.errors import ProviderError
from pytest_hypeedit.transport.http import (
    RetryPolicy,
    is_retryable,
    make_http_client,
    parse_retry_after,
    raise_for_status,
    send,
)

FAST = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05)
KEY = "sk-live-KEYVALUE-abcdef123456"


@pytest.fixture
def server():
    fake = FakeServer()
    fake.route("POST", "/v1/thing", lambda seen: Reply(200, {"ok": True, "echo": seen.json()}))
    fake.route("GET", "/v1/thing", lambda seen: Reply(200, {"ok": True}))
    with fake:
        yield fake


@pytest.fixture
def delays():
    return []


def client_for(delays, **kwargs):
    def sleep(seconds):
        delays.append(seconds)
        time.sleep(min(seconds, 0.01))
    return make_http_client("test", policy=kwargs.pop("policy", FAST), sleep=sleep, **kwargs)


def test_retries_503_then_succeeds_resending_the_body(server, delays):
    server.inject("status", status=503, count=2)
    with client_for(delays) as client:
        response = client.post(f"{server.url}/v1/thing", json={"a": 1})
    assert response.status_code == 200 and response.json()["echo"] == {"a": 1}
    assert len(server.seen("/v1/thing")) == 3
    assert [request.json() for request in server.seen()] == [{"a": 1}] * 3
    assert len(delays) == 2 and all(0 < d <= 0.05 for d in delays)


def test_honours_retry_after_seconds(server, delays):
    server.inject("status", status=429, retry_after="3")
    with client_for(delays) as client:
        assert client.get(f"{server.url}/v1/thing").status_code == 200
    assert delays and delays[0] >= 3.0


def test_retry_after_past_the_cap_is_not_waited_for(server, delays):
    server.inject("status", status=429, retry_after="3600")
    with client_for(delays) as client:
        response = client.get(f"{server.url}/v1/thing")
    assert response.status_code == 429 and delays == []


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_no_retry_on_other_4xx(server, delays, status):
    server.inject("status", status=status)
    with client_for(delays) as client:
        assert client.get(f"{server.url}/v1/thing").status_code == status
    assert len(server.seen()) == 1


def test_no_retry_on_429_insufficient_quota(server, delays):
    body = {"error": {"code": "insufficient_quota", "message": "You exceeded your current quota"}}
    server.inject("status", status=429, body=body)
    with client_for(delays) as client:
        response = client.get(f"{server.url}/v1/thing")
    assert response.status_code == 429 and len(server.seen()) == 1
    with pytest.raises(ProviderError) as info:
        raise_for_status(response, route="openai", model="gpt-image-1.5")
    assert info.value.retryable is False and "insufficient_quota" in str(info.value)


def test_x_should_retry_header_wins(server, delays):
    server.inject("status", status=503, headers={"x-should-retry": "false"})
    with client_for(delays) as client:
        assert client.get(f"{server.url}/v1/thing").status_code == 503
    assert len(server.seen()) == 1


def test_gives_up_after_max_attempts_with_a_retryable_error(server, delays):
    server.inject("status", status=500, count=10)
    with client_for(delays) as client:
        response = client.get(f"{server.url}/v1/thing")
    assert response.status_code == 500 and len(server.seen()) == FAST.max_attempts
    with pytest.raises(ProviderError) as info:
        raise_for_status(response, route="ark", model="seedream-4.5")
    assert info.value.retryable is True and info.value.status == 500
    assert "seedream-4.5 via ark: HTTP 500" in str(info.value)


def test_slow_reply_past_the_timeout_is_retried_then_a_provider_error(server, delays):
    server.inject("slow", delay=0.5, count=10)
    with client_for(delays, timeout=0.1, policy=RetryPolicy(max_attempts=2, base_delay=0.01)) as client:
        with pytest.raises(ProviderError) as info:
            send(client, "GET", f"{server.url}/v1/thing", route="bfl", model="flux-2-max")
    assert "ReadTimeout" in str(info.value) and info.value.retryable
    assert len(server.seen()) == 2


def test_slow_reply_once_then_success(server, delays):
    server.inject("slow", delay=0.5)
    with client_for(delays, timeout=0.2) as client:
        assert client.get(f"{server.url}/v1/thing").status_code == 200
    # the slow reply was given up at the timeout and the request sent again (waiting for it would
    # also end in 200, after one request)
    assert len(server.seen()) == 2 and len(delays) == 1


def test_dropped_connection_is_retried(server, delays):
    server.inject("drop")
    with client_for(delays) as client:
        assert client.get(f"{server.url}/v1/thing").json() == {"ok": True}
    assert len(server.seen()) == 2


def test_connection_refused_becomes_a_redacted_provider_error(delays, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with client_for(delays, policy=RetryPolicy(max_attempts=2, base_delay=0.0)) as client:
        with pytest.raises(ProviderError) as info:
            send(client, "GET", f"http://127.0.0.1:9/x?key={KEY}", route="openai", model="m")
    assert KEY not in str(info.value) and "ConnectError" in str(info.value)
    assert len(delays) == 1


def test_raise_for_status_redacts_a_key_the_provider_echoes(server, delays, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    body = {"error": {"code": "invalid_api_key", "message": f"Incorrect API key provided: {KEY}"}}
    server.inject("status", status=401, body=body, headers={"x-request-id": "req_42"})
    with client_for(delays) as client:
        response = client.get(f"{server.url}/v1/thing", headers={"Authorization": f"Bearer {KEY}"})
    with pytest.raises(ProviderError) as info:
        raise_for_status(response, route="openai", model="gpt-image-1.5")
    message = str(info.value)
    assert KEY not in message and "invalid_api_key" in message and "req_42" in message
    assert info.value.retryable is False and info.value.status == 401


def test_raise_for_status_on_success_is_silent(server, delays):
    with client_for(delays) as client:
        raise_for_status(client.get(f"{server.url}/v1/thing"), route="x", model="y")


def test_error_envelopes_of_several_providers():
    request = httpx.Request("POST", "http://h/p?sig=abc")
    cases = [
        ({"code": "InvalidParameter", "message": "bad size", "request_id": "r"}, "InvalidParameter: bad size"),
        ({"detail": [{"loc": ["body"], "msg": "x", "type": "content_policy_violation"}]}, "content_policy_violation"),
        ({"detail": "Request was throttled."}, "Request was throttled."),
        ({"error": "plain string"}, "plain string"),
    ]
    for body, expected in cases:
        response = httpx.Response(400, json=body, request=request)
        with pytest.raises(ProviderError) as info:
            raise_for_status(response, route="r", model="m")
        assert expected in str(info.value) and "sig=abc" not in str(info.value)


def test_non_json_error_body():
    response = httpx.Response(502, text="<html>Bad gateway</html>", request=httpx.Request("GET", "http://h/"))
    with pytest.raises(ProviderError, match="Bad gateway") as info:
        raise_for_status(response, route="r", model="m")
    assert info.value.retryable


def test_parse_retry_after_forms():
    assert parse_retry_after(httpx.Headers({"retry-after": "7"})) == 7.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250", "retry-after": "7"})) == 0.25
    date = "Wed, 21 Oct 2015 07:28:10 GMT"
    assert parse_retry_after(httpx.Headers({"retry-after": date}), now=1445412480.0) == 10.0
    assert parse_retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert parse_retry_after(httpx.Headers({})) is None


def test_backoff_grows_exponentially_within_jitter_and_cap():
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0, jitter=0.5)
    assert policy.backoff(1, rand=lambda: 0.0) == 0.5 and policy.backoff(1, rand=lambda: 1.0) == 1.0
    assert policy.backoff(3, rand=lambda: 1.0) == 4.0
    assert policy.backoff(10, rand=lambda: 1.0) == 8.0
    assert policy.backoff(1, retry_after=5.0, rand=lambda: 0.0) == 5.0


def test_is_retryable_table():
    def response(status, headers=None):
        return httpx.Response(status, headers=headers or {}, content=b"{}")
    assert [is_retryable(response(s)) for s in (408, 429, 500, 502, 503, 504, 599)] == [True] * 7
    assert [is_retryable(response(s)) for s in (400, 401, 402, 403, 404, 422)] == [False] * 6
    assert is_retryable(response(422, {"X-Fal-Retryable": "true"}))


def test_limiter_slot_is_taken_for_every_attempt(server, delays):
    class CountingLimiter:
        def __init__(self):
            self.entered = 0

        def slot(self, **options):
            import contextlib
            self.entered += 1
            return contextlib.nullcontext()

    limiter = CountingLimiter()
    server.inject("status", status=503)
    with client_for(delays, limiter=limiter) as client:
        client.get(f"{server.url}/v1/thing")
    assert limiter.entered == 2


@pytest.mark.parametrize(
    "status, body, expected",
    [
        (401, {"error": {"code": "AuthenticationError", "message": "bad key"}}, "check ARK_API_KEY"),
        (402, {"error": {"message": "no credits"}}, "credit or quota is used up"),
        (429, {"error": {"code": "insufficient_quota", "message": "quota"}}, "credit or quota is used up"),
        (503, {"error": {"message": "unavailable"}}, "rerun later, only what is missing is done"),
    ],
)
def test_a_failed_call_says_what_to_do_next(status, body, expected):
    response = httpx.Response(status, json=body, request=httpx.Request("POST", "http://h/images/generations"))
    with pytest.raises(ProviderError, match=expected):
        raise_for_status(response, route="ark", model="seedream-4.5")


# --------------------------------------------------------------------------- job submissions


@pytest.mark.parametrize("fault", [{"kind": "slow", "delay": 0.5}, {"kind": "drop"}], ids=["read timeout", "dropped"])
def test_a_submission_that_may_have_arrived_is_not_sent_again(server, delays, fault):
    server.inject(fault.pop("kind"), **fault)
    with client_for(delays, timeout=0.2) as client:
        with pytest.raises(ProviderError) as info:
            send(client, "POST", f"{server.url}/v1/thing", route="bfl", model="flux-2-max", json={"a": 1},
                 submits=True)
    assert len(server.seen()) == 1  # a second one could have been a second paid job
    assert "was not sent again" in str(info.value) and info.value.retryable


def test_a_submission_that_never_left_or_was_turned_away_is_retried(server, delays):
    server.inject("status", status=503)  # the provider says it did not take it
    with client_for(delays) as client:
        response = send(client, "POST", f"{server.url}/v1/thing", route="bfl", model="flux-2-max", json={"a": 1},
                        submits=True)
    assert response.status_code == 200 and len(server.seen()) == 2
    with client_for(delays, policy=RetryPolicy(max_attempts=2, base_delay=0.0)) as client:
        with pytest.raises(ProviderError) as info:  # connection refused: nothing was sent, retrying is safe
            send(client, "POST", "http://127.0.0.1:9/v1/thing", route="bfl", model="flux-2-max", submits=True)
    assert "ConnectError" in str(info.value) and "not sent again" not in str(info.value)
    assert delays.count(delays[-1]) >= 1 and len(delays) >= 2

