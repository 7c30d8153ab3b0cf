"""``gemini``: Gemini image models through google-genai (gemini-3-pro-image, gemini-3.1-flash-image,
gemini-nano-banana-2.1, gemini-3.1-flash-lite-image).

Wire format: docs/reference/providers.md section 1.  The request carries the instruction,
then the reference images inline; ``imageConfig`` asks for the model's 2K size
(``options.image_size``) at the allowed aspect ratio nearest the task's target
size.  Gemini refuses with HTTP 200: a ``blockReason``, a refusing
``finishReason`` or an answer without an image is a ``Refusal``; HTTP errors
are ``ProviderError``; a 404 ``NOT_FOUND`` (what a retired id such as
gemini-3-pro-image-preview answers, docs/reference/providers.md section 10) is final
(``ModelGone``, with the shutdown date and successor).  The image is the LAST
inline image that is not a thought: a thinking model may send up to two
interim images first.
"""

from __future__ import annotations

import io
import math
import threading
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import ConfigError, ImageError, ModelGone, ProviderError, Refusal
from ..retirements import model_gone
from ..secrets import redact
from ..transport.bounds import image_cap_of, inline_cap
from .base import Generation, GenerationRequest, Provider, sniff_image_ext
from .genai_client import (
    GEMINI_KEY_ENV,
    PAID_CALL_TIMEOUT_S,
    GenaiSession,
    call,
    enum_name,
    gemini_probe,
    import_genai,
)
from .images import IMAGE_WORK, ImageLimits, PixelsTooMany, PreparedImage, open_checked, prepare_references
from .runtime import Runtime

if TYPE_CHECKING:  # pragma: no cover
    from google.genai.types import GenerateContentConfig, Part

    from ..engine.limits import RouteLimiter
    from ..engine.preview import Preview
    from ..registry import ModelSpec
    from ..transport.http import RetryPolicy
    from ..transport.keycheck import KeyProbe
    from .batching import Collector
    from .gemini_batch import GeminiBatch

#: Aspect ratios gemini-3-pro-image-preview accepts.  google-genai documents the
#: first eight; 4:5 and 5:4 come from second-hand docs (UNCONFIRMED), so a
#: model's ``options.aspect_ratios`` can replace the list.
ASPECT_RATIOS = ("1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9")
#: gemini-3.1-flash-image adds 1:4, 4:1, 1:8, 8:1 and 9:21 (Google Cloud's model page,
#: docs.cloud.google.com/vertex-ai/generative-ai/docs/models/gemini/3-1-flash-image; on the Gemini API UNCONFIRMED).
#: gemini-nano-banana-2.1 takes 14: gemini-3-pro-image's ten plus 1:4, 4:1, 1:8, 8:1 (tanstack/ai-gemini 0.36.0
#: release notes, second-hand, UNCONFIRMED).
MODEL_ASPECT_RATIOS = {"gemini-3.1-flash-image": ASPECT_RATIOS + ("1:4", "4:1", "1:8", "8:1", "9:21"),
                       "gemini-nano-banana-2.1": ASPECT_RATIOS + ("1:4", "4:1", "1:8", "8:1")}
