"""Fake Replicate API (docs/reference/providers.md section 7): predictions and the files API.

Predictions: created ``starting`` (with ``Prefer: wait`` and ``processing_polls == 0`` they settle at once),
``processing`` for ``processing_polls`` gets, then settled; ``data_removed`` and ``output: null`` once the
output is deleted (replicate-python-beta ``resources/predictions.py``).  Files: ``POST /v1/files`` multipart
``content`` answers 201 with ``urls.get`` (replicate-python ``replicate/file.py`` and its cassette
``file-operations.yaml``); such URLs are accepted as file inputs.

Inputs: ``aspect_ratio`` must be in the model's list (Seedream 4.5's, from its schema: docs/reference/providers.md section 7).
A data URI of 1 MB or more is recorded in ``oversized_data_uris`` and not accepted (413): Replicate only says a
data URI "is only recommended if the file is less than 1MB" (docs/topics/predictions/input-files), so the
refusal's shape is this fake's own; a test reads ``oversized_data_uris``.

Faults (``inject``): the generic ones on the create path (``/predictions$``), the get path
(``/v1/predictions/``) or ``/v1/files``; taken at create: ``refusal`` (fails as sensitive content), ``failed``
(fails, or ``body="canceled"``), ``truncated``; taken at a get: ``lost`` (404), ``removed`` (the output was
deleted); at the download: ``expired`` (403).  ``ledger`` counts creates per candidate (the prompt or
instruction, and ``seed`` when sent).
"""

from __future__ import annotations

import itertools
import threading

from .base import FakeServer, Reply, Seen
from .chaos import JobLedger
from .files import FileStore

_ids = itertools.count(1)
ASPECT_RATIOS = {
    "bytedance/seedream-4.5": {"match_input_image", "1:1", "4:3", "3:4", "16:9", "9:16", "3:2", "2:3", "21:9"},
}
DATA_URI_LIMIT = 1_000_000
#: The input fields of the models' published schemas and their JSON types (replicate.com model API pages:
#: bytedance/seedream-4.5 [B16], sourceful/riverflow-2.0-* [R3]); a field outside, a wrong type or a null is a 422
#: whose ``detail`` lists the invalid input, as Replicate answers input that fails the model's schema [A6] (the
#: exact wording of Replicate's message is this fake's own).  A model not listed here takes any field.
INPUTS: dict[str, dict[str, tuple[type, ...]]] = {
    "bytedance/seedream-4.5": {"prompt": (str,), "image_input": (list,), "size": (str,), "aspect_ratio": (str,),
                               "width": (int,), "height": (int,), "sequential_image_generation": (str,),
                               "max_images": (int,), "seed": (int,)},
    "sourceful/riverflow-2.0": {"instruction": (str,), "init_images": (list,), "super_resolution_refs": (list,),
                                "resolution": (str,), "aspect_ratio": (str,), "font_urls": (list,),
                                "font_texts": (list,), "transparency": (bool,), "enhance_prompt": (bool,),
                                "max_iterations": (int,), "safety_checker": (bool,)},
}


def input_problem(model: str, data: dict) -> str | None:
    """The first input field the model's schema does not accept, if any."""
    fields = next((fields for prefix, fields in INPUTS.items() if model.startswith(prefix)), None)
    for name, value in data.items() if fields is not None else ():
        if name not in fields:
            return f"- input: Additional property {name} is not allowed"
        kinds = fields[name]
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            return f"- input.{name}: Invalid type. Expected: {kinds[0].__name__}, given: {type(value).__name__}"
    return None


