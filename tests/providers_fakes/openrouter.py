"""Fake OpenRouter chat completions with image output (providers.md section 7)."""

from __future__ import annotations

import base64
import io

from PIL import Image

from .base import FakeServer, Reply, Seen, data_url, make_image, truncated


class FakeOpenRouter(FakeServer):
    env = "HYPEEDIT_OPENROUTER_BASE_URL"
    key_env = "OPENROUTER_API_KEY"

    def __init__(self, key: str = "sk-or-v1-fake-0123456789", cost: float = 0.0):
        super().__init__(key)
        self.cost = cost
        self.route("POST", "/api/v1/chat/completions", self.complete)

    @property
    def base(self) -> str:
        return self.url + "/api/v1"

    def authorized(self, seen: Seen) -> bool:
        return seen.headers.get("authorization") == f"Bearer {self.key}"

    def unauthorized(self) -> Reply:
        return Reply(401, {"error": {"code": 401, "message": "No auth credentials found"}})

    def complete(self, seen: Seen) -> Reply:
        body = seen.json()
        problem = _validate(body)
        if problem:
            return Reply(400, {"error": {"code": 400, "message": problem}})
        if self.take_fault("refusal", seen.path):
            return Reply(403, {"error": {"code": 403, "message": "Your input was flagged",
                                         "metadata": {"reasons": ["violence"], "flagged_input": "..."}}})
        data = make_image(64, 48)
        if self.take_fault("truncated", ""):
            data = truncated(data)
        usage = {"prompt_tokens": 1300, "completion_tokens": 1290, "total_tokens": 2590}
        if self.cost:
            usage["cost"] = self.cost
        return Reply(200, {"id": f"gen-{len(self.requests)}", "provider": "Google", "model": body["model"],
                           "choices": [{"finish_reason": "stop", "native_finish_reason": "STOP", "message": {
                               "role": "assistant", "content": "",
                               "images": [{"type": "image_url", "image_url": {"url": data_url(data)}}]}}],
                           "usage": usage})


def _validate(body: dict) -> str | None:
    try:
        content = body["messages"][0]["content"]
    except (KeyError, IndexError, TypeError):
        return "messages[0].content is required"
    if "image" not in body.get("modalities", []):
        return "modalities must include image"
    for part in content:
        if part.get("type") == "image_url":
            Image.open(io.BytesIO(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))).load()
    return None
