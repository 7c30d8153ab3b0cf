"""``gemini`` on the batch tier (``--tier batch``): image models through Gemini's Batch mode at half price.

Wire format: docs/reference/providers.md sections 11.4 and 11.5, spoken through google-genai itself (its ``batches`` and
``files`` modules are the reference [T9]):

- each reference is uploaded once per process with the Files API (``client.files.upload``: the resumable
  ``POST /upload/v1beta/files`` start, then the bytes to the ``x-goog-upload-url``, ``files.py``,
  ``_api_client.py``) and named in every request by ``fileData {fileUri, mimeType}`` (``Part.from_uri``), so a
  request is about a kilobyte: inline base64 of ten candidates a task would pass the inline limit fast;
- ``client.batches.create(model, src=[InlinedRequest(contents, config, metadata={"key": …})], config=
  {"display_name": …})`` sends ``POST /v1beta/models/{model}:batchGenerateContent`` with the requests inline
  (``_InlinedRequest_to_mldev``); "the whole create request under 20 MB" [T6], so the collector splits at 19 MB
  (a run whose lines outgrow that makes more batches, never a bigger one);
- ``client.batches.get(name)`` is polled; its ``state`` is ``JOB_STATE_*`` (google-genai maps the wire's
  ``BATCH_STATE_*``, ``_transformers.py`` ``t_job_state``); ended: SUCCEEDED, FAILED, CANCELLED, EXPIRED and
  PARTIALLY_SUCCEEDED (``done`` alone misses the last, docs/reference/providers.md 11.4);
- results: ``dest.inlined_responses`` (each ``{response, metadata, error}``, mapped by ``metadata.key``), or
  ``dest.file_name``, a JSONL of ``{"key", "response" | "error"}`` lines (``files.download``).

Creating is not idempotent ("two separate batch jobs will be created" [T6]): the lines are journaled with the
batch's display name before it is created, and the batch's name as soon as the reply comes; a line journaled
without a batch name is adopted on resume by listing the batches (``client.batches.list``) for that display name,
and, when there is none, bought again (the create never reached Google, so nothing was billed).

Billing: "JOB_STATE_EXPIRED: ... The job will not have any results to retrieve. You can try submitting the job
again" [T6]; whether anything of an expired job is billed is not documented (UNCONFIRMED): with nothing returned
there is nothing to pay for, so an expired, cancelled or failed job's lines without a response are bought
again.  A line with a response was billed; a line with an ``error`` (a google.rpc.Status) ran into an error and
returned nothing: retryable for 429/5xx-like codes, final otherwise, bought again either way by a later attempt.
"""

from __future__ import annotations

import io
import json
import re
import time
import uuid
from typing import TYPE_CHECKING, Any, Iterator, Protocol

import httpx

from ..errors import JobExpired, ProviderError, Refusal
from ..secrets import base_url, key_for, redact
from ..transport.bounds import JSON_CAP, image_cap_of, inline_cap
from ..transport.http import CHUNK, raise_for_status, transport_error
from ..transport.requestopts import mark, with_options
from .base import Generation, GenerationRequest
from .batch_protocol import BatchProvider
from .batch_results import LINE_WORK, Spool, SpooledLine, duplicated, index, land
from .batch_uploads import Uploads, uploads_folder
from .batching import Collector, Line, Outcome, Status
from .genai_client import API_VERSION, DEFAULT_BASE_URL, GEMINI_KEY_ENV, call, import_genai

if TYPE_CHECKING:  # pragma: no cover
    from google.genai.types import GenerateContentConfig

    from ..engine.preview import Preview
    from .genai_client import GenaiSession
    from .images import PreparedImage


class GeminiBatchProvider(BatchProvider, Protocol):
    """What the batch path needs of its provider (gemini.py ``GeminiProvider``, which imports this module to buy
    at the batch tier): beyond its route, model and run (``BatchProvider``), its client session, the request's parts
    and the reading of a reply."""

    @property
    def session(self) -> GenaiSession: ...
    def prepared(self, request: GenerationRequest) -> tuple[PreparedImage, ...]: ...
    def request_config(self, request: GenerationRequest) -> GenerateContentConfig: ...
    def take_image(self, response: Any, what: str, previews: list[Preview] | None = None) -> tuple[bytes, str]: ...
    def generation_of(self, request: GenerationRequest, response: Any, image: bytes, ext: str,
                      preview: Preview | None = None) -> Generation: ...
    def priced_model(self) -> bool: ...