#: "512" is gemini-3.1-flash-image's smallest size (the same page; docs/reference/providers.md section 10, second-hand).
IMAGE_SIZES = ("512", "1K", "2K", "4K")
#: Models that take fewer sizes (all second-hand, UNCONFIRMED): gemini-nano-banana-2.1 does not accept "512" (tanstack,
#: as above); gemini-3.1-flash-lite-image makes 1K images only (Vercel AI Gateway's model page).
MODEL_IMAGE_SIZES = {"gemini-nano-banana-2.1": ("1K", "2K", "4K"), "gemini-3.1-flash-lite-image": ("1K",)}
#: USD per output image by image_size, and per input image, of the ids whose prices we know: gemini-3-pro-image
#: $0.134 at 1K/2K and $0.24 at 4K, about $0.0011 an input image (docs/reference/providers.md section 1, the preview's
#: prices, second-hand; the GA id's UNCONFIRMED); gemini-3.1-flash-image 747/1120/1680/2520 output tokens at
#: 512/1K/2K/4K and 1120 tokens an input image (the Cloud page above) at $60 and $0.50 per 1M tokens
#: (docs.ai.it.ufl.edu's listing: $0.067 a 1K image, UNCONFIRMED).
PRICES: dict[str, tuple[dict[str, float], float]] = {
    "gemini-3-pro-image": ({"1K": 0.134, "2K": 0.134, "4K": 0.24}, 0.0011),
    "gemini-3.1-flash-image": ({"512": 0.0448, "1K": 0.0672, "2K": 0.1008, "4K": 0.1512}, 0.00056),
}
#: docs/reference/providers.md: up to 14 reference images, PNG/JPEG/WebP, inline payload <= 100 MB (20 MB before Jan 2026).
#: The 5 MB per image is ours (UNCONFIRMED as a Gemini limit): 14 such images stay under 100 MB in base64.
IMAGE_LIMITS = ImageLimits(max_count=14, max_bytes=5_000_000, formats=("png", "jpeg", "webp"), convert_to="png")
#: finishReason values that mean "no image for you" (docs/reference/providers.md section 1).
REFUSING_FINISH = frozenset({
    "NO_IMAGE", "SAFETY", "PROHIBITED_CONTENT", "RECITATION", "BLOCKLIST", "SPII", "OTHER",
    "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "IMAGE_OTHER",
})
_MIME = {"png": "image/png", "jpg": "image/jpeg", "webp": "image/webp"}
_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/jpg": "jpg", "image/webp": "webp"}


def nearest_aspect_ratio(width: int, height: int, allowed: Sequence[str] = ASPECT_RATIOS) -> str:
    """The allowed ``W:H`` closest to width/height, compared in log space (so 2:1 and 1:2 are equally far from 1:1)."""
    target = math.log(width / height)

    def distance(ratio: str) -> float:
        w, h = (float(x) for x in ratio.split(":"))
        return abs(math.log(w / h) - target)

    return min(allowed, key=distance)


