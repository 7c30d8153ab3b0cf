"""Fake Runware task API (providers.md section 5): a JSON array of tasks in, ``data``/``errors`` out.

``imageInference`` with ``deliveryMethod: "sync"`` answers with the image; with ``"async"`` it answers an
acknowledgment and the task is read with ``getResponse`` (runware.ai/docs platform/task-polling; Runware's REST
SDK, runware-python ``client.py``): items with ``status`` processing | success | error, the error item carrying
``error: {code, message}``; an unknown taskUUID is the error code ``taskFailedOrNotFound``.

Sizes: only the pairs runware.ai/docs/models/sourceful-riverflow-2-0-pro lists for ``sourceful:riverflow-2.0@pro``
are accepted; any other pair is refused with ``invalidParameter`` (as the page says: "The following dimension
combinations are supported").

Faults (``inject``): generic ones match ``/v1#imageInference`` or ``/v1#getResponse``; taken at the inference
task: ``refusal`` (contentModerated), ``failed`` (the task ends with an error item), ``truncated``; taken at a
getResponse: ``lost`` (Runware no longer knows the task); at the download: ``expired`` (403).
``ledger`` counts inference tasks per candidate (positivePrompt, seed).
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
SIZES_BY_MODEL = {"sourceful:riverflow-2.0@pro": RIVERFLOW_PRO_SIZES}


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
        if task.get("taskType") == "getResponse":
            return self.get_response(task, self.fault_path(seen))
        problem = _validate(task)
        if problem:
            return Reply(400, {"errors": [{"code": "invalidParameter", "message": problem,
                                           "taskUUID": task.get("taskUUID")}]})
        candidate = (task["positivePrompt"], task.get("seed"))
        self.ledger.submit(candidate)
        path = self.fault_path(seen)
        refuse, failed = self.take_fault("refusal", path), self.take_fault("failed", path)
        if failed:
            self.ledger.fail(candidate)
        data = self.files.new_image(task["width"] // 16, task["height"] // 16, path=path)
        job = {"task": task, "candidate": candidate, "polls": 0, "data": data, "refuse": bool(refuse),
               "failed": bool(failed)}
        if task.get("deliveryMethod") == "async":
            with self._jobs_lock:
                self.jobs[task["taskUUID"]] = job
            return Reply(200, {"data": []})  # the acknowledgment (runware-python tests/test_rest_polling.py)
        if refuse:
            return Reply(400, {"errors": [self._moderated(task["taskUUID"])]})
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
        job["polls"] += 1
        base = {"taskType": "imageInference", "taskUUID": task_uuid}
        if job["polls"] <= self.processing_polls:
            return Reply(200, {"data": [{**base, "status": "processing"}]})
        if job["refuse"]:
            return Reply(200, {"data": [{**base, "status": "error", "error": self._moderated(task_uuid)}]})
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
    def _moderated(task_uuid: str) -> dict:
        return {"code": "contentModerated", "message": "The request was flagged by NSFW content moderation.",
                "taskUUID": task_uuid}


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
