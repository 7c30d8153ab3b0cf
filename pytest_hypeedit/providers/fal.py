"""``fal``: any fal.ai model through the queue API (qwen-image-edit-2511 by default).

Wire format: providers.md sections 6 and 7.  Submit ``POST {base}/{endpoint id}``
with the model input, then follow the URLs the reply returns (``status_url``,
``response_url``: they keep only the first two path segments of the id, so
they are never rebuilt here).  References go as data URIs in ``image_urls``;
``image_size`` is the task's aspect ratio at ``options.megapixels`` (1 MP by
default, the $0.03 price point); ``options.arguments`` adds or replaces input
fields for other models on fal.  A ``content_policy_violation`` or an
``has_nsfw_concepts`` flag is a refusal.
"""

from __future__ import annotations

import time
from typing import Any

from .adapter import HttpProvider, poll_delays, size_at_pixels
from .base import Generation, GenerationRequest
from .http import error_details, request_id_of
from .images import ImageLimits

REFUSAL_TYPES = ("content_policy_violation", "nsfw", "safety")


def _detail_types(reply: Any) -> list[str]:
    detail = reply.get("detail") if isinstance(reply, dict) else None
    if isinstance(detail, list):
        return [str(item.get("type", "")) for item in detail if isinstance(item, dict)]
    return [str(reply.get("error_type", ""))] if isinstance(reply, dict) else []


class FalProvider(HttpProvider):
    route = "fal"
    key_env = ("FAL_KEY",)
    provider = "fal"
    default_base = "https://queue.fal.run"
    # Per-model input limits on fal are UNCONFIRMED: keep references within 4 MP and 10 MB.
    image_limits = ImageLimits(max_count=10, max_pixels=4_194_304, max_bytes=10 * 1024 * 1024,
                               formats=("png", "jpeg", "webp"), convert_to="jpeg")

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Key {self.key}"}

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        queued = self.submit(request, what)
        request_id = str(queued.get("request_id"))
        self.wait_until_completed(request, queued, what)
        result = self.fetch_result(request, queued, request_id, what)
        image = self.first_image(request, result, request_id)
        data = self.download(str(image["url"]), what)
        return self.generation(request, data, request_id=request_id, seed=result.get("seed", request.seed),
                               image_size=self.body(request, with_images=False).get("image_size"))

    def body(self, request: GenerationRequest, *, with_images: bool = True) -> dict[str, Any]:
        width, height = size_at_pixels(request.task.width, request.task.height,
                                       float(self.spec.options.get("megapixels", 1.0)) * 1_000_000)
        body: dict[str, Any] = {"prompt": request.task.instruction, "num_images": 1, "seed": request.seed,
                                "image_size": {"width": width, "height": height},
                                "output_format": str(self.spec.options.get("output_format", "png"))}
        if with_images:
            body["image_urls"] = [image.data_url() for image in self.references(request)]
        body.update(self.spec.options.get("arguments") or {})
        return body

    def submit(self, request: GenerationRequest, what: str) -> dict:
        response = self.call("POST", f"{self.base}/{self.spec.provider_model.strip('/')}",
                             json=self.body(request), headers=self.headers)
        self.refuse_if_policy(request, response)
        self.check(response)
        queued = self.json_of(response, what)
        if not isinstance(queued, dict) or not queued.get("response_url"):
            raise self.error(f"{what}: the queue reply has no response_url (request id {request_id_of(response)})")
        return queued

    def wait_until_completed(self, request: GenerationRequest, queued: dict, what: str) -> None:
        if not queued.get("status_url"):
            return  # nothing to poll: ask for the result directly
        max_wait = float(self.spec.options.get("max_wait_s", 900))
        deadline = time.monotonic() + max_wait
        delays = poll_delays(float(self.spec.options.get("poll_s", 0.5)), cap=float(self.spec.options.get("poll_max_s", 3)))
        while True:
            response = self.call("GET", str(queued["status_url"]), headers=self.headers)
            self.check(response)
            status = str(self.json_of(response, what).get("status", "")).upper()
            if status == "COMPLETED":
                return
            if time.monotonic() > deadline:
                raise self.error(f"{what}: fal request {queued.get('request_id')} still {status} after {max_wait:g} s",
                                    retryable=True)
            time.sleep(next(delays))

    def fetch_result(self, request: GenerationRequest, queued: dict, request_id: str, what: str) -> dict:
        response = self.call("GET", str(queued["response_url"]), headers=self.headers)
        self.refuse_if_policy(request, response, request_id)
        self.check(response)
        result = self.json_of(response, what)
        if not isinstance(result, dict):
            raise self.error(f"{what}: the result of fal request {request_id} is not an object", retryable=True)
        return result

    def refuse_if_policy(self, request: GenerationRequest, response, request_id: str | None = None) -> None:
        if response.is_success:
            return
        try:
            types = _detail_types(response.json())
        except ValueError:
            return
        if any(marker in kind for kind in types for marker in REFUSAL_TYPES):
            _, message = error_details(response)
            raise self.refusal(request, f"content policy: {message[:300]}", request_id=request_id)

    def first_image(self, request: GenerationRequest, result: dict, request_id: str) -> dict:
        flags = result.get("has_nsfw_concepts") or []
        if any(flags):
            raise self.refusal(request, "the safety checker flagged the output (has_nsfw_concepts)",
                               request_id=request_id, cost=self.spec.price)
        images = result.get("images") or ([result["image"]] if isinstance(result.get("image"), dict) else [])
        if not images or not isinstance(images[0], dict) or not images[0].get("url"):
            raise self.refusal(request, "the result holds no image", request_id=request_id)
        return images[0]
