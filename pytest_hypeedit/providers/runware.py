"""``runware``: Runware's task API; the riverflow-2-b1 stand-in (Riverflow 2.0 Pro) and Riverflow 2.5 Pro.

Wire format: docs/reference/providers.md section 5.  ``POST {base}`` with a JSON array of one
``imageInference`` task; references go in ``inputs.referenceImages`` as data
URIs (Runware documents uploading first to get a UUID; whether inline data
URIs are taken for Riverflow is UNCONFIRMED, so ``options.reference_field``
can move them).  ``includeCost`` makes Runware report the real cost, which is
then the candidate's cost.

Parameters: Runware validates a task against the model's schema, with
``additionalProperties: false`` (runware-python ``validate.py``,
tests/test_validate.py) and ``unknownParameter`` among its error codes
(errors.py).  The Sourceful params of runware-python ``types/task_map.py``
(``SourcefulRiverflow20ProParams``, ``SourcefulRiverflow25ProParams``, ...) have
no ``seed``, so none is sent to a ``sourceful:`` model (``options.send_seed``
sends one to another model that takes it).  Riverflow 2.5 takes a ``settings``
object: ``settings.thinkingLevel`` is ``options.thinking_level`` (low, medium,
high, and xhigh on Pro; default medium: a public client's table of Runware's
schemas, second-hand, UNCONFIRMED), always sent so that a run says what it ran.

Error codes (runware-python ``errors.py``): ``_SAFETY_CODES``
(``unsafeContentDetected``, ``nsfwContentDetected``, ...) and any code or message
that speaks of NSFW, moderation or safety are a refusal: the model answered, and
the next run does not pay again.  ``modelDisabled`` / ``modelUnavailable`` (the
SDK counts them retryable "provider" errors; for a benchmark the model is gone)
are final (``ModelGone``).  ``taskCancelled`` and ``taskFailedOrNotFound`` (the
SDK's not-found codes) mean the task is gone: ``JobExpired``.

Sizes: ``sourceful:riverflow-2.0@pro`` accepts only the width x height pairs
its model page lists (runware.ai/docs/models/sourceful-riverflow-2-0-pro,
"Compatibility & Validation"); any other pair is not accepted.  The 2K pairs cost
the same as 1K ($0.15; 4K $0.33) and the paper compares 2K-class outputs, so
the pair is the listed 2K one nearest the task's aspect ratio (``SIZES``;
``options.sizes`` replaces the list for another model).  Riverflow 2.5 has a
table of its own (``SIZES_2_5``); ``resolution`` is not sent, since it "cannot
be used with width/height".

Delivery: async by default (``options.delivery: sync`` opts out).  Runware's
own REST SDK sends ``deliveryMethod: "async"`` by default for every inference
task and polls ``getResponse`` with the task's UUID (Runware/runware-python
README "Async delivery", ``client.py`` ``_poll_rest``; runware.ai/docs
platform/task-polling).  Riverflow 2.0 Pro runs up to three reasoning
iterations per image, so a sync request holds one connection open for the
whole generation and a run killed meanwhile has paid for an image it can never
ask for again.  The taskUUID is ours, so it is journaled *before* the task is
sent (providers/polling.py): whatever happens next, the next attempt asks
``getResponse`` for that UUID instead of submitting a second task.  A sync task
is journaled as pending (engine/journal.py) and counts as possibly paid when its
reply is lost: whether ``getResponse`` knows a task sent for sync delivery is
UNCONFIRMED, so it is not resumed.

getResponse items carry ``status`` processing | success | error
(runware-python ``types/task_map.py`` GetResponseResult); an ``error`` item
ends the job (a refusal when moderation); a top-level error
``taskFailedOrNotFound`` (runware-python ``errors.py``: a not-found code) means
Runware no longer knows the task: JobExpired, and the runner submits anew.
How long Runware keeps async results is UNCONFIRMED.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import httpx

from ..errors import ConfigError, ProviderError
from ..transport.http import is_retryable
from ..transport.keycheck import KeyProbe
from .adapter import HttpProvider, nearest_size
from .base import Generation, GenerationRequest
from .images import ImageLimits
from .polling import JobPoller, resumed_job

if TYPE_CHECKING:  # pragma: no cover
    from ..registry import ModelSpec
    from .runtime import Runtime

#: The 2K pairs of sourceful:riverflow-2.0@pro (1:1, 4:3, 3:4, 16:9, 9:16, 3:2, 2:3, 5:4, 4:5, 7:3), from
#: runware.ai/docs/models/sourceful-riverflow-2-0-pro; the 1K pairs are these halved, same price.
SIZES = ((2048, 2048), (2304, 1728), (1728, 2304), (2560, 1440), (1440, 2560), (2496, 1664), (1664, 2496),
         (2240, 1792), (1792, 2240), (3024, 1296))
#: The 2K pairs of the Riverflow 2.5 family (1:1, 21:9, 16:9, 3:2, 4:3, 5:4, 4:5, 3:4, 2:3, 9:16), from
#: runware.ai/docs/models/sourceful-riverflow-2-5-fast ("The following dimension combinations are supported");
#: Pro shares the family's parameter surface and adds 4K (help.scenario.com "Riverflow 2.5: The Essentials",
#: second-hand: Pro's own table UNCONFIRMED).  The 1K pairs are these halved.
SIZES_2_5 = ((2048, 2048), (2688, 1152), (2048, 1152), (2304, 1536), (2048, 1536), (1920, 1536), (1536, 1920),
             (1536, 2048), (1536, 2304), (1152, 2048))
MODEL_SIZES = {"sourceful:riverflow-2.0@pro": SIZES, "sourceful:riverflow-2.5@pro": SIZES_2_5,
               "sourceful:riverflow-2.5@fast": SIZES_2_5}
#: settings.thinkingLevel per model that takes ``settings`` (task_map.py), and its default (second-hand table
#: of Runware's schemas, UNCONFIRMED).
THINKING_LEVELS = {"sourceful:riverflow-2.5@pro": ("low", "medium", "high", "xhigh"),
                   "sourceful:riverflow-2.5@fast": ("low", "medium", "high")}
DEFAULT_THINKING = "medium"
#: The price of a 4K pair where it differs from the 1K/2K one (riverflow-2.0@pro: $0.33 against $0.15, its
#: model page); a pair of more than ``FOUR_K_PIXELS`` is a 4K one (the 2K pairs have at most 2048x2048).
FOUR_K_PRICES = {"sourceful:riverflow-2.0@pro": 0.33}
FOUR_K_PIXELS = 8_000_000
REFUSAL_MARKERS = ("nsfw", "moderat", "safety", "sensitive", "content policy", "contentpolicy", "promptblocked",
                   "imageblocked")
#: Models that take no ``seed``: runware-python's parameter types for Sourceful's models
#: (``types/task_map.py`` SourcefulRiverflow20ProParams, ...20Fast..., ...25Pro..., ...25Fast...) have none,
#: and Runware does not accept parameters it does not know (``errors.py``: unknownParameter).
NO_SEED_MODELS = ("sourceful:",)
#: runware-python errors.py ``_SAFETY_CODES``, lower-cased.
SAFETY_CODES = frozenset({"contentpolicyviolation", "providercontentpolicyviolation", "sensitivecontentdetected",
                          "unsafecontentdetected", "nsfwcontentdetected", "promptblocked", "imageblocked",
                          "moderationfailed"})
#: Error codes meaning Runware does not know the task (any more): errors.py ``_NOT_FOUND_CODES`` (a cancelled
#: task is as gone as a lost one) and the getResponse code of an unknown taskUUID.
GONE_CODES = ("taskfailedornotfound", "tasknotfound", "taskcancelled")
#: The model is switched off: errors.py files these under "provider" (retryable); here they are final.
MODEL_GONE_CODES = ("modeldisabled", "modelunavailable")
RESULT_KEPT = "Runware no longer serves the result file"


def is_refusal(code: str, message: str) -> bool:
    text = f"{code} {message}".lower()
    return code.lower() in SAFETY_CODES or any(marker in text for marker in REFUSAL_MARKERS)


class RunwareProvider(HttpProvider):
    route = "runware"
    key_env = ("RUNWARE_API_KEY",)
    provider = "runware"
    default_base = "https://api.runware.ai/v1"
    # Every call goes to the base itself (getResponse included); a journaled job is only its taskUUID, ours.
    # Result images come from Runware's image URLs (im.runware.ai in its docs' examples): without the key.
    inline_images = False  # outputType URL: JSON replies name the image's URL
    #: The taskUUID we generated (uuid4): a record that journals anything else was not written by us.
    TASK_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    # <= 10 references, 300-2048 px per side, <= 20 MB (docs/reference/providers.md section 5).
    image_limits = ImageLimits(max_count=10, max_side=2048, min_side=300, max_bytes=20 * 1024 * 1024,
                               formats=("png", "jpeg", "webp"), convert_to="jpeg")
    # runware-python's default: 1,200,000 ms per request (runware/types/sdk.py ``SDKConfig.timeout``).
    timeout = 1200.0

    def __init__(self, spec: ModelSpec, *, runtime: Runtime | None = None) -> None:
        super().__init__(spec, runtime=runtime)
        self.thinking_level = self._thinking_level()

    def _thinking_level(self) -> str | None:
        levels = THINKING_LEVELS.get(self.spec.provider_model)
        level = self.spec.options.get("thinking_level", DEFAULT_THINKING if levels else None)
        if level is not None and levels and str(level) not in levels:
            raise ConfigError(f"model {self.spec.name}: options.thinking_level {level!r} is not one of "
                              f"{', '.join(levels)} ({self.spec.provider_model})")
        return None if level is None else str(level)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def key_probe(self) -> KeyProbe:
        """Runware's account details, an account-management task (runware.ai/docs/platform/account-management):
        an account query, not an inference task, and no price is listed for it; a wrong key is answered with the
        error code ``invalidApiKey`` (runware-python ``errors.py``)."""
        task = {"taskType": "accountManagement", "taskUUID": str(uuid.uuid4()), "operation": "getDetails"}
        return self.probe("POST", self.base, self.headers, body=[task],
                          doc="https://runware.ai/docs/platform/account-management")

    @property
    def asynchronous(self) -> bool:
        return str(self.spec.options.get("delivery", "async")).lower() != "sync"

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        # resumed whatever options.delivery says now: it was paid for
        job = resumed_job(self, request, id_pattern=self.TASK_UUID)
        if job is None and not self.asynchronous:
            task = self.task(request)
            item = self.result_item(request, self.send_task(request, task, what), task["taskUUID"])
            return self.finish(request, task, item, what, JobPoller(self, request, task["taskUUID"], what))
        task = self.task(request, task_uuid=job["id"] if job else None)
        if job:  # the size it was sent with, whatever the options say now
            task["width"], task["height"] = job.get("width", task["width"]), job.get("height", task["height"])
        poller = JobPoller(self, request, task["taskUUID"], what, default_wait=900, default_poll=1.0,
                           default_cap=10.0)
        submitted = None if job else self.submit_async(request, task, what)
        item = submitted or self.wait_for_item(request, task, poller)
        return self.finish(request, task, item, what, poller)

    def finish(self, request: GenerationRequest, task: dict[str, Any], item: dict[str, Any], what: str,
               poller: JobPoller) -> Generation:
        data = poller.download(str(item.get("imageURL") or item.get("imageDataURI")), keeps=RESULT_KEPT)
        cost = item.get("cost") if isinstance(item.get("cost"), (int, float)) else None
        return self.generation(request, data, cost=cost, request_id=task["taskUUID"],
                               seed=item.get("seed", task.get("seed")), image_uuid=item.get("imageUUID"),
                               reported_cost=cost, price=self.spec.price, width=task["width"], height=task["height"],
                               delivery=task["deliveryMethod"], resumed_job=request.call.journal.resumed or None)

    def worst_case_cost(self, request: GenerationRequest) -> float:
        """The 4K price when the size chosen is a 4K pair (``options.sizes`` can list them), else the price."""
        width, height = self.size(request)
        four_k = FOUR_K_PRICES.get(self.spec.provider_model)
        if four_k is not None and width * height > FOUR_K_PIXELS:
            return max(self.spec.price, four_k)
        return self.spec.price

    def size(self, request: GenerationRequest) -> tuple[int, int]:
        listed = MODEL_SIZES.get(self.spec.provider_model, SIZES)
        sizes = [tuple(pair) for pair in self.spec.options.get("sizes") or listed]
        return nearest_size(request.task.width, request.task.height, sizes)

    def task(self, request: GenerationRequest, *, task_uuid: str | None = None) -> dict[str, Any]:
        width, height = self.size(request)
        field = str(self.spec.options.get("reference_field", "inputs.referenceImages"))
        task: dict[str, Any] = {
            "taskType": "imageInference",
            "taskUUID": task_uuid or str(uuid.uuid4()),
            "model": self.spec.provider_model,
            "positivePrompt": request.task.instruction,
            "width": width,
            "height": height,
            "numberResults": 1,
            "outputType": "URL",
            "outputFormat": str(self.spec.options.get("output_format", "PNG")).upper(),
            "deliveryMethod": "async" if self.asynchronous or task_uuid else "sync",
            "includeCost": True,
        }
        if task_uuid is None:  # a resumed job is never sent again: its references are not needed
            _set_path(task, field, [image.inline_data_url() for image in self.references(request)])
        if self.spec.options.get("send_seed", not self.spec.provider_model.startswith(NO_SEED_MODELS)):
            task["seed"] = request.seed
        if self.thinking_level is not None:
            task["settings"] = {"thinkingLevel": self.thinking_level}
        return task

    # ------------------------------------------------------------------ async: submit, then getResponse
    def submit_async(self, request: GenerationRequest, task: dict[str, Any], what: str) -> dict[str, Any] | None:
        """Journal the task, then send it; the result item when the reply already holds it."""
        request.call.journal.submitted(id=task["taskUUID"], polling_url=self.base, width=task["width"],
                                  height=task["height"], delivery="async")
        try:
            reply = self.send_task(request, task, what)
        except ProviderError as exc:
            if not exc.retryable:
                request.call.journal.forget()  # not accepted outright (validation, auth): no task was made
            raise
        items = self.items_of(reply, task["taskUUID"])
        return next((item for item in items if item.get("imageURL") or item.get("imageDataURI")), None)

    def wait_for_item(self, request: GenerationRequest, task: dict[str, Any], poller: JobPoller) -> dict[str, Any]:
        while True:
            items = poller.read(lambda: self.get_response(request, task["taskUUID"], poller))
            for item in items:
                if item.get("status") == "error":
                    raise self.item_error(request, item, poller)
                if item.get("imageURL") or item.get("imageDataURI"):
                    return item
            poller.wait(str(items[0].get("status")) if items else "processing")

    def get_response(self, request: GenerationRequest, task_uuid: str, poller: JobPoller) -> list[dict[str, Any]]:
        response = self.call("POST", self.base, json=[{"taskType": "getResponse", "taskUUID": task_uuid}],
                             headers=self.headers, request=request)
        for error in self.errors_of(response):
            code, message = str(error.get("code", "")), str(error.get("message", ""))
            if code.lower() in MODEL_GONE_CODES:
                raise self.gone(f"{code}: {message[:300]}", status=response.status_code)
            if code.lower() in GONE_CODES:
                raise poller.expired(f"getResponse answered {code}: {message[:200]}", status=response.status_code)
            if is_refusal(code, message):
                raise self.refusal(request, f"{code}: {message[:300]}", request_id=task_uuid)
            if not is_retryable(response):
                raise poller.fail(f"getResponse answered {code}: {message[:300]}", retryable=False)
        self.check(response)
        return self.items_of(self.json_of(response, poller.what), task_uuid)

    def item_error(self, request: GenerationRequest, item: dict[str, Any], poller: JobPoller) -> Exception:
        error = found if isinstance(found := item.get("error"), dict) else {}
        code, message = str(error.get("code", "")), str(error.get("message", ""))
        if code.lower() in MODEL_GONE_CODES:
            request.call.journal.forget()  # the task ended without an image: nothing to resume
            return self.gone(f"{code}: {message[:300]}")
        if code.lower() in GONE_CODES:
            return poller.expired(f"the task ended with {code}: {message[:200]}")
        if is_refusal(code, message):
            return self.refusal(request, f"{code}: {message[:300]}", request_id=poller.job_id)
        return poller.fail(f"the task ended with an error: {code}: {message[:300]}")

    @staticmethod
    def items_of(reply: Any, task_uuid: str) -> list[dict[str, Any]]:
        items = reply.get("data") if isinstance(reply, dict) else None
        return [i for i in (items if isinstance(items, list) else []) if isinstance(i, dict) and i.get("taskUUID", task_uuid) == task_uuid
                and i.get("taskType", "imageInference") in ("imageInference", "getResponse")]

    # ------------------------------------------------------------------ one request
    def send_task(self, request: GenerationRequest, task: dict[str, Any], what: str) -> Any:
        response = self.call("POST", self.base, json=[task], headers=self.headers, submits=True, request=request)
        errors = self.errors_of(response)
        gone = [e for e in errors if str(e.get("code", "")).lower() in MODEL_GONE_CODES]
        if gone:
            raise self.gone(f"{gone[0].get('code')}: {str(gone[0].get('message', ''))[:300]}",
                            status=response.status_code)
        refused = [e for e in errors if is_refusal(str(e.get("code", "")), str(e.get("message", "")))]
        if refused:
            raise self.refusal(request, f"{refused[0].get('code')}: {str(refused[0].get('message', ''))[:300]}",
                               request_id=task["taskUUID"])
        self.check(response)
        return self.json_of(response, what)

    @staticmethod
    def errors_of(response: httpx.Response) -> list[dict[str, Any]]:
        if response.is_success and "errors" not in response.text[:20000]:
            return []
        try:
            body = response.json()
        except ValueError:
            return []
        errors = body.get("errors") or body.get("error") if isinstance(body, dict) else None
        errors = [errors] if isinstance(errors, dict) else errors
        return [e for e in (errors if isinstance(errors, list) else []) if isinstance(e, dict)]

    def result_item(self, request: GenerationRequest, reply: Any, task_uuid: str) -> dict[str, Any]:
        items = [i for i in self.items_of(reply, task_uuid) if i.get("imageURL") or i.get("imageDataURI")]
        if not items:
            raise self.refusal(request, "the reply holds no image", request_id=task_uuid)
        return items[0]


def _set_path(target: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for name in parents:
        target = target.setdefault(name, {})
    target[last] = value
