"""``fal``: any fal.ai model through the queue API (qwen-image-edit-2511, qwen-image-2/edit).

Wire format: docs/reference/providers.md sections 6 and 7.  Submit ``POST {base}/{endpoint id}``
with the model input, then follow the URLs the reply returns (``status_url``,
``response_url``: they keep only the first two path segments of the id, so
they are never rebuilt here).  References go as data URIs in ``image_urls``;
``image_size`` is the task's aspect ratio at ``options.megapixels`` (1 MP by
default, the $0.03 price point); ``options.arguments`` adds or replaces input
fields for other models on fal.  A ``content_policy_violation`` or an
``has_nsfw_concepts`` flag is a refusal.  An endpoint with a documented range of
output sizes (``SIZE_RANGES``: ``fal-ai/qwen-image-2/edit`` takes 0.26-4.19 MP,
priced per image, docs/reference/providers.md section 10) gets the task's own size brought
into that range instead (``options.megapixels`` still decides when set).

The request (id, status and response URLs) is journaled right after the queue
accepts it and before the first status poll (providers/polling.py), so a kill or
a failed poll never leads to a second submission.  The submit itself is
journaled as pending before it is sent (engine/journal.py): fal takes no
client-chosen id or idempotency key (``request_id`` is the queue's; fal_client
``SyncClient.submit`` sends none, only an optional ``fal_webhook``), so a
submit whose reply is lost cannot be resumed and counts as possibly paid.

Statuses and results (fal docs, documentation/model-apis/inference/queue and
inference-api/queue/result; fal-ai/fal ``fal_client/client.py``):
  IN_QUEUE, IN_PROGRESS    still running (HTTP 202): poll again
  COMPLETED                read ``response_url``; the status may carry ``error`` /
                           ``error_type`` (fal_client ``Completed``): then the request failed
  response_url             "If the model returned an error, this operation returns the same error";
                           fal keeps the result 1 hour after completion (6 minutes when 10 KB or
                           larger), so a 404/410 there, or on the status URL, means it is gone
                           -> JobExpired; so does a result image URL answering 403/404/410
"""

from __future__ import annotations

import os
import urllib.parse
from typing import Any

import httpx

from ..secrets import base_url
from ..transport.http import error_details, request_id_of
from ..transport.keycheck import KeyProbe
from ..transport.keyhosts import key_hosts
from .adapter import HttpProvider, size_at_pixels, size_in_pixel_range
from .base import Generation, GenerationRequest
from .images import ImageLimits
from .polling import JobPoller, resumed_job

REFUSAL_TYPES = ("content_policy_violation", "nsfw", "safety")
RUNNING = ("IN_QUEUE", "IN_PROGRESS")
GONE = (404, 410)  # a request (or its stored result) fal no longer knows
RESULT_KEPT = "fal keeps a request's result 1 hour after it completes"
#: Output pixels (min, max) of ``image_size`` per endpoint: qwen-image-2's edit endpoints take 0.26-4.19 MP
#: (512^2 to 2048^2; fal's model page as copied second-hand, docs/reference/providers.md section 10, UNCONFIRMED).
SIZE_RANGES = {"fal-ai/qwen-image-2/edit": (512 * 512, 2048 * 2048),
               "fal-ai/qwen-image-2/pro/edit": (512 * 512, 2048 * 2048)}


def _detail_types(reply: Any) -> list[str]:
    detail = reply.get("detail") if isinstance(reply, dict) else None
    if isinstance(detail, list):
        return [str(item.get("type", "")) for item in detail if isinstance(item, dict)]
    return [str(reply.get("error_type", ""))] if isinstance(reply, dict) else []


#: fal's Platform API (fal.ai/docs/platform-apis), where the key check goes (``key_probe``).
PLATFORM_BASE = "https://api.fal.ai/v1"


