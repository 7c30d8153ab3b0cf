"""``openai`` on the batch tier (``--tier batch``): gpt-image edits through the Files and Batch APIs at half price.

Wire format (providers.md sections 11.1-11.3; openai-python 3.57 ``resources/{files,batches}.py``,
``types/{batch,batch_create_params,file_object,file_create_params,file_purpose}.py`` [T1]):

- each reference is uploaded once per process (``POST /files``, multipart ``file`` + ``purpose``) and named by
  ``{"file_id": …}`` in every line that uses it (an ``ImageRefParam``, openai-python ``api_reference``
  ``openapi.transformed.yml`` [T2]); purpose ``vision``, the purpose the docs name for image inputs (for edits
  UNCONFIRMED, providers.md 11.1);
- the input file is JSONL, one ``{"custom_id", "method": "POST", "url": "/v1/images/edits", "body"}`` a line,
  the body the JSON edit body ``EditImageBodyJsonParam`` [T2]; uploaded with ``purpose=batch`` as ``.jsonl``
  (``resources/files.py``: "batch" files are .jsonl up to 200 MB), at most 50,000 lines and 200 MB a file
  (the Batch guide [T3]): the collector splits at those limits;
- ``POST /batches {"input_file_id", "endpoint": "/v1/images/edits", "completion_window": "24h"}``
  (``batch_create_params.py``: "24h" is the only window) answers a ``Batch``; ``GET /batches/{id}`` is polled;
  ``status`` (``batch.py``): validating, in_progress, finalizing, completed, failed, expired, cancelling,
  cancelled; ``output_file_id`` / ``error_file_id`` are read with ``GET /files/{id}/content``;
- result lines are mapped by ``custom_id``, never by position ("the output line order may not match the input
  line order" [T3]).

Billing (the Batch guide [T3] and FAQ, providers.md 11.3): "You will be charged for tokens consumed from any
completed requests"; unfinished requests of an expired or cancelled batch are cancelled and written to the error
file as ``batch_expired`` / ``batch_cancelled``.  So a line with an output (HTTP 200) was billed; an expired,
cancelled or never-run line (a batch that failed validation) was not, and is bought again; a line the endpoint
refused (an error-file line with a 4xx ``response``) ends as the sync path's refusal or error would.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from ..errors import JobExpired, ProviderError
from .adapter import decode_base64
from .base import Generation, GenerationRequest
from .batch_uploads import Uploads, uploads_folder
from .batching import Collector, Line, Outcome, Status

if TYPE_CHECKING:  # pragma: no cover
    from .openai import OpenAIProvider

ENDPOINT = "/v1/images/edits"
#: "each input file ... up to 50,000 requests, and ... up to 200 MB in size" (Batch guide [T3]); a little under.
MAX_REQUESTS, MAX_BYTES = 50_000, 190 * 1024 * 1024
#: ``Batch.status`` values that end a batch (``batch.py``), and those that mean it is being worked on.
ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
RUNNING = frozenset({"in_progress", "finalizing", "cancelling"})
#: An error-file line's top-level ``error.code`` for a request that never ran (providers.md 11.3 [T3][T4]).
NOT_RUN = frozenset({"batch_expired", "batch_cancelled"})
#: Ids as OpenAI writes them ("file-…", "batch_…"); a journaled id read back from a record must look so.
FILE_ID, BATCH_ID = re.compile(r"file-[A-Za-z0-9_-]{1,200}"), re.compile(r"batch_[A-Za-z0-9_-]{1,200}")


class OpenAIBatch:
    """The ``Backend`` of one OpenAI image model (providers/batching.py)."""

    max_requests, max_bytes = MAX_REQUESTS, MAX_BYTES

    def __init__(self, provider: "OpenAIProvider"):
        self.provider = provider
        self.references = Uploads(uploads_folder(provider.runtime.state_dir, provider.route), FILE_ID)
        self._last: dict[str, Any] = {}

    @property
    def what(self) -> str:
        return f"openai batch {self.provider.spec.provider_model}"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.provider.key}"}

    # ------------------------------------------------------------------ files
    def reference_id(self, data: bytes, name: str, mime: str) -> str:
        """The file id of a reference, uploaded once per run (batch_uploads.py): the repeats and workers share it."""
        return self.references.id_of(data, lambda: self.upload(name, data, mime, purpose="vision"))

    def upload(self, name: str, data: bytes, mime: str, *, purpose: str) -> str:
        """``POST /files`` (``file_create_params.py``: ``file``, ``purpose``); the ``FileObject``'s id."""
        response = self.provider.call("POST", f"{self.provider.base}/files", headers=self.headers(),
                                      data={"purpose": purpose}, files=[("file", (name, data, mime))])
        self.provider.check(response)
        reply = self.provider.json_of(response, self.what)
        file_id = reply.get("id") if isinstance(reply, dict) else None
        if not isinstance(file_id, str) or not FILE_ID.fullmatch(file_id):
            raise ProviderError(f"{self.what}: the upload's reply has no file id", retryable=True)
        return file_id

    def content(self, file_id: str) -> list[dict[str, Any]]:
        """The JSON lines of a batch's output or error file (``GET /files/{id}/content``)."""
        response = self.provider.call("GET", f"{self.provider.base}/files/{file_id}/content", headers=self.headers())
        self.provider.check(response)
        lines = []
        for text in response.text.splitlines():
            try:
                line = json.loads(text) if text.strip() else None
            except ValueError:
                raise ProviderError(f"{self.what}: file {file_id} holds a line that is not JSON", retryable=True) \
                    from None
            if isinstance(line, dict):
                lines.append(line)
        return lines

    # ------------------------------------------------------------------ batches
    def submit(self, lines: list[Line]) -> str:
        data = b"".join(line.body for line in lines)
        input_id = self.upload("hypeedit-batch.jsonl", data, "application/jsonl", purpose="batch")
        journaled = []
        try:
            for line in lines:  # before the batch exists: a kill now finds its input file, adopts, never repeats
                line.journal.submitted(id=line.key, kind="batch", input_file_id=input_id, custom_id=line.key)
                journaled.append(line)
            return self.create(input_id, lines)
        except BaseException:
            for line in journaled:
                if not line.journal.job or not line.journal.job.get("lost"):
                    line.journal.forget()
            raise

    def create(self, input_id: str, lines: list[Line]) -> str:
        """``POST /batches``, sent once: its reply lost, the lines stay journaled with the input file and the next
        attempt adopts the batch made from it (or creates it then)."""
        body = {"input_file_id": input_id, "endpoint": ENDPOINT, "completion_window": "24h",
                "metadata": {"source": "pytest-hypeedit"}}
        try:
            response = self.provider.call("POST", f"{self.provider.base}/batches", headers=self.headers(),
                                          json=body, submits=True)
        except ProviderError as exc:
            if exc.reply_lost:
                for line in lines:
                    job = line.journal.job or {}
                    line.journal.submitted(**{**job, "lost": True})
            raise
        self.provider.check(response)  # an answered error: no batch was made, the lines are forgotten
        batch = self.provider.json_of(response, self.what)
        batch_id = batch.get("id") if isinstance(batch, dict) else None
        if not isinstance(batch_id, str) or not BATCH_ID.fullmatch(batch_id):
            raise ProviderError(f"{self.what}: the batch's reply has no batch id", retryable=False)
        for line in lines:
            line.journal.submitted(id=line.key, kind="batch", input_file_id=input_id, custom_id=line.key,
                                   batch_id=batch_id)
        return batch_id

    def adopt(self, job: dict[str, Any]) -> str:
        """The batch made from the journaled input file (``GET /batches``, paged by ``after``), else a new one."""
        input_id = str(job["input_file_id"])
        after: str | None = None
        for _ in range(100):
            params = {"limit": "100", **({"after": after} if after else {})}
            response = self.provider.call("GET", f"{self.provider.base}/batches", headers=self.headers(),
                                          params=params)
            self.provider.check(response)
            page = self.provider.json_of(response, self.what)
            batches = page.get("data") if isinstance(page, dict) else None
            for batch in batches if isinstance(batches, list) else []:
                if isinstance(batch, dict) and batch.get("input_file_id") == input_id and \
                        BATCH_ID.fullmatch(str(batch.get("id"))):
                    return str(batch["id"])
            if not (isinstance(page, dict) and page.get("has_more") and batches):
                break
            after = str(batches[-1].get("id"))
        response = self.provider.call("POST", f"{self.provider.base}/batches", headers=self.headers(),
                                      json={"input_file_id": input_id, "endpoint": ENDPOINT,
                                            "completion_window": "24h"}, submits=True)
        self.provider.check(response)
        batch = self.provider.json_of(response, self.what)
        return str(batch.get("id"))

    def poll(self, batch_id: str) -> Status:
        response = self.provider.call("GET", f"{self.provider.base}/batches/{batch_id}", headers=self.headers())
        self.provider.check(response)
        batch = self.provider.json_of(response, self.what)
        status = str(batch.get("status")) if isinstance(batch, dict) else "unknown"
        self._last = batch if isinstance(batch, dict) else {}
        return Status(status, ended=status in ENDED, running=status in RUNNING)

    def results(self, batch_id: str, status: Status) -> dict[str, Outcome]:
        batch = self._last
        outcomes: dict[str, Outcome] = {}
        for field in ("error_file_id", "output_file_id"):  # output last: it wins over an error of the same line
            file_id = batch.get(field)
            if isinstance(file_id, str) and FILE_ID.fullmatch(file_id):
                for line in self.content(file_id):
                    key = line.get("custom_id")
                    if isinstance(key, str):
                        outcomes[key] = line_outcome(batch_id, line)
        return outcomes

    def missing_outcome(self, batch_id: str, status: Status) -> Outcome:
        """A line neither file names: never run when the batch failed validation, expired or was cancelled (not
        billed: only completed requests are [T3]); in a completed batch, unknown (counted as billed)."""
        return Outcome(batch_id, missing=status.state, billed=status.state == "completed")