#: "the whole create request under 20 MB" inline, an input file up to 2 GB [T6]: up to INLINE_MAX (room left
#: for the envelope; ``options.batch_inline_max_bytes``) the requests go inline, else in a JSONL input file.  No
#: request count limit is documented (UNCONFIRMED): OpenAI's, 50,000, bounds a batch here too.
INLINE_MAX = 19 * 1024 * 1024
MAX_REQUESTS, MAX_BYTES = 50_000, 1900 * 1024 * 1024
#: Inline results come back inside the batch's status reply (``batches.get``), which google-genai reads and parses
#: whole: a batch of more lines than this (``options.batch_inline_max_lines``) goes as an input file, whose results
#: come back as a file, streamed line by line (batch_results.py).  16 2K images: about 200 MB of reply.
INLINE_LINES = 16
#: Seconds an adoption may list batches before it gives up for this run (creating nothing).
ADOPT_S = 600.0
SUCCEEDED = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_PARTIALLY_SUCCEEDED"})
ENDED = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED",
                   "JOB_STATE_PARTIALLY_SUCCEEDED"})
#: google.rpc.Code values of a line's error worth another try: UNAVAILABLE 14, RESOURCE_EXHAUSTED 8,
#: DEADLINE_EXCEEDED 4, INTERNAL 13 (and their HTTP equivalents, should a line carry those).
RETRYABLE_CODES = frozenset({4, 8, 13, 14, 429, 500, 503, 504})
BATCH_NAME = re.compile(r"batches/[A-Za-z0-9_-]{1,200}")
FILE_NAME = re.compile(r"files/[a-z0-9-]{1,100}")
DISPLAY_NAME = re.compile(r"hypeedit-[0-9a-f]{32}")
#: A Files API upload's ``uri``: ``https://…/files/<id>`` (google-genai extracts the id with ``[a-z0-9]+``,
#: docs/reference/providers.md 11.5); http only for a base URL moved to loopback.
FILE_URI = re.compile(r"https?://[^\s/]{1,255}/[^\s]{0,200}files/[a-z0-9-]{1,100}")


