"""``ark``: Seedream 4.5 / 4.0 on BytePlus ModelArk (``POST {base}/images/generations``).

Wire format: providers.md section 2.  Synchronous.  References go as data
URLs; the size is ``WxH`` at the task's aspect ratio within the model's 2K
pixel budget (2048 x 2048); watermark off; the returned URL is fetched at once.
Moderation comes as HTTP 400 with a ``*SensitiveContentDetected*`` code, or as
an error in an HTTP 200 reply: both are refusals.  The SDK's ``ImagesResponse``
(byteplus-sdk/byteplus-python-sdk-v2, byteplussdkarkruntime/types/images/images.py)
has a top-level ``error: {code, message}`` beside ``data``, and an image item can
carry its own: a 200 reply with either is that error, with its code kept (a
moderation code is a refusal, any other a ProviderError), not "no image".

References must have an aspect ratio between 1/3 and 3 (old 4.0 spec,
second-hand, providers.md section 2): one outside that is padded into range
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

from typing import Any

from .adapter import HttpProvider, decode_base64, size_at_pixels
from .base import Generation, GenerationRequest
from .http import error_details, request_id_of
from .images import ImageLimits, padding_notes

DEFAULT_PIXELS = 2048 * 2048  # the "2K" budget of both models


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
    # An input's width/height must be in [1/3, 3] (the 4.0 spec as copied by novita, providers.md [B6];
    # second-hand, UNCONFIRMED for 4.5): a reference outside is padded into range, not refused.
    image_limits = ImageLimits(max_count=10, max_side=4096, min_side=14, max_bytes=10 * 1024 * 1024,
                               formats=("jpeg", "png"), convert_to="jpeg", max_aspect_ratio=3.0)
    # The official SDK waits 600 s per request (byteplussdkarkruntime/_constants.py DEFAULT_TIMEOUT_SECONDS):
    # a 2K/4K generation may take minutes, and a read that times out early is a call possibly paid twice.
    timeout = 600.0

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        headers = {"Authorization": f"Bearer {self.key}"}
        if request.journal.call_id:
            headers["X-Client-Request-Id"] = request.journal.call_id
        response = self.call("POST", f"{self.base}/images/generations", json=self.body(request), headers=headers,
                             submits=True)
        request_id = request_id_of(response)
        if response.status_code == 400:
            code, message = error_details(response)
            if is_moderation(code, message):
                raise self.refusal(request, f"moderation: {code}: {message[:200]}", request_id=request_id)
        self.check(response)
        reply = self.json_of(response, what)
        data = self.image_bytes(request, reply, request_id)
        return self.generation(request, data, request_id=request_id, seed=request.seed,
                               size=self.size(request), usage=reply.get("usage"), model_version=reply.get("model"),
                               padded_references=padding_notes(request.references, self.references(request),
                                                               self.image_limits) or None)

    def size(self, request: GenerationRequest) -> str:
        pixels = float(self.spec.options.get("pixels", DEFAULT_PIXELS))
        width, height = size_at_pixels(request.task.width, request.task.height, pixels)
        return f"{width}x{height}"

    def body(self, request: GenerationRequest) -> dict[str, Any]:
        images = [image.inline_data_url() for image in self.references(request)]
        body = {
            "model": self.spec.provider_model,
            "prompt": request.task.instruction,
            "image": images[0] if len(images) == 1 else images,
            "size": self.size(request),
            "response_format": "url",
            "watermark": False,  # the default appears to be true (UNCONFIRMED): always send false
            "sequential_image_generation": "disabled",
        }
        if self.spec.options.get("send_seed", True):
            body["seed"] = request.seed  # honoured by "some models" only; effect on 4.x UNCONFIRMED
        return body

    def image_bytes(self, request: GenerationRequest, reply: Any, request_id: str | None) -> bytes:
        if isinstance(reply, dict) and is_set(reply.get("error")):
            self.raise_reply_error(request, reply["error"], request_id, where="in an HTTP 200 reply")
        items = reply.get("data") if isinstance(reply, dict) else None
        if not items or not isinstance(items[0], dict):
            raise self.refusal(request, "the reply holds no image", request_id=request_id)
        item = items[0]
        if is_set(item.get("error")):  # one image of a batch failed: data[i].error{code, message}
            self.raise_reply_error(request, item["error"], request_id, where="on the image")
        if item.get("b64_json"):
            return decode_base64(item["b64_json"], self.what(request))
        if not item.get("url"):
            raise self.refusal(request, "the image item has neither url nor b64_json", request_id=request_id)
        return self.download(item["url"], self.what(request))

    def raise_reply_error(self, request: GenerationRequest, error: Any, request_id: str | None, *, where: str):
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
