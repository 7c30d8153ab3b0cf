"""Fake OpenAI Files + Batch APIs on top of the images fake (docs/reference/providers.md sections 11.1-11.3), as openai-python
3.57 speaks them (``resources/files.py``, ``resources/batches.py``, ``types/batch.py``, ``file_object.py``).

- ``POST /v1/files`` (multipart ``file`` + ``purpose``): a ``FileObject``; a ``batch`` file must be ``.jsonl``
  ("Invalid file format for Batch API. Must be .jsonl", as OpenAI answers, quoted in BerriAI/litellm#37527).
- ``GET /v1/files/{id}/content``: the bytes; an unknown id answers 404.
- ``POST /v1/batches``: a ``Batch`` in ``validating``; ``GET /v1/batches`` lists (``data``, ``has_more``);
  ``GET /v1/batches/{id}``: each poll moves the batch one state on: validating -> in_progress -> finalizing ->
  completed, unless held (``hold``) or told to end otherwise (``end_as``: "expired", "cancelled", "failed").
- A file that fails validation (a line not POST to the batch's endpoint, a duplicate ``custom_id``, two models,
  an unknown file id) makes the batch ``failed`` with ``errors.data[]`` (``batch_error.py``).
- Each line is answered as the images fake answers the synchronous edit: an output line with ``status_code``
  200 and the ``ImagesResponse``, or an error-file line with the 4xx body (``refusal`` fault: 400
  moderation_blocked).  An expired or cancelled batch runs only its first ``partial`` lines; the rest are
  error-file lines with ``response: null`` and ``error.code`` ``batch_expired`` / ``batch_cancelled`` [T3].
- Hostile options (the proxy of the attacks on the batch tier): ``image_bytes`` makes each line's PNG about that
  big (noise: it does not compress); ``rewrite_results(kind, lines) -> lines`` rewrites the JSON text of an output
  or error file's lines before they are written (a raw U+2028, a line cut short, a custom_id twice);
  ``create_reply`` answers a create that made its batch with that body instead of the Batch (an unreadable 2xx);
  ``page_size`` lists that many batches a page, the newest first, paged by ``after`` (``list_pages`` counts the
  pages served); ``add_batches(n)`` makes n batches of another input file, newer than those made so far.
- Billing: each output line at half the fake's own token prices (``BATCH_PRICES``, USD per 1M tokens: the prices
  OpenAI lists for gpt-image-2, docs/reference/providers.md section 10), summed in ``billed``; nothing else is billed.
"""

from __future__ import annotations

import base64
import functools
import io
import itertools
import json
import random
import threading
import time
import urllib.parse
from typing import Callable, Iterator

from PIL import Image

from .base import Reply, Seen, make_image
from .openai import MODELS, FakeOpenAI, _validate, usage

#: USD per 1M tokens (text in, image in, image out) on the standard tier; the batch tier bills half.
STANDARD_PRICES = {"gpt-image-2": (5.0, 8.0, 30.0)}
FLOW = ["validating", "in_progress", "finalizing", "completed"]


