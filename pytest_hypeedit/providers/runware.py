"""``runware``: Runware's task API; the riverflow-2-b1 stand-in (Riverflow 2.0 Pro) by default.

Wire format: providers.md section 5.  ``POST {base}`` with a JSON array of one
``imageInference`` task; references go in ``inputs.referenceImages`` as data
URIs (Runware documents uploading first to get a UUID; whether inline data
URIs are taken for Riverflow is UNCONFIRMED, so ``options.reference_field``
can move them).  The width x height pair is the supported pair nearest the
task's aspect ratio (the supported list is UNCONFIRMED; ``options.sizes``
replaces it).  ``includeCost`` makes Runware report the real cost, which is
then the candidate's cost.  Moderation codes are UNCONFIRMED: an error whose
code or message speaks of NSFW, moderation or safety is a refusal.
"""

from __future__ import annotations

import uuid
from typing import Any

from .adapter import HttpProvider, nearest_size
from .base import Generation, GenerationRequest
from .http import request_id_of
from .images import ImageLimits

#: About 1 MP at common ratios, multiples of 64 (the supported list is UNCONFIRMED).
SIZES = ((1024, 1024), (1152, 896), (896, 1152), (1216, 832), (832, 1216), (1344, 768), (768, 1344),
         (1536, 640), (640, 1536))
REFUSAL_MARKERS = ("nsfw", "moderat", "safety", "sensitive", "content policy", "contentpolicy")


def is_refusal(code: str, message: str) -> bool:
    text = f"{code} {message}".lower()
    return any(marker in text for marker in REFUSAL_MARKERS)


class RunwareProvider(HttpProvider):
    route = "runware"
    key_env = ("RUNWARE_API_KEY",)
    provider = "runware"
    default_base = "https://api.runware.ai/v1"
    # <= 10 references, 300-2048 px per side, <= 20 MB (providers.md section 5).
    image_limits = ImageLimits(max_count=10, max_side=2048, min_side=300, max_bytes=20 * 1024 * 1024,
                               formats=("png", "jpeg", "webp"), convert_to="jpeg")

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        task = self.task(request)
        response = self.call("POST", self.base, json=[task], headers={"Authorization": f"Bearer {self.key}"})
        errors = self.errors_of(response)
        refused = [e for e in errors if is_refusal(str(e.get("code", "")), str(e.get("message", "")))]
        if refused:
            raise self.refusal(request, f"{refused[0].get('code')}: {str(refused[0].get('message', ''))[:300]}",
                               request_id=task["taskUUID"])
        self.check(response)
        reply = self.json_of(response, what)
        item = self.result_item(request, reply, task["taskUUID"])
        data = self.download(str(item.get("imageURL") or item.get("imageDataURI")), what)
        cost = item.get("cost") if isinstance(item.get("cost"), (int, float)) else None
        return self.generation(request, data, cost=cost, request_id=task["taskUUID"],
                               seed=item.get("seed", task.get("seed")), image_uuid=item.get("imageUUID"),
                               reported_cost=cost, price=self.spec.price, width=task["width"], height=task["height"],
                               http_request_id=request_id_of(response))

    def task(self, request: GenerationRequest) -> dict[str, Any]:
        sizes = [tuple(pair) for pair in self.spec.options.get("sizes") or SIZES]
        width, height = nearest_size(request.task.width, request.task.height, sizes)
        field = str(self.spec.options.get("reference_field", "inputs.referenceImages"))
        task: dict[str, Any] = {
            "taskType": "imageInference",
            "taskUUID": str(uuid.uuid4()),
            "model": self.spec.provider_model,
            "positivePrompt": request.task.instruction,
            "width": width,
            "height": height,
            "numberResults": 1,
            "outputType": "URL",
            "outputFormat": str(self.spec.options.get("output_format", "PNG")).upper(),
            "deliveryMethod": "sync",
            "includeCost": True,
        }
        _set_path(task, field, [image.data_url() for image in self.references(request)])
        if self.spec.options.get("send_seed", True):
            task["seed"] = request.seed
        return task

    @staticmethod
    def errors_of(response) -> list[dict]:
        if response.is_success and "errors" not in response.text[:20000]:
            return []
        try:
            body = response.json()
        except ValueError:
            return []
        errors = body.get("errors") or body.get("error") if isinstance(body, dict) else None
        errors = [errors] if isinstance(errors, dict) else errors
        return [e for e in errors or [] if isinstance(e, dict)]

    def result_item(self, request: GenerationRequest, reply: Any, task_uuid: str) -> dict:
        items = reply.get("data") if isinstance(reply, dict) else None
        items = [i for i in items or [] if isinstance(i, dict) and i.get("taskType", "imageInference") == "imageInference"]
        if not items or not (items[0].get("imageURL") or items[0].get("imageDataURI")):
            raise self.refusal(request, "the reply holds no image", request_id=task_uuid)
        return items[0]


def _set_path(target: dict, dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for name in parents:
        target = target.setdefault(name, {})
    target[last] = value
