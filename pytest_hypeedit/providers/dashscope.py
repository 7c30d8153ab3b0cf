"""``dashscope``: Qwen Image Edit on Alibaba Model Studio (DashScope), synchronous.

Wire format: docs/reference/providers.md section 6.  ``POST {base}/services/aigc/multimodal-generation/generation``
with the references (data URIs) then the instruction in one user message;
``parameters.size`` is ``W*H`` at the task's aspect ratio within 512-2048 px
per side (``options.pixels``, default 1 MP); watermark off; the per-repeat
seed.  No DashScope model is named "2511": pointing qwen-image-edit-2511 at
``qwen-image-edit-plus-2025-12-15`` here is UNCONFIRMED.  The moderation code is
UNCONFIRMED too: ``DataInspectionFailed`` (Alibaba's content-inspection code)
or any code/message about inappropriate or sensitive content is a refusal.

The generation is a paid request sent once (``submits=True``): a reply lost to
a read timeout or a dropped connection is not sent again (engine/journal.py).
DashScope takes no client-chosen id or idempotency key: its SDK sends none
(dashscope-sdk-python ``api_entities/http_request.py``; ``request_id`` comes
only with the reply), so a lost call is known by its time alone.
"""

from __future__ import annotations

from typing import Any

import httpx

from ..transport.http import error_details
from .adapter import HttpProvider, reply_id, size_at_pixels
from .base import Generation, GenerationRequest
from .images import ImageLimits

PATH = "/services/aigc/multimodal-generation/generation"
REFUSAL_MARKERS = ("datainspection", "data_inspection", "inappropriate", "sensitive", "moderation")


def is_refusal(code: str | None, message: str) -> bool:
    text = f"{code or ''} {message}".lower()
    return any(marker in text for marker in REFUSAL_MARKERS)


class DashScopeProvider(HttpProvider):
    route = "dashscope"
    key_env = ("DASHSCOPE_API_KEY",)
    provider = "dashscope"
    default_base = "https://dashscope-intl.aliyuncs.com/api/v1"
    # 1-3 images, 384-3072 px per side, <= 10 MB.
    image_limits = ImageLimits(max_count=3, max_side=3072, min_side=384, max_bytes=10 * 1024 * 1024,
                               formats=("jpeg", "png", "webp"), convert_to="jpeg")
    # The official SDK's default: 300 s (dashscope-sdk-python dashscope/common/constants.py
    # DEFAULT_REQUEST_TIMEOUT_SECONDS).
    timeout = 300.0

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        response = self.call("POST", f"{self.base}{PATH}", json=self.body(request),
                             headers={"Authorization": f"Bearer {self.key}"}, submits=True, request=request)
        if not response.is_success:
            code, message = error_details(response)
            if is_refusal(code, message):
                raise self.refusal(request, f"{code}: {message[:300]}", request_id=self.request_id(response))
        self.check(response)
        reply = self.json_of(response, what)
        request_id = reply_id(reply.get("request_id")) if isinstance(reply, dict) else None
        url = self.image_url(request, reply, request_id)
        return self.generation(request, self.download(url, what, request=request, request_id=request_id),
                               request_id=request_id, seed=request.seed,
                               size=self.size(request), usage=reply.get("usage"))

    @staticmethod
    def request_id(response: httpx.Response) -> str | None:
        try:
            return reply_id(response.json().get("request_id"))
        except (ValueError, AttributeError):
            return None

    def size(self, request: GenerationRequest) -> str:
        pixels = float(self.spec.options.get("pixels", 1024 * 1024))
        width, height = size_at_pixels(request.task.width, request.task.height, pixels, min_side=512, max_side=2048)
        return f"{width}*{height}"

    def body(self, request: GenerationRequest) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"image": image.inline_data_url()} for image in self.references(request)]
        content.append({"text": request.task.instruction})
        parameters: dict[str, Any] = {"n": 1, "size": self.size(request), "watermark": False, "seed": request.seed}
        for name in ("negative_prompt", "prompt_extend"):
            if name in self.spec.options:
                parameters[name] = self.spec.options[name]
        return {"model": self.spec.provider_model,
                "input": {"messages": [{"role": "user", "content": content}]},
                "parameters": parameters}

    def image_url(self, request: GenerationRequest, reply: Any, request_id: str | None) -> str:
        try:
            choice = reply["output"]["choices"][0]
            images = [part["image"] for part in choice["message"]["content"] if part.get("image")]
        except (KeyError, IndexError, TypeError, AttributeError):  # an answered call of another shape: no image
            images, choice = [], {}
        if not images:
            reason = (choice or {}).get("finish_reason") if isinstance(choice, dict) else None
            raise self.refusal(request, f"the reply holds no image (finish_reason {reason})", request_id=request_id)
        return str(images[0])
