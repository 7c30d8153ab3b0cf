"""An answered synchronous generation whose 200 reply has an unexpected shape is the call's own failure (a refusal
or an error of ours, with the route), never another exception: one of those was "a bug of the plugin", counted
possibly paid, and bought again on the next run although the provider had answered (and billed) it."""

from __future__ import annotations

import types

import httpx
import pytest

from pytest_hypeedit.errors import HypeEditError, Refusal
from pytest_hypeedit.providers.ark import ArkProvider
from pytest_hypeedit.providers.dashscope import DashScopeProvider
from pytest_hypeedit.providers.openrouter import OpenRouterProvider
from pytest_hypeedit.providers.runware import RunwareProvider
from pytest_hypeedit.registry import ModelSpec

#: Values a hostile or broken reply may hold where an image (or the list of them) belongs.
ODD = [None, 1, "x", [], [1], ["x"], {}, {"a": 1}, [{"image": 1}], [{"image_url": "s"}], [{"image_url": {"url": 5}}],
       [{"url": 5}], [{"url": "http://a/x\n.png"}], [{"url": "http://[::1/x.png"}], [{"error": 5}]]


def replies():
    for value in ODD:
        yield {"output": {"choices": [{"message": {"content": value}}]}}
        yield {"output": {"choices": value}}
        yield {"output": value}
        yield {"choices": [{"message": {"images": value}}]}
        yield {"choices": value}
        yield {"choices": [{"message": value}]}
        yield {"choices": [value]}
        yield {"data": value}
        yield {"data": [value]}
        yield {"data": [{"taskUUID": "t-1", "imageURL": value}]}
        yield value


REQUEST = types.SimpleNamespace(task=types.SimpleNamespace(task_id="t"), references=(), journal=None, landing=None,
                                slots=())
READERS = {
    "dashscope": (DashScopeProvider, lambda provider, reply: provider.image_url(REQUEST, reply, "req-1")),
    "openrouter": (OpenRouterProvider, lambda provider, reply: provider.image_url(
        REQUEST, reply if isinstance(reply, dict) else {}, "req-1", "w")),
    "ark": (ArkProvider, lambda provider, reply: provider.image_bytes(REQUEST, reply, "req-1")),
    "runware": (RunwareProvider, lambda provider, reply: str(provider.result_item(REQUEST, reply, "t-1")["imageURL"])),
}


@pytest.mark.parametrize("route", list(READERS))
def test_a_reply_of_any_shape_is_a_refusal_or_an_error_of_ours(route):
    # Planted: dashscope's image_url without AttributeError in its except, openrouter's without its isinstance
    # checks: 5 and 2 replies escape as AttributeError / TypeError.
    cls, read = READERS[route]
    provider = cls(ModelSpec("m", route, "seedream-4-5-251128", 0.1))
    provider.what = lambda request: f"{route} m"
    provider.worst_case_cost = lambda request: 0.1
    escaped = []
    for reply in replies():
        try:
            url = read(provider, reply)
        except HypeEditError:
            continue
        except Exception as exc:  # noqa: BLE001 - what the test looks for
            escaped.append(f"{type(exc).__name__} <- {reply!r:.80}")
            continue
        assert isinstance(url, str)  # a URL handed on: the download checks it (providers/adapter.py)
    assert escaped == []


def test_a_result_url_that_cannot_be_fetched_is_a_paid_refusal_with_the_request_id():
    provider = ArkProvider(ModelSpec("m", "ark", "seedream-4-5-251128", 0.04))
    provider.worst_case_cost = lambda request: 0.04
    for url in ("http://a/x\n.png", "http://[::1/x.png", "ftp://a/x.png", 5):
        with pytest.raises(Refusal) as caught:
            provider.download(url, "ark m", request=REQUEST, request_id="req-1")
        assert caught.value.cost == 0.04 and caught.value.request_id == "req-1"
        assert "cannot be fetched" in caught.value.reason


@pytest.mark.parametrize("body", [{"errors": 5}, {"errors": "x"}, {"error": 1.5}, {"errors": [1, {"code": "c"}]}, [1]])
def test_runware_reads_errors_of_any_shape(body):
    response = httpx.Response(400, json=body)
    assert all(isinstance(error, dict) for error in RunwareProvider.errors_of(response))
