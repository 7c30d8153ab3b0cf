"""Fake BFL API: submit ``/v1/<model>``, poll ``/v1/get_result?id=`` (docs/reference/providers.md section 4).

Statuses as docs.bfl.ml/api_integration/errors.md lists them: ``Pending``, ``Ready``, ``Request Moderated``,
``Content Moderated``, ``Task not found``, ``Error``; plus ``Failed`` (BFL's polling examples stop on it).

``flux-3-image`` (docs/reference/providers.md section 10, Comfy Router's copy of its schema): a strict schema of ``prompt``,
``images`` (1-10 base64 images of at least 256x256), ``aspect_ratio``, ``resolution``, ``grounding``,
``safety_tolerance`` (0-4), ``version`` (and the webhook fields): any other field (``seed``, ``width``,
``output_format``, ``input_image``...) is a 422 ``extra_forbidden``, as is a value outside its list.  Its
tasks pass through the interim statuses ``FLUX3_INTERIM`` (names UNCONFIRMED) before Ready.

Faults (``inject``): the generic ones on the submit path (``/v1/flux``) or the poll path (``get_result``);
taken at submit, deciding the task's fate: ``refusal`` (Content Moderated, or ``body="Request Moderated"``),
``failed`` (ends ``Failed``, or ``body="Error"``), ``truncated`` (the result image);
taken at a poll: ``lost`` (BFL forgets the task: ``Task not found`` from then on);
taken at the download: ``expired`` (the signed URL answers 403).
``ledger`` counts submissions per candidate (prompt, seed); ``charged`` lists the credits each accepted
submission cost.  ``credits`` is a fixed price, or a function of the submitted body (``bfl_credits``: BFL's
FLUX.2 [max] formula, every image billed as whole megapixels, the inputs included).
"""

from __future__ import annotations

import base64
import io
import itertools
import math
import threading
import urllib.parse

from PIL import Image

from .base import FakeServer, Reply, Seen
from .chaos import JobLedger
from .files import FileStore

_ids = itertools.count(1)
FLUX3_FIELDS = {"prompt", "images", "aspect_ratio", "resolution", "grounding", "safety_tolerance", "version",
                "webhook_url", "webhook_secret"}
FLUX3_RATIOS = {"auto", "21:9", "2:1", "16:9", "3:2", "7:5", "4:3", "5:4", "1:1", "4:5", "3:4", "5:7", "2:3", "9:16",
                "1:2", "9:21"}
FLUX3_CREDITS = {"768sq": 4.1, "1k": 4.8, "1.5k": 7.0, "2k": 10.0, "4k": 60.7}
FLUX3_INTERIM = ("Queued", "Processing")


