"""Fake Replicate predictions API (providers.md section 7)."""

from __future__ import annotations

import itertools
import threading

from .base import FakeServer, Reply, Seen
from .files import FileStore

_ids = itertools.count(1)


class FakeReplicate(FakeServer):
    env = "HYPEEDIT_REPLICATE_BASE_URL"
    key_env = "REPLICATE_API_TOKEN"

    def __init__(self, key: str = "r8_fake_token_0123456789", starting_polls: int = 0):
        super().__init__(key)
        self.starting_polls = starting_polls  # > 0: the create call answers "starting", then polls
        self.files = FileStore(self, "/delivery")
        self.predictions: dict[str, dict] = {}
        self._plock = threading.Lock()
        self.route("POST", r"/v1/models/(?P<owner>[^/]+)/(?P<name>[^/]+)/predictions", self.create)
        self.route("GET", r"/v1/predictions/(?P<id>[^/]+)", self.get)

    @property
    def base(self) -> str:
        return self.url + "/v1"

    def authorized(self, seen: Seen) -> bool:
        return seen.path.startswith("/delivery") or seen.headers.get("authorization") == f"Bearer {self.key}"

    def unauthorized(self) -> Reply:
        return Reply(401, {"title": "Unauthenticated", "detail": "You did not pass a valid authentication token",
                           "status": 401})

    def create(self, seen: Seen) -> Reply:
        body = seen.json()
        data = body.get("input") or {}
        if not (data.get("prompt") or data.get("instruction")):
            return Reply(422, {"detail": "- input: prompt is required", "status": 422})
        pid = f"rep{next(_ids):06d}"
        refuse = bool(self.take_fault("refusal", ""))
        image = self.files.new_image(64, 48)
        prediction = {"id": pid, "model": f"{seen.match['owner']}/{seen.match['name']}", "version": "v1",
                      "input": data, "status": "starting", "output": None, "error": None,
                      "urls": {"get": f"{self.url}/v1/predictions/{pid}", "cancel": f"{self.url}/v1/predictions/{pid}/cancel"},
                      "_polls": 0, "_refuse": refuse, "_image": image}
        with self._plock:
            self.predictions[pid] = prediction
        if self.starting_polls == 0:
            self._settle(prediction)
        return Reply(201, _public(prediction))

    def get(self, seen: Seen) -> Reply:
        prediction = self.predictions.get(seen.match["id"])
        if prediction is None:
            return Reply(404, {"detail": "Not found."})
        prediction["_polls"] += 1
        if prediction["_polls"] >= self.starting_polls:
            self._settle(prediction)
        else:
            prediction["status"] = "processing"
        return Reply(200, _public(prediction))

    def _settle(self, prediction: dict) -> None:
        if prediction["_refuse"]:
            prediction.update(status="failed", error="The input or output was flagged as sensitive (E005).")
        else:
            prediction.update(status="succeeded", output=[self.files.put(prediction["_image"])],
                              metrics={"predict_time": 1.2})


def _public(prediction: dict) -> dict:
    return {k: v for k, v in prediction.items() if not k.startswith("_")}
