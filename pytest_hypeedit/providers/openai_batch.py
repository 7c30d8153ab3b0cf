"""``openai`` on the batch tier (``--tier batch``): gpt-image edits through the Files and Batch APIs at half price.

Wire format (docs/reference/providers.md sections 11.1-11.3; openai-python 3.57 ``resources/{files,batches}.py``,
``types/{batch,batch_create_params,file_object,file_create_params,file_purpose}.py`` [T1]):

- each reference is uploaded once per process (``POST /files``, multipart ``file`` + ``purpose``) and named by
  ``{"file_id": …}`` in every line that uses it (an ``ImageRefParam``, openai-python ``api_reference``
  ``openapi.transformed.yml`` [T2]); purpose ``vision``, the purpose the docs name for image inputs (for edits
  UNCONFIRMED, docs/reference/providers.md 11.1);
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

Billing (the Batch guide [T3] and FAQ, docs/reference/providers.md 11.3): "You will be charged for tokens consumed from any
completed requests"; unfinished requests of an expired or cancelled batch are cancelled and written to the error
file as ``batch_expired`` / ``batch_cancelled``.  So a line with an output (HTTP 200) was billed; an expired,
cancelled or never-run line (a batch that failed validation) was not, and is bought again; a line the endpoint
refused (an error-file line with a 4xx ``response``) ends as the sync path's refusal or error would.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterator, Protocol

import httpx

from ..errors import JobExpired, ProviderError, Refusal
from ..transport.bounds import JSON_CAP, inline_cap
from ..transport.http import CHUNK, transport_error
from ..transport.requestopts import with_options
from .adapter import decode_base64
from .base import Generation, GenerationRequest
from .batch_protocol import BatchProvider
from .batch_results import LINE_WORK, Spool, SpooledLine, duplicated, index, land
from .batch_uploads import Uploads, uploads_folder
from .batching import Collector, Line, Outcome, Status

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from ..errors import ModelGone
    from .images import PreparedImage


class OpenAIBatchProvider(BatchProvider, Protocol):
    """What the batch path needs of its provider (openai.py ``OpenAIProvider``, which imports this module to buy
    at the batch tier): beyond its route, model and run (``BatchProvider``), its HTTP calls, the fields of an edit,
    and the reading of a line's reply."""

    @property
    def key(self) -> str: ...
    @property
    def base(self) -> str: ...
    @property
    def client(self) -> httpx.Client: ...
    @property
    def image_cap(self) -> int: ...
    def call(self, method: str, url: str, *, request: GenerationRequest | None = None, submits: bool = False,
             download: bool = False, **kwargs: Any) -> httpx.Response: ...
    def check(self, response: httpx.Response) -> None: ...
    def json_of(self, response: httpx.Response, what: str) -> Any: ...
    def what(self, request: GenerationRequest) -> str: ...
    def references(self, request: GenerationRequest) -> tuple[PreparedImage, ...]: ...
    def fields(self, request: GenerationRequest) -> dict[str, Any]: ...
    def size(self, request: GenerationRequest) -> str: ...
    def worst_case_cost(self, request: GenerationRequest) -> float: ...
    def is_moderation(self, code: str | None, message: str, body_text: str) -> bool: ...
    def generation(self, request: GenerationRequest, data: bytes | Path, *, cost: float | None = None,
                   request_id: str | None = None, seed: int | None = None, **extra: Any) -> Generation: ...
    def refusal(self, request: GenerationRequest, reason: str, *, request_id: str | None = None,
                cost: float = 0.0) -> Refusal: ...
    def error(self, message: str, *, retryable: bool = True, status: int | None = None) -> ProviderError: ...
    def gone(self, reply: str, *, status: int | None = None) -> ModelGone: ...


