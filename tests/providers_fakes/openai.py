"""Fake OpenAI ``images/edits`` (multipart; providers.md section 3)."""

from __future__ import annotations

import base64
import io

from PIL import Image

from .base import FakeServer, Reply, Seen, make_image, truncated

SIZES = {"1024x1024", "1536x1024", "1024x1536", "auto"}


class FakeOpenAI(FakeServer):
    env = "HYPEEDIT_OPENAI_BASE_URL"
    key_env = "OPENAI_API_KEY"

    def __init__(self, key: str = "sk-fake-openai-0123456789"):
        super().__init__(key)
        self.route("POST", "/v1/images/edits", self.edit)

    @property
    def base(self) -> str:
        return self.url + "/v1"

    def authorized(self, seen: Seen) -> bool:
        return seen.headers.get("authorization") == f"Bearer {self.key}"

    def unauthorized(self) -> Reply:
        return Reply(401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                     "param": None, "code": "invalid_api_key"}})

    def edit(self, seen: Seen) -> Reply:
        parts = seen.form()
        fields = {name: content.decode() for name, filename, content in parts if filename is None}
        images = [content for name, filename, content in parts if name == "image[]"]
        problem = _validate(fields, images)
        if problem:
            return Reply(400, {"error": {"message": problem, "type": "invalid_request_error", "param": None, "code": None}})
        if self.take_fault("refusal", seen.path):
            return Reply(400, {"error": {
                "message": "Your request was rejected by the safety system. safety_violations=[sexual].",
                "type": "image_generation_user_error", "param": None, "code": "moderation_blocked"}},
                {"x-request-id": "req_refused"})
        width, height = (int(x) for x in fields["size"].split("x"))
        data = make_image(width // 16, height // 16)
        if self.take_fault("truncated", ""):
            data = truncated(data)
        return Reply(200, {"created": 1, "data": [{"b64_json": base64.b64encode(data).decode()}],
                           "background": "opaque", "output_format": "png", "quality": fields["quality"],
                           "size": fields["size"], "usage": {"input_tokens": 50, "output_tokens": 6240,
                                                             "total_tokens": 6290}},
                     {"x-request-id": f"req_{len(self.requests)}"})


def _validate(fields: dict, images: list[bytes]) -> str | None:
    if not fields.get("prompt") or not images or len(images) > 16:
        return "prompt and 1-16 image[] parts are required"
    if fields.get("size", "auto") not in SIZES:
        return f"Invalid size {fields.get('size')}"
    for data in images:
        Image.open(io.BytesIO(data)).load()
    return None
