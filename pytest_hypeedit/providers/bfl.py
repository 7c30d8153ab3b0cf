"""``bfl``: FLUX.2 [max] and FLUX 3 Image on Black Forest Labs (submit, then poll the returned ``polling_url``).

``BflProvider(spec)`` is a ``Flux3Provider`` for a ``flux-3`` model id: its request shape is another
(see ``Flux3Provider``); submitting, journaling and polling are the same.

Wire format: docs/reference/providers.md section 4.  References go as ``input_image``,
``input_image_2`` ... ``input_image_8`` (base64); width and height are the
task's aspect ratio at ``options.megapixels`` (default 1 MP, the paper's
$0.10 price point), multiples of 16.  The submit reply's ``cost`` (credits,
1 credit = $0.01) is the candidate's cost when present.

The job (id, polling URL, cost) is journaled right after the submit reply and
before the first poll (providers/polling.py), so a kill or a failed poll never
leads to a second submission: the next attempt resumes polling it.  The
submit itself is journaled as pending before it is sent (engine/journal.py):
BFL takes no client-chosen id or idempotency key (the id comes with the reply;
``webhook_url`` is the only correlation, black-forest-labs/skills
``webhook-integration.md``), so a submit whose reply is lost cannot be
resumed and counts as possibly paid.

Poll statuses (docs.bfl.ml/api_integration/errors.md, "Response Types", and
help.bfl.ai "Why did my request fail?"); every status but ``Pending`` is final:
  Pending            still processing: poll again
  Ready              download ``result.sample`` at once: a signed URL valid for 10 minutes
                     (black-forest-labs/skills bfl-api/references/code-examples/python-client.py)
  Request Moderated  input flagged before processing: a refusal, "Not charged" (help.bfl.ai)
  Content Moderated  output flagged after processing: a refusal, "Not charged" (help.bfl.ai)
  Task not found     "does not exist or has expired" (docs.bfl.ml): the result is gone -> JobExpired
  Error / Failed     processing failed: the job ends as an error naming it (BFL's own polling
                     examples stop on "Error"; "Failed" is the same end, docs/reference/providers.md section 4)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..transport.http import request_id_of
from ..transport.keycheck import KeyProbe
from .adapter import HttpProvider, nearest_ratio, size_at_pixels
from .base import Generation, GenerationRequest
from .images import ImageLimits
from .polling import JobPoller, resumed_job

if TYPE_CHECKING:  # pragma: no cover
    from ..registry import ModelSpec
    from .runtime import Runtime

USD_PER_CREDIT = 0.01
MAX_INPUTS = 8
#: Why a result URL that answers 403/404/410 is gone (docs/reference/providers.md section 4, [F2]).
RESULT_KEPT = "BFL's signed result URLs are valid for 10 minutes"
PENDING = "pending"
MODERATED = {"request moderated": "Request Moderated", "content moderated": "Content Moderated"}
FAILED = ("error", "failed")
GONE = "task not found"


#: FLUX.2 pricing in credits: (the first megapixel, each further megapixel), input images counted as processed
#: megapixels (black-forest-labs/skills skills/bfl-api/SKILL.md "Model Endpoints & Pricing"; docs.bfl.ai
#: quick_start/pricing; docs/reference/providers.md section 4 [F2]: [max] 1 MP text-to-image $0.07, 1 MP edit $0.10).
CREDITS = {"flux-2-max": (7.0, 3.0), "flux-2-pro": (3.0, 1.5), "flux-2-flex": (5.0, 5.0),
           "flux-2-klein-9b": (1.5, 0.2), "flux-2-klein-4b": (1.4, 0.1)}
#: How BFL rounds megapixels is not documented (UNCONFIRMED), so the worst case takes the larger of two
#: readings: fractional megapixels of 10^6 pixels, as BFL's resolution table counts them (1024x1024 = 1.05 MP,
#: skills bfl-api/references/endpoints.md), or each image rounded up to whole megapixels of 1024x1024, as fal and
#: Replicate bill FLUX.2 (second-hand: fal.ai/models/fal-ai/flux-2-max/edit/llms.txt and model pages).
MP, MP_BINARY = 1_000_000, 1024 * 1024


def credits_for(first: float, extra: float, pixels: list[int]) -> float:
    """Credits of one call whose images (output first, then the inputs) have these pixel counts, at its worst."""
    fractional = sum(pixels) / MP
    whole = sum(max(1, math.ceil(p / MP_BINARY)) for p in pixels)
    return first + extra * (max(fractional, whole) - 1)


def _status(reply: dict[str, Any]) -> str:
    return str(reply.get("status", "")).strip().lower().replace("_", " ")


class BflProvider(HttpProvider):
    route = "bfl"
    key_env = ("BFL_API_KEY",)
    provider = "bfl"
    default_base = "https://api.bfl.ai"
    # The hosts BFL documents for its API: the global api.bfl.ai, the regional api.eu.bfl.ai and api.us.bfl.ai,
    # the single-cluster api.eu1.bfl.ai and api.us1.bfl.ai; "Always use the polling_url returned ... It already
    # points at the region that handled your request" (docs.bfl.ai/api_integration/integration_guidelines,
    # help.bfl.ai "Which API endpoint should I use?").  Results come from delivery.*.bfl.ai (same pages): a
    # signed URL, fetched without the key.
    api_hosts = ("api.bfl.ai", "api.eu.bfl.ai", "api.us.bfl.ai", "api.eu1.bfl.ai", "api.us1.bfl.ai")
    inline_images = False  # JSON replies name the result's URL
    # Input megapixels are billed, so references are kept near 1 MP (4 MP is the output cap).
    image_limits = ImageLimits(max_count=MAX_INPUTS, max_pixels=1024 * 1024, max_bytes=20 * 1024 * 1024,
                               formats=("jpeg", "png"), convert_to="jpeg")
    # BFL ships no SDK; its reference client reads every request with a 30 s timeout (black-forest-labs/skills
    # bfl-api/references/code-examples/python-client.py ``_request_with_retry``): the submit answers at once.
    timeout = 30.0

    sends_seed = True

    def __new__(cls, spec: ModelSpec, *, runtime: Runtime | None = None) -> BflProvider:
        # One route, two request shapes: a flux-3 id gets its own adapter (the route table names this class).
        if cls is BflProvider and str(spec.provider_model).startswith("flux-3"):
            cls = Flux3Provider  # noqa: PLW0642 -- the route's class builds its flux-3 subclass instead
        return super().__new__(cls)

    def key_probe(self) -> KeyProbe:
        """BFL's credits, free: ``GET /v1/credits`` with the ``x-key`` header answers 401 or 403 to a wrong key."""
        return self.probe("GET", f"{self.base}/v1/credits", {"x-key": self.key},
                          doc="https://docs.bfl.ai/api-reference/get-the-users-credits")

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        job = resumed_job(self, request) or self.submit_job(request, what)
        poller = JobPoller(self, request, job["id"], what, default_wait=600, default_cap=3)
        result = self.wait_for_result(request, job, poller)
        data = poller.download(str(result["sample"]), keeps=RESULT_KEPT)
        cost = job.get("cost")  # BFL's own figure; without one, the credit formula's, never the bare list price
        cost = cost if isinstance(cost, (int, float)) else self.worst_case_cost(request)
        return self.generation(request, data, cost=cost, request_id=job["id"],
                               seed=result.get("seed", self.seed_sent(request)), width=job.get("width"),
                               height=job.get("height"), cost_credits=job.get("credits"), price=self.spec.price,
                               input_mp=job.get("input_mp"), output_mp=job.get("output_mp"),
                               resumed_job=request.call.journal.resumed or None)

    def worst_case_cost(self, request: GenerationRequest) -> float:
        """The credit formula at its worst (CREDITS, MP): the output at the size requested plus every reference
        as sent (BFL bills input megapixels).  A model not in CREDITS: its list price for every megapixel."""
        first, extra = CREDITS.get(self.spec.provider_model, (self.spec.price / USD_PER_CREDIT,) * 2)
        width, height = self.size(request)
        pixels = [width * height] + [image.width * image.height for image in self.references(request)]
        return max(self.spec.price, round(credits_for(first, extra, pixels) * USD_PER_CREDIT, 6))

    def seed_sent(self, request: GenerationRequest) -> int | None:
        return request.seed if self.sends_seed else None

    def size(self, request: GenerationRequest) -> tuple[int, int]:
        pixels = float(self.spec.options.get("megapixels", 1.0)) * 1_000_000
        return size_at_pixels(request.task.width, request.task.height, min(pixels, 4_000_000), multiple=16)

    def body(self, request: GenerationRequest) -> dict[str, Any]:
        width, height = self.size(request)
        body: dict[str, Any] = {"prompt": request.task.instruction, "seed": request.seed, "width": width,
                                "height": height, "output_format": str(self.spec.options.get("output_format", "png"))}
        if "safety_tolerance" in self.spec.options:
            body["safety_tolerance"] = int(self.spec.options["safety_tolerance"])
        for index, image in enumerate(self.references(request)):
            body["input_image" if index == 0 else f"input_image_{index + 1}"] = image.inline_base64()
        return body

    def submit_job(self, request: GenerationRequest, what: str) -> dict[str, Any]:
        """Submit, then journal the job before anything else can go wrong (the first poll included)."""
        submitted = self.submit(request, what)
        credits = submitted.get("cost")
        cost = round(credits * USD_PER_CREDIT, 6) if isinstance(credits, (int, float)) else None
        return request.call.journal.submitted(
            id=str(submitted.get("id") or submitted["polling_url"]), polling_url=str(submitted["polling_url"]),
            cost=cost, credits=credits, input_mp=submitted.get("input_mp"), output_mp=submitted.get("output_mp"),
            **self.shape(request))

    def shape(self, request: GenerationRequest) -> dict[str, Any]:
        """What the job asked for, journaled with it (the size)."""
        width, height = self.size(request)
        return {"width": width, "height": height}

    def submit(self, request: GenerationRequest, what: str) -> dict[str, Any]:
        response = self.call("POST", f"{self.base}/v1/{self.spec.provider_model}", json=self.body(request),
                             headers={"x-key": self.key}, submits=True, request=request)
        self.check(response)
        reply = self.json_of(response, what)
        if not isinstance(reply, dict) or not reply.get("polling_url"):
            raise self.error(f"{what}: the submit reply has no polling_url (request id {request_id_of(response)})")
        return reply

    def wait_for_result(self, request: GenerationRequest, job: dict[str, Any], poller: JobPoller) -> dict[str, Any]:
        """Poll the journaled URL (always the returned one: it names the right cluster) until a final status."""
        url = poller.api_url(job.get("polling_url"), "polling_url")
        while True:
            reply = poller.read(lambda: self.poll(url, poller.what, poller.request))
            status = _status(reply)
            if status == "ready":
                result = reply.get("result") or {}
                if not result.get("sample"):
                    raise self.refusal(request, "status Ready without result.sample", request_id=job["id"],
                                       cost=job.get("cost") or 0.0)
                return result
            if not self.waiting(status):
                raise self.final_status(request, reply, status, poller)
            poller.wait(f"{reply.get('status')!r}")

    @staticmethod
    def waiting(status: str) -> bool:
        """Whether a (lower-cased) poll status means "still working": FLUX.2 has only ``Pending``."""
        return status == PENDING

    def final_status(self, request: GenerationRequest, reply: dict[str, Any], status: str,
                     poller: JobPoller) -> Exception:
        """The exception for a final status other than Ready (the list in the module docstring)."""
        details = str(reply.get("details") or reply.get("error") or "")[:300]
        if status in MODERATED:
            return self.refusal(request, f"{MODERATED[status]}: {details}", request_id=poller.job_id)
        if status == GONE:
            return poller.expired("BFL answered 'Task not found' (the task does not exist or has expired; "
                                  "BFL keeps results 10 minutes)")
        shown = reply.get("status")
        why = f"BFL status {shown!r}" + (f": {details}" if details else "")
        if status in FAILED:
            return poller.fail(why)
        return poller.fail(f"{why}, not one BFL documents (only 'Pending' is waited on)")

    def poll(self, url: str, what: str, request: GenerationRequest | None = None) -> dict[str, Any]:
        response = self.call("GET", url, headers={"x-key": self.key}, request=request)
        if response.status_code == 404:  # as "Task not found" (UNCONFIRMED whether BFL answers so): never a
            return {"status": "Task not found"}  # job left journaled that no rerun can ever read
        self.check(response)
        reply = self.json_of(response, what)
        if not isinstance(reply, dict) or not isinstance(reply.get("status"), str):
            raise self.error(f"{what}: the poll reply has no status: {str(reply)[:120]!r}", retryable=True)
        return reply


