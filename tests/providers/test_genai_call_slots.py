"""google-genai builds and sends its own requests: a Gemini call holding the pool's in-flight slot still takes no
second one (the session ties the call's requests to its slots with a header it takes off before sending), the
header never reaches Google, and a call without its slot while every slot is held says so instead of waiting."""

from __future__ import annotations

import io

import pytest
from genai_fakes.fixtures import fake_gemini  # noqa: F401 - fixture
from genai_fakes.gemini import image_reply
from helper_thread import on_a_helper_thread
from PIL import Image

from pytest_hypeedit.engine.call_context import GenerationContext
from pytest_hypeedit.engine.limits import RouteLimiter
from pytest_hypeedit.errors import ConfigError
from pytest_hypeedit.providers.base import GenerationRequest
from pytest_hypeedit.providers.gemini import GeminiProvider
from pytest_hypeedit.providers.genai_client import CALL_HEADER
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.tasks import Task
from pytest_hypeedit.transport.http import RetryPolicy

SPEC = ModelSpec("gemini-3-pro-preview", "gemini", "gemini-3-pro-image", 0.134)
BOUND = 60.0


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (20, 40, 220)).save(buffer, format="PNG")
    return buffer.getvalue()


def request_for(tmp_path, slots=()) -> GenerationRequest:
    (tmp_path / "001.png").write_bytes(png())
    task = Task("task-1", ("001.png",), ("edit",), "Make the mug blue.", 64, 64, "public")
    return GenerationRequest(task, 1, 1234, (tmp_path / "001.png",), SPEC, call=GenerationContext(slots=slots))


def in_thread(fn):
    return on_a_helper_thread(fn, BOUND, "the call never ended: its request waited for a second slot")


@pytest.fixture
def limited(tmp_path):
    """A Gemini adapter whose route has one in-flight slot, and that slot held for a call (as the pool does)."""
    limiter = RouteLimiter(tmp_path / "limits", "gemini", rpm=None, inflight=1)
    adapter = GeminiProvider(SPEC, policy=RetryPolicy(max_attempts=1), limiter=limiter, timeout_s=20)
    slot = limiter.try_call_slot()
    yield adapter, slot
    adapter.close()
    if not slot.released:
        slot.release()


def test_a_gemini_call_under_its_slot_takes_no_second_one_and_the_tie_never_leaves(fake_gemini, limited, tmp_path):
    adapter, slot = limited
    fake_gemini.queue(image_reply(png()))
    generation = in_thread(lambda: adapter.generate(request_for(tmp_path, slots=(slot,))))
    assert generation.ext == "png"
    assert len(fake_gemini.requests) == 1
    assert CALL_HEADER not in fake_gemini.requests[0].headers
    assert adapter.session._calls == {}  # the tie lasts for the call only


def test_a_gemini_call_without_its_slot_says_so_instead_of_waiting(fake_gemini, limited, tmp_path):
    adapter, _ = limited
    fake_gemini.queue(image_reply(png()))
    with pytest.raises(ConfigError, match="route gemini: an HTTP request was sent without the in-flight slot"):
        in_thread(lambda: adapter.generate(request_for(tmp_path)))
    assert fake_gemini.requests == []  # nothing sent, nothing paid