def line_outcome(batch_id: str, line: dict[str, Any]) -> Outcome:
    response = line.get("response")
    error = line.get("error")
    if not isinstance(response, dict):
        code = error.get("code") if isinstance(error, dict) else None
        return Outcome(batch_id, missing=str(code or "no response"), billed=False)
    status = response.get("status_code")
    return Outcome(batch_id, reply=line, billed=status == 200)


# --------------------------------------------------------------------------- the adapter's side


def line_key(request: GenerationRequest) -> str:
    """The line's ``custom_id``: the candidate, unique within a batch (a batch holds one model)."""
    task = request.task
    return f"{task.split}/{task.task_id}/r{request.repeat:03d}"


def batch_generate(provider: "OpenAIProvider", collector: Collector, backend: OpenAIBatch,
                   request: GenerationRequest) -> Generation:
    """Buy ``request``'s candidate through the batch (or resume the line an earlier attempt journaled)."""
    key = line_key(request)
    job = _resumed(provider, request)
    if job is not None:
        outcome = collector.resume(Line(key, b"", 0, request.journal), job)
    else:
        body = json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT,
                           "body": edit_body(provider, backend, request)}).encode() + b"\n"
        outcome = collector.buy(Line(key, body, len(body), request.journal))
    return generation_of(provider, request, outcome)


