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
        return self.generation(request, data, request_id=request_id, seed=None, size=reply.get("size"),
                               quality=reply.get("quality"), usage=reply.get("usage"))

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