class GeminiBatch:
    """The ``Backend`` of one Gemini image model (providers/batching.py)."""

    max_requests, max_bytes = MAX_REQUESTS, MAX_BYTES

    def __init__(self, provider: GeminiBatchProvider):
        self.provider = provider
        self.inline_max = int(provider.spec.options.get("batch_inline_max_bytes", INLINE_MAX))
        self.inline_lines = int(provider.spec.options.get("batch_inline_max_lines", INLINE_LINES))
        self._lines: dict[str, int] = {}  # a batch's line count (its name -> lines), for its status reply's cap
        self._unnamed: list[str] = []  # lines of the last results file read that named no key
        self._hooked = False  # cap_poll is on the session's client (made lazily, under the provider's lock)
        self.what = f"gemini batch {provider.spec.provider_model}"
        self.references = Uploads(uploads_folder(provider.runtime.state_dir, provider.route), FILE_URI)
        self._last: Any = None

    @property
    def client(self) -> Any:
        return self.provider.session.client

    def reference_part(self, path: Any, mime: str) -> Any:
        """A reference as a ``fileData`` part, uploaded once per run (batch_uploads.py)."""
        _, types, _ = import_genai()

        def upload() -> str:
            uploaded = call(lambda: self.client.files.upload(
                file=str(path), config=types.UploadFileConfig(mime_type=mime, display_name=path.name)),
                what=self.what, error=ProviderError)
            uri = getattr(uploaded, "uri", None)
            if not isinstance(uri, str) or not FILE_URI.fullmatch(uri):
                raise ProviderError(f"{self.what}: the upload's reply has no file uri", retryable=True)
            return uri

        return types.Part.from_uri(file_uri=self.references.id_of(path.read_bytes(), upload), mime_type=mime)

    # ------------------------------------------------------------------ batches
    def submit(self, lines: list[Line]) -> str:
        display = f"hypeedit-{uuid.uuid4().hex}"
        inline = sum(line.size for line in lines) <= self.inline_max and len(lines) <= self.inline_lines
        source: Any = [line.body for line in lines] if inline else self._input_file(lines, display)
        input_id = None if inline else source
        for line in lines:  # before the batch exists: a kill now leaves a name to look for, never a second batch
            line.journal.submitted(id=line.key, kind="batch", display_name=display, input_file_id=input_id,
                                   custom_id=line.key, lines=len(lines))
        try:
            name = self._create(source, display)
        except ProviderError as exc:
            if not exc.reply_lost:  # Google answered with an error: no batch was made
                for line in lines:
                    line.journal.forget()
            raise
        self._lines[name] = len(lines)
        for line in lines:
            line.journal.submitted(id=line.key, kind="batch", display_name=display, input_file_id=input_id,
                                   custom_id=line.key, batch_id=name, lines=len(lines))
        return name

    def _create(self, source: Any, display: str) -> str:
        """``batches.create`` (sent once: ``:batchGenerateContent`` is a paid path, genai_client.py) from inline
        requests or an uploaded input file's name.  A reply that came and cannot be read (not JSON, not the
        documented shape, no batch name) may stand for a batch made: ``reply_lost``, so the lines stay journaled
        with the display name and the next attempt adopts it; only an answered error (an HTTP status) forgets."""
        _, _, genai_errors = import_genai()

        def create() -> Any:
            try:
                return self.client.batches.create(model=self.provider.spec.provider_model, src=source,
                                                  config={"display_name": display})
            except (genai_errors.APIError, httpx.HTTPError):
                raise
            except Exception as exc:  # noqa: BLE001 - anything else happened reading a 2xx reply
                raise self._unreadable_create(type(exc).__name__) from None

        job = call(create, what=self.what, error=ProviderError)
        name = str(getattr(job, "name", "") or "")
        if not BATCH_NAME.fullmatch(name):
            raise self._unreadable_create("no batch name")
        return name

    def _unreadable_create(self, why: str) -> ProviderError:
        return ProviderError(f"{self.what}: the batch's create answered, but its reply cannot be read ({why}); the "
                             "batch may exist, so its lines stay journaled with its display name and the next run "
                             "adopts it (never creates a second one)", retryable=False, reply_lost=True)

    def _input_file(self, lines: list[Line], display: str) -> str:
        """Lines past the inline limit go in a JSONL input file, ``{"key", "request"}`` a line [T6], uploaded with
        the Files API as ``jsonl`` (the guide's mime type); its name (``files/…``)."""
        from google.genai import batches as genai_batches

        _, types, _ = import_genai()
        api = self.client._api_client
        text = "".join(json.dumps({"key": line.key, "request": rest_request(genai_batches, api, line.body)}) + "\n"
                       for line in lines)
        uploaded = call(lambda: self.client.files.upload(
            file=io.BytesIO(text.encode()), config=types.UploadFileConfig(mime_type="jsonl", display_name=display)),
            what=self.what, error=ProviderError)
        name = str(getattr(uploaded, "name", "") or "")
        if not FILE_NAME.fullmatch(name):
            raise ProviderError(f"{self.what}: the input file's upload has no file name", retryable=True)
        return name

    def adopt(self, job: dict[str, Any]) -> str:
        """The batch created with the journaled display name; else, for an input file, one created from it now;
        "" when there is neither (inline requests never sent: nothing billed).  Every page of ``batches.list`` is
        read (its order is not documented, so no creation time ends it early), for at most ``ADOPT_S`` seconds:
        out of time, nothing is created and the line stays journaled for the next attempt."""
        display = job.get("display_name")
        started = time.monotonic()
        pager = call(lambda: self.client.batches.list(config={"page_size": 100}), what=self.what, error=ProviderError)
        batches = iter(pager)
        while True:
            if time.monotonic() - started > ADOPT_S:
                raise ProviderError(f"{self.what}: looked for the batch named {display} for {ADOPT_S:g} s without "
                                    "reaching the end of the list; nothing was created (it may exist): the line "
                                    "stays journaled and the next run looks again", retryable=True)
            batch = call(lambda: next(batches, None), what=self.what, error=ProviderError)
            if batch is None:
                break
            if getattr(batch, "display_name", None) == display and BATCH_NAME.fullmatch(str(batch.name)):
                self.expect({**job, "batch_id": str(batch.name)})
                return str(batch.name)
        source = job.get("input_file_id")
        return self._create(source, str(display)) if isinstance(source, str) and FILE_NAME.fullmatch(source) else ""

    def expect(self, job: dict[str, Any]) -> None:
        """A journaled batch's line count, for the cap of its status reply (``cap_poll``)."""
        lines, name = job.get("lines"), job.get("batch_id")
        if isinstance(name, str) and isinstance(lines, int) and not isinstance(lines, bool) and lines > 0:
            self._lines[name] = max(self._lines.get(name, 0), lines)

    def cap_poll(self, request: httpx.Request) -> None:
        """An httpx request hook: ``batches.get`` carries inline results (one image each) inside the status reply,
        so its cap is one image reply per line of the batch (its journaled count; ``inline_lines`` when it is not
        known), not one image reply (the session's cap)."""
        if request.method != "GET":
            return
        name = request.url.path.partition("/batches/")[2]
        if name and "/" not in name:
            lines = self._lines.get(f"batches/{name}", self.inline_lines)
            mark(request, max_bytes=lines * inline_cap(image_cap_of(self.provider.spec.options)) + JSON_CAP)

    def poll(self, batch_id: str) -> Status:
        if not self._hooked:  # the collector's thread, the one that polls
            http = self.provider.session.http
            http.event_hooks = {**http.event_hooks, "request": [*http.event_hooks["request"], self.cap_poll]}
            self._hooked = True
        batch = call(lambda: self.client.batches.get(name=batch_id), what=self.what, error=ProviderError)
        state = getattr(getattr(batch, "state", None), "value", None) or str(getattr(batch, "state", ""))
        self._last = batch
        return Status(state, ended=state in ENDED, running=state == "JOB_STATE_RUNNING")

    def results(self, batch_id: str, status: Status) -> dict[str, Outcome]:
        """Each line's outcome by key: the inline responses of the status reply, or the lines of the responses
        file, streamed (batch_results.py).  A key two lines share is an error for it (neither is taken)."""
        dest = getattr(self._last, "dest", None)
        found: dict[str, list[tuple[int, Outcome]]] = {}
        self._unnamed = []
        for number, item in enumerate(getattr(dest, "inlined_responses", None) or [], 1):
            key = (item.metadata or {}).get("key")
            if isinstance(key, str):
                found.setdefault(key, []).append((number, Outcome(batch_id, reply=(item.response, _error_of(item.error)),
                                                                  billed=item.response is not None)))
        name = getattr(dest, "file_name", None)
        if name is not None:
            self._file_results(batch_id, name, found, self._lines.get(batch_id, MAX_REQUESTS))
        where = f"the responses file {name}" if name is not None else "the inline responses"
        return {key: seen[0][1] if len(seen) == 1 else
                Outcome(batch_id, problem=duplicated([n for n, _ in seen], where),
                        billed=any(o.billed for _, o in seen))
                for key, seen in found.items()}

    def _file_results(self, batch_id: str, name: Any, found: dict[str, list[tuple[int, Outcome]]],
                      lines: int) -> None:
        """The lines of a batch's responses file (``{"key", "response" | "error"}``), streamed into a spool; the
        file's name must be a Files API name (``files/<id>``): anything else (a path, an URL) is not fetched."""
        if not isinstance(name, str) or not FILE_NAME.fullmatch(name):
            raise ProviderError(redact(f"{self.what}: batch {batch_id} names its responses file {str(name)[:120]!r}, "
                                       "not a Files API name (files/<id>); it was not fetched (the key goes only "
                                       "to the API's own paths). Its lines were billed: they stay journaled, and "
                                       "the next run asks again"), retryable=False)
        cap = inline_cap(image_cap_of(self.provider.spec.options))
        spool = Spool(self.provider.runtime.downloads_dir())
        for entry in index(self._download(name, cap, lines), cap=cap, spool=spool, file=f"file {name}",
                           key_of=lambda value: value.get("key")):
            if entry.key is None:
                self._unnamed.append(str(entry.problem))
                continue
            if entry.problem is not None:  # a response line that cannot be read: billed, as every line with one
                outcome = Outcome(batch_id, problem=entry.problem, billed=True)
            else:
                value = entry.value or {}
                billed = isinstance(value.get("response"), dict)
                outcome = Outcome(batch_id, reply=(entry.line, _error_of(value.get("error"))), billed=billed)
            found.setdefault(entry.key, []).append((entry.number, outcome))

    def _download(self, name: str, cap: int, lines: int) -> Iterator[bytes]:
        """The responses file as it arrives (``GET {base}/v1beta/{name}:download?alt=media``, the request
        google-genai's ``files.download`` sends), through the session's client: bounded by one image reply per
        line of the batch, each line by one."""
        url = f"{base_url('gemini', DEFAULT_BASE_URL)}/{API_VERSION}/{name}:download"
        extensions = with_options(None, stream=True, max_bytes=lines * cap + JSON_CAP)
        http = self.provider.session.http
        try:
            with http.stream("GET", url, params={"alt": "media"}, extensions=extensions,
                             headers={"x-goog-api-key": key_for("gemini", GEMINI_KEY_ENV)}) as response:
                if not response.is_success:
                    response.read()
                    raise_for_status(response, route=self.provider.route, model=self.provider.spec.name)
                yield from response.iter_bytes(CHUNK)
        except httpx.HTTPError as exc:
            raise transport_error(exc, route=self.provider.route, model=self.provider.spec.name) from None

    def missing_outcome(self, batch_id: str, status: Status) -> Outcome:
        """A line the ended batch does not name: an expired, cancelled or failed job returns nothing ("will not have
        any results"), so nothing to pay for; a job that succeeded (wholly or partly) ran its lines, so one it does
        not name may have been billed."""
        unread = f" (its results held {len(self._unnamed)} line(s) that name no key: {self._unnamed[0]})" \
            if self._unnamed else ""
        return Outcome(batch_id, missing=status.state + unread, billed=status.state in SUCCEEDED)