class FakeOpenAIBatch(FakeOpenAI):
    def __init__(self, key: str = "sk-fake-openai-0123456789"):
        super().__init__(key)
        self.files: dict[str, dict] = {}  # id -> {"purpose", "filename", "data"}
        self.batches: dict[str, dict] = {}
        self.hold = False  # batches stay in_progress
        self.end_as: str | None = None  # "expired" | "cancelled" | "failed": how batches end instead
        self.end_first: int | None = None  # only the first N batches end as ``end_as`` (None: all of them)
        self.partial = 0  # lines an expired or cancelled batch ran
        self.ready_after = 0.0  # seconds a batch takes at least, from its creation to completed (the bench)
        self.completed_at: list[float] = []
        self.billed = 0.0
        self.polls = 0
        self.polls_of: dict[str, int] = {}  # batch id -> its polls
        self.events: list[tuple[str, str]] = []  # ("created" | "completed", batch id), in the order they happened
        self.image_bytes = 0
        self.rewrite_results: Callable[[str, list[str]], list[str]] | None = None
        self.create_reply: bytes | None = None
        self.page_size = 100
        self.list_pages = 0
        self._ids = itertools.count(1)
        self._state_lock = threading.Lock()
        self.route("POST", "/v1/files", self.upload)
        self.route("GET", r"/v1/files/(?P<id>[^/]+)/content", self.content)
        self.route("POST", "/v1/batches", self.create)
        self.route("GET", "/v1/batches", self.list)
        self.route("GET", r"/v1/batches/(?P<id>[^/]+)", self.retrieve)

    # ---------------------------------------------------------------- what tests count
    def uploads(self, purpose: str) -> list[dict]:
        return [f for f in self.files.values() if f["purpose"] == purpose]

    @property
    def creations(self) -> int:
        return len(self.batches)

    # ---------------------------------------------------------------- files
    def upload(self, seen: Seen) -> Reply:
        parts = seen.form()
        fields = {name: content.decode() for name, filename, content in parts if filename is None}
        files = [(filename, content) for name, filename, content in parts if name == "file" and filename]
        purpose = fields.get("purpose")
        if not files or purpose not in ("assistants", "batch", "fine-tune", "vision", "user_data", "evals"):
            return Reply(400, _error("file and a valid purpose are required", "invalid_request_error"))
        filename, data = files[0]
        if purpose == "batch" and not filename.endswith(".jsonl"):
            return Reply(400, _error("Invalid file format for Batch API. Must be .jsonl", "invalid_request_error"))
        file_id = self._new_id(self.files, "file-")
        self.files[file_id] = {"purpose": purpose, "filename": filename, "data": data}
        return Reply(200, {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                           "filename": filename, "purpose": purpose, "status": "processed"})

    def content(self, seen: Seen) -> Reply:
        entry = self.files.get(seen.match["id"])
        if entry is None:
            return Reply(404, _error("No such File object", "invalid_request_error"))
        if PLACEHOLDER in entry["data"]:
            return Reply(200, headers={"content-type": "application/octet-stream"}, chunks=self._expanded(entry["data"]))
        return Reply(200, entry["data"], {"content-type": "application/octet-stream"})

    def _expanded(self, data: bytes) -> Iterator[bytes]:
        image = base64.b64encode(noise_png(self.image_bytes))
        for line in data.splitlines(keepends=True):
            yield line.replace(PLACEHOLDER, image)

    def file_size(self, data: bytes) -> int:
        """A file's size as ``content`` serves it (without building it)."""
        grown = len(base64.b64encode(noise_png(self.image_bytes))) - len(PLACEHOLDER) if self.image_bytes else 0
        return len(data) + data.count(PLACEHOLDER) * grown

    def file_bytes(self, data: bytes) -> bytes:
        """A file's bytes as ``content`` serves them."""
        return b"".join(self._expanded(data)) if PLACEHOLDER in data else data

    # ---------------------------------------------------------------- batches
    def create(self, seen: Seen) -> Reply:
        body = seen.json()
        if body.get("endpoint") != "/v1/images/edits" or body.get("completion_window") != "24h" \
                or body.get("input_file_id") not in self.files:
            return Reply(400, _error("invalid batch", "invalid_request_error"))
        batch_id = self._new_id(self.batches, "batch_")
        self.batches[batch_id] = {"id": batch_id, "object": "batch", "endpoint": body["endpoint"],
                                  "input_file_id": body["input_file_id"], "completion_window": "24h",
                                  "status": "validating", "output_file_id": None, "error_file_id": None,
                                  "errors": None, "created_at": int(time.time()), "metadata": body.get("metadata"),
                                  "request_counts": {"total": 0, "completed": 0, "failed": 0},
                                  "created": time.monotonic()}
        self.events.append(("created", batch_id))
        if self.create_reply is not None:
            return Reply(200, self.create_reply, {"content-type": "application/json"})
        return Reply(200, {k: v for k, v in self.batches[batch_id].items() if k != "created"})

    def add_batches(self, count: int, ago: float = -1.0) -> None:
        """``count`` batches of another input file, created ``ago`` seconds ago (by default a second from now: newer
        than the others), already completed."""
        for _ in range(count):
            batch_id = self._new_id(self.batches, "batch_")
            self.batches[batch_id] = {"id": batch_id, "object": "batch", "endpoint": "/v1/images/edits",
                                      "input_file_id": "file-elsewhere", "status": "completed", "errors": None,
                                      "created_at": int(time.time() - ago), "output_file_id": None,
                                      "error_file_id": None, "request_counts": {"total": 0, "completed": 0,
                                                                                "failed": 0},
                                      "created": time.monotonic(), "filler": True}

    @property
    def made(self) -> list[dict]:
        """The batches the plugin made (not ``add_batches``'s)."""
        return [b for b in self.batches.values() if not b.get("filler")]

    def list(self, seen: Seen) -> Reply:
        newest = sorted(self.batches.values(), key=lambda b: (b["created_at"], b["id"]), reverse=True)
        query = dict(urllib.parse.parse_qsl(seen.query))
        after = query.get("after")
        if after:
            ids = [b["id"] for b in newest]
            newest = newest[ids.index(after) + 1:] if after in ids else []
        limit = min(int(query.get("limit") or 20), self.page_size)
        self.list_pages += 1
        page = [{k: v for k, v in b.items() if k not in ("created", "filler")} for b in newest[:limit]]
        return Reply(200, {"object": "list", "data": page, "has_more": len(newest) > limit})

    def retrieve(self, seen: Seen) -> Reply:
        with self._state_lock:
            batch = self.batches.get(seen.match["id"])
            if batch is None:
                return Reply(404, _error("No batch found", "invalid_request_error"))
            self.polls += 1
            self.polls_of[batch["id"]] = self.polls_of.get(batch["id"], 0) + 1
            self._advance(batch)
            return Reply(200, dict(batch))

    def _ends_as(self, batch: dict) -> str | None:
        number = sorted(self.batches).index(batch["id"]) + 1
        return self.end_as if self.end_first is None or number <= self.end_first else None

    def _advance(self, batch: dict) -> None:
        state, end_as = batch["status"], self._ends_as(batch)
        if state in ("completed", "failed", "expired", "cancelled"):
            return
        if state == "validating":
            problem = self._invalid(batch)
            if problem or end_as == "failed":
                batch["status"] = "failed"
                batch["errors"] = {"object": "list", "data": [{"code": "invalid_request", "line": 1,
                                                               "message": problem or "failed", "param": None}]}
                return
        if self.hold and state == "in_progress":
            return
        if state == "finalizing" and time.monotonic() < batch["created"] + self.ready_after:
            return
        if end_as in ("expired", "cancelled") and state == "in_progress":
            self._run(batch, limit=self.partial, rest=f"batch_{end_as}")
            batch["status"] = end_as
            return
        batch["status"] = FLOW[FLOW.index(state) + 1]
        if batch["status"] == "completed":
            self._run(batch)
            self.completed_at.append(time.monotonic())
            self.events.append(("completed", batch["id"]))

    def _lines(self, batch: dict) -> list[dict]:
        return [json.loads(text) for text in self.files[batch["input_file_id"]]["data"].splitlines() if text.strip()]

    def _invalid(self, batch: dict) -> str | None:
        lines, keys, models = self._lines(batch), set(), set()
        for number, line in enumerate(lines, 1):
            body = line.get("body") or {}
            if line.get("method") != "POST" or line.get("url") != batch["endpoint"]:
                return f"line {number}: url_mismatch"
            if line.get("custom_id") in keys:
                return f"line {number}: duplicate_custom_id"
            keys.add(line.get("custom_id"))
            models.add(body.get("model"))
            for image in body.get("images") or []:
                if set(image) != {"file_id"} or image["file_id"] not in self.files:
                    return f"line {number}: images must name uploaded files"
        return "model_mismatch" if len(models) > 1 else None

    def _run(self, batch: dict, limit: int | None = None, rest: str | None = None) -> None:
        output, errors = [], []
        for index, line in enumerate(self._lines(batch)):
            if limit is not None and index >= limit:
                errors.append({"id": f"batch_req_{index}", "custom_id": line["custom_id"], "response": None,
                               "error": {"code": rest, "message": "This request could not be executed before the "
                                                                  "completion window expired."}})
                continue
            status, body = self._answer(line["body"])
            entry = {"id": f"batch_req_{index}", "custom_id": line["custom_id"],
                     "response": {"status_code": status, "request_id": f"req_b{index}", "body": body}, "error": None}
            (output if status == 200 else errors).append(entry)
        counts = batch["request_counts"]
        counts.update(total=len(output) + len(errors), completed=len(output), failed=len(errors))
        for field, lines in (("output_file_id", output), ("error_file_id", errors)):
            if lines:
                file_id = self._new_id(self.files, "file-")
                texts = [json.dumps(entry) for entry in reversed(lines)]  # any order [T3]
                if self.rewrite_results is not None:
                    texts = self.rewrite_results(field, texts)
                data = b"".join(text.encode() + b"\n" for text in texts)
                self.files[file_id] = {"purpose": "batch_output", "filename": f"{field}.jsonl", "data": data}
                batch[field] = file_id

    def _answer(self, body: dict) -> tuple[int, dict]:
        """A line as the synchronous edit answers it (the images fake's rules)."""
        images = [self.files[ref["file_id"]]["data"] for ref in body.get("images") or []]
        fields = {k: str(v) for k, v in body.items() if k != "images"}
        if fields.get("model") not in MODELS:
            return 404, _error(f"The model `{fields.get('model')}` does not exist", "invalid_request_error",
                               "model_not_found")
        problem = _validate(fields, images)
        if problem:
            return 400, _error(problem, "invalid_request_error")
        if self.take_fault("refusal", "/v1/images/edits"):
            return 400, _error("Your request was rejected by the safety system. safety_violations=[sexual].",
                               "image_generation_user_error", "moderation_blocked")
        size = fields.get("size", "auto")
        width, height = (int(x) for x in size.split("x")) if size != "auto" else (1024, 1024)
        spent = usage(fields, len(images), width * height)
        self.billed += self.batch_price(fields["model"], spent)
        # a noise image is the same for every line: each line holds a placeholder, and the file is written out
        # line by line as it is read (``content``), so a bench's 500 2K lines never sit in the fake's memory
        b64 = PLACEHOLDER.decode() if self.image_bytes else base64.b64encode(make_image(width // 16, height // 16)).decode()
        return 200, {"created": 1, "data": [{"b64_json": b64}],
                     "quality": fields.get("quality"), "size": size,
                     "output_format": "png", "usage": spent}

    @staticmethod
    def batch_price(model: str, spent: dict) -> float:
        text_in, image_in, image_out = STANDARD_PRICES.get(model, (5.0, 8.0, 30.0))
        details = spent["input_tokens_details"]
        usd = (details["text_tokens"] * text_in + details["image_tokens"] * image_in
               + spent["output_tokens"] * image_out) / 1e6
        return usd / 2

    def _new_id(self, table: dict, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}x"  # next() of a count is atomic


#: What a line holds in place of its image's base64 until it is served (``image_bytes``).
PLACEHOLDER = b"@IMAGE@"


@functools.lru_cache(maxsize=4)
def noise_png(size: int) -> bytes:
    """A PNG of about ``size`` bytes: random pixels do not compress."""
    side = max(1, int((size / 3) ** 0.5))
    return make_png(Image.frombytes("RGB", (side, side), random.Random(size).randbytes(side * side * 3)))


def make_png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=0)
    return buffer.getvalue()


def _error(message: str, kind: str, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
