"""``openrouter``: any image model served through OpenRouter's chat completions API.

Wire format: providers.md section 7.  One user message with the instruction
and the references as ``image_url`` data URLs; ``modalities`` is
``["image", "text"]`` unless ``options.modalities`` says otherwise (image-only
models such as Sourceful's need ``["image"]``); ``image_config.aspect_ratio``
is the ratio nearest the task's.  The image is the first of
``choices[0].message.images``.  HTTP 403 (moderation / guardrail), a
``content_filter`` finish reason or an answer without an image is a refusal;
an ``error`` object in an HTTP 200 reply (a failure after generation started)
is a ProviderError.  ``usage.cost`` (asked for with ``usage.include``) is the
cost when present.
"""

from __future__ import annotations

from typing import Any

from .adapter import HttpProvider, nearest_ratio
from .base import Generation, GenerationRequest
from .http import error_details, request_id_of
from .images import ImageLimits

ASPECT_RATIOS = ("1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9")


class OpenRouterProvider(HttpProvider):
    route = "openrouter"
    key_env = ("OPENROUTER_API_KEY",)
    provider = "openrouter"
    default_base = "https://openrouter.ai/api/v1"
    # Limits depend on the model behind OpenRouter (UNCONFIRMED): keep references modest.
    image_limits = ImageLimits(max_count=10, max_side=2048, max_bytes=10 * 1024 * 1024,
                               formats=("png", "jpeg", "webp"), convert_to="jpeg")

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        response = self.call("POST", f"{self.base}/chat/completions", json=self.body(request),
                             headers={"Authorization": f"Bearer {self.key}", "X-Title": "pytest-hypeedit"})
        if response.status_code == 403:
            code, message = error_details(response)
            raise self.refusal(request, f"moderation: {code}: {message[:300]}", request_id=request_id_of(response))
        self.check(response)
        reply = self.json_of(response, what)
        if not isinstance(reply, dict):
            raise self.error(f"{what}: the reply is not an object", retryable=True)
        request_id = reply.get("id")
        url = self.image_url(request, reply, request_id, what)
        usage = reply.get("usage") or {}
        cost = usage.get("cost") if isinstance(usage.get("cost"), (int, float)) and usage.get("cost") > 0 else None
        return self.generation(request, self.download(url, what), cost=cost, request_id=request_id,
                               seed=request.seed, usage=usage or None, served_by=reply.get("provider"),
                               aspect_ratio=self.aspect_ratio(request))

    def aspect_ratio(self, request: GenerationRequest) -> str:
        return nearest_ratio(request.task.width, request.task.height,
                             tuple(self.spec.options.get("aspect_ratios") or ASPECT_RATIOS))

    def body(self, request: GenerationRequest) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": request.task.instruction}]
        content += [{"type": "image_url", "image_url": {"url": image.data_url()}} for image in self.references(request)]
        image_config: dict[str, Any] = {"aspect_ratio": self.aspect_ratio(request)}
        if "image_size" in self.spec.options:
            image_config["image_size"] = self.spec.options["image_size"]
        return {"model": self.spec.provider_model, "messages": [{"role": "user", "content": content}],
                "modalities": list(self.spec.options.get("modalities") or ["image", "text"]),
                "image_config": image_config, "seed": request.seed, "usage": {"include": True}}

    def image_url(self, request: GenerationRequest, reply: dict, request_id: str | None, what: str) -> str:
        if reply.get("error"):
            code, message = error_details_of(reply)
            raise self.error(f"{what}: error after the generation started: {code}: {message[:300]}",
                                retryable=True)
        choices = reply.get("choices") or [{}]
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message") or {}
        images = [i for i in message.get("images") or [] if isinstance(i, dict)]
        url = ((images[0].get("image_url") or {}).get("url")) if images else None
        if choice.get("finish_reason") == "content_filter" or choice.get("native_finish_reason", "").startswith("IMAGE_"):
            raise self.refusal(request, f"finish reason {choice.get('native_finish_reason') or 'content_filter'}",
                               request_id=request_id)
        if not url:
            text = str(message.get("content") or "")[:200]
            raise self.refusal(request, f"answered without an image: {text!r}", request_id=request_id)
        return str(url)


def error_details_of(reply: dict) -> tuple[str | None, str]:
    error = reply.get("error")
    if isinstance(error, dict):
        return (str(error.get("code")) if error.get("code") is not None else None), str(error.get("message", ""))
    return None, str(error)