def _error_of(error: Any) -> dict[str, Any] | None:
    """A line's error (a google.rpc.Status: the SDK's ``JobError``, or the file's JSON) as ``{code, message}``."""
    if error is None:
        return None
    if isinstance(error, dict):
        return {"code": error.get("code"), "message": error.get("message")}
    return {"code": getattr(error, "code", None), "message": getattr(error, "message", None)}


# --------------------------------------------------------------------------- the adapter's side


def line_key(request: GenerationRequest) -> str:
    task = request.task
    return f"{task.split}/{task.task_id}/r{request.repeat:03d}"


def batch_generate(provider: GeminiBatchProvider, collector: Collector, backend: GeminiBatch,
                   request: GenerationRequest) -> Generation:
    key = line_key(request)
    job = request.call.journal.job
    if job is not None and job.get("kind") == "batch":
        _check_journaled(provider, request, job)
        backend.expect(job)
        outcome = collector.resume(Line(key, None, 0, request.call.journal), job)
    else:
        body = inlined_request(provider, backend, request, key)
        outcome = collector.buy(Line(key, body, len(body.model_dump_json(exclude_none=True)) + 64,
                                     request.call.journal))
    return generation_of(provider, request, outcome)


def inlined_request(provider: GeminiBatchProvider, backend: GeminiBatch, request: GenerationRequest, key: str) -> Any:
    """The synchronous request (the same contents and config) with the references by file uri."""
    _, types, _ = import_genai()
    parts = [types.Part.from_text(text=request.task.instruction)]
    parts += [backend.reference_part(image.path, image.mime) for image in provider.prepared(request)]
    return types.InlinedRequest(model=provider.spec.provider_model, contents=[types.Content(role="user", parts=parts)],
                                config=provider.request_config(request), metadata={"key": key})


