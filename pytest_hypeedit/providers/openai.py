"""``openai``: gpt-image-1.5 through ``POST {base}/images/edits`` (multipart).

Wire format: providers.md section 3.  Every reference goes as one ``image[]``
part; quality and input fidelity come from the model's options (high/high in
models.yaml); the size is the allowed one nearest the task's aspect ratio.
The image comes back as ``b64_json``.  ``moderation_blocked`` (HTTP 400) is a
refusal.  The edits API takes no seed, so none is sent or recorded.

The edit is a paid request sent once (``submits=True``): a reply lost to a read
timeout or a dropped connection is not sent again (engine/journal.py).  OpenAI
takes no idempotency key here: openai-python sets ``_idempotency_header = None``
(``_base_client.py``), so it sends none.  The journaled call id goes as
``X-Client-Request-Id``, which OpenAI's API reference describes as a caller's own
request id that it logs (UNCONFIRMED: not in the SDK or our other sources); it
names a lost call, it does not prevent a second charge.
"""

from __future__ import annotations

from typing import Any

from .adapter import HttpProvider, decode_base64, nearest_size
from .base import Generation, GenerationRequest
from .http import error_details, request_id_of
from .images import EXT, ImageLimits

SIZES = ((1024, 1024), (1536, 1024), (1024, 1536))

#: gpt-image-1.5's prices in USD per token: text in, image in, image out, text out (providers.md sections 3
#: and 10: $8 per 1M image-input and $32 per 1M image-output tokens [O9][O10]; $5 text in and $10 text out per
#: 1M, second-hand, UNCONFIRMED).
TOKEN_PRICES = {"gpt-image-1.5": (5e-6, 8e-6, 32e-6, 10e-6)}
#: Image-output tokens by quality and size (community.openai.com/t/.../1371851, providers.md [O10], second-hand):
#: at $32 per 1M they are the listed $0.133 (high, 1024x1024) and about $0.20 (high, 1536x1024 / 1024x1536).
#: "auto" may pick any: the most.
OUTPUT_TOKENS = {"low": {"1024x1024": 272, "1024x1536": 408, "1536x1024": 400},
                 "medium": {"1024x1024": 1056, "1024x1536": 1584, "1536x1024": 1568},
                 "high": {"1024x1024": 4160, "1024x1536": 6240, "1536x1024": 6208}}
