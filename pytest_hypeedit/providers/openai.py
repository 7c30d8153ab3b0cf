"""``openai``: gpt-image-1.5 and gpt-image-2 through ``POST {base}/images/edits`` (multipart).

Wire format: docs/reference/providers.md sections 3 and 10; what differs per model is in openai_models.py.  Every
reference goes as one ``image[]`` part; quality and input fidelity come from the model's options
(high/high in models.yaml), input fidelity only to a model that takes it (gpt-image-2 ignores it).
The size: for gpt-image-1.5 the listed one nearest the task's aspect ratio; for gpt-image-2 the task's
own aspect ratio (within 1:3..3:1) at ``options.pixels`` (default 1536 x 1024's area, so both models
make images of the same pixel count), sides multiples of 16.  The image comes back as ``b64_json``.
``moderation_blocked`` (HTTP 400) is a refusal; 404 ``model_not_found`` (the id does not exist or was
retired, docs/reference/providers.md section 10) is final (``ModelGone``).  The cost is computed from the reply's
``usage`` at the model's token prices, else the list price of its size and quality.  The edits API
takes no seed, so none is sent or recorded.

The edit is a paid request sent once (``submits=True``): a reply lost to a read
timeout or a dropped connection is not sent again (engine/journal.py).  OpenAI
takes no idempotency key here: openai-python sets ``_idempotency_header = None``
(``_base_client.py``), so it sends none.  The journaled call id goes as
``X-Client-Request-Id``, which OpenAI's API reference describes as a caller's own
request id that it logs (UNCONFIRMED: not in the SDK or our other sources); it
names a lost call, it does not prevent a second charge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..transport.http import error_details, request_id_of
from ..transport.keycheck import KeyProbe
from .adapter import HttpProvider, decode_base64, nearest_size
from .base import Generation, GenerationRequest
from .images import EXT, ImageLimits
from .openai_models import LISTED_SIZES, REFERENCE_TOKENS_MAX, ImageModel, image_model

if TYPE_CHECKING:  # pragma: no cover
    from .batching import Collector
    from .openai_batch import OpenAIBatch

SIZES = LISTED_SIZES
#: gpt-image-2's pixel budget by default: the area of 1536x1024, gpt-image-1.5's largest size.
DEFAULT_PIXELS = 1536 * 1024



def is_moderation(code: str | None, message: str, body_text: str) -> bool:
    text = f"{code or ''} {message} {body_text}".lower()
    # Only the documented moderation markers: another user error (a bad image, a bad size)
    # is a failed call, not the model refusing.
    return "moderation_blocked" in text or "safety_violations" in text


class OpenAIProvider(HttpProvider):
    route = "openai"
    key_env = ("OPENAI_API_KEY",)
    provider = "openai"
    default_base = "https://api.openai.com/v1"
    #: How a reply says the model refused (the batch path, providers/openai_batch.py, reads its lines with it).
    is_moderation = staticmethod(is_moderation)
    # <= 16 files of PNG, WebP or JPEG, each < 50 MB.
    image_limits = ImageLimits(max_count=16, max_bytes=49 * 1024 * 1024, formats=("png", "webp", "jpeg"),
                               convert_to="png")
    # openai-python's default: 600 s (``_constants.py`` DEFAULT_TIMEOUT); a high-quality edit can take minutes.
    timeout = 600.0

    _batcher: "tuple[Collector, OpenAIBatch] | None" = None

    def key_probe(self) -> KeyProbe:
        """OpenAI's models retrieve, free: ``GET /v1/models/{model}`` answers 401 to a wrong key."""
        return self.probe("GET", f"{self.base}/models/{self.spec.provider_model}",
                          {"Authorization": f"Bearer {self.key}"},
                          doc="https://platform.openai.com/docs/api-reference/models/retrieve")

    def close(self) -> None:
        if self._batcher is not None:
            self._batcher[0].stop()
            self._batcher = None
        super().close()

    @property
    def tier(self) -> str:
        """The tier this model is bought at: batch with --tier batch where models.yaml gives it a batch price."""
        return "batch" if self.runtime.tier == "batch" and self.spec.has_tier("batch") else "standard"

    def batcher(self) -> "tuple[Collector, OpenAIBatch]":
        """(collector, backend) of this model's batch tier, made on first use (providers/openai_batch.py)."""
        from .batching import collector_for
        from .openai_batch import OpenAIBatch

        with self._lock:
            if self._batcher is None:
                backend = OpenAIBatch(self)
                self._batcher = (collector_for(backend, f"openai {self.spec.provider_model}", self.spec.options,
                                               self.runtime.batches),
                                 backend)
            return self._batcher

    def generate(self, request: GenerationRequest) -> Generation:
        if self.tier == "batch":
            from .openai_batch import batch_generate

            return batch_generate(self, *self.batcher(), request)
        what = self.what(request)
        headers = self.paid_call_headers(request)
        response = self.call("POST", f"{self.base}/images/edits", data=self.fields(request),
                             files=self.files(request), headers=headers, submits=True, request=request)
        request_id = request_id_of(response)
        if response.status_code == 400:
            code, message = error_details(response)
            if is_moderation(code, message, response.text[:2000]):
                raise self.refusal(request, f"moderation: {code}: {message[:300]}", request_id=request_id)
        if response.status_code == 404:
            code, message = error_details(response)
            if code == "model_not_found":  # a retired id answers so (docs/reference/providers.md section 10)
                raise self.gone(f"HTTP 404 {code}: {message[:300]}", status=404)
        self.check(response)
        reply = self.json_of(response, what)
        items = reply.get("data") if isinstance(reply, dict) else None
        if not isinstance(items, list) or not items or not isinstance(items[0], dict) or not items[0].get("b64_json"):
            raise self.refusal(request, "the reply holds no image", request_id=request_id)
        data = decode_base64(items[0]["b64_json"], what, cost=self.worst_case_cost(request), request_id=request_id)
        cost, cost_source = self.cost_of(reply, request)
        return self.generation(request, data, cost=cost, request_id=request_id, seed=None,
                               size=reply.get("size") or self.size(request), quality=reply.get("quality"),
                               usage=reply.get("usage"), cost_source=cost_source, price=self.spec.price)

    def size(self, request: GenerationRequest) -> str:
        if self.spec.options.get("size"):
            return str(self.spec.options["size"])
        model = image_model(self.spec.provider_model)
        if model is not None and model.free_size is not None:
            pixels = float(self.spec.options.get("pixels", DEFAULT_PIXELS))
            width, height = model.free_size.size_for(request.task.width, request.task.height, pixels)
            return f"{width}x{height}"
        width, height = nearest_size(request.task.width, request.task.height, SIZES)
        return f"{width}x{height}"

    @property
    def quality(self) -> str:
        return str(self.spec.options.get("quality", "high"))

    def cost_of(self, reply: dict[str, Any], request: GenerationRequest) -> tuple[float, str]:
        """(USD, where it came from): the reply's ``usage`` at the model's token prices, else the list price of
        the size and quality asked for, else the model's price (an id openai_models.py does not know)."""
        model = image_model(self.spec.provider_model)
        if model is None:
            return self.spec.price, "price"
        cost = model.usage_cost(reply.get("usage"))
        if cost is not None:
            return cost, "usage"
        width, height = _size_pair(self.size(request), model)
        return model.list_price(self.quality, width, height), "list price"

    def worst_case_cost(self, request: GenerationRequest) -> float:
        """The standard tier's worst case (``standard_worst_case``) at this model's tier (the batch tier: half)."""
        return round(self.standard_worst_case(request) * self.spec.tier_factor(self.tier), 6)

    def standard_worst_case(self, request: GenerationRequest) -> float:
        """The output image's tokens at the size and quality asked for, plus every reference at the input-token
        bound and the prompt's bytes as text tokens (a token is at least one byte)."""
        model = image_model(self.spec.provider_model)
        if model is None:
            return self.spec.price
        prices, (width, height) = model.prices, _size_pair(self.size(request), model)
        tokens_usd = (model.output_tokens(self.quality, width, height) * prices.image_out
                      + len(request.references) * REFERENCE_TOKENS_MAX * prices.image_in
                      + len(request.task.instruction.encode()) * prices.text_in) / 1e6
        return round(max(self.spec.price, tokens_usd), 6)

    def fields(self, request: GenerationRequest) -> dict[str, Any]:
        options = self.spec.options
        fields = {
            "model": self.spec.provider_model,
            "prompt": request.task.instruction,
            "size": self.size(request),
            "quality": self.quality,
            "input_fidelity": str(options.get("input_fidelity", "high")),
            "output_format": str(options.get("output_format", "png")),
            "n": "1",
        }
        model = image_model(self.spec.provider_model)
        if model is not None and not model.takes_input_fidelity:
            del fields["input_fidelity"]  # "gpt-image-2 and gpt-image-2-2026-04-21 ignore this parameter"
        return fields

    def files(self, request: GenerationRequest) -> list[tuple[str, tuple[str, bytes, str]]]:
        # The SDK's "brackets" naming: one image[] part per reference.
        return [("image[]", (f"{index + 1:03d}.{EXT[image.format]}", image.read(), image.mime))
                for index, image in enumerate(self.references(request))]


def _size_pair(size: str, model: ImageModel) -> tuple[int, int]:
    """``WxH`` as numbers; ``auto`` (or another word) as the dearest size the model can pick."""
    try:
        width, height = (int(side) for side in size.lower().split("x"))
        return width, height
    except ValueError:
        if model.free_size is not None:
            return 3840, 2160
        return max(SIZES, key=lambda wh: model.output_tokens("high", *wh))