ENDPOINT = "/v1/images/edits"
#: "each input file ... up to 50,000 requests, and ... up to 200 MB in size" (Batch guide [T3]); a little under.
MAX_REQUESTS, MAX_BYTES = 50_000, 190 * 1024 * 1024
#: ``Batch.status`` values that end a batch (``batch.py``), and those that mean it is being worked on.
ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
RUNNING = frozenset({"in_progress", "finalizing", "cancelling"})
#: An error-file line's top-level ``error.code`` for a request that never ran (docs/reference/providers.md 11.3 [T3][T4]).
NOT_RUN = frozenset({"batch_expired", "batch_cancelled"})
#: Seconds an adoption may list batches before it gives up for this run (creating nothing).
ADOPT_S = 600.0
#: Ids as OpenAI writes them ("file-…", "batch_…"); a journaled id read back from a record must look so.
FILE_ID, BATCH_ID = re.compile(r"file-[A-Za-z0-9_-]{1,200}"), re.compile(r"batch_[A-Za-z0-9_-]{1,200}")


class OpenAIBatch:
    """The ``Backend`` of one OpenAI image model (providers/batching.py)."""

    max_requests, max_bytes = MAX_REQUESTS, MAX_BYTES

    def __init__(self, provider: OpenAIBatchProvider):
        self.provider = provider
        self.references = Uploads(uploads_folder(provider.runtime.state_dir, provider.route), FILE_ID)
        self._last: dict[str, Any] = {}
        self._unnamed: list[str] = []  # lines of the last results read that named no custom_id
        self._created: dict[str, float] = {}  # an uploaded file's created_at

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
        created = reply.get("created_at")
        if isinstance(created, (int, float)) and not isinstance(created, bool):
            self._created[file_id] = float(created)  # OpenAI's clock: where an adoption's listing may stop
        return file_id

    def stream_lines(self, file_id: str, cap: int, total: int) -> Iterator[bytes]:
        """The bytes of a batch's output or error file (``GET /files/{id}/content``) as they arrive: never held
        whole (batch_results.py); ``total`` bounds the file, ``cap`` each of its lines."""
        url = f"{self.provider.base}/files/{file_id}/content"
        extensions = with_options(None, stream=True, max_bytes=total)
        try:
            with self.provider.client.stream("GET", url, headers=self.headers(), extensions=extensions) as response:
                if not response.is_success:
                    response.read()
                    self.provider.check(response)
                yield from response.iter_bytes(CHUNK)
        except httpx.HTTPError as exc:
            raise transport_error(exc, route=self.provider.route, model=self.provider.spec.name) from None

    # ------------------------------------------------------------------ batches
    def submit(self, lines: list[Line]) -> str:
        data = b"".join(line.body for line in lines)
        input_id = self.upload("hypeedit-batch.jsonl", data, "application/jsonl", purpose="batch")
        journaled = []
        try:
            for line in lines:  # before the batch exists: a kill now finds its input file, adopts, never repeats
                line.journal.submitted(id=line.key, kind="batch", input_file_id=input_id, custom_id=line.key,
                                       input_created_at=self._created.get(input_id))
                journaled.append(line)
            return self.create(input_id, lines)
        except BaseException:
            for line in journaled:
                if not line.journal.job or not line.journal.job.get("lost"):
                    line.journal.forget()
            raise

    def create(self, input_id: str, lines: list[Line]) -> str:
        """``POST /batches``, sent once: its reply lost, or a 2xx reply that cannot be read (the batch may exist),
        the lines stay journaled with the input file and the next attempt adopts the batch made from it (or
        creates it then, when there is none)."""
        body = {"input_file_id": input_id, "endpoint": ENDPOINT, "completion_window": "24h",
                "metadata": {"source": "pytest-hypeedit"}}
        try:
            response = self.provider.call("POST", f"{self.provider.base}/batches", headers=self.headers(),
                                          json=body, submits=True)
        except ProviderError as exc:
            if exc.reply_lost:
                _lost(lines)
            raise
        self.provider.check(response)  # an answered error: no batch was made, the lines are forgotten
        try:
            batch_id = self._batch_id(response)
        except ProviderError:
            _lost(lines)
            raise
        for line in lines:
            line.journal.submitted(id=line.key, kind="batch", input_file_id=input_id, custom_id=line.key,
                                   batch_id=batch_id)
        return batch_id

    def _batch_id(self, response: httpx.Response) -> str:
        """The id of the batch a 2xx create answered; one it does not name may exist all the same: an error that
        leaves the lines journaled (not retryable now: the create is never sent twice)."""
        try:
            batch = response.json()
        except ValueError:
            batch = None
        batch_id = batch.get("id") if isinstance(batch, dict) else None
        if not isinstance(batch_id, str) or not BATCH_ID.fullmatch(batch_id):
            raise ProviderError(f"{self.what}: the batch's create answered HTTP {response.status_code} without a "
                                "batch id that can be read; the batch may exist, so its lines stay journaled with "
                                "their input file and the next run adopts it (never creates a second one)",
                                retryable=False)
        return batch_id

    def adopt(self, job: dict[str, Any]) -> str:
        """The batch made from the journaled input file, else (when there is none) one created from it now.

        ``GET /batches`` lists the newest first (``after`` pages on, ``limit`` up to 100): the listing reads every
        page back to the batches created before the input file (none of those can be made from it; the file's
        ``created_at`` journaled, else the line's journal time less a day for clocks apart), however many pages
        that takes, for at most ``ADOPT_S`` seconds.  Out of time before it could say, it creates nothing: the
        line stays journaled and the next attempt looks again (a second batch from the same file pays twice)."""
        input_id = str(job["input_file_id"])
        oldest = _oldest_possible(job)
        after: str | None = None
        started, pages = time.monotonic(), 0
        while True:
            if time.monotonic() - started > ADOPT_S:
                raise ProviderError(f"{self.what}: looked for the batch made from input file {input_id} for "
                                    f"{ADOPT_S:g} s ({pages} pages of GET /batches) without reaching the batches "
                                    "older than it; nothing was created (it may exist): the line stays journaled "
                                    "and the next run looks again", retryable=True)
            params = {"limit": "100", **({"after": after} if after else {})}
            response = self.provider.call("GET", f"{self.provider.base}/batches", headers=self.headers(),
                                          params=params)
            self.provider.check(response)
            pages += 1
            page = self.provider.json_of(response, self.what)
            batches = page.get("data") if isinstance(page, dict) else None
            batches = [b for b in batches if isinstance(b, dict)] if isinstance(batches, list) else []
            for batch in batches:
                if batch.get("input_file_id") == input_id and BATCH_ID.fullmatch(str(batch.get("id"))):
                    return str(batch["id"])
            created = [c for b in batches if isinstance(c := b.get("created_at"), (int, float))]
            if not (isinstance(page, dict) and page.get("has_more") is True and batches) or \
                    (oldest is not None and created and min(created) < oldest):
                break  # every batch that could be made from the file was listed: there is none
            after = str(batches[-1].get("id"))
        response = self.provider.call("POST", f"{self.provider.base}/batches", headers=self.headers(),
                                      json={"input_file_id": input_id, "endpoint": ENDPOINT,
                                            "completion_window": "24h"}, submits=True)
        self.provider.check(response)
        return self._batch_id(response)

    def poll(self, batch_id: str) -> Status:
        response = self.provider.call("GET", f"{self.provider.base}/batches/{batch_id}", headers=self.headers())
        self.provider.check(response)
        batch = self.provider.json_of(response, self.what)
        status = str(batch.get("status")) if isinstance(batch, dict) else "unknown"
        self._last = batch if isinstance(batch, dict) else {}
        return Status(status, ended=status in ENDED, running=status in RUNNING)

    def results(self, batch_id: str, status: Status) -> dict[str, Outcome]:
        """Every line of the ended batch's error and output files, streamed into a spool (batch_results.py): a line
        that cannot be read (past one image reply, not JSON, a custom_id two lines share) costs only itself."""
        batch, cap = self._last, inline_cap(self.provider.image_cap)
        counts = batch.get("request_counts")
        total = counts.get("total") if isinstance(counts, dict) else None
        lines = total if isinstance(total, int) and not isinstance(total, bool) and 0 < total <= MAX_REQUESTS \
            else MAX_REQUESTS
        spool = Spool(self.provider.runtime.downloads_dir())
        outcomes: dict[str, Outcome] = {}
        self._unnamed = []
        for field in ("error_file_id", "output_file_id"):  # output last: it wins over an error of the same line
            file_id = batch.get(field)
            if isinstance(file_id, str) and FILE_ID.fullmatch(file_id):
                outcomes.update(self._file_outcomes(batch_id, file_id, spool, cap, lines * cap + JSON_CAP,
                                                    billed=field == "output_file_id"))
        return outcomes

    def _file_outcomes(self, batch_id: str, file_id: str, spool: Spool, cap: int, total: int, *,
                       billed: bool) -> dict[str, Outcome]:
        """One results file's lines by custom_id.  An output-file line was billed ("one response line for every
        successful request line"), an error-file line was not ("charged for ... completed requests" only)."""
        found: dict[str, list[tuple[int, Outcome]]] = {}
        for entry in index(self.stream_lines(file_id, cap, total), cap=cap, spool=spool, file=f"file {file_id}",
                           key_of=lambda value: value.get("custom_id")):
            if entry.key is None:
                self._unnamed.append(str(entry.problem))
                continue
            outcome = Outcome(batch_id, problem=entry.problem, billed=billed) if entry.problem else \
                line_outcome(batch_id, entry.value or {}, entry.line)
            found.setdefault(entry.key, []).append((entry.number, outcome))
        return {key: seen[0][1] if len(seen) == 1 else
                Outcome(batch_id, problem=duplicated([n for n, _ in seen], f"file {file_id}"),
                        billed=any(o.billed for _, o in seen))
                for key, seen in found.items()}

    def missing_outcome(self, batch_id: str, status: Status) -> Outcome:
        """A line neither file names: never run when the batch failed validation, expired or was cancelled (not
        billed: only completed requests are [T3]); in a completed batch, unknown (counted as billed), and the lines
        of its files that named no custom_id are said."""
        unread = f" (its files held {len(self._unnamed)} line(s) that name no request: {self._unnamed[0]})" \
            if self._unnamed else ""
        return Outcome(batch_id, missing=status.state + unread, billed=status.state == "completed")