class GeminiProvider(Provider):
    route = "gemini"
    key_env = GEMINI_KEY_ENV

    @staticmethod
    def take_image(response: Any, what: str, previews: list[Preview] | None = None) -> tuple[bytes, str]:
        """The reply's image, or a Refusal (module ``take_image``): the batch path (providers/gemini_batch.py)
        reads its lines through the provider it is given, as it does not import this module, which imports it."""
        return take_image(response, what, previews)

    def __init__(self, spec: ModelSpec, *, runtime: Runtime | None = None,
                 policy: RetryPolicy | None = None, limiter: RouteLimiter | None = None,
                 timeout_s: float | None = None):
        super().__init__(spec)
        # The run-wide retry policy, limits and image cache (the glue passes in the run's; made without one, a
        # runtime of its own, never another run's); policy and limiter given here win (tests).
        self.runtime = runtime if runtime is not None else Runtime()
        self.image_size = _image_size(spec)
        self.aspect_ratios = tuple(spec.options.get("aspect_ratios") or
                                   MODEL_ASPECT_RATIOS.get(spec.provider_model, ASPECT_RATIOS))
        self.timeout_s = float(timeout_s or spec.options.get("timeout_s") or PAID_CALL_TIMEOUT_S)
        self._policy, self._limiter = policy, limiter
        self._session: GenaiSession | None = None
        self._lock = threading.Lock()
        self._parts_cache: dict[str, list[Part]] = {}  # task_id -> prepared image parts (once per task, not per repeat)
        self._gone: ModelGone | None = None  # Google said this model id does not exist: no call can succeed
        self._batcher: "tuple[Collector, GeminiBatch] | None" = None

    @property
    def session(self) -> GenaiSession:
        # Built on first use, not in __init__: listing or checking models must not need a key.
        with self._lock:
            if self._session is None:
                deadline = self.spec.options.get("deadline_s")
                self._session = GenaiSession(timeout_s=self.timeout_s, policy=self._policy or self.runtime.policy,
                                             limiter=self._limiter or self.runtime.limiter_for(self.spec),
                                             # the image comes inline, as base64
                                             reply_cap=inline_cap(image_cap_of(self.spec.options)),
                                             deadline_s=None if deadline is None else float(deadline),
                                             transport=self.runtime.transport)
            return self._session

    def key_probe(self) -> KeyProbe:
        """Google's models.get of this model, free (genai_client.gemini_probe)."""
        return gemini_probe(f"route {self.route}", self.route, self.spec.provider_model)

    def generate(self, request: GenerationRequest) -> Generation:
        _, types, _ = import_genai()
        what = f"{self.route} {self.spec.provider_model}"  # the item's line names the candidate once
        if self._gone is not None:
            raise ModelGone(str(self._gone), status=self._gone.status)
        if self.tier == "batch":
            from .gemini_batch import batch_generate

            return batch_generate(self, *self.batcher(), request)
        contents = [types.Content(role="user", parts=[types.Part.from_text(text=request.task.instruction),
                                                      *self._reference_parts(request)])]
        try:
            with self.session.for_call(request.call.slots) as tied:  # the pool's slot: no second one for its requests
                config = self._config(request).model_copy(update=tied)
                response = call(lambda: self.session.client.models.generate_content(
                    model=self.spec.provider_model, contents=contents, config=config), what=what, error=ProviderError)
        except ProviderError as exc:
            if exc.status == 404:  # NOT_FOUND: the model id is unknown or retired (docs/reference/providers.md section 10)
                self._gone = model_gone(self.spec, str(exc).removeprefix(f"{what}: "), status=404)
                raise self._gone from None
            raise
        previews: list[Preview] = []
        image, ext = take_image(response, what, previews)
        return self.generation_of(request, response, image, ext, previews[0] if previews else None)

    def generation_of(self, request: GenerationRequest, response: Any, image: bytes, ext: str,
                      preview: Preview | None = None) -> Generation:
        """``preview``: the image's copy for the pixel signals, made while ``decoded`` checked it."""
        return Generation(image=image, ext=ext, cost=self.price_of_image(), provider_model=self.spec.provider_model,
                          seed=request.seed, request_id=getattr(response, "response_id", None),
                          extra=_extra(response, self._aspect_ratio(request), self.image_size), preview=preview)

    # ------------------------------------------------------------------ the batch tier (gemini_batch.py)
    @property
    def tier(self) -> str:
        """The tier this model is bought at: batch with --tier batch where models.yaml gives it a batch price."""
        return "batch" if self.runtime.tier == "batch" and self.spec.has_tier("batch") else "standard"

    def batcher(self) -> "tuple[Collector, GeminiBatch]":
        from .batching import collector_for
        from .gemini_batch import GeminiBatch

        with self._lock:
            if self._batcher is None:
                backend = GeminiBatch(self)
                self._batcher = (collector_for(backend, f"gemini {self.spec.provider_model}", self.spec.options,
                                               self.runtime.batches),
                                 backend)
            return self._batcher

    def priced_model(self) -> bool:
        """Whether PRICES knows this id (its price by size), else the model's list price stands."""
        return self.spec.provider_model in PRICES

    def request_config(self, request: GenerationRequest) -> GenerateContentConfig:
        return self._config(request)

    def prepared(self, request: GenerationRequest) -> tuple[PreparedImage, ...]:
        return prepare_references(request.references, IMAGE_LIMITS, self.runtime.images_dir(),
                                  task_id=request.task.task_id, route=self.route)

    def price_of_image(self) -> float:
        """The output image's price at the size asked for, where PRICES knows the id; else the model's price."""
        sizes, _ = PRICES.get(self.spec.provider_model, ({}, 0.0))
        return sizes.get(self.image_size, self.spec.price)

    def worst_case_cost(self, request: GenerationRequest) -> float:
        """The image at the size asked for plus each reference at the input-image price (PRICES), at this
        model's tier (the batch tier: half)."""
        if self.spec.provider_model not in PRICES:
            return self.spec.price_at(self.tier)
        per_reference = PRICES[self.spec.provider_model][1]
        standard = max(self.spec.price, self.price_of_image() + len(request.references) * per_reference)
        return round(standard * self.spec.tier_factor(self.tier), 6)

    def _config(self, request: GenerationRequest) -> GenerateContentConfig:
        _, types, _ = import_genai()
        config: GenerateContentConfig = types.GenerateContentConfig(
            # IMAGE only by default; options.response_modalities: [TEXT, IMAGE] works too, since
            # text parts in the answer are tolerated (the image is still the last non-thought one).
            response_modalities=list(self.spec.options.get("response_modalities") or ["IMAGE"]),
            image_config=types.ImageConfig(aspect_ratio=self._aspect_ratio(request), image_size=self.image_size),
            # generationConfig.seed is sent; whether the image model honours it is UNCONFIRMED.
            seed=request.seed,
        )
        return config

    def _aspect_ratio(self, request: GenerationRequest) -> str:
        return nearest_aspect_ratio(request.task.width, request.task.height, self.aspect_ratios)

    def _reference_parts(self, request: GenerationRequest) -> list[Part]:
        """The task's images as parts: prepared to Gemini's limits once per task x route (on disk, shared by
        workers), and kept in memory for the task's next repeats."""
        _, types, _ = import_genai()
        task_id = request.task.task_id
        parts = self._parts_cache.get(task_id)
        if parts is None:
            prepared = prepare_references(request.references, IMAGE_LIMITS, self.runtime.images_dir(),
                                          task_id=task_id, route=self.route)
            parts = [types.Part.from_bytes(data=image.read(), mime_type=image.mime) for image in prepared]
            # Tasks come one after another: keep only the current one (replaced whole, so a
            # concurrent call never sees a half-built cache).
            self._parts_cache = {task_id: parts}
        return parts

    def close(self) -> None:
        if self._batcher is not None:
            self._batcher[0].stop()
            self._batcher = None
        if self._session is not None:
            self._session.close()
            self._session = None


