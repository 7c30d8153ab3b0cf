"""Fake fal queue API (docs/reference/providers.md section 7): submit, status_url, response_url.

Status replies: ``IN_QUEUE`` / ``IN_PROGRESS`` with HTTP 202, ``COMPLETED`` with 200, which carries ``error`` and
``error_type`` when the request failed (fal-ai/fal ``fal_client/client.py`` ``Completed``); the response URL then
returns that error (fal docs, inference-api/queue/result).  An unknown request is a 404.

Faults (``inject``): the generic ones on the submit path (the endpoint id), the status path (``/status$``) or the
response path (``requests/[^/]+$``); taken at submit: ``refusal`` (content_policy_violation at the response URL),
``failed`` (completes with an error), ``truncated``; taken at a status poll: ``lost`` (fal no longer knows the
request: 404); at the download: ``expired`` (403).  ``ledger`` counts submissions per candidate (prompt, seed).

``fal-ai/qwen-image-2/edit`` takes an ``image_size`` {width, height} of 0.26-4.19 MP only (docs/reference/providers.md section
10): any other is a 422, as fal answers a value outside a model's schema.

Every field is checked against the edit endpoints' input schema (``INPUT_FIELDS``: fal's model API pages of
seedream/v4.5/edit and qwen-image-edit-2511 [B14][Q6]): a field the schema does not list, a value of the wrong
type, a null (fal's inputs are pydantic models whose fields are not Optional), an output_format outside
png | jpeg | webp are a 422 ``{"detail": [{"loc", "msg", "type"}]}``, fal's validation error shape
(fal docs, model-apis/errors.md [A3]).  ``num_images`` other than 1 is not accepted either: the schema takes 1-4, but
fal bills each image it makes (fal pricing is per image) and the benchmark buys one candidate per request, so
a request for more is a bug that would be paid for.
"""

from __future__ import annotations

import base64
import io
import itertools
import re
import threading
import urllib.parse

from PIL import Image

from .base import FakeServer, Reply, Seen
from .chaos import JobLedger
from .files import FileStore

_ids = itertools.count(1)
#: Output pixels (min, max) per endpoint whose schema bounds image_size.
SIZE_RANGES = {"fal-ai/qwen-image-2/edit": (512 * 512, 2048 * 2048)}


