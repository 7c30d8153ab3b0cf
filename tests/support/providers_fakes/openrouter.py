"""Fake OpenRouter chat completions with image output (docs/reference/providers.md section 7).

An image-only model (``IMAGE_ONLY``: Sourceful's and Flux, as OpenRouter's image-generation guide names them)
asked for ``["image", "text"]`` finds no endpoint serving those output modalities: a 404 (OpenRouter's
"No endpoints found" error; its exact wording is UNCONFIRMED), as it is for a text-and-image model asked for
``["image"]`` alone.
"""

from __future__ import annotations

import base64
import io

from PIL import Image

from .base import FakeServer, Reply, Seen, data_url, make_image, truncated

#: The three kinds of HTTP 403 OpenRouter documents (api_reference/errors-and-debugging.mdx): a moderation
#: flag (ModerationErrorMetadata: reasons, flagged_input, provider_name, model_slug), a guardrail block
#: ("Request blocked: ..." with metadata.patterns) and a key without the permission (no moderation metadata).
FORBIDDEN = {
    "refusal": Reply(403, {"error": {"code": 403, "message": "Your input was flagged",
                                     "metadata": {"reasons": ["violence"], "flagged_input": "...",
                                                  "provider_name": "Google", "model_slug": "google/x"}}}),
    "guardrail": Reply(403, {"error": {"code": 403, "message": "Request blocked: prompt injection patterns detected",
                                       "metadata": {"patterns": ["ignore all previous instructions"]}}}),
    "forbidden": Reply(403, {"error": {"code": 403, "message": "Forbidden: this key may not use this model"}}),
}
IMAGE_ONLY = ("sourceful/", "black-forest-labs/")
#: A provider error that interrupted generation (typed error code in metadata.error_type).
PROVIDER_ERROR = {"code": 502, "message": "Provider returned error",
                  "metadata": {"error_type": "provider_unavailable", "provider_code": "upstream_error"}}


class FakeOpenRouter(FakeServer):
    env = "HYPEEDIT_OPENROUTER_BASE_URL"
    key_env = "OPENROUTER_API_KEY"

    def __init__(self, key: str = "sk-or-v1-fake-0123456789", cost: float = 0.0):
        super().__init__(key)
        self.cost = cost
        self.route("POST", "/api/v1/chat/completions", self.complete)
        # the current key's info (openrouter.ai/docs/api/api-reference/api-keys/get-current-key)
        self.key_check_route("GET", "/api/v1/key", lambda seen: Reply(200, {"data": {
            "label": "sk-or-v1-fak...789", "limit": None, "usage": 0.0, "is_free_tier": False}}))

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
        wanted = sorted(body["modalities"])
        served = ["image"] if body.get("model", "").startswith(IMAGE_ONLY) else ["image", "text"]
        if wanted != served:
            message = f"No endpoints found that support the requested output modalities: {', '.join(wanted)}"
            return Reply(404, {"error": {"code": 404, "message": message}})
        for kind, reply in FORBIDDEN.items():
            if self.take_fault(kind, seen.path):
                return reply
        odd_id = self.take_fault("request_id", seen.path)  # the reply's id: the fault's body, any JSON
        generation_id = odd_id.body if odd_id else f"gen-{len(self.requests)}"
        failure = self.take_fault("choice_error", seen.path)
        if failure:
            # An error after generation started: HTTP 200, the choice carries an ErrorResponse and
            # finish_reason "error"; native_finish_reason is null (``string | null`` in the schema).
            return Reply(200, {"id": generation_id, "provider": "Google", "model": body["model"],
                               "choices": [{"finish_reason": "error", "native_finish_reason": None,
                                            "message": {"role": "assistant", "content": ""},
                                            "error": failure.body or PROVIDER_ERROR}],
                               "usage": self.usage()})
        data = make_image(64, 48)
        if self.take_fault("truncated", ""):
            data = truncated(data)
        native = None if self.take_fault("null_native", seen.path) else "STOP"
        return Reply(200, {"id": generation_id, "provider": "Google", "model": body["model"],
                           "choices": [{"finish_reason": "stop" if native else None, "native_finish_reason": native,
                                        "message": {"role": "assistant", "content": "",
                                                    "images": [{"type": "image_url",
                                                                "image_url": {"url": data_url(data)}}]}}],
                           "usage": self.usage()})

    def usage(self) -> dict:
        usage = {"prompt_tokens": 1300, "completion_tokens": 1290, "total_tokens": 2590}
        if self.cost:
            usage["cost"] = self.cost
        return usage


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