def line_outcome(batch_id: str, line: dict[str, Any], spooled: SpooledLine | None = None) -> Outcome:
    """A results line's outcome: its reply (read back from the spool when its candidate's turn comes)."""
    response = line.get("response")
    error = line.get("error")
    if not isinstance(response, dict):
        code = error.get("code") if isinstance(error, dict) else None
        return Outcome(batch_id, missing=str(code or "no response"), billed=False)
    status = response.get("status_code")
    return Outcome(batch_id, reply=spooled if spooled is not None else line, billed=status == 200)


def _lost(lines: list[Line]) -> None:
    """The create may have made the batch: each line stays journaled with its input file, marked so."""
    for line in lines:
        job = line.journal.job or {}
        line.journal.submitted(**{**job, "lost": True})


def _oldest_possible(job: dict[str, Any]) -> float | None:
    """The Unix time before which no batch can have been made from the journaled input file: the file's own
    ``created_at`` (OpenAI's clock), else the line's journal time less a day (this machine's clock may be off);
    None when neither can be read (then every page is read)."""
    created = job.get("input_created_at")
    if isinstance(created, (int, float)) and not isinstance(created, bool):
        return float(created)
    try:
        return datetime.fromisoformat(str(job.get("submitted_at"))).timestamp() - 86400
    except ValueError:
        return None