def _image_size(spec: ModelSpec) -> str:
    allowed = MODEL_IMAGE_SIZES.get(spec.provider_model, IMAGE_SIZES)
    size = str(spec.options.get("image_size", "2K")).upper()
    if size not in allowed:
        raise ConfigError(f"model {spec.name}: options.image_size {size!r} is not one of {', '.join(allowed)}"
                          f" (the sizes {spec.provider_model} takes)")
    return size


def image_part(data: bytes, where: str, media_resolution: dict[str, Any] | None = None) -> Part:
    """An inline image part (the judge's images); formats Gemini does not take are sent as PNG.
    ``media_resolution`` is the part's own level, e.g. ``{"level": "media_resolution_high"}``."""
    _, types, _ = import_genai()
    ext = sniff_image_ext(data)
    if ext is None:
        data, ext = as_png(data, where), "png"
    part: Part = types.Part.from_bytes(data=data, mime_type=_MIME[ext], media_resolution=media_resolution)
    return part


def as_png(data: bytes, where: str) -> bytes:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            buffer = io.BytesIO()
            image.convert("RGBA" if image.mode in ("RGBA", "LA", "P") else "RGB").save(buffer, format="PNG")
    except OSError as exc:
        raise ImageError(f"{where}: not an image Gemini can take ({exc})") from None
    return buffer.getvalue()


# --------------------------------------------------------------------------- the reply