class FakeReplicate(FakeServer):
    env = "HYPEEDIT_REPLICATE_BASE_URL"
    key_env = "REPLICATE_API_TOKEN"

    def __init__(self, key: str = "r8_fake_token_0123456789", processing_polls: int = 1):
        super().__init__(key)
        self.processing_polls = processing_polls
        self.files = FileStore(self, "/delivery")
        self.ledger = JobLedger()
        self.files.on_expired = self.ledger.expire
        self.uploads: dict[str, tuple[str, bytes]] = {}  # file id -> (content type, content)
        self.oversized_data_uris: list[int] = []  # lengths of data URIs of 1 MB or more that were sent
        self.predictions: dict[str, dict] = {}
        self._plock = threading.Lock()
        self.route("POST", r"/v1/models/(?P<owner>[^/]+)/(?P<name>[^/]+)/predictions", self.create)
        self.route("GET", r"/v1/predictions/(?P<id>[^/]+)", self.get)
        self.route("POST", r"/v1/files", self.upload)
        self.route("GET", r"/v1/files/(?P<id>[^/]+)", self.download_upload)
        # the token's account (replicate.com/docs/reference/http#account.get)
        self.key_check_route("GET", "/v1/account", lambda seen: Reply(200, {
            "type": "user", "username": "fake", "name": "Fake User", "github_url": None}))

    @property
    def base(self) -> str:
        return self.url + "/v1"

    def authorized(self, seen: Seen) -> bool:
        return seen.path.startswith("/delivery") or seen.headers.get("authorization") == f"Bearer {self.key}"

    def unauthorized(self) -> Reply:
        return Reply(401, {"title": "Unauthenticated", "detail": "You did not pass a valid authentication token",
                           "status": 401})

    # ------------------------------------------------------------------ files
    def upload(self, seen: Seen) -> Reply:
        parts = {name: (filename, content) for name, filename, content in seen.form()}
        if "content" not in parts:
            return Reply(422, {"detail": "- content: file is required", "status": 422})
        filename, content = parts["content"]
        file_id = f"file{next(_ids):06d}"
        self.uploads[file_id] = ("application/octet-stream", content)
        return Reply(201, {"id": file_id, "name": filename, "content_type": "application/octet-stream",
                           "size": len(content), "etag": "x", "checksums": {}, "metadata": {},
                           "created_at": "2026-01-01T00:00:00Z", "expires_at": "2026-01-02T00:00:00Z",
                           "urls": {"get": f"{self.url}/v1/files/{file_id}"}})

    def download_upload(self, seen: Seen) -> Reply:
        found = self.uploads.get(seen.match["id"])
        return Reply(200, found[1], {"content-type": found[0]}) if found else Reply(404, {"detail": "Not found."})

    # ------------------------------------------------------------------ predictions
    def create(self, seen: Seen) -> Reply:
        model = f"{seen.match['owner']}/{seen.match['name']}"
        data = seen.json().get("input") or {}
        problem = self._problem(model, data)
        if problem:
            return problem
        pid = f"rep{next(_ids):06d}"
        candidate = (data.get("prompt") or data.get("instruction"), data.get("seed"))
        self.ledger.submit(candidate)
        failed = self.take_fault("failed", seen.path)
        if failed is not None:
            self.ledger.fail(candidate)
        prediction = {"id": pid, "model": model, "version": "v1", "input": data, "status": "starting",
                      "output": None, "error": None, "data_removed": False,
                      "urls": {"get": f"{self.url}/v1/predictions/{pid}", "cancel": f"{self.url}/v1/predictions/{pid}/cancel"},
                      "_polls": 0, "_refuse": bool(self.take_fault("refusal", seen.path)),
                      "_failed": (failed.body or "failed") if failed else None, "_candidate": candidate,
                      "_image": self.files.new_image(64, 48, path=seen.path), "_prefer": seen.headers.get("prefer")}
        with self._plock:
            self.predictions[pid] = prediction
        if prediction["_prefer"] and self.processing_polls == 0:
            self._settle(prediction)
        return Reply(201, _public(prediction))

    def _problem(self, model: str, data: dict) -> Reply | None:
        if not (data.get("prompt") or data.get("instruction")):
            return Reply(422, {"detail": "- input: prompt is required", "status": 422})
        problem = input_problem(model, data)
        if problem:
            return Reply(422, {"title": "Input validation failed", "detail": problem, "status": 422})
        allowed = ASPECT_RATIOS.get(model)
        if allowed and data.get("aspect_ratio") not in allowed:
            return Reply(422, {"detail": f"- input.aspect_ratio: must be one of {sorted(allowed)}", "status": 422})
        for value in [*(data.get("image_input") or []), *(data.get("init_images") or [])]:
            if value.startswith("data:") and len(value) >= DATA_URI_LIMIT:
                self.oversized_data_uris.append(len(value))
                return Reply(413, {"detail": "request too large: upload files of 1 MB or more with the files API",
                                   "status": 413})
            if not value.startswith("data:") and value.rsplit("/", 1)[-1] not in self.uploads:
                return Reply(422, {"detail": f"- input: cannot fetch {value}", "status": 422})
        return None

    def get(self, seen: Seen) -> Reply:
        with self._plock:
            prediction = self.predictions.get(seen.match["id"])
            if prediction is not None and self.take_fault("lost", seen.path):
                del self.predictions[seen.match["id"]]
                self.ledger.expire(prediction["_candidate"])
                prediction = None
        if prediction is None:
            return Reply(404, {"detail": "Not found.", "status": 404})
        prediction["_polls"] += 1
        if prediction["status"] in ("starting", "processing"):
            if prediction["_polls"] > self.processing_polls:
                self._settle(prediction)
            else:
                prediction["status"] = "processing"
        if prediction["status"] == "succeeded" and self.take_fault("removed", seen.path):
            prediction.update(output=None, data_removed=True)
            self.ledger.expire(prediction["_candidate"])
        return Reply(200, _public(prediction))

    def _settle(self, prediction: dict) -> None:
        if prediction["_refuse"]:
            prediction.update(status="failed", error="The input or output was flagged as sensitive (E005).")
        elif prediction["_failed"] == "canceled":
            prediction.update(status="canceled")
        elif prediction["_failed"]:
            prediction.update(status="failed", error="CUDA out of memory")
        else:
            prediction.update(status="succeeded", metrics={"predict_time": 1.2},
                              output=[self.files.put(prediction["_image"], owner=prediction["_candidate"])])


def _public(prediction: dict) -> dict:
    return {k: v for k, v in prediction.items() if not k.startswith("_")}