# --------------------------------------------------------------------------- the adapter's side


def line_key(request: GenerationRequest) -> str:
    """The line's ``custom_id``: the candidate, unique within a batch (a batch holds one model)."""
    task = request.task
    return f"{task.split}/{task.task_id}/r{request.repeat:03d}"


def batch_generate(provider: OpenAIBatchProvider, collector: Collector, backend: OpenAIBatch,
                   request: GenerationRequest) -> Generation:
    """Buy ``request``'s candidate through the batch (or resume the line an earlier attempt journaled)."""
    key = line_key(request)
    job = _resumed(provider, request)
    if job is not None:
        outcome = collector.resume(Line(key, b"", 0, request.call.journal), job)
    else:
        body = json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT,
                           "body": edit_body(provider, backend, request)}).encode() + b"\n"
        outcome = collector.buy(Line(key, body, len(body), request.call.journal))
    return generation_of(provider, request, outcome)


def edit_body(provider: OpenAIBatchProvider, backend: OpenAIBatch, request: GenerationRequest) -> dict[str, Any]:
    """The JSON edit body (``EditImageBodyJsonParam`` [T2]): the sync fields, ``n`` a number, ``images`` by id."""
    fields: dict[str, Any] = dict(provider.fields(request))
    fields["n"] = 1
    fields["images"] = [{"file_id": backend.reference_id(image.read(), f"{index + 1:03d}.{image.format}",
                                                         image.mime)}
                        for index, image in enumerate(provider.references(request))]
    return fields