def edit_body(provider: "OpenAIProvider", backend: OpenAIBatch, request: GenerationRequest) -> dict[str, Any]:
    """The JSON edit body (``EditImageBodyJsonParam`` [T2]): the sync fields, ``n`` a number, ``images`` by id."""
    fields: dict[str, Any] = dict(provider.fields(request))
    fields["n"] = 1
    fields["images"] = [{"file_id": backend.reference_id(image.read(), f"{index + 1:03d}.{image.format}",
                                                         image.mime)}
                        for index, image in enumerate(provider.references(request))]
    return fields


def _resumed(provider: "OpenAIProvider", request: GenerationRequest) -> dict[str, Any] | None:
    job = request.journal.job
    if job is None or job.get("kind") != "batch":
        return None
    ok = FILE_ID.fullmatch(str(job.get("input_file_id"))) and \
        (job.get("batch_id") is None or BATCH_ID.fullmatch(str(job.get("batch_id"))))
    if not ok:
        where = request.journal.source or "the candidate's record"
        raise provider.error(f"{where}: the batch line journaled for {provider.what(request)} has no valid input "
                             "file or batch id; nothing was sent. Delete its \"job\" entry if the record was edited: "
                             "the next run then buys the candidate again", retryable=False)
    return job


def generation_of(provider: "OpenAIProvider", request: GenerationRequest, outcome: Outcome) -> Generation:
    """The line's answer as the sync path's outcome: the image, a Refusal, or a ProviderError."""
    what = f"{provider.what(request)} (batch {outcome.batch_id})"
    if outcome.reply is None:
        return _not_returned(provider, request, outcome, what)
    response = outcome.reply["response"]
    status, body = response.get("status_code"), response.get("body")
    body = body if isinstance(body, dict) else {}
    request_id = response.get("request_id") if isinstance(response.get("request_id"), str) else None
    if status != 200:
        return _refused_line(provider, request, status, body, what, request_id)
    items = body.get("data")
    cost = _cost(provider, body)
    if not isinstance(items, list) or not items or not isinstance(items[0], dict) or not items[0].get("b64_json"):
        raise provider.refusal(request, "the batch line holds no image", request_id=request_id, cost=cost)
    data = decode_base64(items[0]["b64_json"], what)
    generation = provider.generation(request, data, cost=cost, request_id=request_id, seed=None,
                                     size=body.get("size") or provider.size(request), quality=body.get("quality"),
                                     usage=body.get("usage"), batch_id=outcome.batch_id,
                                     price=provider.spec.price_at("batch"))
    generation.tier = "batch"
    return generation


