"""The gemini route: the real google-genai client against the loopback fake (genai_fakes)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import time
from types import MappingProxyType

import httpx
import pytest
from genai_fakes import Reply
from genai_fakes.fixtures import FAKE_GEMINI_KEY, fake_gemini  # noqa: F401 - fixture
from genai_fakes.gemini import (
    block_reply,
    echo_key_error,
    error_reply,
    finish_reply,
    image_reply,
    malformed_reply,
    png_bytes,
    slow,
    text_reply,
)
from PIL import Image

from pytest_hypeedit.errors import ConfigError, ImageError, ModelGone, ProviderError, Refusal
from pytest_hypeedit.providers import BUILTIN_ROUTES, builtin_provider, gemini as gemini_module
from pytest_hypeedit.providers.base import GenerationRequest
from pytest_hypeedit.providers.gemini import GeminiProvider, nearest_aspect_ratio
from pytest_hypeedit.providers.runtime import Runtime
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.tasks import Task
from pytest_hypeedit.transport.http import RetryPolicy

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=0.0)
SPEC = ModelSpec("gemini-3-pro-preview", "gemini", "gemini-3-pro-image", 0.134,
                 MappingProxyType({"image_size": "2K"}))
BLUE, RED, GREEN = (20, 40, 220), (220, 20, 20), (20, 200, 40)


def webp_bytes(color=(10, 10, 10)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (10, 10), color).save(buffer, format="WEBP")
    return buffer.getvalue()


@pytest.fixture
def references(tmp_path):
    (tmp_path / "001.webp").write_bytes(webp_bytes())
    (tmp_path / "002.png").write_bytes(png_bytes())
    return (tmp_path / "001.webp", tmp_path / "002.png")


def make_request(references, *, task_id="task-1", width=1600, height=900, repeat=1, seed=1234, spec=SPEC):
    task = Task(task_id, tuple(p.name for p in references), ("edit",), "Make the mug blue.", width, height, "public")
    return GenerationRequest(task, repeat, seed, tuple(references), spec)


def no_socket(fake_gemini) -> Runtime:
    """The runtime of an adapter that sends through the fake's httpx.MockTransport: the same script, no socket."""
    return Runtime(transport=fake_gemini.transport())


@pytest.fixture
def provider(fake_gemini):
    """The adapter, sending through the fake's httpx.MockTransport: the same script, no socket.  A test that
    needs the wire (a timeout; the call end to end over a connection) makes its own adapter."""
    adapter = GeminiProvider(SPEC, policy=FAST, timeout_s=5, runtime=no_socket(fake_gemini))
    yield adapter
    adapter.close()


def color_of(data: bytes) -> tuple:
    return Image.open(io.BytesIO(data)).convert("RGB").getpixel((0, 0))


def test_sends_instruction_images_size_ratio_and_seed(fake_gemini, provider, references):
    fake_gemini.queue(image_reply(png_bytes(color=BLUE)))
    generation = provider.generate(make_request(references))
    seen = fake_gemini.requests[0]
    assert seen.path == "/v1beta/models/gemini-3-pro-image:generateContent"
    assert seen.headers["x-goog-api-key"] == FAKE_GEMINI_KEY
    assert seen.parsed["texts"] == ["Make the mug blue."]
    assert [mime for mime, _ in seen.parsed["images"]] == ["image/webp", "image/png"]
    assert seen.parsed["images"][0][1] == references[0].read_bytes()
    config = seen.parsed["config"]
    assert config["image_config"] == {"aspect_ratio": "16:9", "image_size": "2K"}
    assert config["response_modalities"] == ["IMAGE"]
    assert config["seed"] == 1234
    assert (generation.ext, generation.seed, generation.cost) == ("png", 1234, 0.134)
    assert generation.provider_model == "gemini-3-pro-image"
    assert generation.request_id == "fake-resp-1"
    assert color_of(generation.image) == BLUE
    assert generation.extra["usage"]["candidates_token_count"] == 1120
    # the pixel signals' copy, made by the decode that checked the image: the candidate is not decoded again
    assert generation.preview is not None and generation.preview.size == Image.open(io.BytesIO(generation.image)).size


def test_success_on_the_wire(fake_gemini, references):
    """The same call over a loopback connection: google-genai's request as a socket carries it."""
    adapter = GeminiProvider(SPEC, policy=FAST, timeout_s=5)
    try:
        test_sends_instruction_images_size_ratio_and_seed(fake_gemini, adapter, references)
    finally:
        adapter.close()