def _resumed(provider: OpenAIBatchProvider, request: GenerationRequest) -> dict[str, Any] | None:
    job = request.call.journal.job
    if job is None or job.get("kind") != "batch":
        return None
    ok = FILE_ID.fullmatch(str(job.get("input_file_id"))) and \
        (job.get("batch_id") is None or BATCH_ID.fullmatch(str(job.get("batch_id"))))
    if not ok:
        where = request.call.journal.source or "the candidate's record"
        raise provider.error(f"{where}: the batch line journaled for {provider.what(request)} has no valid input "
                             "file or batch id; nothing was sent. Delete its \"job\" entry if the record was edited: "
                             "the next run then buys the candidate again", retryable=False)
    return job


def generation_of(provider: OpenAIBatchProvider, request: GenerationRequest, outcome: Outcome) -> Generation:
    """The line's answer as the sync path's outcome: the image, a Refusal, or a ProviderError."""
    what = f"{provider.what(request)} (batch {outcome.batch_id}, line {line_key(request)})"
    if outcome.problem is not None:
        return _unreadable(provider, request, outcome, what)
    if outcome.reply is None:
        return _not_returned(provider, request, outcome, what)
    with LINE_WORK:  # a few lines in memory at a time, whatever the batch's size (batch_results.py)
        line = outcome.reply.load() if isinstance(outcome.reply, SpooledLine) else outcome.reply
        return _line_generation(provider, request, outcome, line, what)


def _line_generation(provider: OpenAIBatchProvider, request: GenerationRequest, outcome: Outcome,
                     line: dict[str, Any], what: str) -> Generation:
    response = line["response"]
    status, body = response.get("status_code"), response.get("body")
    body = body if isinstance(body, dict) else {}
    request_id = response.get("request_id") if isinstance(response.get("request_id"), str) else None
    if status != 200:
        return _error_line(provider, request, status, body, what, request_id)
    items = body.get("data")
    cost, cost_source = _cost(provider, request, body)
    if not isinstance(items, list) or not items or not isinstance(items[0], dict) or \
            not isinstance(items[0].get("b64_json"), str) or not items[0]["b64_json"]:
        raise _batch_refusal(provider.refusal(request, "the batch line holds no image", request_id=request_id,
                                              cost=cost))
    try:
        data = decode_base64(items[0]["b64_json"], what)
    except Refusal as exc:  # billed all the same: the line answered 200
        raise _batch_refusal(provider.refusal(request, f"{exc.reason}; billed at the batch price",
                                              request_id=request_id, cost=cost)) from None
    # on disk before the next line is read: the candidate holds a path until it is saved (batch_results.land)
    image = land(data, request.call.landing or provider.runtime.downloads_dir())
    try:
        generation = provider.generation(request, image, cost=cost, request_id=request_id, seed=None,
                                         size=body.get("size") or provider.size(request), quality=body.get("quality"),
                                         usage=body.get("usage"), batch_id=outcome.batch_id, cost_source=cost_source,
                                         price=provider.spec.price_at("batch"))
    except Refusal as exc:
        raise _batch_refusal(exc) from None
    generation.tier = "batch"
    return generation


