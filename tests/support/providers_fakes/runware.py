"""Fake Runware task API (docs/reference/providers.md section 5): a JSON array of tasks in, ``data``/``errors`` out.

``imageInference`` with ``deliveryMethod: "sync"`` answers with the image; with ``"async"`` it answers an
acknowledgment and the task is read with ``getResponse`` (runware.ai/docs platform/task-polling; Runware's REST
SDK, runware-python ``client.py``): items with ``status`` processing | success | error, the error item carrying
``error: {code, message}``; an unknown taskUUID is the error code ``taskFailedOrNotFound``.

Parameters: as Runware validates a task against its model's schema with ``additionalProperties: false``
(runware-python ``validate.py``, tests/test_validate.py), a parameter the model's params do not list
(runware-python ``types/task_map.py``: the Sourceful models have no ``seed``) is not accepted, with
``unknownParameter``, naming it in ``parameter``; ``resolution`` with ``width``/``height`` is
``incompatibleParameters`` (the model pages: "resolution cannot be used with width/height"); a
``settings.thinkingLevel`` outside the model's levels is ``invalidParameter``.

Sizes: only the pairs runware.ai/docs/models/sourceful-riverflow-2-0-pro lists for ``sourceful:riverflow-2.0@pro``
are accepted; any other pair is not accepted, with ``invalidParameter`` (as the page says: "The following dimension
combinations are supported").  Riverflow 2.5: the table of runware.ai/docs/models/sourceful-riverflow-2-5-fast.

``model_errors`` maps a model id to the error code its tasks get (``modelDisabled``, ``modelUnavailable``).

Faults (``inject``): generic ones match ``/v1#imageInference`` or ``/v1#getResponse``; taken at the inference
task: ``refusal`` (contentModerated, or the code in ``body``, e.g. ``unsafeContentDetected``), ``failed`` (the
task ends with an error item), ``truncated``; taken at a getResponse: ``lost`` (Runware no longer knows the
task), ``cancelled`` (the task answers ``taskCancelled``); at the download: ``expired`` (403).
``ledger`` counts inference tasks per candidate (positivePrompt, seed); a Sourceful task carries no seed, so
there a candidate is its taskUUID and a test compares the number of tasks with the number of candidates.
"""

from __future__ import annotations

import base64
import io
import re
import threading

from PIL import Image

from .base import FakeServer, Reply, Seen
from .chaos import JobLedger
from .files import FileStore

_1K = ((1024, 1024), (1152, 864), (864, 1152), (1280, 720), (720, 1280), (1248, 832), (832, 1248), (1120, 896),
       (896, 1120), (1512, 648))
RIVERFLOW_PRO_SIZES = {*_1K, *((2 * w, 2 * h) for w, h in _1K),
                       (4096, 4096), (4608, 3456), (3456, 4608), (5120, 2880), (2880, 5120), (4992, 3328),
                       (3328, 4992), (4480, 3584), (3584, 4480), (6048, 2592)}
_2_5_1K = ((1024, 1024), (1344, 576), (1024, 576), (1152, 768), (1024, 768), (960, 768), (768, 960), (768, 1024),
          (768, 1152), (576, 1024))
RIVERFLOW_25_SIZES = {*_2_5_1K, *((2 * w, 2 * h) for w, h in _2_5_1K)}
SIZES_BY_MODEL = {"sourceful:riverflow-2.0@pro": RIVERFLOW_PRO_SIZES, "sourceful:riverflow-2.5@pro": RIVERFLOW_25_SIZES}
#: The parameters each model's params list (runware-python types/task_map.py, SourcefulRiverflow20ProParams and
#: SourcefulRiverflow25ProParams): anything else is an unknownParameter.
_COMMON = {"model", "inputs", "positivePrompt", "width", "height", "resolution", "taskType", "taskUUID", "webhookURL",
           "includeCost", "numberResults", "uploadEndpoint", "ttl", "outputType", "outputFormat", "outputQuality",
           "deliveryMethod", "safety"}
PARAMS_BY_MODEL = {"sourceful:riverflow-2.0@pro": _COMMON, "sourceful:riverflow-2.5@pro": _COMMON | {"settings"}}
THINKING_BY_MODEL = {"sourceful:riverflow-2.5@pro": {"low", "medium", "high", "xhigh"}}


