"""Fake Runware task API (providers.md section 5): a JSON array of tasks in, ``data``/``errors`` out."""

from __future__ import annotations

import base64
import io
import re

from PIL import Image

from .base import FakeServer, Reply, Seen
from .files import FileStore


class FakeRunware(FakeServer):
    env = "HYPEEDIT_RUNWARE_BASE_URL"
    key_env = "RUNWARE_API_KEY"

    def __init__(self, key: str = "runware-fake-key-0123456789", cost: float = 0.15):
        super().__init__(key)
        self.cost = cost
        self.files = FileStore(self, "/image")
        self.route("POST", "/v1", self.tasks)

    @property
    def base(self) -> str:
        return self.url + "/v1"

    def authorized(self, seen: Seen) -> bool:
        return seen.path.startswith("/image") or seen.headers.get("authorization") == f"Bearer {self.key}"

    def unauthorized(self) -> Reply:
        return Reply(401, {"errors": [{"code": "invalidApiKey", "message": "Invalid API key."}]})

    def tasks(self, seen: Seen) -> Reply:
        tasks = seen.json()
        if not isinstance(tasks, list) or not tasks:
            return Reply(400, {"errors": [{"code": "invalidPayload", "message": "a JSON array of tasks"}]})
        task = tasks[0]
        problem = _validate(task)
        if problem:
            return Reply(400, {"errors": [{"code": "invalidParameter", "message": problem,
                                           "taskUUID": task.get("taskUUID")}]})
        if self.take_fault("refusal", seen.path):
            return Reply(400, {"errors": [{"code": "contentModerated", "message": "The request was flagged by "
                                           "NSFW content moderation.", "taskUUID": task["taskUUID"]}]})
        data = self.files.new_image(task["width"] // 16, task["height"] // 16)
        return Reply(200, {"data": [{"taskType": "imageInference", "taskUUID": task["taskUUID"],
                                     "imageUUID": "img-1", "imageURL": self.files.put(data),
                                     "seed": task.get("seed"), "cost": self.cost}]})


def _validate(task: dict) -> str | None:
    if task.get("taskType") != "imageInference" or len(task.get("positivePrompt", "")) < 2:
        return "taskType imageInference and positivePrompt (>= 2 chars) are required"
    if not re.fullmatch(r"[\w-]{36}", task.get("taskUUID", "")):
        return "taskUUID must be a UUID"
    refs = (task.get("inputs") or {}).get("referenceImages") or []
    if not refs or len(refs) > 10:
        return "1-10 reference images"
    for ref in refs:
        image = Image.open(io.BytesIO(base64.b64decode(ref.split(",", 1)[1])))
        image.load()
        if not (300 <= min(image.size) and max(image.size) <= 2048):
            return "reference images must be 300-2048 px per side"
    return None