def test_takes_the_last_image_that_is_not_a_thought(fake_gemini, provider, references):
    thoughts = [png_bytes(color=RED), png_bytes(color=GREEN)]
    fake_gemini.queue(image_reply(png_bytes(color=BLUE), thoughts=thoughts, text="Here is your edit."))
    assert color_of(provider.generate(make_request(references)).image) == BLUE


def test_jpeg_bytes_are_named_by_their_content(fake_gemini, provider, references):
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), BLUE).save(buffer, format="JPEG")
    fake_gemini.queue(image_reply(buffer.getvalue(), mime="image/png"))  # a mislabelled mimeType
    assert provider.generate(make_request(references)).ext == "jpg"


@pytest.mark.parametrize("reply, words", [
    (block_reply("SAFETY"), "prompt blocked (SAFETY)"),
    (block_reply("PROHIBITED_CONTENT"), "PROHIBITED_CONTENT"),
    (finish_reply("IMAGE_SAFETY"), "finishReason IMAGE_SAFETY"),
    (finish_reply("IMAGE_OTHER"), "IMAGE_OTHER"),
    (finish_reply("NO_IMAGE"), "NO_IMAGE"),
    (finish_reply("RECITATION"), "RECITATION"),
    (finish_reply("SPII"), "SPII"),
    (text_reply("I can't help with editing this image."), "without an image: \"I can't help"),
    (image_reply(png_bytes()[:40]), "cannot be decoded"),
    (image_reply(b"not an image at all"), "cannot be decoded"),
])
def test_refusals(fake_gemini, provider, references, reply, words):
    fake_gemini.queue(reply)
    with pytest.raises(Refusal) as caught:
        provider.generate(make_request(references))
    assert words in caught.value.reason
    # who answered, once; the task, model and repeat are the item's to say (glue/items.py)
    assert caught.value.reason.startswith("gemini gemini-3-pro-image: ") and caught.value.cost == 0.0
    assert "task-1" not in caught.value.reason
    assert len(fake_gemini.requests) == 1  # a refusal is an answer: not retried


def test_only_thought_images_is_a_refusal(fake_gemini, provider, references):
    reply = image_reply(png_bytes())
    reply.body["candidates"][0]["content"]["parts"][0]["thought"] = True
    fake_gemini.queue(reply)
    with pytest.raises(Refusal, match="without an image"):
        provider.generate(make_request(references))


def test_429_waits_for_retry_after_then_succeeds(fake_gemini, provider, references):
    fake_gemini.queue(error_reply(429, "Resource has been exhausted", "RESOURCE_EXHAUSTED", retry_after=0.3),
                      image_reply())
    started = time.monotonic()
    assert provider.generate(make_request(references)).ext == "png"
    assert time.monotonic() - started >= 0.3
    assert len(fake_gemini.requests) == 2


def test_503_is_retried(fake_gemini, provider, references):
    fake_gemini.queue(error_reply(503, "The model is overloaded.", "UNAVAILABLE"), image_reply())
    assert provider.generate(make_request(references)).ext == "png"


def test_persistent_500_is_a_retryable_provider_error(fake_gemini, provider, references):
    fake_gemini.default = error_reply(500, "Internal error encountered.", "INTERNAL")
    with pytest.raises(ProviderError) as caught:
        provider.generate(make_request(references))
    assert caught.value.retryable and caught.value.status == 500
    assert "HTTP 500 INTERNAL: Internal error encountered." in str(caught.value)
    assert len(fake_gemini.requests) == FAST.max_attempts


def test_400_is_not_retried_and_the_key_is_redacted(fake_gemini, provider, references):
    fake_gemini.queue(echo_key_error)
    with pytest.raises(ProviderError) as caught:
        provider.generate(make_request(references))
    message = str(caught.value)
    assert not caught.value.retryable and caught.value.status == 400
    assert FAKE_GEMINI_KEY not in message and "***" in message
    assert "gemini-3-pro-image" in message and "task-1" not in message  # the item names the task
    assert len(fake_gemini.requests) == 1


def test_malformed_json_is_a_retryable_error(fake_gemini, provider, references):
    fake_gemini.queue(malformed_reply())
    with pytest.raises(ProviderError, match="not valid JSON") as caught:
        provider.generate(make_request(references))
    assert caught.value.retryable