def _check_journaled(provider: GeminiBatchProvider, request: GenerationRequest, job: dict[str, Any]) -> None:
    batch_id, input_id = job.get("batch_id"), job.get("input_file_id")
    if DISPLAY_NAME.fullmatch(str(job.get("display_name"))) and (batch_id is None or
                                                                 BATCH_NAME.fullmatch(str(batch_id))) \
            and (input_id is None or FILE_NAME.fullmatch(str(input_id))):
        return
    where = request.call.journal.source or "the candidate's record"
    raise ProviderError(f"{where}: the batch line journaled for gemini {provider.spec.provider_model} has no valid "
                        "batch name; nothing was sent. Delete its \"job\" entry if the record was edited: the next "
                        "run then buys the candidate again", retryable=False)


def rest_request(genai_batches: Any, api: Any, inlined: Any) -> dict[str, Any]:
    """An inlined request as the REST ``GenerateContentRequest`` of an input file's line: google-genai's own
    converter (``batches._InlinedRequest_to_mldev``, the one ``batches.create`` applies to inline requests; a
    private function of google-genai 3.6, so a test sends a file through the fake), so the file holds what the
    inline path sends; the model is the batch's."""
    from google.genai import _common

    converted = genai_batches._InlinedRequest_to_mldev(api, inlined)
    # then as batches.create itself encodes a request body (``_common.convert_to_dict``,
    # ``encode_unserializable_types``): pass-through objects (fileData) become plain JSON
    request = _common.encode_unserializable_types(_common.convert_to_dict(dict(converted.get("request") or {})))
    request.pop("model", None)
    return request


