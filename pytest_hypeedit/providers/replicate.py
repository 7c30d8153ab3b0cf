"""``replicate``: any Replicate model through ``POST {base}/models/{owner}/{name}/predictions``.

Wire format: docs/reference/providers.md sections 5 and 7.  The input depends on the model:
Riverflow 2.0 (``sourceful/riverflow-2.0-*``: ``instruction``, ``init_images``,
``resolution``, ``aspect_ratio``) and everything else (``prompt``,
``image_input``, ``aspect_ratio``, as Seedream 4.5 takes); ``options.arguments``
adds or replaces fields.  ``aspect_ratio`` is the nearest of the model's own
list (``ASPECT_RATIOS``; ``options.aspect_ratios`` replaces it).

References: Replicate recommends a data URI "only if the file is less than
1MB" (replicate.com/docs/topics/predictions/input-files); a larger one is
uploaded once through the files API (``POST /v1/files``, multipart field
``content``; replicate-python ``replicate/file.py``) and its ``urls.get`` is
the input URL (what replicate-python's ``encode_json`` passes for a file).

Jobs: the create request sends no ``Prefer: wait`` by default.  With it,
Replicate holds the reply up to 60 s while the model runs, and a run killed
in that minute has paid for a prediction whose id it never saw, so the rerun
would pay again.  Without it the reply comes at once with the prediction id
(status ``starting``), which is journaled before the first poll
(providers/polling.py); ``options.wait_s`` (1-60) opts back in.  The create request
itself is journaled as pending before it is sent (engine/journal.py): Replicate's
HTTP API takes no client-chosen id or idempotency key (the prediction id is
assigned by the create; replicate-python's ``RetryTransport`` never retries a
POST), so a create whose reply is lost cannot be resumed and counts as possibly
paid.

Statuses (replicate-python-beta ``resources/predictions.py``, "get a single prediction"):
  starting, processing   poll ``urls.get`` again
  succeeded              download ``output`` at once.  API predictions' outputs are deleted after an
                         hour: then ``data_removed`` is true and ``output`` null ("The output key will
                         still be present, but its value will be null"), or the file URL answers
                         403/404/410 -> JobExpired; so does a 404 on ``urls.get``
  failed                 ``error`` says why: NSFW / sensitive content is a refusal, else the job failed
  canceled               "canceled by its creator": the job ended without an image
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import TYPE_CHECKING, Any

from ..transport.body import InlineImage
from ..transport.keycheck import KeyProbe
from .adapter import HttpProvider, nearest_ratio
from .base import Generation, GenerationRequest
from .images import ImageLimits, PreparedImage
from .polling import JobPoller, resumed_job

if TYPE_CHECKING:  # pragma: no cover
    from ..registry import ModelSpec
    from .runtime import Runtime

#: Aspect ratios per model (prefix of the provider model id).  Seedream 4.5's schema lists
#: match_input_image, 1:1, 4:3, 3:4, 16:9, 9:16, 3:2, 2:3, 21:9 (docs/reference/providers.md section 7; no 4:5 or 5:4).
#: Riverflow 2.0's Replicate schema shows only its default "auto" in our sources: UNCONFIRMED, so its list is
#: the ratios two other hosts of the same model both list (Runware's size table
#: runware.ai/docs/models/sourceful-riverflow-2-0-pro, WaveSpeed's riverflow-2.0-pro docs).
ASPECT_RATIOS: dict[str, tuple[str, ...]] = {
    "bytedance/seedream-4.5": ("1:1", "4:3", "3:4", "16:9", "9:16", "3:2", "2:3", "21:9"),
    "sourceful/riverflow-2.0": ("1:1", "4:3", "3:4", "16:9", "9:16", "3:2", "2:3", "5:4", "4:5"),
}
#: Other models: the ratios common to both lists above (UNCONFIRMED per model; set options.aspect_ratios).
COMMON_RATIOS = ("1:1", "4:3", "3:4", "16:9", "9:16", "3:2", "2:3")
DATA_URI_LIMIT = 1_000_000  # characters of a data URI; "only recommended if the file is less than 1MB"
UPLOAD_REUSE_S = 3600.0  # reuse an uploaded file this long (the files API's own expiry is longer: expires_at)
REFUSAL_MARKERS = ("nsfw", "sensitive", "safety", "flagged", "content policy", "moderat")
RUNNING = ("starting", "processing")
OUTPUT_KEPT = "Replicate deletes API predictions' outputs after an hour"


class ReplicateProvider(HttpProvider):
    route = "replicate"
    key_env = ("REPLICATE_API_TOKEN",)
    provider = "replicate"
    default_base = "https://api.replicate.com/v1"
    # A prediction's urls.get is "https://api.replicate.com/v1/predictions/{id}" (replicate.com/docs/topics/
    # predictions/create-a-prediction): the default base's host.  Output files are served by replicate.delivery
    # and its subdomains (replicate.com/docs/topics/predictions/output-files, "Output file domains"): fetched
    # without the key.
    api_hosts = ("api.replicate.com",)
    inline_images = False  # JSON replies name the output's URL
    image_limits = ImageLimits(max_count=10, max_side=2048, max_bytes=10 * 1024 * 1024,
                               formats=("jpeg", "png"), convert_to="jpeg")

    # The base's class attribute is only ever read; here it depends on the model's options.
    @property
    def timeout(self) -> float:  # type: ignore[override]
        # replicate-python reads with a 30 s timeout (replicate/client.py ``_build_httpx_client``:
        # httpx.Timeout(5.0, read=30.0, ...)); with ``Prefer: wait`` the reply may be held up to wait_s more.
        return 30.0 + max(0, int(self.spec.options.get("wait_s", 0)))

    def __init__(self, spec: ModelSpec, *, runtime: Runtime | None = None) -> None:
        super().__init__(spec, runtime=runtime)
        self._uploads: dict[str, tuple[str, float]] = {}  # sha256 of the file -> (urls.get, uploaded at)
        self._uploads_lock = threading.Lock()

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def key_probe(self) -> KeyProbe:
        """Replicate's account, free: ``GET /v1/account`` answers 401 to a wrong token."""
        return self.probe("GET", f"{self.base}/account", self.headers,
                          doc="https://replicate.com/docs/reference/http#account.get")

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        job, prediction = resumed_job(self, request), None
        if job is None:
            prediction = self.create(request, what)
            job = self.journal(request, prediction)
        poller = JobPoller(self, request, job["id"], what, default_wait=900, default_poll=1.0)
        if job.get("polling_url"):  # the key goes there: stop at once (not as a failed poll) at a stranger's URL
            poller.api_url(job["polling_url"], "urls.get")
        prediction = self.finished(request, job, prediction, poller)
        url = self.output_url(request, prediction, poller)
        data = poller.download(url, keeps=OUTPUT_KEPT)
        return self.generation(request, data, request_id=job["id"], seed=None, aspect_ratio=job.get("aspect_ratio"),
                               metrics=prediction.get("metrics"), model_version=prediction.get("version"),
                               resumed_job=request.call.journal.resumed or None)

    # ------------------------------------------------------------------ input
    def aspect_ratio(self, request: GenerationRequest) -> str:
        ratios = self.spec.options.get("aspect_ratios") or next(
            (listed for prefix, listed in ASPECT_RATIOS.items() if self.spec.provider_model.startswith(prefix)),
            COMMON_RATIOS)
        return nearest_ratio(request.task.width, request.task.height, tuple(ratios))

    def input(self, request: GenerationRequest) -> dict[str, Any]:
        images = [self.image_input(image, request) for image in self.references(request)]
        if self.spec.provider_model.startswith("sourceful/"):
            body = {"instruction": request.task.instruction, "init_images": images,
                    "resolution": str(self.spec.options.get("resolution", "2K")),
                    "aspect_ratio": self.aspect_ratio(request)}
        else:
            body = {"prompt": request.task.instruction, "image_input": images,
                    "aspect_ratio": self.aspect_ratio(request)}
        body.update(self.spec.options.get("arguments") or {})
        return body

    def image_input(self, image: PreparedImage, request: GenerationRequest | None = None) -> "str | InlineImage":
        """A data URI under 1 MB, else the files-API URL of the uploaded file (uploaded within ``request``'s call)."""
        data_url = image.inline_data_url()
        return data_url if len(data_url) < DATA_URI_LIMIT else self.uploaded_url(image, request)

    def uploaded_url(self, image: PreparedImage, request: GenerationRequest | None = None) -> str:
        data = image.read()
        digest = hashlib.sha256(data).hexdigest()
        with self._uploads_lock:
            cached = self._uploads.get(digest)
            if cached and time.monotonic() - cached[1] < UPLOAD_REUSE_S:
                return cached[0]
        response = self.call("POST", f"{self.base}/files", headers=self.headers,
                             files={"content": (image.path.name, data, image.mime)}, request=request)
        self.check(response)
        reply = self.json_of(response, f"{self.spec.name}: upload of {image.path.name}")
        url = (reply.get("urls") or {}).get("get") if isinstance(reply, dict) else None
        if not url:
            raise self.error(f"{self.spec.name}: the files API answered without urls.get for {image.path.name}")
        with self._uploads_lock:
            self._uploads[digest] = (str(url), time.monotonic())
        return str(url)

    # ------------------------------------------------------------------ the job
    def create(self, request: GenerationRequest, what: str) -> dict[str, Any]:
        headers = dict(self.headers)
        wait = int(self.spec.options.get("wait_s", 0))
        if wait > 0:
            headers["Prefer"] = f"wait={min(wait, 60)}"
        response = self.call("POST", f"{self.base}/models/{self.spec.provider_model}/predictions",
                             json={"input": self.input(request)}, headers=headers, submits=True, request=request)
        self.check(response)
        prediction = self.json_of(response, what)
        if not isinstance(prediction, dict) or not prediction.get("id"):
            raise self.error(f"{what}: the create reply has no prediction id")
        return prediction

    def journal(self, request: GenerationRequest, prediction: dict[str, Any]) -> dict[str, Any]:
        urls = prediction.get("urls") or {}
        return request.call.journal.submitted(id=str(prediction["id"]), polling_url=urls.get("get"),
                                         cancel_url=urls.get("cancel"), aspect_ratio=self.aspect_ratio(request))

    def finished(self, request: GenerationRequest, job: dict[str, Any], prediction: dict[str, Any] | None,
                 poller: JobPoller) -> dict[str, Any]:
        """The prediction once it has settled: succeeded, or a Refusal / JobFailed / JobExpired."""
        while prediction is None or prediction.get("status") in RUNNING:
            if prediction is not None:
                poller.wait(str(prediction.get("status")))
            prediction = poller.read(lambda: self.get(job, poller))
        status = str(prediction.get("status"))
        if status == "succeeded":
            return prediction
        error = str(prediction.get("error") or status)
        if status == "failed" and any(marker in error.lower() for marker in REFUSAL_MARKERS):
            raise self.refusal(request, f"prediction failed: {error[:300]}", request_id=job["id"])
        raise poller.fail(f"the prediction is {status}: {error[:300]}")

    def get(self, job: dict[str, Any], poller: JobPoller) -> dict[str, Any]:
        if not job.get("polling_url"):
            raise poller.fail("the prediction has no urls.get to poll", retryable=False)
        response = self.call("GET", poller.api_url(job["polling_url"], "urls.get"), headers=self.headers,
                             request=poller.request)
        if response.status_code == 404:
            raise poller.expired(f"its urls.get answered HTTP 404 ({OUTPUT_KEPT})", status=404)
        self.check(response)
        prediction = self.json_of(response, poller.what)
        if not isinstance(prediction, dict) or not isinstance(prediction.get("status"), str):
            raise self.error(f"{poller.what}: the prediction reply has no status: {str(prediction)[:120]!r}")
        return prediction

    def output_url(self, request: GenerationRequest, prediction: dict[str, Any], poller: JobPoller) -> str:
        if prediction.get("data_removed"):
            raise poller.expired(f"data_removed is true ({OUTPUT_KEPT})")
        output = prediction.get("output")
        if isinstance(output, list):
            output = output[0] if output else None
        if isinstance(output, dict):
            output = output.get("url") or output.get("image")
        if not isinstance(output, str) or not output:
            raise self.refusal(request, "the prediction succeeded without an output image",
                               request_id=str(prediction.get("id")))
        return output