@pytest.mark.parametrize("body, words", [
    ({}, "no candidates and no blockReason"),
    ({"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "image/png", "data": "!!"}}]}}]},
     "documented shape"),
])
def test_a_broken_reply_is_a_retryable_error_not_a_refusal(fake_gemini, provider, references, body, words):
    fake_gemini.queue(Reply(200, body))
    with pytest.raises(ProviderError, match=words) as caught:
        provider.generate(make_request(references))
    assert caught.value.retryable


def test_slow_reply_past_the_timeout_is_a_retryable_error(fake_gemini, references):
    fake_gemini.default = slow(image_reply(), 10.0)
    adapter = GeminiProvider(SPEC, policy=RetryPolicy(max_attempts=1), timeout_s=0.3)
    with pytest.raises(ProviderError, match="Timeout") as caught:
        adapter.generate(make_request(references))
    gave_up = time.time()
    adapter.close()
    # given up about 0.3 s after the request arrived: counted from its arrival, not from the call's start, so
    # the time a loaded machine takes to make and send the request is no part of it
    [request] = fake_gemini.requests
    assert caught.value.retryable and gave_up - request.at < 1.5
    assert FAKE_GEMINI_KEY not in str(caught.value)


def test_google_api_key_wins_over_gemini_api_key(fake_gemini, references, monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_GEMINI_KEY)
    monkeypatch.setenv("GEMINI_API_KEY", "another-key-that-the-fake-rejects")
    fake_gemini.queue(image_reply())
    adapter = GeminiProvider(SPEC, policy=FAST, runtime=no_socket(fake_gemini))
    assert adapter.generate(make_request(references)).ext == "png"
    adapter.close()


def test_a_missing_key_names_the_variables_and_calls_nothing(fake_gemini, references, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY")
    with pytest.raises(ConfigError, match="GOOGLE_API_KEY or GEMINI_API_KEY") as caught:
        GeminiProvider(SPEC).generate(make_request(references))
    assert "gemini" in str(caught.value) and fake_gemini.requests == []


def test_one_client_per_provider_and_references_prepared_once_per_task(fake_gemini, provider, references,
                                                                       monkeypatch):
    prepared = []
    real = gemini_module.prepare_references

    def counting(references, *args, **kwargs):
        prepared.extend(references)
        return real(references, *args, **kwargs)

    monkeypatch.setattr(gemini_module, "prepare_references", counting)
    fake_gemini.default = image_reply()
    provider.generate(make_request(references, repeat=1))
    client = provider.session.client
    provider.generate(make_request(references, repeat=2))
    assert provider.session.client is client
    assert len(prepared) == len(references)  # repeat 2 reused repeat 1's parts
    provider.generate(make_request(references, task_id="task-2"))
    assert len(prepared) == 2 * len(references)


def test_too_many_references_is_an_input_error(fake_gemini, provider, tmp_path):
    paths = []
    for n in range(15):
        paths.append(tmp_path / f"{n:03d}.png")
        paths[-1].write_bytes(png_bytes())
    with pytest.raises(ImageError, match="at most 14"):
        provider.generate(make_request(paths))
    assert fake_gemini.requests == []


@pytest.mark.parametrize("size, ratio", [
    ((1024, 1024), "1:1"), ((1600, 900), "16:9"), ((900, 1600), "9:16"), ((2520, 1080), "21:9"),
    ((1000, 1250), "4:5"), ((1200, 800), "3:2"), ((1536, 1024), "3:2"), ((1024, 1365), "3:4"),
])
def test_nearest_aspect_ratio(size, ratio):
    assert nearest_aspect_ratio(*size) == ratio


def test_options_choose_size_and_ratios(fake_gemini, references):
    spec = ModelSpec("g", "gemini", "gemini-3-pro-image", 0.24,
                     MappingProxyType({"image_size": "4k", "aspect_ratios": ["1:1", "16:9"]}))
    fake_gemini.queue(image_reply())
    adapter = GeminiProvider(spec, policy=FAST, runtime=no_socket(fake_gemini))
    adapter.generate(make_request(references, width=1000, height=1250, spec=spec))
    adapter.close()
    assert fake_gemini.requests[0].parsed["config"]["image_config"] == {"aspect_ratio": "1:1", "image_size": "4K"}


def test_a_bad_image_size_is_a_config_error():
    spec = ModelSpec("g", "gemini", "m", 0.1, MappingProxyType({"image_size": "3K"}))
    with pytest.raises(ConfigError, match="image_size"):
        GeminiProvider(spec)


def test_registered_as_the_gemini_route():
    assert BUILTIN_ROUTES["gemini"] == "pytest_hypeedit.providers.gemini:GeminiProvider"
    assert isinstance(builtin_provider(SPEC), GeminiProvider)
    assert GeminiProvider.key_env == ("GOOGLE_API_KEY", "GEMINI_API_KEY")


def test_the_fake_takes_both_spellings_and_checks_base64(fake_gemini):
    url = f"{fake_gemini.url}/v1beta/models/m:generateContent"
    headers = {"x-goog-api-key": FAKE_GEMINI_KEY}
    fake_gemini.default = image_reply()
    snake = {"contents": [{"parts": [{"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}]}],
             "generation_config": {"image_config": {"aspect_ratio": "1:1"}}}
    assert httpx.post(url, json=snake, headers=headers).status_code == 200
    assert fake_gemini.requests[-1].parsed["config"] == {"image_config": {"aspect_ratio": "1:1"}}
    bad = {"contents": [{"parts": [{"inlineData": {"mimeType": "image/png", "data": "%%%"}}]}]}
    assert httpx.post(url, json=bad, headers=headers).status_code == 400
    assert httpx.post(url, json=snake).status_code == 403


# --------------------------------------------------------------------------- retired ids, the current generation

PREVIEW = ModelSpec("gemini-3-pro-preview", "gemini", "gemini-3-pro-image-preview", 0.134)
FLASH = ModelSpec("gemini-3.1-flash-image", "gemini", "gemini-3.1-flash-image", 0.101,
                  MappingProxyType({"image_size": "2K"}))


def test_a_retired_id_is_final_names_date_and_successor_and_is_not_asked_again(fake_gemini, references):
    fake_gemini.default = image_reply()  # the id answers 404 whatever is scripted, as Google does
    adapter = GeminiProvider(PREVIEW, policy=FAST, timeout_s=5, runtime=no_socket(fake_gemini))
    with pytest.raises(ModelGone) as caught:
        adapter.generate(make_request(references, spec=PREVIEW))
    message = str(caught.value)
    assert "404 NOT_FOUND" in message and "shut down on 2026-06-25" in message
    assert "gemini-3-pro-image" in message and not caught.value.retryable and FAKE_GEMINI_KEY not in message
    with pytest.raises(ModelGone):
        adapter.generate(make_request(references, spec=PREVIEW, repeat=2))
    adapter.close()
    assert len(fake_gemini.requests) == 1  # not retried, and not asked again for the next candidate


def test_the_paper_model_runs_on_the_ga_id(fake_gemini, references):
    from pytest_hypeedit.registry import load_registry

    spec = load_registry().get("gemini-3-pro-preview")
    fake_gemini.queue(image_reply())
    adapter = GeminiProvider(spec, policy=FAST, timeout_s=5, runtime=no_socket(fake_gemini))
    generation = adapter.generate(make_request(references, spec=spec))
    adapter.close()
    assert fake_gemini.requests[0].path == "/v1beta/models/gemini-3-pro-image:generateContent"
    assert generation.cost == 0.134 and "stand-in" in spec.note


@pytest.mark.parametrize("width, height, ratio", [(4000, 1000, "4:1"), (1000, 8000, "1:8"), (900, 2100, "9:21"),
                                                  (4800, 3584, "4:3")])
def test_flash_image_takes_its_wider_aspect_ratios(fake_gemini, references, width, height, ratio):
    fake_gemini.queue(image_reply())
    adapter = GeminiProvider(FLASH, policy=FAST, timeout_s=5, runtime=no_socket(fake_gemini))
    adapter.generate(make_request(references, width=width, height=height, spec=FLASH))
    adapter.close()
    assert fake_gemini.requests[0].parsed["config"]["image_config"] == {"aspect_ratio": ratio, "image_size": "2K"}


def test_the_pro_model_keeps_its_own_ratios(fake_gemini, references):
    fake_gemini.queue(image_reply())
    adapter = GeminiProvider(SPEC, policy=FAST, timeout_s=5, runtime=no_socket(fake_gemini))
    adapter.generate(make_request(references, width=4000, height=1000))
    adapter.close()
    assert fake_gemini.requests[0].parsed["config"]["image_config"]["aspect_ratio"] == "21:9"


@pytest.mark.parametrize("spec, size, cost, worst", [
    (FLASH, "2K", 0.1008, 0.1008 + 2 * 0.00056), (FLASH, "512", 0.0448, 0.101),  # never below the listed price
    (SPEC, "2K", 0.134, 0.134 + 2 * 0.0011), (SPEC, "4K", 0.24, 0.24 + 2 * 0.0011),
])
def test_the_cost_and_worst_case_follow_the_size_and_the_references(fake_gemini, references, spec, size, cost,
                                                                     worst):
    spec = ModelSpec(spec.name, "gemini", spec.provider_model, spec.price, MappingProxyType({"image_size": size}))
    fake_gemini.queue(image_reply())
    adapter = GeminiProvider(spec, policy=FAST, timeout_s=5, runtime=no_socket(fake_gemini))
    request = make_request(references, spec=spec)
    assert adapter.worst_case_cost(request) == pytest.approx(worst)
    assert adapter.generate(request).cost == pytest.approx(cost)
    adapter.close()


# --------------------------------------------------------------------------- the models of November 2026

BANANA = ModelSpec("gemini-nano-banana-2.1", "gemini", "gemini-nano-banana-2.1", 0.10,
                   MappingProxyType({"image_size": "2K"}))
LITE = ModelSpec("gemini-3.1-flash-lite-image", "gemini", "gemini-3.1-flash-lite-image", 0.06,
                 MappingProxyType({"image_size": "1K"}))


@pytest.mark.parametrize("spec, size", [(BANANA, "512"), (LITE, "2K"), (LITE, "512"), (LITE, "4K")])
def test_a_size_the_model_does_not_take_is_a_config_error_naming_it(spec, size):
    bad = dataclasses.replace(spec, options=MappingProxyType({"image_size": size}))
    with pytest.raises(ConfigError, match=rf"model {spec.name}: options.image_size '{size}' is not one of") as caught:
        GeminiProvider(bad, policy=FAST, timeout_s=5)
    assert spec.provider_model in str(caught.value)


@pytest.mark.parametrize("spec, size", [(BANANA, "512"), (LITE, "2K")])
def test_the_fake_does_not_accept_a_size_the_model_does_not_take(fake_gemini, spec, size):
    body = {"contents": [{"parts": [{"text": "x"}]}],
            "generationConfig": {"responseModalities": ["IMAGE"], "imageConfig": {"imageSize": size}}}
    reply = httpx.post(f"{fake_gemini.url}/v1beta/models/{spec.provider_model}:generateContent", json=body,
                       headers={"x-goog-api-key": FAKE_GEMINI_KEY})
    assert reply.status_code == 400 and "image_size" in reply.text


@pytest.mark.parametrize("width, height, ratio", [(4000, 1000, "4:1"), (1000, 8000, "1:8"), (900, 2100, "9:16")])
def test_nano_banana_21_takes_its_14_aspect_ratios(fake_gemini, references, width, height, ratio):
    fake_gemini.queue(image_reply())
    adapter = GeminiProvider(BANANA, policy=FAST, timeout_s=5, runtime=no_socket(fake_gemini))
    generation = adapter.generate(make_request(references, width=width, height=height, spec=BANANA))
    adapter.close()
    assert fake_gemini.requests[0].path == "/v1beta/models/gemini-nano-banana-2.1:generateContent"
    assert fake_gemini.requests[0].parsed["config"]["image_config"] == {"aspect_ratio": ratio, "image_size": "2K"}
    assert generation.cost == 0.10  # no per-size prices known: the model's price


def test_the_retired_flash_image_names_nano_banana_21_as_its_successor():
    from pytest_hypeedit import retirements
    from pytest_hypeedit.registry import load_registry

    models = list(load_registry().models.values())
    state, error = retirements.check(FLASH, models, dt.date(2026, 11, 26))
    assert state == "retired" and "on 2026-10-29" in str(error) and "UNCONFIRMED" in str(error)
    assert "run --model gemini-nano-banana-2.1 instead" in str(error)
    assert retirements.check(FLASH, models, dt.date(2026, 10, 28))[0] == "retiring"