def _rebuy(request: GenerationRequest, why: str) -> None:
    job = request.call.journal.job or {}
    request.call.journal.submitted(**{**job, "cost": 0.0})
    raise JobExpired(f"gemini batch line {job.get('id')}: {why}; nothing of it was billed, so it is bought again",
                     retryable=True)


def generation_of(provider: GeminiBatchProvider, request: GenerationRequest, outcome: Outcome) -> Generation:
    """The line's answer as the sync path's outcome (gemini.take_image: the image, or a Refusal)."""
    what = f"gemini {provider.spec.provider_model} (batch {outcome.batch_id}, line {line_key(request)})"
    if outcome.problem is not None:  # every line with a response was billed: not bought again
        raise ProviderError(f"{what}: route {provider.route}: the line the batch returned for this candidate cannot "
                            f"be read: {outcome.problem}; it was billed, so it is not bought again: it stays "
                            "journaled", retryable=False)
    if outcome.reply is None:
        if outcome.billed:
            raise ProviderError(f"{what}: the batch ended {outcome.missing} without a line for this candidate; it "
                                "ran its lines, so this one may have been billed: it is not bought again (it stays "
                                "journaled)", retryable=False)
        _rebuy(request, f"the batch ended {outcome.missing} without it" if outcome.batch_id
               else "its batch was never created")
    response, error = outcome.reply
    if response is None:
        request.call.journal.forget()  # no response, nothing billed: the next attempt buys it in a new batch
        code = error.get("code") if isinstance(error, dict) else None
        message = str(error.get("message") or "")[:300] if isinstance(error, dict) else ""
        raise ProviderError(redact(f"{what}: the line failed: code {code}: {message or 'no message'}"),
                            retryable=code in RETRYABLE_CODES)
    with LINE_WORK:  # a few lines in memory at a time, whatever the batch's size (batch_results.py)
        if isinstance(response, SpooledLine):
            response = _parsed(response.load().get("response"))
        previews: list[Preview] = []  # the signals' copy, made by the check's decode: the file is not decoded again
        try:
            image, ext = provider.take_image(response, what, previews)
        except Refusal as exc:
            exc.tier = "batch"
            raise
        generation = provider.generation_of(request, response, image, ext, previews[0] if previews else None)
        # on disk before the next line is read: the candidate holds a path until it is saved (batch_results.land)
        generation.image = land(image, request.call.landing or provider.runtime.downloads_dir())
    generation.cost = provider.spec.price_at("batch") if not provider.priced_model() else \
        round(generation.cost * provider.spec.tier_factor("batch"), 6)
    generation.tier = "batch"
    generation.extra["batch_id"] = outcome.batch_id
    return generation


def _parsed(response: Any) -> Any:
    """A responses-file line's ``response`` as google-genai's ``GenerateContentResponse`` (what the inline path
    gets); not the documented shape: an error (the line was billed: not bought again)."""
    _, types, _ = import_genai()
    return call(lambda: types.GenerateContentResponse._from_response(response=response, kwargs={}),
                what="gemini batch responses line", error=ProviderError)
