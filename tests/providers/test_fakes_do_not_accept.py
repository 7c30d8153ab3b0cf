"""The provider fakes do not accept what the real APIs do not accept, for every field we send (issue 24, item 6): an unknown
field, a wrong type, a null where the API takes none, a request for more than the one image we buy, each with
the provider's own error status and shape.  Our adapters' own tests pass against these fakes, so a body they do
not accept is a body our adapters never send."""

from __future__ import annotations

import base64
import io

import httpx
import pytest
from genai_fakes.gemini import FakeGemini, image_reply
from PIL import Image
from providers_fakes.ark import FakeArk
from providers_fakes.bfl import FakeBfl
from providers_fakes.dashscope import FakeDashScope
from providers_fakes.fal import FakeFal
from providers_fakes.openai import FakeOpenAI
from providers_fakes.replicate import FakeReplicate


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (10, 20, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


DATA_URI = "data:image/png;base64," + base64.b64encode(png()).decode()
FAL_BODY = {"prompt": "blue mug", "image_urls": [DATA_URI], "num_images": 1, "seed": 7,
            "image_size": {"width": 1024, "height": 768}, "output_format": "png"}


@pytest.fixture
def fal():
    with FakeFal() as server:
        yield server


def fal_submit(server: FakeFal, **changes) -> httpx.Response:
    body = {**FAL_BODY, **changes}
    return httpx.post(f"{server.url}/fal-ai/qwen-image-edit-2511", json=body,
                      headers={"Authorization": f"Key {server.key}"})


def test_fal_takes_the_body_we_send(fal):
    assert fal_submit(fal).status_code == 200


@pytest.mark.parametrize("changes, named", [
    ({"num_images": 2}, "num_images"),
    ({"images": 1}, "images"),  # a field no edit endpoint has
    ({"seed": None}, "seed"),  # null where fal's schema takes an integer only
    ({"seed": "7"}, "seed"),
    ({"enable_safety_checker": 1}, "enable_safety_checker"),
    ({"num_images": True}, "num_images"),
    ({"output_format": "gif"}, "output_format"),
])
def test_fal_does_not_accept_what_its_schema_does_not(fal, changes, named):
    response = fal_submit(fal, **changes)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert isinstance(detail, list) and named in detail[0]["msg"] and detail[0]["type"] == "value_error"
    assert not fal.ledger.submitted, "a submit not accepted is no job, and nothing is billed"


@pytest.fixture
def ark():
    with FakeArk() as server:
        yield server


def ark_generate(server: FakeArk, **changes) -> httpx.Response:
    body = {"model": "seedream-4-5-251128", "prompt": "blue mug", "image": [DATA_URI], "size": "2368x1776",
            "response_format": "url", "watermark": False, "seed": 7, **changes}
    return httpx.post(f"{server.base}/images/generations", json=body,
                      headers={"Authorization": f"Bearer {server.key}"})


def test_ark_takes_nulls_as_its_sdk_sends_them(ark):
    assert ark_generate(ark, guidance_scale=None, stream=None, optimize_prompt_options=None).status_code == 200


@pytest.mark.parametrize("changes, named", [
    ({"fidelity": "high"}, "fidelity"),
    ({"watermark": "false"}, "watermark"),
    ({"seed": 7.5}, "seed"),
    ({"response_format": "png"}, "response_format"),
    ({"size": "1776x1776"}, "size"),  # 3.15 MP: under Seedream 4.5's 3,686,400
])
def test_ark_does_not_accept_unknown_parameters_and_wrong_types(ark, changes, named):
    response = ark_generate(ark, **changes)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "InvalidParameter" and named in error["message"]


@pytest.fixture
def openai_fake():
    with FakeOpenAI() as server:
        yield server


def openai_edit(server: FakeOpenAI, **fields) -> httpx.Response:
    data = {"model": "gpt-image-2", "prompt": "blue mug", "size": "1456x1088", "quality": "high", "n": "1",
            "output_format": "png", **fields}
    return httpx.post(f"{server.base}/images/edits", data=data, files=[("image[]", ("1.png", png(), "image/png"))],
                      headers={"Authorization": f"Bearer {server.key}"})


def test_openai_takes_the_form_we_send(openai_fake):
    assert openai_edit(openai_fake).status_code == 200


@pytest.mark.parametrize("fields, message", [
    ({"fidelity": "high"}, "Unknown parameter: 'fidelity'."),
    ({"n": "2"}, "n 2"),
    ({"quality": "best"}, "Invalid value: 'best'."),
    ({"size": "1088x1456x"}, "Invalid size"),
])
def test_openai_does_not_accept_unknown_parameters_and_values(openai_fake, fields, message):
    response = openai_edit(openai_fake, **fields)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"].startswith(message)


@pytest.fixture
def gemini():
    with FakeGemini(expected_key="gemini-fake-key") as server:
        server.queue(*[image_reply()] * 8)
        yield server


def generate(server: FakeGemini, model: str = "gemini-3-pro-image", **image_config) -> httpx.Response:
    body = {"contents": [{"role": "user", "parts": [{"text": "blue mug"},
                                                     {"inlineData": {"mimeType": "image/png",
                                                                     "data": base64.b64encode(png()).decode()}}]}],
            "generationConfig": {"responseModalities": ["IMAGE"],
                                 "imageConfig": {"aspectRatio": "4:3", "imageSize": "2K", **image_config}}}
    return httpx.post(f"{server.url}/v1beta/models/{model}:generateContent", json=body,
                      headers={"x-goog-api-key": "gemini-fake-key"})


def test_gemini_takes_the_request_we_send(gemini):
    assert generate(gemini).status_code == 200
    assert generate(gemini, "gemini-3.1-flash-image", aspectRatio="4:1").status_code == 200


@pytest.mark.parametrize("model, image_config, message", [
    ("gemini-3-pro-image", {"aspectRatio": "4:1"}, "aspect_ratio"),  # only the flash models list 4:1
    ("gemini-3-pro-image", {"aspectRatio": "3:4x"}, "aspect_ratio"),
    ("gemini-3-pro-image", {"imageSize": "2k"}, "image_size"),  # upper-case K only
    ("gemini-3-pro-image", {"outputMimeType": "image/png"}, "Unknown name"),  # Vertex-only
])
def test_gemini_does_not_accept_a_ratio_size_or_field_the_model_does_not_take(gemini, model, image_config, message):
    response = generate(gemini, model, **image_config)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT" and message in error["message"]


@pytest.fixture
def bfl():
    with FakeBfl() as server:
        yield server


def bfl_submit(server: FakeBfl, **changes) -> httpx.Response:
    body = {"prompt": "blue mug", "input_image": base64.b64encode(png()).decode(), "seed": 7, "width": 1152,
            "height": 864, "output_format": "png", **changes}
    return httpx.post(f"{server.base}/v1/flux-2-max", json=body, headers={"x-key": server.key})


def test_bfl_takes_the_body_we_send(bfl):
    assert bfl_submit(bfl).status_code == 200


@pytest.mark.parametrize("changes, kind", [
    ({"input_image2": "x"}, "extra_forbidden"),
    ({"num_images": 2}, "extra_forbidden"),
    ({"seed": "7"}, "int_type"),
    ({"safety_tolerance": None}, "int_type"),
    ({"output_format": "webp"}, "enum"),
])
def test_bfl_does_not_accept_fields_its_schema_does_not_take(bfl, changes, kind):
    response = bfl_submit(bfl, **changes)
    assert response.status_code == 422
    assert kind in [detail["type"] for detail in response.json()["detail"]]


@pytest.fixture
def dashscope():
    with FakeDashScope() as server:
        yield server


def dashscope_generate(server: FakeDashScope, **parameters) -> httpx.Response:
    jpeg = io.BytesIO()
    Image.new("RGB", (512, 448), (1, 2, 3)).save(jpeg, format="JPEG")
    image = "data:image/jpeg;base64," + base64.b64encode(jpeg.getvalue()).decode()
    body = {"model": "qwen-image-edit-plus", "input": {"messages": [{"role": "user", "content": [
        {"image": image}, {"text": "blue mug"}]}]},
        "parameters": {"n": 1, "size": "1184*880", "watermark": False, "seed": 7, **parameters}}
    return httpx.post(f"{server.base}/services/aigc/multimodal-generation/generation", json=body,
                      headers={"Authorization": f"Bearer {server.key}"})


def test_dashscope_takes_the_body_we_send(dashscope):
    assert dashscope_generate(dashscope).status_code == 200


@pytest.mark.parametrize("parameters, named", [
    ({"n": 2}, "parameters.n"), ({"num_images": 1}, "parameters.num_images"), ({"seed": None}, "parameters.seed"),
    ({"watermark": "false"}, "parameters.watermark"),
])
def test_dashscope_does_not_accept_unknown_parameters_and_wrong_types(dashscope, parameters, named):
    response = dashscope_generate(dashscope, **parameters)
    assert response.status_code == 400
    reply = response.json()
    assert reply["code"] == "InvalidParameter" and reply["message"].startswith(named) and reply["request_id"]


@pytest.fixture
def replicate_fake():
    with FakeReplicate() as server:
        yield server


@pytest.mark.parametrize("model, change, status", [
    ("bytedance/seedream-4.5", {}, 201),
    ("bytedance/seedream-4.5", {"num_outputs": 2}, 422),
    ("bytedance/seedream-4.5", {"max_images": "1"}, 422),
    ("sourceful/riverflow-2.0-pro", {"prompt": "x"}, 422),  # riverflow's field is instruction
])
def test_replicate_does_not_accept_input_its_model_schema_does_not_take(replicate_fake, model, change, status):
    image = "data:image/png;base64," + base64.b64encode(png()).decode()
    text = {"instruction": "blue mug"} if model.startswith("sourceful/") else {"prompt": "blue mug"}
    images = {"init_images": [image]} if model.startswith("sourceful/") else {"image_input": [image]}
    response = httpx.post(f"{replicate_fake.base}/models/{model}/predictions",
                          json={"input": {**text, **images, "aspect_ratio": "4:3", **change}},
                          headers={"Authorization": f"Bearer {replicate_fake.key}"})
    assert response.status_code == status, response.text
    if status == 422:
        assert response.json()["detail"].startswith("- input")