class FakeRunware(FakeServer):
    env = "HYPEEDIT_RUNWARE_BASE_URL"
    key_env = "RUNWARE_API_KEY"

    def __init__(self, key: str = "runware-fake-key-0123456789", cost: float = 0.15, processing_polls: int = 1):
        super().__init__(key)
        self.cost, self.processing_polls = cost, processing_polls
        self.files = FileStore(self, "/image")
        self.ledger = JobLedger()
        self.files.on_expired = self.ledger.expire
        self.jobs: dict[str, dict] = {}
        self.model_errors: dict[str, str] = {}  # model id -> the error code its tasks get (modelDisabled, ...)
        self._jobs_lock = threading.Lock()
        self.route("POST", "/v1", self.tasks)

    @property
    def base(self) -> str:
        return self.url + "/v1"

    def fault_path(self, seen: Seen) -> str:
        if seen.path != "/v1":
            return seen.path
        try:
            return f"/v1#{seen.json()[0]['taskType']}"
        except (ValueError, LookupError, TypeError):
            return seen.path

    def is_key_check(self, seen: Seen) -> bool:
        return self.fault_path(seen) == "/v1#accountManagement"

    def authorized(self, seen: Seen) -> bool:
        return seen.path.startswith("/image") or seen.headers.get("authorization") == f"Bearer {self.key}"

    def unauthorized(self) -> Reply:
        return Reply(401, {"errors": [{"code": "invalidApiKey", "message": "Invalid API key."}]})

    def inference_tasks(self) -> list[dict]:
        """Every imageInference task received, in order."""
        return [seen.json()[0] for seen in self.seen("#imageInference$")]

    def tasks(self, seen: Seen) -> Reply:
        tasks = seen.json()
        if not isinstance(tasks, list) or not tasks:
            return Reply(400, {"errors": [{"code": "invalidPayload", "message": "a JSON array of tasks"}]})
        task = tasks[0]
        if task.get("taskType") == "accountManagement":  # runware.ai/docs/platform/account-management
            return Reply(200, {"data": [{"taskType": "accountManagement", "taskUUID": task.get("taskUUID"),
                                         "organizationUUID": "org-fake", "balance": 100.0}]})
        if task.get("taskType") == "getResponse":
            return self.get_response(task, self.fault_path(seen))
        if task.get("model") in self.model_errors:
            code = self.model_errors[task["model"]]
            return Reply(400, {"errors": [{"code": code, "message": f"The model {task['model']} is not available.",
                                           "parameter": "model", "taskType": "imageInference",
                                           "taskUUID": task.get("taskUUID")}]})
        invalid = _validate(task)
        problem = _validate_parameters(task) or (("invalidParameter", None, invalid) if invalid else None)
        if problem:
            code, parameter, message = problem
            return Reply(400, {"errors": [{"code": code, "message": message, "parameter": parameter,
                                           "taskType": "imageInference", "taskUUID": task.get("taskUUID")}]})
        candidate = (task["positivePrompt"], task.get("seed", task["taskUUID"]))
        self.ledger.submit(candidate)
        path = self.fault_path(seen)
        refuse, failed = self.take_fault("refusal", path), self.take_fault("failed", path)
        if failed:
            self.ledger.fail(candidate)
        data = self.files.new_image(task["width"] // 16, task["height"] // 16, path=path)
        job = {"task": task, "candidate": candidate, "polls": 0, "data": data,
               "refuse": (refuse.body or "contentModerated") if refuse else None, "failed": bool(failed)}
        if task.get("deliveryMethod") == "async":
            with self._jobs_lock:
                self.jobs[task["taskUUID"]] = job
            return Reply(200, {"data": []})  # the acknowledgment (runware-python tests/test_rest_polling.py)
        if refuse:
            return Reply(400, {"errors": [self._moderated(task["taskUUID"], job["refuse"])]})
        if failed:
            return Reply(500, {"errors": [{"code": "inferenceError", "taskUUID": task["taskUUID"],
                                           "message": "The provider failed to generate the image."}]})
        return Reply(200, {"data": [self._success(job)]})

    def get_response(self, request: dict, path: str) -> Reply:
        task_uuid = request.get("taskUUID")
        with self._jobs_lock:
            job = self.jobs.get(task_uuid)
            if job is not None and self.take_fault("lost", path):
                del self.jobs[task_uuid]
                self.ledger.expire(job["candidate"])
                job = None
        if job is None:
            return Reply(400, {"errors": [{"code": "taskFailedOrNotFound", "taskUUID": task_uuid,
                                           "message": "The task failed or was not found."}]})
        if self.take_fault("cancelled", path):
            self.ledger.expire(job["candidate"])
            return Reply(400, {"errors": [{"code": "taskCancelled", "taskUUID": task_uuid,
                                           "message": "The task was cancelled."}]})
        job["polls"] += 1
        base = {"taskType": "imageInference", "taskUUID": task_uuid}
        if job["polls"] <= self.processing_polls:
            return Reply(200, {"data": [{**base, "status": "processing"}]})
        if job["refuse"]:
            error = self._moderated(task_uuid, job["refuse"])
            return Reply(200, {"data": [{**base, "status": "error", "error": error}]})
        if job["failed"]:
            return Reply(200, {"data": [{**base, "status": "error", "error": {
                "code": "inferenceError", "message": "The provider failed to generate the image."}}]})
        return Reply(200, {"data": [{**self._success(job), "status": "success"}]})

    def _success(self, job: dict) -> dict:
        task = job["task"]
        return {"taskType": "imageInference", "taskUUID": task["taskUUID"], "imageUUID": f"img-{task['taskUUID'][:8]}",
                "imageURL": self.files.put(job["data"], owner=job["candidate"]), "seed": task.get("seed"),
                "cost": self.cost}

    @staticmethod
    def _moderated(task_uuid: str, code: str = "contentModerated") -> dict:
        # Only the code says what happened: a message without moderation words checks that the code is read.
        message = "The request was flagged by NSFW content moderation." if code == "contentModerated" else \
            "The request could not be completed."
        return {"code": code, "message": message, "taskUUID": task_uuid}


def _validate_parameters(task: dict) -> tuple[str, str, str] | None:
    """(code, parameter, message) for a task its model's schema does not accept (additionalProperties: false)."""
    allowed = PARAMS_BY_MODEL.get(task.get("model"))
    if allowed is None:
        return None
    unknown = sorted(set(task) - allowed)
    if unknown:
        return "unknownParameter", unknown[0], f"Unknown parameter '{unknown[0]}' for model {task['model']}."
    if "resolution" in task and ("width" in task or "height" in task):
        return "incompatibleParameters", "resolution", "resolution cannot be used with width/height."
    settings = task.get("settings", {})
    levels = THINKING_BY_MODEL.get(task["model"], set())
    if not isinstance(settings, dict) or set(settings) - {"thinkingLevel"} or (
            "thinkingLevel" in settings and settings["thinkingLevel"] not in levels):
        return "invalidParameter", "settings", f"Invalid settings {settings!r} for model {task['model']}."
    return None


def _validate(task: dict) -> str | None:
    if task.get("taskType") != "imageInference" or len(task.get("positivePrompt", "")) < 2:
        return "taskType imageInference and positivePrompt (>= 2 chars) are required"
    if not re.fullmatch(r"[\w-]{36}", task.get("taskUUID", "")):
        return "taskUUID must be a UUID"
    sizes = SIZES_BY_MODEL.get(task.get("model"))
    if sizes and (task.get("width"), task.get("height")) not in sizes:
        return f"unsupported dimensions {task.get('width')}x{task.get('height')} for model {task.get('model')}"
    if task.get("deliveryMethod", "sync") not in ("sync", "async"):
        return "deliveryMethod must be sync or async"
    refs = (task.get("inputs") or {}).get("referenceImages") or []
    if not refs or len(refs) > 10:
        return "1-10 reference images"
    for ref in refs:
        image = Image.open(io.BytesIO(base64.b64decode(ref.split(",", 1)[1])))
        image.load()
        if not (300 <= min(image.size) and max(image.size) <= 2048):
            return "reference images must be 300-2048 px per side"
    return None
