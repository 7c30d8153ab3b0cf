"""JSON bodies that stream their images from disk: the same bytes as json.dumps, a known length, sent again
on a retry, and never the whole image in one piece."""

from __future__ import annotations

import json

import pytest
from providers_fakes import FakeServer, Reply

from pytest_hypeedit.transport.body import CHUNK, InlineImage, JsonBody, has_inline, json_request
from pytest_hypeedit.transport.http import RetryPolicy, make_http_client


@pytest.fixture
def image(tmp_path):
    path = tmp_path / "ref.jpg"
    path.write_bytes(bytes(range(256)) * 4000 + b"tail")  # 1 MB and a bit: several chunks, a ragged end
    return path


def as_strings(value):
    if isinstance(value, InlineImage):
        return str(value)
    if isinstance(value, dict):
        return {k: as_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_strings(v) for v in value]
    return value


def test_the_body_is_json_dumps_of_the_same_value_and_its_length_is_exact(image):
    value = {"model": "m", "n": 1, "ok": True, "none": None, "prompt": "café \"quoted\"",
             "image": [InlineImage(image, "data:image/jpeg;base64,"), InlineImage(image)], "nested": {"x": [1.5]}}
    body = JsonBody(value)
    wire = b"".join(body)
    assert wire == json.dumps(as_strings(value)).encode()
    assert body.length == len(wire)
    assert b"".join(body) == wire  # a retry sends it again, whole


def test_an_image_is_read_in_chunks_never_whole(image):
    pieces = list(JsonBody({"image": InlineImage(image)}))
    assert max(len(p) for p in pieces) <= CHUNK * 4 // 3
    assert len(pieces) > 3


def test_a_data_url_knows_its_length_and_prefix_without_reading_the_file(image):
    inline = InlineImage(image, "data:image/jpeg;base64,")
    assert len(inline) == len(str(inline))
    assert inline.startswith("data:image/jpeg")


def test_a_body_without_images_is_plain_json():
    assert json_request({"a": 1}) == {"json": {"a": 1}, "headers": {}}
    assert not has_inline({"a": [1, {"b": "c"}]})


def test_the_client_sends_it_with_a_content_length_and_again_on_a_retry(image):
    with FakeServer() as server:
        server.route("POST", "/v1/edit", lambda seen: Reply(200, {"got": len(seen.body)}))
        server.inject("status", status=503, path="/v1/edit")
        value = {"image": InlineImage(image, "data:image/jpeg;base64,")}
        with make_http_client("t", policy=RetryPolicy(max_attempts=3, base_delay=0.0)) as client:
            response = client.post(f"{server.url}/v1/edit", **json_request(value))
        first, second = server.seen("/v1/edit")
    assert response.json() == {"got": len(json.dumps(as_strings(value)))}
    assert first.body == second.body and json.loads(second.body)["image"] == str(value["image"])
    assert "transfer-encoding" not in second.headers and second.headers["content-length"] == str(len(second.body))