class FalProvider(HttpProvider):
    route = "fal"
    key_env = ("FAL_KEY",)
    provider = "fal"
    default_base = "https://queue.fal.run"
    # The queue's own URLs are on queue.fal.run: "GET https://queue.fal.run/{model_id}/requests/{request_id}/status"
    # and ".../requests/{request_id}" (fal.ai/docs/documentation/model-apis/inference/queue), which is the
    # default base; result media (fal.media CDN) are fetched without the key.
    api_hosts = ("queue.fal.run",)
    inline_images = False  # JSON replies name the result's URL
    # Per-model input limits on fal are UNCONFIRMED: keep references within 4 MP and 10 MB.
    image_limits = ImageLimits(max_count=10, max_pixels=4_194_304, max_bytes=10 * 1024 * 1024,
                               formats=("png", "jpeg", "webp"), convert_to="jpeg")
    # fal_client's default: 120 s per request (fal-ai/fal projects/fal_client/src/fal_client/client.py
    # ``SyncClient.default_timeout``); the queue answers a submit at once.
    timeout = 120.0

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Key {self.key}"}

    def key_probe(self) -> KeyProbe | None:
        """fal's Platform API prices an endpoint for the key's account and needs a valid key for it: ``GET
        https://api.fal.ai/v1/models/pricing?endpoint_id=...`` ("Authentication: Required",
        fal.ai/docs/platform-apis/v1/models/pricing).  Its host is not the queue's: with the queue's base URL moved
        (a proxy, a stand-in) the check goes to ``HYPEEDIT_FAL_PLATFORM_BASE_URL``, and without it is not made."""
        moved = base_url("fal", self.default_base) != self.default_base
        if moved and not os.environ.get("HYPEEDIT_FAL_PLATFORM_BASE_URL", "").strip():
            return None
        platform = base_url("fal_platform", PLATFORM_BASE)
        query = urllib.parse.urlencode({"endpoint_id": self.spec.provider_model.strip("/")})
        return self.probe("GET", f"{platform}/models/pricing?{query}", self.headers,
                          doc="https://fal.ai/docs/platform-apis/v1/models/pricing",
                          hosts=key_hosts(self.route, platform))

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        job = resumed_job(self, request) or self.submit_job(request, what)
        poller = JobPoller(self, request, job["id"], what, default_wait=900, default_cap=3)
        self.check_urls(job, poller)
        status = self.wait_until_completed(job, poller)
        result = self.fetch_result(request, job, status, poller)
        image = self.first_image(request, result, job["id"])
        data = poller.download(str(image["url"]), keeps="fal's media URLs expire (data retention docs)")
        return self.generation(request, data, request_id=job["id"], seed=result.get("seed", request.seed),
                               image_size=job.get("image_size"), resumed_job=request.call.journal.resumed or None)

    def image_size(self, request: GenerationRequest) -> tuple[int, int]:
        """The task's aspect ratio at ``options.megapixels`` (1 MP), or at the task's own pixels brought into the
        endpoint's range (``SIZE_RANGES``); sides multiples of 16, never past the range."""
        task, limits = request.task, SIZE_RANGES.get(self.spec.provider_model.strip("/"))
        if limits is None or "megapixels" in self.spec.options:
            return size_at_pixels(task.width, task.height, float(self.spec.options.get("megapixels", 1.0)) * 1e6)
        return size_in_pixel_range(task.width, task.height, *limits)

    def body(self, request: GenerationRequest, *, with_images: bool = True) -> dict[str, Any]:
        width, height = self.image_size(request)
        body: dict[str, Any] = {"prompt": request.task.instruction, "num_images": 1, "seed": request.seed,
                                "image_size": {"width": width, "height": height},
                                "output_format": str(self.spec.options.get("output_format", "png"))}
        if with_images:
            body["image_urls"] = [image.inline_data_url() for image in self.references(request)]
        body.update(self.spec.options.get("arguments") or {})
        return body

    def submit_job(self, request: GenerationRequest, what: str) -> dict[str, Any]:
        """Submit, then journal the request (with the URLs to resume it) before the first poll."""
        queued = self.submit(request, what)
        return request.call.journal.submitted(
            id=str(queued.get("request_id") or queued["response_url"]), polling_url=queued.get("status_url"),
            response_url=str(queued["response_url"]), cancel_url=queued.get("cancel_url"),
            image_size=self.body(request, with_images=False).get("image_size"))

    def submit(self, request: GenerationRequest, what: str) -> dict[str, Any]:
        response = self.call("POST", f"{self.base}/{self.spec.provider_model.strip('/')}",
                             json=self.body(request), headers=self.headers, submits=True, request=request)
        self.raise_policy_refusal(request, response)
        self.check(response)
        queued = self.json_of(response, what)
        if not isinstance(queued, dict) or not queued.get("response_url"):
            raise self.error(f"{what}: the queue reply has no response_url (request id {request_id_of(response)})")
        return queued

    @staticmethod
    def check_urls(job: dict[str, Any], poller: JobPoller) -> None:
        """The job's URLs get the key: stop at once (not as a failed poll) at any that is not on fal's API."""
        if job.get("polling_url"):
            poller.api_url(job["polling_url"], "status_url")
        poller.api_url(job.get("response_url"), "response_url")

    def wait_until_completed(self, job: dict[str, Any], poller: JobPoller) -> dict[str, Any]:
        """The final status reply ({} when there is no status URL: the result is asked for directly)."""
        if not job.get("polling_url"):
            return {}
        while True:
            reply = poller.read(lambda: self.status_of(job, poller))
            status = str(reply.get("status", "")).upper()
            if status not in RUNNING:
                return reply  # COMPLETED (or a status fal adds later): the response URL has the answer
            poller.wait(status)

    def status_of(self, job: dict[str, Any], poller: JobPoller) -> dict[str, Any]:
        response = self.call("GET", poller.api_url(job["polling_url"], "status_url"), headers=self.headers,
                             request=poller.request)
        if response.status_code in GONE:
            raise poller.expired(f"its status URL answered HTTP {response.status_code} ({RESULT_KEPT})",
                                 status=response.status_code)
        self.check(response)
        reply = self.json_of(response, poller.what)
        if not isinstance(reply, dict) or not isinstance(reply.get("status"), str):
            raise self.error(f"{poller.what}: the status reply has no status: {str(reply)[:120]!r}")
        return reply

    def fetch_result(self, request: GenerationRequest, job: dict[str, Any], status: dict[str, Any],
                     poller: JobPoller) -> dict[str, Any]:
        """The result JSON; a request whose status carries an error ends as a failure (or a refusal)."""
        if status.get("error") or status.get("error_type"):
            # fal_client's Completed(error, error_type): the request ran and failed.  The response URL
            # returns "the same error" the model returned; read it once for the refusal check.
            response = self.call("GET", poller.api_url(job["response_url"], "response_url"), headers=self.headers,
                                 request=request)
            self.raise_policy_refusal(request, response, job["id"])
            why = f"{status.get('error_type') or 'error'}: {str(status.get('error') or '')[:300]}"
            raise poller.fail(f"fal says the request completed with {why}")
        return poller.read(lambda: self.result_of(request, job, poller))

    def result_of(self, request: GenerationRequest, job: dict[str, Any], poller: JobPoller) -> dict[str, Any]:
        response = self.call("GET", poller.api_url(job["response_url"], "response_url"), headers=self.headers,
                             request=request)
        if response.status_code in GONE:
            raise poller.expired(f"its response URL answered HTTP {response.status_code} ({RESULT_KEPT})",
                                 status=response.status_code)
        self.raise_policy_refusal(request, response, job["id"])
        if 400 <= response.status_code < 500 and response.status_code not in (408, 429):
            # The model's own error for this input, stored as the result: waiting will not change it.
            _, message = error_details(response)
            raise poller.fail(f"the result is HTTP {response.status_code}: {message[:300]}", retryable=False)
        self.check(response)
        result = self.json_of(response, poller.what)
        if not isinstance(result, dict):
            raise self.error(f"{poller.what}: the result of fal request {job['id']} is not an object")
        return result

    def raise_policy_refusal(self, request: GenerationRequest, response: httpx.Response,
                         request_id: str | None = None) -> None:
        if response.is_success:
            return
        try:
            types = _detail_types(response.json())
        except ValueError:
            return
        if any(marker in kind for kind in types for marker in REFUSAL_TYPES):
            _, message = error_details(response)
            raise self.refusal(request, f"content policy: {message[:300]}", request_id=request_id)

    def first_image(self, request: GenerationRequest, result: dict[str, Any], request_id: str) -> dict[str, Any]:
        flags = result.get("has_nsfw_concepts") or []
        if any(flags):
            raise self.refusal(request, "the safety checker flagged the output (has_nsfw_concepts)",
                               request_id=request_id, cost=self.spec.price)
        images = result.get("images") or ([result["image"]] if isinstance(result.get("image"), dict) else [])
        if not images or not isinstance(images[0], dict) or not images[0].get("url"):
            raise self.refusal(request, "the result holds no image", request_id=request_id)
        return images[0]
