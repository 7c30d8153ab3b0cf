"""``bfl``: FLUX.2 [max] on Black Forest Labs (submit, then poll the returned ``polling_url``).

Wire format: providers.md section 4.  References go as ``input_image``,
``input_image_2`` ... ``input_image_8`` (base64); width and height are the
task's aspect ratio at ``options.megapixels`` (default 1 MP, the paper's
$0.10 price point), multiples of 16.  The poll reply's ``status`` decides:
``Ready`` -> download ``result.sample`` at once (it expires in 10 minutes),
``Request Moderated`` / ``Content Moderated`` -> refusal.  The submit reply's
``cost`` (credits, 1 credit = $0.01) is the candidate's cost when present.
"""

from __future__ import annotations

import time
from typing import Any

from .adapter import HttpProvider, poll_delays, size_at_pixels
from .base import Generation, GenerationRequest
from .http import request_id_of
from .images import ImageLimits

USD_PER_CREDIT = 0.01
MAX_INPUTS = 8


def _status(reply: dict) -> str:
    return str(reply.get("status", "")).strip().lower().replace("_", " ")


class BflProvider(HttpProvider):
    route = "bfl"
    key_env = ("BFL_API_KEY",)
    provider = "bfl"
    default_base = "https://api.bfl.ai"
    # Input megapixels are billed, so references are kept near 1 MP (4 MP is the output cap).
    image_limits = ImageLimits(max_count=MAX_INPUTS, max_pixels=1024 * 1024, max_bytes=20 * 1024 * 1024,
                               formats=("jpeg", "png"), convert_to="jpeg")

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        submitted = self.submit(request, what)
        credits = submitted.get("cost")
        cost = None if not isinstance(credits, (int, float)) else round(credits * USD_PER_CREDIT, 6)
        result = self.wait_for_result(request, submitted, what, cost)
        data = self.download(str(result["sample"]), what)
        width, height = self.size(request)
        return self.generation(request, data, cost=cost, request_id=str(submitted.get("id")),
                               seed=result.get("seed", request.seed), width=width, height=height,
                               cost_credits=credits, price=self.spec.price,
                               input_mp=submitted.get("input_mp"), output_mp=submitted.get("output_mp"))

    def size(self, request: GenerationRequest) -> tuple[int, int]:
        pixels = float(self.spec.options.get("megapixels", 1.0)) * 1_000_000
        return size_at_pixels(request.task.width, request.task.height, min(pixels, 4_000_000), multiple=16)

    def body(self, request: GenerationRequest) -> dict[str, Any]:
        width, height = self.size(request)
        body: dict[str, Any] = {"prompt": request.task.instruction, "seed": request.seed, "width": width,
                                "height": height, "output_format": str(self.spec.options.get("output_format", "png"))}
        if "safety_tolerance" in self.spec.options:
            body["safety_tolerance"] = int(self.spec.options["safety_tolerance"])
        for index, image in enumerate(self.references(request)):
            body["input_image" if index == 0 else f"input_image_{index + 1}"] = image.base64()
        return body

    def submit(self, request: GenerationRequest, what: str) -> dict:
        response = self.call("POST", f"{self.base}/v1/{self.spec.provider_model}", json=self.body(request),
                             headers={"x-key": self.key})
        self.check(response)
        reply = self.json_of(response, what)
        if not isinstance(reply, dict) or not reply.get("polling_url"):
            raise self.error(f"{what}: the submit reply has no polling_url (request id {request_id_of(response)})")
        return reply

    def wait_for_result(self, request: GenerationRequest, submitted: dict, what: str, cost: float | None) -> dict:
        """Poll the returned URL (always that one: it names the right cluster) until the task settles."""
        deadline = time.monotonic() + float(self.spec.options.get("max_wait_s", 600))
        delays = poll_delays(float(self.spec.options.get("poll_s", 0.5)), cap=float(self.spec.options.get("poll_max_s", 3)))
        task_id = str(submitted.get("id"))
        while True:
            reply = self.poll(str(submitted["polling_url"]), what)
            status = _status(reply)
            if status == "ready":
                result = reply.get("result") or {}
                if not result.get("sample"):
                    raise self.refusal(request, "status Ready without result.sample", request_id=task_id, cost=cost or 0.0)
                return result
            self.settle_failure(request, reply, status, task_id, cost)
            if time.monotonic() > deadline:
                raise self.error(f"{what}: still {reply.get('status')!r} after {self.spec.options.get('max_wait_s', 600)} s "
                                    f"(task {task_id})", retryable=True)
            time.sleep(next(delays))

    def settle_failure(self, request: GenerationRequest, reply: dict, status: str, task_id: str,
                       cost: float | None) -> None:
        """Raise for a final status that is not Ready; return while the task is still pending."""
        details = str(reply.get("details") or "")[:300]
        if status == "request moderated":
            # The input was flagged before any generation: not billed (UNCONFIRMED).
            raise self.refusal(request, f"Request Moderated: {details}", request_id=task_id)
        if status == "content moderated":
            raise self.refusal(request, f"Content Moderated: {details}", request_id=task_id, cost=cost or 0.0)
        if status == "error":
            raise self.error(f"{self.what(request)}: BFL task {task_id} failed: {details}", retryable=True)
        if status == "task not found":
            raise self.error(f"{self.what(request)}: BFL task {task_id} not found", retryable=False)
        if status not in ("pending", "processing", "queued", "in progress"):
            # Unknown statuses are waited on, not failed: the list is the documented one only.
            return

    def poll(self, url: str, what: str) -> dict:
        response = self.call("GET", url, headers={"x-key": self.key})
        self.check(response)
        reply = self.json_of(response, what)
        if not isinstance(reply, dict):
            raise self.error(f"{what}: poll reply is not an object", retryable=True)
        return reply