class FakeFal(FakeServer):
    env = "HYPEEDIT_FAL_BASE_URL"
    key_env = "FAL_KEY"

    def __init__(self, key: str = "fal-fake-key:0123456789abcdef", queued_polls: int = 1):
        super().__init__(key)
        self.queued_polls = queued_polls
        self.nsfw = False  # answer with has_nsfw_concepts [true] (the safety checker's flag)
        self.files = FileStore(self, "/files")
        self.ledger = JobLedger()
        self.files.on_expired = self.ledger.expire
        self.jobs: dict[str, dict] = {}
        self._jobs_lock = threading.Lock()
        # Requests URLs keep the first two segments of the endpoint id only.
        self.route("GET", r"/(?P<owner>[^/]+)/(?P<app>[^/]+)/requests/(?P<id>[^/]+)/status", self.status)
        self.route("GET", r"/(?P<owner>[^/]+)/(?P<app>[^/]+)/requests/(?P<id>[^/]+)", self.response)
        self.route("POST", r"/(?P<endpoint>[^/]+/[^/]+(/[^/]+)*)", self.submit)
        # the Platform API's pricing (fal.ai/docs/platform-apis/v1/models/pricing), served here under /v1: a
        # run reaches it with HYPEEDIT_FAL_PLATFORM_BASE_URL = ``platform``
        self.key_check_route("GET", "/v1/models/pricing", self.pricing)

    @property
    def base(self) -> str:
        return self.url

    def authorized(self, seen: Seen) -> bool:
        return seen.path.startswith("/files") or seen.headers.get("authorization") == f"Key {self.key}"

    def unauthorized(self) -> Reply:
        return Reply(401, {"detail": "Invalid API key"})

    @property
    def platform(self) -> str:
        return self.url + "/v1"

    def pricing(self, seen: Seen) -> Reply:
        endpoint = urllib.parse.parse_qs(seen.query).get("endpoint_id", [""])[0]
        if not endpoint:
            return Reply(422, {"detail": [{"loc": ["query", "endpoint_id"], "msg": "field required"}]})
        return Reply(200, {"prices": [{"endpoint_id": endpoint, "unit_price": 0.04, "unit": "image",
                                       "currency": "USD"}], "next_cursor": None, "has_more": False})

    def submit(self, seen: Seen) -> Reply:
        body = seen.json()
        problem = _validate(body) or _validate_size(body, SIZE_RANGES.get(seen.match["endpoint"]))
        if problem:
            return Reply(422, {"detail": [{"loc": ["body"], "msg": problem, "type": "value_error"}]})
        job_id = f"fal-{next(_ids):06d}"
        owner, app = seen.match["endpoint"].split("/")[:2]
        size = body.get("image_size")
        if not isinstance(size, dict):  # a preset such as "auto_2K"
            size = {"width": 1024, "height": 1024}
        candidate = (body["prompt"], body.get("seed"))
        self.ledger.submit(candidate)
        job = {"polls": 0, "refuse": bool(self.take_fault("refusal", seen.path)),
               "failed": bool(self.take_fault("failed", seen.path)), "seed": body.get("seed"), "candidate": candidate,
               "data": self.files.new_image(size["width"] // 16, size["height"] // 16, path=seen.path)}
        if job["failed"]:
            self.ledger.fail(candidate)
        with self._jobs_lock:
            self.jobs[job_id] = job
        root = f"{self.url}/{owner}/{app}/requests/{job_id}"
        return Reply(200, {"request_id": job_id, "status_url": f"{root}/status", "response_url": root,
                           "cancel_url": f"{root}/cancel", "queue_position": 0})

    def _job(self, seen: Seen) -> dict | None:
        with self._jobs_lock:
            job = self.jobs.get(seen.match["id"])
            if job is not None and self.take_fault("lost", seen.path):
                del self.jobs[seen.match["id"]]
                self.ledger.expire(job["candidate"])
                job = None
            return job

    def status(self, seen: Seen) -> Reply:
        job = self._job(seen)
        if job is None:
            return Reply(404, {"detail": "Request not found"})
        job["polls"] += 1
        if job["polls"] <= self.queued_polls:
            return Reply(202, {"status": "IN_QUEUE", "queue_position": 0})
        if job["failed"]:
            return Reply(200, {"status": "COMPLETED", "logs": None, "metrics": {},
                               "error": "Runner disconnected during processing", "error_type": "runner_disconnected"})
        return Reply(200, {"status": "COMPLETED", "logs": None, "metrics": {"inference_time": 1.2}})

    def response(self, seen: Seen) -> Reply:
        job = self._job(seen)
        if job is None:
            return Reply(404, {"detail": "Request not found"})
        if job["refuse"]:
            return Reply(422, {"detail": [{"loc": ["body", "prompt"], "msg": "The content could not be processed "
                                           "because it contained material flagged by a content checker.",
                                           "type": "content_policy_violation"}]}, {"X-Fal-Retryable": "false"})
        if job["failed"]:
            return Reply(503, {"detail": "Runner disconnected during processing", "error_type": "runner_disconnected"},
                         {"X-Fal-Error-Type": "runner_disconnected", "X-Fal-Retryable": "false"})
        url = self.files.put(job["data"], owner=job["candidate"])
        return Reply(200, {"images": [{"url": url, "width": 64, "height": 48, "content_type": "image/png"}],
                           "seed": job["seed"], "has_nsfw_concepts": [self.nsfw]})


#: The edit endpoints' input fields and the JSON types each takes (fal model API pages [B14][Q6]; image_size is a
#: {width, height} object or a preset name such as "auto_2K").
INPUT_FIELDS: dict[str, tuple[type, ...]] = {
    "prompt": (str,), "image_urls": (list,), "image_size": (dict, str), "num_images": (int,), "max_images": (int,),
    "seed": (int,), "sync_mode": (bool,), "enable_safety_checker": (bool,), "output_format": (str,),
    "negative_prompt": (str,), "guidance_scale": (int, float), "num_inference_steps": (int,),
    "acceleration": (str,), "enable_prompt_expansion": (bool,)}
OUTPUT_FORMATS = ("png", "jpeg", "webp")


def _field_problem(body: dict) -> str | None:
    """What fal's schema does not accept in ``body``: an unknown field, a null, a value of the wrong type."""
    for name, value in body.items():
        if name not in INPUT_FIELDS:
            return f"{name}: extra inputs are not permitted"
        kinds = INPUT_FIELDS[name]
        if value is None or not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            return f"{name}: input should be {' or '.join(kind.__name__ for kind in kinds)}, got {value!r:.40}"
    if body.get("output_format", "png") not in OUTPUT_FORMATS:
        return f"output_format: input should be one of {', '.join(OUTPUT_FORMATS)}"
    if body.get("num_images", 1) != 1:
        return f"num_images {body['num_images']}: this fake makes (and bills) one image a request, as we buy one"
    return None


def _validate(body: dict) -> str | None:
    if not isinstance(body, dict) or not body.get("prompt") or not body.get("image_urls"):
        return "prompt and image_urls are required"
    problem = _field_problem(body)
    if problem:
        return problem
    for url in body["image_urls"]:
        match = re.match(r"data:image/\w+;base64,(.*)$", url, re.S)
        if not match:
            return "image_urls must be URLs or data URIs"
        Image.open(io.BytesIO(base64.b64decode(match[1]))).load()
    return None


def _validate_size(body: dict, limits: tuple[int, int] | None) -> str | None:
    size = body.get("image_size")
    if limits is None or not isinstance(size, dict):
        return None
    pixels = size.get("width", 0) * size.get("height", 0)
    if not limits[0] <= pixels <= limits[1]:
        return f"image_size {size}: width x height must be within [{limits[0]}, {limits[1]}] pixels"
    return None