def _cost(provider: "OpenAIProvider", body: dict[str, Any]) -> float:
    """The line's usage at the model's token prices, halved as the batch tier bills it; else the batch price."""
    from .openai_models import image_model

    model = image_model(provider.spec.provider_model)
    cost = model.usage_cost(body.get("usage")) if model is not None else None
    if cost is None:
        return provider.spec.price_at("batch")
    return round(cost * provider.spec.tier_factor("batch"), 6)


def _not_returned(provider: "OpenAIProvider", request: GenerationRequest, outcome: Outcome, what: str) -> Generation:
    if outcome.billed:
        raise ProviderError(f"{what}: the batch ended {outcome.missing} without a line for this candidate; it may "
                            "have been billed, so it is not bought again: it stays journaled", retryable=False)
    job = request.journal.job or {}
    request.journal.submitted(**{**job, "id": job.get("id") or line_key(request), "cost": 0.0})
    raise JobExpired(f"{what}: not run ({outcome.missing}); OpenAI bills completed requests only, so it is bought "
                     "again", retryable=True)


def _refused_line(provider: "OpenAIProvider", request: GenerationRequest, status: Any, body: dict[str, Any],
                  what: str, request_id: str | None) -> Generation:
    """An error-file line with the endpoint's HTTP error: as the sync path maps that reply (openai.py)."""
    error = body["error"] if isinstance(body.get("error"), dict) else {}
    code, message = error.get("code"), str(error.get("message") or "")
    request.journal.forget()  # not billed: the next attempt buys it in a new batch
    if status == 400 and provider.is_moderation(code, message, json.dumps(body)[:2000]):
        raise provider.refusal(request, f"moderation: {code}: {message[:300]}", request_id=request_id)
    if status == 404 and code == "model_not_found":
        raise provider.gone(f"HTTP 404 {code}: {message[:300]}", status=404)
    retryable = isinstance(status, int) and (status in (408, 409, 429) or status >= 500)
    raise provider.error(f"{what}: the line answered HTTP {status} {code or ''}: {message[:300]}",
                         retryable=retryable and code != "insufficient_quota",
                         status=status if isinstance(status, int) else None)

