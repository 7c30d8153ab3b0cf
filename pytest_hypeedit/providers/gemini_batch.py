"""``gemini`` on the batch tier (``--tier batch``): image models through Gemini's Batch mode at half price.

Wire format: providers.md sections 11.4 and 11.5, spoken through google-genai itself (its ``batches`` and
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
  PARTIALLY_SUCCEEDED (``done`` alone misses the last, providers.md 11.4);
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
import uuid
from typing import TYPE_CHECKING, Any

from ..errors import JobExpired, ProviderError
from .base import Generation, GenerationRequest
from .batch_uploads import Uploads, uploads_folder
from .batching import Collector, Line, Outcome, Status
from .genai_client import call, import_genai

if TYPE_CHECKING:  # pragma: no cover
    from .gemini import GeminiProvider

#: "the whole create request under 20 MB" inline, an input file up to 2 GB [T6]: up to INLINE_MAX (room left
#: for the envelope; ``options.batch_inline_max_bytes``) the requests go inline, else in a JSONL input file.  No
#: request count limit is documented (UNCONFIRMED): OpenAI's, 50,000, bounds a batch here too.
INLINE_MAX = 19 * 1024 * 1024
MAX_REQUESTS, MAX_BYTES = 50_000, 1900 * 1024 * 1024
ENDED = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED",
                   "JOB_STATE_PARTIALLY_SUCCEEDED"})
#: google.rpc.Code values of a line's error worth another try: UNAVAILABLE 14, RESOURCE_EXHAUSTED 8,
#: DEADLINE_EXCEEDED 4, INTERNAL 13 (and their HTTP equivalents, should a line carry those).
RETRYABLE_CODES = frozenset({4, 8, 13, 14, 429, 500, 503, 504})
BATCH_NAME = re.compile(r"batches/[A-Za-z0-9_-]{1,200}")
FILE_NAME = re.compile(r"files/[a-z0-9-]{1,100}")
DISPLAY_NAME = re.compile(r"hypeedit-[0-9a-f]{32}")
#: A Files API upload's ``uri``: ``https://…/files/<id>`` (google-genai extracts the id with ``[a-z0-9]+``,
#: providers.md 11.5); http only for a base URL moved to loopback.
FILE_URI = re.compile(r"https?://[^\s/]{1,255}/[^\s]{0,200}files/[a-z0-9-]{1,100}")


class GeminiBatch:
    """The ``Backend`` of one Gemini image model (providers/batching.py)."""

    max_requests, max_bytes = MAX_REQUESTS, MAX_BYTES

    def __init__(self, provider: "GeminiProvider"):
        self.provider = provider
        self.inline_max = int(provider.spec.options.get("batch_inline_max_bytes", INLINE_MAX))
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
        inline = sum(line.size for line in lines) <= self.inline_max
        source: Any = [line.body for line in lines] if inline else self._input_file(lines, display)
        input_id = None if inline else source
        for line in lines:  # before the batch exists: a kill now leaves a name to look for, never a second batch
            line.journal.submitted(id=line.key, kind="batch", display_name=display, input_file_id=input_id,
                                   custom_id=line.key)
        try:
            name = self._create(source, display)
        except ProviderError as exc:
            if not exc.reply_lost:  # Google answered with an error: no batch was made
                for line in lines:
                    line.journal.forget()
            raise
        for line in lines:
            line.journal.submitted(id=line.key, kind="batch", display_name=display, input_file_id=input_id,
                                   custom_id=line.key, batch_id=name)
        return name

    def _create(self, source: Any, display: str) -> str:
        """``batches.create`` (sent once: ``:batchGenerateContent`` is a paid path, genai_client.py) from inline
        requests or an uploaded input file's name."""
        job = call(lambda: self.client.batches.create(model=self.provider.spec.provider_model, src=source,
                                                      config={"display_name": display}),
                   what=self.what, error=ProviderError)
        name = str(getattr(job, "name", "") or "")
        if not BATCH_NAME.fullmatch(name):
            raise ProviderError(f"{self.what}: the batch's reply has no batch name", retryable=False)
        return name

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
        "" when there is neither (inline requests never sent: nothing billed)."""
        display = job.get("display_name")
        for batch in call(lambda: list(self.client.batches.list()), what=self.what, error=ProviderError):
            if getattr(batch, "display_name", None) == display and BATCH_NAME.fullmatch(str(batch.name)):
                return str(batch.name)
        source = job.get("input_file_id")
        return self._create(source, str(display)) if isinstance(source, str) and FILE_NAME.fullmatch(source) else ""

    def poll(self, batch_id: str) -> Status:
        batch = call(lambda: self.client.batches.get(name=batch_id), what=self.what, error=ProviderError)
        state = getattr(getattr(batch, "state", None), "value", None) or str(getattr(batch, "state", ""))
        self._last = batch
        return Status(state, ended=state in ENDED, running=state == "JOB_STATE_RUNNING")

    def results(self, batch_id: str, status: Status) -> dict[str, Outcome]:
        dest = getattr(self._last, "dest", None)
        outcomes: dict[str, Outcome] = {}
        for item in getattr(dest, "inlined_responses", None) or []:
            key = (item.metadata or {}).get("key")
            if isinstance(key, str):
                outcomes[key] = Outcome(batch_id, reply=(item.response, item.error), billed=item.response is not None)
        name = getattr(dest, "file_name", None)
        if isinstance(name, str) and name:
            outcomes.update(self._file_results(batch_id, name))
        return outcomes

    def _file_results(self, batch_id: str, name: str) -> dict[str, Outcome]:
        _, types, _ = import_genai()
        data = call(lambda: self.client.files.download(file=name), what=self.what, error=ProviderError)
        outcomes = {}
        for text in bytes(data).decode("utf-8", "replace").splitlines():
            line = json.loads(text) if text.strip() else None
            if isinstance(line, dict) and isinstance(line.get("key"), str):
                response = line.get("response")
                parsed = types.GenerateContentResponse._from_response(response=response, kwargs={}) \
                    if isinstance(response, dict) else None
                outcomes[line["key"]] = Outcome(batch_id, reply=(parsed, line.get("error")), billed=parsed is not None)
        return outcomes

    def missing_outcome(self, batch_id: str, status: Status) -> Outcome:
        return Outcome(batch_id, missing=status.state, billed=False)


# --------------------------------------------------------------------------- the adapter's side


def line_key(request: GenerationRequest) -> str:
    task = request.task
    return f"{task.split}/{task.task_id}/r{request.repeat:03d}"


def batch_generate(provider: "GeminiProvider", collector: Collector, backend: GeminiBatch,
                   request: GenerationRequest) -> Generation:
    key = line_key(request)
    job = request.journal.job
    if job is not None and job.get("kind") == "batch":
        _check_journaled(provider, request, job)
        outcome = collector.resume(Line(key, None, 0, request.journal), job)
    else:
        body = inlined_request(provider, backend, request, key)
        outcome = collector.buy(Line(key, body, len(body.model_dump_json(exclude_none=True)) + 64,
                                     request.journal))
    return generation_of(provider, request, outcome)


def inlined_request(provider: "GeminiProvider", backend: GeminiBatch, request: GenerationRequest, key: str) -> Any:
    """The synchronous request (the same contents and config) with the references by file uri."""
    _, types, _ = import_genai()
    parts = [types.Part.from_text(text=request.task.instruction)]
    parts += [backend.reference_part(image.path, image.mime) for image in provider.prepared(request)]
    return types.InlinedRequest(model=provider.spec.provider_model, contents=[types.Content(role="user", parts=parts)],
                                config=provider.request_config(request), metadata={"key": key})


def _check_journaled(provider: "GeminiProvider", request: GenerationRequest, job: dict[str, Any]) -> None:
    batch_id, input_id = job.get("batch_id"), job.get("input_file_id")
    if DISPLAY_NAME.fullmatch(str(job.get("display_name"))) and (batch_id is None or
                                                                 BATCH_NAME.fullmatch(str(batch_id))) \
            and (input_id is None or FILE_NAME.fullmatch(str(input_id))):
        return
    where = request.journal.source or "the candidate's record"
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
    job = request.journal.job or {}
    request.journal.submitted(**{**job, "cost": 0.0})
    raise JobExpired(f"gemini batch line {job.get('id')}: {why}; nothing of it was billed, so it is bought again",
                     retryable=True)


def generation_of(provider: "GeminiProvider", request: GenerationRequest, outcome: Outcome) -> Generation:
    """The line's answer as the sync path's outcome (gemini.take_image: the image, or a Refusal)."""
    what = f"gemini {provider.spec.provider_model} (batch {outcome.batch_id})"
    if outcome.reply is None:
        _rebuy(request, f"the batch ended {outcome.missing} without it" if outcome.batch_id
               else "its batch was never created")
    response, error = outcome.reply
    if response is None:
        request.journal.forget()  # no response, nothing billed: the next attempt buys it in a new batch
        code = error.get("code") if isinstance(error, dict) else None
        message = str(error.get("message") or "")[:300] if isinstance(error, dict) else ""
        raise ProviderError(f"{what}: the line failed: {code} {message}", retryable=code in RETRYABLE_CODES)
    image, ext = provider.take_image(response, what)
    generation = provider.generation_of(request, response, image, ext)
    generation.cost = provider.spec.price_at("batch") if not provider.priced_model() else \
        round(generation.cost * provider.spec.tier_factor("batch"), 6)
    generation.tier = "batch"
    generation.extra["batch_id"] = outcome.batch_id
    return generation