def _batch_refusal(exc: Refusal) -> Refusal:
    """A refusal of a batch line: filed under the batch tier (engine/purchase.py reads ``tier``)."""
    exc.tier = "batch"
    return exc


def _cost(provider: OpenAIBatchProvider, request: GenerationRequest, body: dict[str, Any]) -> tuple[float, str]:
    """(USD, where it came from): the line's usage at the model's token prices, halved as the batch tier bills it;
    usage without a count of output tokens (the image's, nearly all of the price) at the line's worst case
    (``worst_case_cost``, at the batch tier), said so; a model openai_models.py does not know at the batch price."""
    from .openai_models import image_model

    model = image_model(provider.spec.provider_model)
    if model is None:
        return provider.spec.price_at("batch"), "price"
    usage = body.get("usage")
    outputs = usage.get("output_tokens") if isinstance(usage, dict) else None
    cost = model.usage_cost(usage)
    if cost is None or not isinstance(outputs, int) or isinstance(outputs, bool) or outputs <= 0:
        return provider.worst_case_cost(request), "worst case: the line's usage has no count of output tokens"
    return round(cost * provider.spec.tier_factor("batch"), 6), "usage"


def _unreadable(provider: OpenAIBatchProvider, request: GenerationRequest, outcome: Outcome, what: str) -> Generation:
    """The batch returned a line for this candidate that cannot be read: an output-file line was billed, so it is
    not bought again (it stays journaled: the error says why); an error-file line was not, so it is."""
    if outcome.billed:
        raise provider.error(f"{what}: route {provider.route}: the line the batch returned for this candidate "
                             f"cannot be read: {outcome.problem}; it was billed (an output-file line), so it is not "
                             "bought again: it stays journaled", retryable=False)
    job = request.call.journal.job or {}
    request.call.journal.submitted(**{**job, "id": job.get("id") or line_key(request), "cost": 0.0})
    raise JobExpired(f"{what}: route {provider.route}: the error line the batch returned for this candidate cannot "
                     f"be read: {outcome.problem}; OpenAI bills completed requests only, so it is bought again",
                     retryable=True)


def _not_returned(provider: OpenAIBatchProvider, request: GenerationRequest, outcome: Outcome, what: str) -> Generation:
    if outcome.billed:
        raise ProviderError(f"{what}: the batch ended {outcome.missing} without a line for this candidate; it may "
                            "have been billed, so it is not bought again: it stays journaled", retryable=False)
    job = request.call.journal.job or {}
    request.call.journal.submitted(**{**job, "id": job.get("id") or line_key(request), "cost": 0.0})
    raise JobExpired(f"{what}: not run ({outcome.missing}); OpenAI bills completed requests only, so it is bought "
                     "again", retryable=True)


def _error_line(provider: OpenAIBatchProvider, request: GenerationRequest, status: Any, body: dict[str, Any],
                  what: str, request_id: str | None) -> Generation:
    """An error-file line with the endpoint's HTTP error: as the sync path maps that reply (openai.py)."""
    error = body["error"] if isinstance(body.get("error"), dict) else {}
    code, message = error.get("code"), str(error.get("message") or "")
    request.call.journal.forget()  # not billed: the next attempt buys it in a new batch
    if status == 400 and provider.is_moderation(code, message, json.dumps(body)[:2000]):
        raise _batch_refusal(provider.refusal(request, f"moderation: {code}: {message[:300]}", request_id=request_id))
    if status == 404 and code == "model_not_found":
        raise provider.gone(f"HTTP 404 {code}: {message[:300]}", status=404)
    retryable = isinstance(status, int) and (status in (408, 409, 429) or status >= 500)
    raise provider.error(f"{what}: the line answered HTTP {status} {code or ''}: {message[:300]}",
                         retryable=retryable and code != "insufficient_quota",
                         status=status if isinstance(status, int) else None)

