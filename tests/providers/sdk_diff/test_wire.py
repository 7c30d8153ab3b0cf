"""The comparison itself: images are compared as decoded bytes, JSON values with their types, multipart
fields without their order and file parts with it."""

from __future__ import annotations

import base64
import json

from .harness import OUTPUT
from .recorder import Recorded
from .wire import Allow, Difference, differences, normal, unexplained


def recorded(body: object, content_type: str = "application/json", **headers: str) -> Recorded:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Recorded("POST", "/v1/x", {}, {"content-type": content_type, **headers}, data)


def paths(ours: Recorded, theirs: Recorded) -> list[str]:
    return [difference.path for difference in differences(normal(ours), normal(theirs))]


def test_the_same_image_in_standard_and_url_safe_base64_is_the_same_image():
    standard, urlsafe = base64.b64encode(OUTPUT).decode(), base64.urlsafe_b64encode(OUTPUT).decode()
    assert paths(recorded({"image": standard}), recorded({"image": urlsafe})) == []


def test_a_data_uri_is_compared_by_its_type_and_its_bytes():
    uri = "data:image/png;base64," + base64.b64encode(OUTPUT).decode()
    other = "data:image/png;base64," + base64.b64encode(OUTPUT[:-1] + b"\x00").decode()
    assert paths(recorded({"image": [uri]}), recorded({"image": [uri.replace("png", "jpeg", 1)]})) == ["body.image[0]"]
    assert paths(recorded({"image": [uri]}), recorded({"image": [other]})) == ["body.image[0]"]


def test_json_values_differ_by_type():
    assert paths(recorded({"n": 1}), recorded({"n": 1.0})) == ["body.n"]
    assert paths(recorded({"n": 1}), recorded({"n": True})) == ["body.n"]
    assert paths(recorded({"n": 1}), recorded({"n": "1"})) == ["body.n"]


def multipart(*parts: tuple[str, str | None, bytes]) -> Recorded:
    chunks = []
    for name, filename, content in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        kind = "Content-Type: image/png\r\n" if filename else ""
        chunks.append(f"--b\r\nContent-Disposition: {disposition}\r\n{kind}\r\n".encode() + content + b"\r\n")
    return recorded(b"".join(chunks) + b"--b--\r\n", "multipart/form-data; boundary=b")


def test_multipart_fields_in_any_order_file_parts_in_order():
    a, b = ("model", None, b"m"), ("size", None, b"1024x1024")
    first, second = ("image[]", "1.png", OUTPUT), ("image[]", "2.png", OUTPUT + b"x")
    assert paths(multipart(a, b, first, second), multipart(b, a, first, second)) == []
    assert paths(multipart(a, first, second), multipart(a, second, first)) == [
        "body.files[0].filename", "body.files[0].content", "body.files[1].filename", "body.files[1].content"]


def test_the_key_is_hidden_and_the_scheme_compared():
    ours = recorded({}, authorization="Bearer sk-sdkdiff-0123456789abcdef")
    theirs = recorded({}, authorization="sk-sdkdiff-0123456789abcdef")
    found = differences(normal(ours), normal(theirs))
    assert [str(d) for d in found] == ["header.authorization: ours 'Bearer <KEY>' / SDK '<KEY>'"]


def test_an_allowance_covers_only_its_path_with_literal_brackets():
    allow = Allow("body[0].taskUUID", "both random")
    assert unexplained([Difference("body[0].taskUUID", "a", "b")], (allow,)) == []
    assert unexplained([Difference("body0.taskUUID", "a", "b")], (allow,)) != []