def take_image(response: Any, what: str, previews: list[Preview] | None = None) -> tuple[bytes, str]:
    """The last non-thought image of the first candidate, as (bytes, ext); else a Refusal saying why.
    ``previews``: as ``decoded``."""
    request_id = getattr(response, "response_id", None)
    # Refusals cost 0: the image price is billed for an image returned; the input tokens of a
    # refused call (about $0.002) are not counted (whether Google bills them: UNCONFIRMED).
    if not response.candidates:
        reason = enum_name(getattr(getattr(response, "prompt_feedback", None), "block_reason", None))
        if reason is None:  # neither an answer nor a refusal: a broken reply, worth another try
            raise ProviderError(f"{what}: the reply has no candidates and no blockReason", retryable=True)
        raise Refusal(f"{what}: prompt blocked ({reason})", cost=0.0, request_id=request_id)
    candidate = response.candidates[0]
    finish = enum_name(candidate.finish_reason)
    if finish in REFUSING_FINISH or (finish or "").startswith("IMAGE_"):
        raise Refusal(f"{what}: finishReason {finish}", cost=0.0, request_id=request_id)
    part = last_image_part(candidate)
    image = part.inline_data if part is not None else None  # last_image_part returns a part with data, or None
    if image is None or not image.data:
        raise Refusal(f"{what}: answered without an image: {_text_excerpt(candidate)!r}", cost=0.0, request_id=request_id)
    return decoded(image.data, image.mime_type, what, request_id, previews)


def last_image_part(candidate: Any) -> Part | None:
    parts = getattr(getattr(candidate, "content", None), "parts", None) or []
    images = [p for p in parts if p.inline_data is not None and p.inline_data.data and not p.thought]
    return images[-1] if images else None


def _text_excerpt(candidate: Any) -> str:
    parts = getattr(getattr(candidate, "content", None), "parts", None) or []
    text = " ".join(p.text for p in parts if p.text and not p.thought).strip()
    return redact(text[:200]) if text else "(no text either)"


def decoded(data: bytes, mime: str | None, what: str, request_id: str | None,
            previews: list[Preview] | None = None) -> tuple[bytes, str]:
    """Check that the image decodes (a truncated file is a refusal, not a candidate; so is one of more pixels
    than images.MAX_IMAGE_PIXELS, never decoded: see adapter.decoded_ext) and name its format.  ``previews``: a
    list that receives the image's preview for the pixel signals (engine/signals.py), made from this decode: the
    candidate is not decoded again from its file to be measured."""
    try:
        # a 2K image decoded is 12 MB: a few at a time, as every adapter decodes (adapter.decoded_ext)
        with IMAGE_WORK, open_checked(io.BytesIO(data), "the returned image") as image:
            image.load()
            if previews is not None:
                from ..engine.signals import preview_of

                previews.append(preview_of(image))
    except PixelsTooMany as exc:
        raise Refusal(f"{what}: {exc}", cost=0.0, request_id=request_id) from None
    except Exception as exc:  # PIL raises OSError, SyntaxError, ValueError... for bad files
        raise Refusal(f"{what}: the returned image cannot be decoded ({type(exc).__name__})",
                      cost=0.0, request_id=request_id) from None
    # The bytes decide, not the declared mimeType ("always PNG" is UNCONFIRMED).
    ext = sniff_image_ext(data) or _EXT.get((mime or "").lower())
    if ext is None:
        data, ext = as_png(data, what), "png"
    return data, ext


def _extra(response: Any, aspect_ratio: str, image_size: str) -> dict[str, Any]:
    usage = getattr(response, "usage_metadata", None)
    tokens = {name: getattr(usage, name, None) for name in
              ("prompt_token_count", "candidates_token_count", "thoughts_token_count", "total_token_count")}
    return {"aspect_ratio": aspect_ratio, "image_size": image_size,
            "model_version": getattr(response, "model_version", None),
            "usage": {k: v for k, v in tokens.items() if v is not None}}
