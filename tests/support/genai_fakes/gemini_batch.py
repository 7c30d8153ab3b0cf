"""A fake of Gemini's Batch mode and Files API (docs/reference/providers.md sections 11.4 and 11.5), as google-genai 3.6 speaks
them (``batches.py`` ``_CreateBatchJobParameters_to_mldev``, ``_BatchJob_from_mldev``; ``files.py``,
``_api_client.py`` ``_upload_fd``; ``_extra_utils.py`` ``prepare_resumable_upload``):

- ``POST /upload/v1beta/files`` (``X-Goog-Upload-Command: start``) answers the upload URL in
  ``x-goog-upload-url``; ``POST`` of the bytes there (``upload, finalize``) answers ``x-goog-upload-status:
  final`` and ``{"file": File}`` with its ``uri``;
- ``POST /v1beta/models/{model}:batchGenerateContent`` takes ``batch.inputConfig.requests.requests[]`` (camelCase
  or snake_case), each ``{"request": {contents, generationConfig}, "metadata": {"key"}}``, whose image parts must
  be ``fileData`` of uploaded files; it answers ``{"name": "batches/…", "metadata": {"state":
  "BATCH_STATE_PENDING", …}}``;
- ``GET /v1beta/batches/{id}``: each poll moves the batch on: PENDING -> RUNNING -> SUCCEEDED, unless held
  (``hold``) or told to end otherwise (``end_as``: EXPIRED, CANCELLED, FAILED; an expired job has no results
  [T6]); on success ``metadata.output.inlinedResponses.inlinedResponses[]`` holds each request's
  ``{"response" | "error", "metadata"}`` in the input's order;
- ``GET /v1beta/batches`` lists them (``operations``);
- an input file instead (``inputConfig.fileName``, a JSONL of ``{"key", "request"}`` lines) answers in a generated
  file (``output.responsesFile``, ``{"key", "response"}`` lines, in any order), fetched with
  ``GET /v1beta/files/{id}:download?alt=media`` (google-genai ``files.download``).

Hostile options (the proxy of the attacks on the batch tier): ``image_bytes`` makes each response's PNG about that
big; ``responses_file`` names the responses file so instead of its real name (a path, an URL); ``rewrite_results
(texts) -> texts`` rewrites a responses file's JSON lines; ``create_reply`` answers a create that made its batch
with that body; ``fail`` answers that many lines with an error (``{"code": 13, "message": …}``), not billed;
``drop`` leaves that many billed lines out of a succeeded batch's results; ``same_key`` gives the second line the
first one's key.

Billing: each response at half the image's standard price (``IMAGE_PRICE``, the fake's own table: $0.134 a 1K
or 2K gemini-3-pro-image, docs/reference/providers.md section 1), summed in ``billed``; refused lines (``refuse``) cost 0 (the
sync path's rule) and lines of an expired job nothing.
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
import time
import urllib.parse
from typing import Callable, Iterator

from providers_fakes.openai_batch import noise_png

from .gemini import FakeGemini, block_reply, error_reply, image_reply
from .server import Reply, SeenRequest, snake_keys

#: What an answer holds in place of its image's base64 until it is written out (``image_bytes``): valid base64.
MARKER = b"HYPEEDITIMAGEMARKER0"
IMAGE_PRICE = {"gemini-3-pro-image": 0.134, "gemini-3.1-flash-lite-image": 0.06}
FLOW = ["BATCH_STATE_PENDING", "BATCH_STATE_RUNNING", "BATCH_STATE_SUCCEEDED"]


class FakeGeminiBatch(FakeGemini):
    def __init__(self, expected_key: str | None = None) -> None:
        super().__init__(expected_key)
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.hold = False
        self.end_as: str | None = None
        self.refuse = 0  # lines answered with a blocked prompt
        self.ready_after = 0.0  # seconds a batch takes at least, from its creation to succeeded (the bench)
        self.completed_at: list[float] = []
        self.billed = 0.0
        self.polls = 0
        self.image_bytes = 0
        self.responses_file: str | None = None
        self.rewrite_results: Callable[[list[str]], list[str]] | None = None
        self.create_reply: bytes | None = None
        self.fail = self.drop = 0
        self.same_key = False
        self._ids = itertools.count(1)
        self._uploads: dict[str, dict] = {}  # upload id -> the started file
        self._lock = threading.Lock()

    @property
    def creations(self) -> int:
        return len(self.batches)

    def handle(self, request: SeenRequest) -> Reply:
        path, _, query = request.path.partition("?")
        if path == "/upload/v1beta/files" and "upload_id" not in query:
            return self._start_upload(request)
        if path == "/upload/v1beta/files":
            return self._finish_upload(request, urllib.parse.parse_qs(query)["upload_id"][0])
        if not request.headers.get("x-goog-api-key"):
            return error_reply(403, "Method doesn't allow unregistered callers.", "PERMISSION_DENIED")
        if path.endswith(":batchGenerateContent") and request.method == "POST":
            return self._create(request, path.split("/models/")[1].split(":")[0])
        if path.startswith("/v1beta/files/") and path.endswith(":download") and request.method == "GET":
            entry = self.files.get(path.removeprefix("/v1beta/").removesuffix(":download"))
            if entry is None or "alt=media" not in query:
                return error_reply(404, "file not found", "NOT_FOUND")
            if MARKER in entry["data"]:
                return Reply(200, headers={"content-type": "application/octet-stream"},
                             chunks=self._expand(entry["data"]))
            return Reply(200, entry["data"], {"content-type": "application/octet-stream"})
        if path == "/v1beta/batches" and request.method == "GET":
            return Reply(200, {"operations": [self._view(b) for b in self.batches.values()]})
        if path.startswith("/v1beta/batches/") and request.method == "GET":
            return self._get(path.removeprefix("/v1beta/"))
        return super().handle(request)

    # ---------------------------------------------------------------- files
    def _start_upload(self, request: SeenRequest) -> Reply:
        if request.headers.get("x-goog-upload-command") != "start" or not request.headers.get("x-goog-api-key"):
            return error_reply(400, "bad upload start", "INVALID_ARGUMENT")
        upload_id = f"u{next(self._ids)}"
        meta = snake_keys(request.json or {}).get("file") or {}
        self._uploads[upload_id] = {"mime_type": request.headers.get("x-goog-upload-header-content-type")
                                    or meta.get("mime_type"), "display_name": meta.get("display_name")}
        return Reply(200, {}, {"x-goog-upload-url": f"{self.url}/upload/v1beta/files?upload_id={upload_id}"})

    def _finish_upload(self, request: SeenRequest, upload_id: str) -> Reply:
        started = self._uploads.pop(upload_id, None)
        if started is None or "finalize" not in (request.headers.get("x-goog-upload-command") or ""):
            return error_reply(400, "bad upload", "INVALID_ARGUMENT")
        name = f"files/f{next(self._ids):06d}"
        uri = f"{self.url}/v1beta/{name}"
        self.files[name] = {"data": request.raw, "mime_type": started["mime_type"], "uri": uri}
        file = {"name": name, "mimeType": started["mime_type"], "sizeBytes": str(len(request.raw)), "uri": uri,
                "state": "ACTIVE", "source": "UPLOADED", "displayName": started["display_name"]}
        return Reply(200, {"file": file}, {"x-goog-upload-status": "final"})

    def uploads(self, mime: str | None = None) -> int:
        """Files uploaded (of that mime type); generated output files are not uploads."""
        return sum(1 for f in self.files.values() if not f.get("generated") and mime in (None, f["mime_type"]))

    # ---------------------------------------------------------------- batches
    def _create(self, request: SeenRequest, model: str) -> Reply:
        body = snake_keys(request.json or {})
        batch = body.get("batch") or {}
        source = batch.get("input_config") or {}
        requests = (source.get("requests") or {}).get("requests")
        if source.get("file_name"):  # a JSONL input file: {"key", "request"} a line [T6]
            entry = self.files.get(source["file_name"])
            if entry is None:
                return error_reply(400, f"{source['file_name']} not found", "INVALID_ARGUMENT")
            lines = [snake_keys(json.loads(text)) for text in entry["data"].splitlines() if text.strip()]
            requests = [{"request": line.get("request"), "metadata": {"key": line.get("key")}} for line in lines]
        if not isinstance(requests, list) or not requests:
            return error_reply(400, "* BatchGenerateContentRequest.batch.input_config: requests missing",
                               "INVALID_ARGUMENT")
        for item in requests:
            problem = self._check(item)
            if problem:
                return error_reply(400, problem, "INVALID_ARGUMENT")
        name = f"batches/b{next(self._ids):06d}"
        self.batches[name] = {"name": name, "model": f"models/{model}", "display_name": batch.get("display_name"),
                              "state": FLOW[0], "requests": requests, "output": None,
                              "from_file": bool(source.get("file_name")),
                              "created": time.monotonic()}
        if self.create_reply is not None:
            return Reply(200, self.create_reply, {"content-type": "application/json"})
        return Reply(200, self._view(self.batches[name]))

    def _check(self, item: dict) -> str | None:
        contents = (item.get("request") or {}).get("contents") or []
        parts = [part for content in contents for part in content.get("parts") or []]
        if not any("text" in part for part in parts):
            return "* GenerateContentRequest.contents: no text"
        for part in parts:
            if "inline_data" in part:
                return "the fake wants references as uploaded files (fileData)"
            uri = (part.get("file_data") or {}).get("file_uri")
            if "file_data" in part and not any(f["uri"] == uri for f in self.files.values()):
                return f"* fileData.fileUri {uri!r}: no such file"
        if not isinstance((item.get("metadata") or {}).get("key"), str):
            return "the fake wants metadata.key on every request"
        return None

    def _get(self, name: str) -> Reply:
        with self._lock:
            batch = self.batches.get(name)
            if batch is None:
                return error_reply(404, f"{name} not found", "NOT_FOUND")
            self.polls += 1
            self._advance(batch)
            view = json.dumps(self._view(batch)).encode()
            return Reply(200, b"".join(self._expand(view)) if MARKER in view else view)

    def _advance(self, batch: dict) -> None:
        state = batch["state"]
        if state not in FLOW[:2] or (self.hold and state == FLOW[1]):
            return
        if state == FLOW[1] and self.end_as:
            batch["state"] = f"BATCH_STATE_{self.end_as}"
            return
        if state == FLOW[1] and time.monotonic() < batch["created"] + self.ready_after:
            return
        batch["state"] = FLOW[FLOW.index(state) + 1]
        if batch["state"] == FLOW[2]:
            self.completed_at.append(time.monotonic())
            answers = [self._answer(batch, item) for item in batch["requests"]]
            if self.same_key and len(answers) > 1:
                answers[1] = {**answers[1], "metadata": answers[0]["metadata"]}
            answers = answers[self.drop:]  # billed, and left out
            if not batch["from_file"]:
                batch["output"] = {"inlinedResponses": {"inlinedResponses": answers}}
                return
            name = f"files/out{next(self._ids):06d}"  # a generated file: each line {"key", "response"} [T6]
            texts = [json.dumps({"key": a["metadata"]["key"], **{k: a[k] for k in ("response", "error") if k in a}})
                     for a in reversed(answers)]
            if self.rewrite_results is not None:
                texts = self.rewrite_results(texts)
            data = "".join(text + "\n" for text in texts)
            self.files[name] = {"data": data.encode(), "mime_type": "application/jsonl", "uri": "", "generated": True}
            batch["output"] = {"responsesFile": self.responses_file or name}

    def _answer(self, batch: dict, item: dict) -> dict:
        if self.fail > 0:
            self.fail -= 1
            return {"error": {"code": 13, "message": "internal error at line"}, "metadata": item.get("metadata")}
        if self.refuse > 0:
            self.refuse -= 1
            return {"response": block_reply("SAFETY").body, "metadata": item.get("metadata")}
        model = batch["model"].removeprefix("models/")
        self.billed += IMAGE_PRICE.get(model, 0.134) / 2
        # a noise image is the same for every line: each answer holds a marker, replaced by the image's base64 as
        # the reply or the file is written out (``_expand``), so a bench's 500 2K lines never sit in memory here
        image = base64.b64decode(MARKER) if self.image_bytes else None
        return {"response": image_reply(image).body, "metadata": item.get("metadata")}

    def file_bytes(self, data: bytes) -> bytes:
        """A file's bytes as the download serves them."""
        return b"".join(self._expand(data)) if MARKER in data else data

    def _expand(self, data: bytes) -> Iterator[bytes]:
        image = base64.b64encode(noise_png(self.image_bytes))
        for line in data.splitlines(keepends=True):
            yield line.replace(MARKER, image)

    @staticmethod
    def _view(batch: dict) -> dict:
        metadata = {"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                    "model": batch["model"], "displayName": batch["display_name"], "state": batch["state"],
                    "createTime": "2026-11-26T00:00:00Z"}
        if batch["output"] is not None:
            metadata["output"] = batch["output"]
        done = batch["state"] not in FLOW[:2]
        return {"name": batch["name"], "metadata": metadata, "done": done}