#: Image-input tokens per reference at most: high input fidelity adds about 4,160 (square) to 6,240 (other
#: sizes) tokens to the image's own tiles (at most two 512 px tiles, 65 + 2 x 129), low fidelity only the tiles
#: (second-hand: community.openai.com "gpt-image-1 collected pricing information"; UNCONFIRMED).
INPUT_IMAGE_TOKENS = {"high": 6_600, "low": 400}
#: Text tokens the edits endpoint bills beyond the prompt, per image sent (second-hand, UNCONFIRMED), and the
#: reasoning text tokens gpt-image-1.5 may bill as output: no documented maximum, so an assumption (UNCONFIRMED).
TEXT_TOKENS_PER_IMAGE, REASONING_TOKENS_MAX = 64, 4096


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
    # <= 16 files of PNG, WebP or JPEG, each < 50 MB.
    image_limits = ImageLimits(max_count=16, max_bytes=49 * 1024 * 1024, formats=("png", "webp", "jpeg"),
                               convert_to="png")
    # openai-python's default: 600 s (``_constants.py`` DEFAULT_TIMEOUT); a high-quality edit can take minutes.
    timeout = 600.0

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        headers = {"Authorization": f"Bearer {self.key}"}
        if request.journal.call_id:
            headers["X-Client-Request-Id"] = request.journal.call_id
        response = self.call("POST", f"{self.base}/images/edits", data=self.fields(request),
                             files=self.files(request), headers=headers, submits=True)
        request_id = request_id_of(response)
        if response.status_code == 400:
            code, message = error_details(response)
            if is_moderation(code, message, response.text[:2000]):
                raise self.refusal(request, f"moderation: {code}: {message[:300]}", request_id=request_id)
        self.check(response)
        reply = self.json_of(response, what)
        items = reply.get("data") if isinstance(reply, dict) else None
        if not items or not items[0].get("b64_json"):
            raise self.refusal(request, "the reply holds no image", request_id=request_id)
        data = decode_base64(items[0]["b64_json"], what)
        return self.generation(request, data, cost=self.cost_of(reply.get("usage")), request_id=request_id,
                               seed=None, size=reply.get("size"), quality=reply.get("quality"),
                               usage=reply.get("usage"))

    def worst_case_cost(self, request: GenerationRequest) -> float:
        """The image out at the size and quality requested, every reference in at its most tokens, the prompt
        and REASONING_TOKENS_MAX of text out, at TOKEN_PRICES; the list price for a model not in it."""
        prices = TOKEN_PRICES.get(self.spec.provider_model)
        if prices is None:
            return self.spec.price
        text_in, image_in, image_out, text_out = prices
        fields, references = self.fields(request), len(self.references(request))
        by_size = OUTPUT_TOKENS.get(fields["quality"], OUTPUT_TOKENS["high"])  # "auto": priced as high
        out = by_size.get(fields["size"], max(by_size.values()))  # "auto": the largest
        fidelity = INPUT_IMAGE_TOKENS.get(fields["input_fidelity"], INPUT_IMAGE_TOKENS["high"])
        prompt = len(fields["prompt"].encode("utf-8")) + TEXT_TOKENS_PER_IMAGE * (references + 1)
        cost = out * image_out + references * fidelity * image_in + prompt * text_in + REASONING_TOKENS_MAX * text_out
        return max(self.spec.price, round(cost, 6))

    def cost_of(self, usage: Any) -> float | None:
        """What the reply's ``usage`` says the call cost at TOKEN_PRICES; None (the list price) without one.
        Output tokens not broken down into image and text are priced as image tokens, the dearer."""
        prices = TOKEN_PRICES.get(self.spec.provider_model)
        if prices is None or not isinstance(usage, dict):
            return None
        text_in, image_in, image_out, text_out = prices
        given = _token_counts(usage.get("input_tokens_details"), usage.get("input_tokens"))
        made = _token_counts(usage.get("output_tokens_details"), usage.get("output_tokens"))
        if given is None or made is None:
            return None
        return round(given[0] * text_in + given[1] * image_in + made[0] * text_out + made[1] * image_out, 6)

    def size(self, request: GenerationRequest) -> str:
        if self.spec.options.get("size"):
            return str(self.spec.options["size"])
        width, height = nearest_size(request.task.width, request.task.height, SIZES)
        return f"{width}x{height}"

    def fields(self, request: GenerationRequest) -> dict[str, Any]:
        options = self.spec.options
        return {
            "model": self.spec.provider_model,
            "prompt": request.task.instruction,
            "size": self.size(request),
            "quality": str(options.get("quality", "high")),
            "input_fidelity": str(options.get("input_fidelity", "high")),
            "output_format": str(options.get("output_format", "png")),
            "n": "1",
        }

    def files(self, request: GenerationRequest) -> list[tuple[str, tuple[str, bytes, str]]]:
        # The SDK's "brackets" naming: one image[] part per reference.
        return [("image[]", (f"{index + 1:03d}.{EXT[image.format]}", image.read(), image.mime))
                for index, image in enumerate(self.references(request))]


def _token_counts(details: Any, total: Any) -> tuple[int, int] | None:
    """(text, image) tokens of one side of ``usage``: from its details, else all of ``total`` as image tokens."""
    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    if isinstance(details, dict) and count(details.get("text_tokens")) is not None \
            and count(details.get("image_tokens")) is not None:
        return count(details["text_tokens"]), count(details["image_tokens"])
    return (0, count(total)) if count(total) is not None else None
