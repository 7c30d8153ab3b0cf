"""``ark``: Seedream 4.0 / 4.5 / 5.0 / 5.5 on BytePlus ModelArk (``POST {base}/images/generations``).

Wire format: docs/reference/providers.md sections 2 and 10.  Synchronous.  References go as data
URLs; the size is ``WxH`` at the task's aspect ratio with the model's 2K pixel
budget (2048 x 2048, ``options.pixels``) kept within the total pixels the model
accepts (``PIXEL_RANGES``); watermark off; the returned URL is fetched at once.
Seedream 5.0 is asked for PNG (``output_format`` png | jpeg, default jpeg: the
byteplus-python-sdk-v2 images resource takes it since 2026-02); 5.5 answers PNG by
default.  Seedream 5.5 charges per reference image besides the image (second-hand,
amount UNCONFIRMED): ``options.reference_fee`` (USD per reference) is added to the
recorded cost; while the amount is unknown, the worst case reserved for
``--budget`` counts each reference at the model's own price.  An unknown or
retired model id answers 404 ``InvalidEndpointOrModel.NotFound`` (second-hand,
docs/reference/providers.md section 10): final (``ModelGone``).
Moderation comes as HTTP 400 with a ``*SensitiveContentDetected*`` code, or as
an error in an HTTP 200 reply: both are refusals.  The SDK's ``ImagesResponse``
(byteplus-sdk/byteplus-python-sdk-v2, byteplussdkarkruntime/types/images/images.py)
has a top-level ``error: {code, message}`` beside ``data``, and an image item can
carry its own: a 200 reply with either is that error, with its code kept (a
moderation code is a refusal, any other a ProviderError), not "no image".

References must have an aspect ratio between 1/3 and 3 (old 4.0 spec,
second-hand, docs/reference/providers.md section 2): one outside that is padded into range
before anything is paid for, and the record says so (``extra.padded_references``).

The generation is a paid request sent once (``submits=True``): a reply lost to a
read timeout or a dropped connection is not sent again (engine/journal.py). It
carries the journaled call id as ``X-Client-Request-Id``, the header the official
SDK sends with every request (byteplussdkarkruntime ``_constants.py``
CLIENT_REQUEST_HEADER, ``_base_client.py`` default_headers), so a lost call can be
named to BytePlus.  ModelArk has no idempotency key: the id identifies the call,
it does not stop a second one being billed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

from ..transport.http import error_details, request_id_of
from .adapter import HttpProvider, decode_base64, size_in_pixel_range
from .base import Generation, GenerationRequest
from .images import ImageLimits, padding_notes

DEFAULT_PIXELS = 2048 * 2048  # the "2K" budget of every Seedream model
#: Total pixels (min, max) a WxH size may have, per model: 4.0 1024^2-4096^2 and 4.5 3,686,400-16,777,216
#: (docs/reference/providers.md section 2, second-hand copies of the model docs); 5.0 from 3,686,400 (gogogotoken's copy of
#: ModelArk's price list: "total pixels must be >= 3,686,400") to 3072x3072, its 3K (apimart, apixo: 2K/3K);
#: 5.5 from 0.92 MP to about 2048x2048 (docs/reference/providers.md section 10, UNCONFIRMED); 5.0 Pro up to 4.19 MP (2048x2048)
#: with a 1K preset as its smallest (APIYI's Seedream versions page, second-hand, UNCONFIRMED).
PIXEL_RANGES = {"seedream-4-0-250828": (1024 * 1024, 4096 * 4096), "seedream-4-5-251128": (3_686_400, 16_777_216),
                "seedream-5-0-260128": (3_686_400, 3072 * 3072), "seedream-5-5-261028": (921_600, 2048 * 2048),
                "seedream-5-0-pro-260628": (1024 * 1024, 2048 * 2048)}
#: The models asked for PNG through ``output_format`` (5.0 and 5.0 Pro: png | jpeg, default jpeg).
PNG_BY_REQUEST = ("seedream-5-0-260128", "seedream-5-0-pro-260628")
#: Models that do not accept ``sequential_image_generation`` (and ``stream``) whatever the value, "disabled" included,
#: with a 400: 5.0 Pro (APIYI's and LaoZhang's notes, second-hand, UNCONFIRMED). It is left out for them.
NO_SEQUENTIAL = ("seedream-5-0-pro-260628",)
#: Models that charge per reference image, and how many references each call carries free: 5.5 (second-hand;
#: the amount is options.reference_fee) and 5.0 Pro, whose first reference is free (LaoZhang's note, UNCONFIRMED).
PER_REFERENCE_FEE = {"seedream-5-5-261028": 0, "seedream-5-0-pro-260628": 1}
#: 404 codes of a model id ModelArk does not know (any more): InvalidEndpointOrModel.NotFound (docs/reference/providers.md
#: section 10, second-hand) and InvalidEndpoint.NotFound (BytePlus's common error codes, 1299023).
GONE_CODES = ("invalidendpointormodel.notfound", "invalidendpoint.notfound")


#: Parts of the moderation codes: BytePlus's common error codes (docs.byteplus.com/en/docs/ModelArk/1299023:
#: SensitiveContentDetected[.SevereViolation|.Violence], InputTextSensitiveContentDetected,
#: InputImageSensitiveContentDetected), the output-image code seen second-hand
#: (OutputImageSensitiveContentDetected, UNCONFIRMED) and Volcengine Ark's content-security codes
#: (Input/OutputImageRiskDetection, second-hand mirror of its API PDF p.457-458, UNCONFIRMED).
MODERATION_CODES = ("sensitivecontentdetected", "riskdetection")
#: Code prefixes that waiting can fix: 429 RateLimitExceeded.EndpointRPMExceeded / ...TPMExceeded (1299023);
#: the 5xx names (InternalServiceError, ServerOverloaded) are UNCONFIRMED.
RETRYABLE_CODES = ("ratelimitexceeded", "internalserviceerror", "serveroverloaded")


def is_moderation(code: str | None, message: str = "") -> bool:
    """A moderation code; only without a code does the message decide (it must say "sensitive")."""
    if code:
        return any(part in code.lower() for part in MODERATION_CODES)
    return "sensitive" in message.lower()


class ArkProvider(HttpProvider):
    route = "ark"
    key_env = ("ARK_API_KEY",)
    provider = "ark"
    default_base = "https://ark.ap-southeast.bytepluses.com/api/v3"
    # The stricter of the two models' documented limits (4.0: JPEG/PNG, <= 10 MB,
    # <= 6000 px, <= 10 images; 4.5 per-file limits are UNCONFIRMED).  Sides are
    # capped at 4096 to keep the JSON body reasonable.
    # An input's width/height must be in [1/3, 3] (the 4.0 spec as copied by novita, docs/reference/providers.md [B6];
    # second-hand, UNCONFIRMED for 4.5): a reference outside is padded into range, not left to a 400.
    image_limits = ImageLimits(max_count=10, max_side=4096, min_side=14, max_bytes=10 * 1024 * 1024,
                               formats=("jpeg", "png"), convert_to="jpeg", max_aspect_ratio=3.0)
    # The official SDK waits 600 s per request (byteplussdkarkruntime/_constants.py DEFAULT_TIMEOUT_SECONDS):
    # a 2K/4K generation may take minutes, and a read that times out early is a call possibly paid twice.
    timeout = 600.0

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        headers = self.paid_call_headers(request)
        response = self.call("POST", f"{self.base}/images/generations", json=self.body(request), headers=headers,
                             submits=True, request=request)
        request_id = request_id_of(response)
        if response.status_code == 400:
            code, message = error_details(response)
            if is_moderation(code, message):
                raise self.refusal(request, f"moderation: {code}: {message[:200]}", request_id=request_id)
        if response.status_code == 404:
            code, message = error_details(response)
            if (code or "").lower() in GONE_CODES:
                raise self.gone(f"HTTP 404 {code}: {message[:300]}", status=404)
        self.check(response)
        reply = self.json_of(response, what)
        data = self.image_bytes(request, reply, request_id)
        return self.generation(request, data, cost=self.cost_of(request), request_id=request_id, seed=request.seed,
                               size=self.size(request), usage=reply.get("usage"), model_version=reply.get("model"),
                               padded_references=padding_notes(request.references, self.references(request),
                                                               self.image_limits) or None)

    def size(self, request: GenerationRequest) -> str:
        pixels = float(self.spec.options.get("pixels", DEFAULT_PIXELS))
        low, high = PIXEL_RANGES.get(self.spec.provider_model, (0, float("inf")))
        width, height = size_in_pixel_range(request.task.width, request.task.height, low, high, pixels=pixels)
        return f"{width}x{height}"

    @property
    def reference_fee(self) -> float:
        return float(self.spec.options.get("reference_fee", 0.0))

    def cost_of(self, request: GenerationRequest) -> float:
        """The model's price, plus its per-reference fee where it has one."""
        if self.spec.provider_model not in PER_REFERENCE_FEE:
            return self.spec.price
        return round(self.spec.price + self.charged_references(request) * self.reference_fee, 6)

    def worst_case_cost(self, request: GenerationRequest) -> float:
        """A per-reference model's fee is unpublished: until options.reference_fee says, each reference counts
        at the model's own price (an upper bound, UNCONFIRMED)."""
        if self.spec.provider_model not in PER_REFERENCE_FEE:
            return self.spec.price
        fee = self.reference_fee if "reference_fee" in self.spec.options else self.spec.price
        return round(self.spec.price + self.charged_references(request) * fee, 6)

    def charged_references(self, request: GenerationRequest) -> int:
        """The references a call pays a fee for: those after the model's free ones."""
        return max(0, len(request.references) - PER_REFERENCE_FEE.get(self.spec.provider_model, 0))

    def body(self, request: GenerationRequest) -> dict[str, Any]:
        images = [image.inline_data_url() for image in self.references(request)]
        body: dict[str, Any] = {
            "model": self.spec.provider_model,
            "prompt": request.task.instruction,
            "image": images[0] if len(images) == 1 else images,
            "size": self.size(request),
            "response_format": "url",
            "watermark": False,  # the default appears to be true (UNCONFIRMED): always send false
        }
        if self.spec.provider_model not in NO_SEQUENTIAL:
            body["sequential_image_generation"] = "disabled"
        if self.spec.provider_model in PNG_BY_REQUEST:
            body["output_format"] = str(self.spec.options.get("output_format", "png"))
        if self.spec.options.get("send_seed", True):
            body["seed"] = request.seed  # honoured by "some models" only; effect on 4.x UNCONFIRMED
        return body

    def image_bytes(self, request: GenerationRequest, reply: Any, request_id: str | None) -> bytes | Path:
        if isinstance(reply, dict) and is_set(reply.get("error")):
            self.raise_reply_error(request, reply["error"], request_id, where="in an HTTP 200 reply")
        items = reply.get("data") if isinstance(reply, dict) else None
        if not isinstance(items, list) or not items or not isinstance(items[0], dict):
            raise self.refusal(request, "the reply holds no image", request_id=request_id)
        item = items[0]
        if is_set(item.get("error")):  # one image of a batch failed: data[i].error{code, message}
            self.raise_reply_error(request, item["error"], request_id, where="on the image")
        if item.get("b64_json"):
            return decode_base64(item["b64_json"], self.what(request), cost=self.cost_of(request),
                                 request_id=request_id)
        if not item.get("url"):
            raise self.refusal(request, "the image item has neither url nor b64_json", request_id=request_id)
        return self.download(item["url"], self.what(request), request=request, request_id=request_id)

    def raise_reply_error(self, request: GenerationRequest, error: Any, request_id: str | None, *,
                          where: str) -> NoReturn:
        """The ``Error{code, message}`` of a 200 reply: a refusal when it is moderation, else a ProviderError."""
        code, message = error_fields(error)
        if is_moderation(code, message):
            raise self.refusal(request, f"moderation: {code}: {message[:200]}", request_id=request_id)
        retryable = code is None or any(part in code.lower() for part in RETRYABLE_CODES)
        raise self.error(f"{self.what(request)}: ModelArk answered with an error {where}: {code}: {message[:300]}"
                         + (f" (request id {request_id})" if request_id else ""), retryable=retryable)


def is_set(error: Any) -> bool:
    """Whether an ``Error`` field says something: a serialiser may send ``{"code": "", "message": ""}``
    (or null) on success, which is no error."""
    if isinstance(error, dict):
        return any(error.get(key) not in (None, "") for key in ("code", "message"))
    return bool(error)


def error_fields(error: Any) -> tuple[str | None, str]:
    """(code, message) of an ``Error`` object; a bare string is a message without a code."""
    if isinstance(error, dict):
        code = error.get("code")
        return (str(code) if code not in (None, "") else None), str(error.get("message") or "")
    return None, str(error)