class FakeBfl(FakeServer):
    env = "HYPEEDIT_BFL_BASE_URL"
    key_env = "BFL_API_KEY"

    def __init__(self, key: str = "bfl-fake-key-0123456789", pending_polls: int = 2, credits=10.0):
        super().__init__(key)
        self.pending_polls, self.credits = pending_polls, credits
        self.charged: list[float] = []
        self.files = FileStore(self, "/delivery")
        self.ledger = JobLedger()
        self.files.on_expired = self.ledger.expire
        self.tasks: dict[str, dict] = {}
        self._task_lock = threading.Lock()
        self.route("POST", r"/v1/(?P<model>flux-[a-z0-9.\-]+)", self.submit)
        self.route("GET", "/v1/get_result", self.result)
        # the key's credits (docs.bfl.ai/api-reference/get-the-users-credits: CreditsResponse)
        self.key_check_route("GET", "/v1/credits", lambda seen: Reply(200, {"credits": 1000.0}))

    @property
    def base(self) -> str:
        return self.url

    def authorized(self, seen: Seen) -> bool:
        return seen.path.startswith("/delivery") or seen.headers.get("x-key") == self.key

    def unauthorized(self) -> Reply:
        return Reply(401, {"detail": "Not authenticated - Invalid Authentication"})

    def forget_all(self) -> None:
        """What ten minutes do to BFL's results: every task known so far answers 'Task not found'."""
        with self._task_lock:
            for task in self.tasks.values():
                self.ledger.expire(task["candidate"])
            self.tasks.clear()

    def submit(self, seen: Seen) -> Reply:
        body = seen.json()
        flux3 = seen.match["model"].startswith("flux-3")
        problem = _validate_flux3(body) if flux3 else (_extra_fields(body, FLUX2_FIELDS) or _validate(body))
        if problem:
            detail = problem if isinstance(problem, list) else \
                [{"loc": ["body"], "msg": problem, "type": "value_error"}]
            return Reply(422, {"detail": detail})
        task_id = f"bfl-task-{next(_ids)}"
        candidate = (body["prompt"], body.get("seed", task_id if flux3 else None))
        self.ledger.submit(candidate)
        width, height = (64, 48) if flux3 else (body["width"] // 16, body["height"] // 16)
        task = {"polls": 0, "outcome": "Ready", "candidate": candidate, "seed": body.get("seed"), "flux3": flux3,
                "data": self.files.new_image(width, height, "JPEG", self.fault_path(seen))}
        for kind, default in (("refusal", "Content Moderated"), ("failed", "Failed")):
            fault = self.take_fault(kind, self.fault_path(seen))
            if fault is not None:
                task["outcome"] = fault.body or default
                if kind == "failed":
                    self.ledger.fail(candidate)
                break
        credits = FLUX3_CREDITS[body.get("resolution", "1k")] if flux3 else \
            self.credits(body) if callable(self.credits) else self.credits
        with self._task_lock:
            self.tasks[task_id] = task
            self.charged.append(credits)
        return Reply(200, {"id": task_id, "polling_url": f"{self.url}/v1/get_result?id={task_id}",
                           "cost": credits, "input_mp": 1.0, "output_mp": 1.0})

    def result(self, seen: Seen) -> Reply:
        task_id = urllib.parse.parse_qs(seen.query).get("id", [""])[0]
        with self._task_lock:
            task = self.tasks.get(task_id)
            if task is not None and self.take_fault("lost", seen.path):
                del self.tasks[task_id]
                self.ledger.expire(task["candidate"])
                task = None
            if task is None:
                return Reply(200, {"id": task_id, "status": "Task not found", "result": None})
            task["polls"] += 1
            polls = task["polls"]
        if polls <= self.pending_polls:
            return Reply(200, {"id": task_id, "status": "Pending", "result": None, "progress": 0.5})
        if task["flux3"] and polls <= self.pending_polls + len(FLUX3_INTERIM):
            status = FLUX3_INTERIM[polls - self.pending_polls - 1]
            return Reply(200, {"id": task_id, "status": status, "result": None, "progress": 0.7})
        if task["outcome"] != "Ready":
            details = {"Moderation Reasons": ["Derivative Works Filter"]} if "Moderated" in task["outcome"] else \
                "the generation failed"
            return Reply(200, {"id": task_id, "status": task["outcome"], "result": None, "details": details})
        url = self.files.put(task["data"], "jpg", owner=task["candidate"])
        return Reply(200, {"id": task_id, "status": "Ready",
                           "result": {"sample": url, "prompt": "...", "seed": task["seed"]}})


def bfl_credits(body: dict, first: float = 7.0, extra: float = 3.0) -> float:
    """FLUX.2 [max]'s price of a submission: 7 credits for the first megapixel, 3 for each further one, the
    input images counted (docs/reference/providers.md section 4), each image rounded up to whole megapixels of 1024x1024."""
    def megapixels(width: int, height: int) -> int:
        return max(1, math.ceil(width * height / (1024 * 1024)))

    images = [Image.open(io.BytesIO(base64.b64decode(body[k]))) for k in body if k.startswith("input_image")]
    total = megapixels(body["width"], body["height"]) + sum(megapixels(*image.size) for image in images)
    return first + extra * (total - 1)


#: The body fields of POST /v1/flux-2-max and their JSON types (BFL's API reference, the schema vendored in
#: tests/sdk_diff/schemas/bfl.json with its source [F1]); null is taken where that schema takes it.
FLUX2_FIELDS: dict[str, tuple[type, ...]] = {
    "prompt": (str,), **{f"input_image{suffix}": (str,) for suffix in ("", "_2", "_3", "_4", "_5", "_6", "_7", "_8")},
    "seed": (int,), "width": (int,), "height": (int,), "safety_tolerance": (int,), "output_format": (str,),
    "webhook_url": (str,), "webhook_secret": (str,)}
NOT_NULL = ("prompt", "safety_tolerance")


def _extra_fields(body: dict, fields: dict[str, tuple[type, ...]]) -> list | None:
    """FastAPI/pydantic's 422 details for fields the schema does not list (extra_forbidden) or of the wrong
    type (a null where the schema takes none, a bool for an integer), as BFL answers a body it does not accept [F4]."""
    details = []
    for name, value in body.items() if isinstance(body, dict) else ():
        kinds = fields.get(name)
        if kinds is None:
            details.append({"type": "extra_forbidden", "loc": ["body", name], "msg": "Extra inputs are not permitted"})
        elif (value is None and name in NOT_NULL) or (value is not None and (
                not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds))):
            details.append({"type": f"{kinds[0].__name__}_type", "loc": ["body", name],
                            "msg": f"Input should be a valid {kinds[0].__name__}"})
    if isinstance(body, dict) and body.get("output_format") not in (None, "jpeg", "png"):
        details.append({"type": "enum", "loc": ["body", "output_format"], "msg": "Input should be 'jpeg' or 'png'"})
    return details or None


def _validate(body: dict) -> str | None:
    if not body.get("prompt"):
        return "prompt is required"
    width, height = body.get("width", 1024), body.get("height", 1024)
    if width % 16 or height % 16 or width < 64 or height < 64 or width * height > 4_194_304:
        return f"width/height must be multiples of 16, >= 64, <= 4 MP, got {width}x{height}"
    keys = [k for k in body if k.startswith("input_image")]
    if not keys or len(keys) > 8:
        return "1-8 input images"
    for key in keys:
        Image.open(io.BytesIO(base64.b64decode(body[key]))).load()
    return None



def _validate_flux3(body: dict) -> list | str | None:
    extra = sorted(set(body) - FLUX3_FIELDS)
    if extra:  # the strict schema's answer (FastAPI/pydantic's extra_forbidden)
        return [{"type": "extra_forbidden", "loc": ["body", name], "msg": "Extra inputs are not permitted",
                 "input": body[name] if not isinstance(body[name], str) else body[name][:40]} for name in extra]
    if not body.get("prompt"):
        return "prompt is required"
    if body.get("aspect_ratio", "auto") not in FLUX3_RATIOS or body.get("resolution", "1k") not in FLUX3_CREDITS:
        return f"aspect_ratio {body.get('aspect_ratio')!r} or resolution {body.get('resolution')!r} is not allowed"
    if not 0 <= body.get("safety_tolerance", 2) <= 4 or not isinstance(body.get("grounding", True), bool):
        return "safety_tolerance is 0-4 and grounding a boolean"
    images = body.get("images") or []
    if not 1 <= len(images) <= 10:
        return "1-10 images"
    for data in images:
        with Image.open(io.BytesIO(base64.b64decode(data))) as image:
            image.load()
            if min(image.size) < 256:
                return f"each image must be at least 256x256, got {image.size}"
    return None
