"""``replicate``: any Replicate model through ``POST {base}/models/{owner}/{name}/predictions``.

Wire format: providers.md sections 5 and 7.  The request asks to wait
(``Prefer: wait=N``); a prediction not finished by then is polled at its
``urls.get``.  Outputs (one URL or a list) are downloaded at once: Replicate
deletes them after an hour.  The input depends on the model: Riverflow 2.0
(``sourceful/riverflow-2.0-*``: ``instruction``, ``init_images``,
``resolution``, ``aspect_ratio``) and everything else (``prompt``,
``image_input``, ``aspect_ratio``, as Seedream 4.5 takes); ``options.arguments``
adds or replaces fields.  References go as data URIs (Replicate takes them for
file inputs; the size limit for data URIs is UNCONFIRMED, so they are kept
within 2048 px as JPEG).  A failed prediction whose error speaks of NSFW,
sensitive content or safety is a refusal.
"""

from __future__ import annotations

import time
from typing import Any

from .adapter import HttpProvider, nearest_ratio, poll_delays
from .base import Generation, GenerationRequest
from .images import ImageLimits

ASPECT_RATIOS = ("1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9")  # UNCONFIRMED per model
REFUSAL_MARKERS = ("nsfw", "sensitive", "safety", "flagged", "content policy", "moderat")
TERMINAL = ("succeeded", "failed", "canceled")


class ReplicateProvider(HttpProvider):
    route = "replicate"
    key_env = ("REPLICATE_API_TOKEN",)
    provider = "replicate"
    default_base = "https://api.replicate.com/v1"
    image_limits = ImageLimits(max_count=10, max_side=2048, max_bytes=10 * 1024 * 1024,
                               formats=("jpeg", "png"), convert_to="jpeg")

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        wait = int(self.spec.options.get("wait_s", 60))
        response = self.call("POST", f"{self.base}/models/{self.spec.provider_model}/predictions",
                             json={"input": self.input(request)}, headers={**self.headers, "Prefer": f"wait={wait}"})
        self.check(response)
        prediction = self.finished(request, self.json_of(response, what), what)
        url = self.output_url(request, prediction)
        return self.generation(request, self.download(url, what), request_id=str(prediction.get("id")),
                               seed=None, aspect_ratio=self.aspect_ratio(request), metrics=prediction.get("metrics"),
                               model_version=prediction.get("version"))

    def aspect_ratio(self, request: GenerationRequest) -> str:
        ratios = tuple(self.spec.options.get("aspect_ratios") or ASPECT_RATIOS)
        return nearest_ratio(request.task.width, request.task.height, ratios)

    def input(self, request: GenerationRequest) -> dict[str, Any]:
        images = [image.data_url() for image in self.references(request)]
        if self.spec.provider_model.startswith("sourceful/"):
            body = {"instruction": request.task.instruction, "init_images": images,
                    "resolution": str(self.spec.options.get("resolution", "2K")),
                    "aspect_ratio": self.aspect_ratio(request)}
        else:
            body = {"prompt": request.task.instruction, "image_input": images,
                    "aspect_ratio": self.aspect_ratio(request)}
        body.update(self.spec.options.get("arguments") or {})
        return body

    def finished(self, request: GenerationRequest, prediction: dict, what: str) -> dict:
        """The prediction once it has settled: succeeded, or a Refusal / ProviderError."""
        deadline = time.monotonic() + float(self.spec.options.get("max_wait_s", 900))
        delays = poll_delays(float(self.spec.options.get("poll_s", 1.0)), cap=float(self.spec.options.get("poll_max_s", 5)))
        while prediction.get("status") not in TERMINAL:
            if time.monotonic() > deadline:
                raise self.error(f"{what}: prediction {prediction.get('id')} still {prediction.get('status')}",
                                    retryable=True)
            url = (prediction.get("urls") or {}).get("get")
            if not url:
                raise self.error(f"{what}: prediction {prediction.get('id')} has no urls.get to poll")
            time.sleep(next(delays))
            response = self.call("GET", str(url), headers=self.headers)
            self.check(response)
            prediction = self.json_of(response, what)
        if prediction["status"] == "succeeded":
            return prediction
        error = str(prediction.get("error") or prediction["status"])
        if any(marker in error.lower() for marker in REFUSAL_MARKERS):
            raise self.refusal(request, f"prediction failed: {error[:300]}", request_id=str(prediction.get("id")))
        raise self.error(f"{what}: prediction {prediction.get('id')} {prediction['status']}: {error[:300]}",
                            retryable=True)

    def output_url(self, request: GenerationRequest, prediction: dict) -> str:
        output = prediction.get("output")
        if isinstance(output, list):
            output = output[0] if output else None
        if isinstance(output, dict):
            output = output.get("url") or output.get("image")
        if not isinstance(output, str) or not output:
            raise self.refusal(request, "the prediction succeeded without an output image",
                               request_id=str(prediction.get("id")))
        return output