# --------------------------------------------------------------------------- FLUX 3 Image

#: ``aspect_ratio`` values of POST /v1/flux-3-image (besides ``auto``): docs.comfy.org's Comfy Router page of
#: bfl/flux-3-image, generated from the schema it validates calls with before they reach BFL, and a public
#: client of the endpoint (find_string id 70162863168); second-hand, BFL's own page not in our sources.
FLUX3_RATIOS = ("21:9", "2:1", "16:9", "3:2", "7:5", "4:3", "5:4", "1:1", "4:5", "3:4", "5:7", "2:3", "9:16",
                "1:2", "9:21")
#: ``resolution`` tiers and their price per image (BFL's pricing page of 2026-10-01 as that client copies it;
#: 1.5k is accepted but unpriced there), UNCONFIRMED.
FLUX3_PRICES = {"768sq": 0.041, "1k": 0.048, "1.5k": None, "2k": 0.10, "4k": 0.607}
#: Statuses that end a job (the FLUX.2 list); anything else is an interim status and is polled again (the
#: endpoint reports statuses besides Pending while it works, docs/reference/providers.md section 10: names UNCONFIRMED).
FLUX3_FINAL = frozenset({"ready", GONE, *MODERATED, *FAILED})


class Flux3Provider(BflProvider):
    """FLUX 3 Image: ``POST {base}/v1/flux-3-image`` with ``prompt``, ``images`` (1-10, base64 or URL, each
    256x256 to 16 MP, at most 20 MB of base64; inputs are scaled to the nearest tier up to 2k),
    ``aspect_ratio`` (the nearest of ``FLUX3_RATIOS`` to the task's), ``resolution`` (``options.resolution``,
    default ``2k``: the $0.10 tier, flux-2-max's price point), ``grounding`` (web and image search before
    generating, on by default: sent ``false``, since an edit of the given images needs no search;
    ``options.grounding`` turns it on) and ``safety_tolerance`` (0-4, from ``options``).  Nothing else: the
    schema is strict and answers 422 to ``seed``, ``width``/``height``, ``output_format`` or ``input_image_N``
    (docs/reference/providers.md section 10; Comfy Router's copy of the schema).  No seed, so none is recorded."""

    image_limits = ImageLimits(max_count=10, min_side=256, max_pixels=4 * 1024 * 1024, max_bytes=14 * 1024 * 1024,
                               formats=("jpeg", "png"), convert_to="jpeg")
    sends_seed = False

    def __init__(self, spec: ModelSpec, *, runtime: Runtime | None = None) -> None:
        super().__init__(spec, runtime=runtime)
        self.resolution = str(spec.options.get("resolution", "2k")).lower()
        if self.resolution not in FLUX3_PRICES:
            from ..errors import ConfigError

            raise ConfigError(f"model {spec.name}: options.resolution {self.resolution!r} is not one of "
                              f"{', '.join(FLUX3_PRICES)}")

    def aspect_ratio(self, request: GenerationRequest) -> str:
        return nearest_ratio(request.task.width, request.task.height, FLUX3_RATIOS)

    def body(self, request: GenerationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"prompt": request.task.instruction,
                                "images": [image.inline_base64() for image in self.references(request)],
                                "aspect_ratio": self.aspect_ratio(request), "resolution": self.resolution,
                                "grounding": bool(self.spec.options.get("grounding", False))}
        if "safety_tolerance" in self.spec.options:
            body["safety_tolerance"] = int(self.spec.options["safety_tolerance"])
        return body

    def shape(self, request: GenerationRequest) -> dict[str, Any]:
        return {"aspect_ratio": self.aspect_ratio(request), "resolution": self.resolution}

    @staticmethod
    def waiting(status: str) -> bool:
        return status not in FLUX3_FINAL

    def worst_case_cost(self, request: GenerationRequest) -> float:
        """The tier's price (whether input images are billed too is UNCONFIRMED: not counted)."""
        return max(self.spec.price, FLUX3_PRICES.get(self.resolution) or 0.0)
