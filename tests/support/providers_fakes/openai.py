"""Fake OpenAI ``images/edits`` (multipart; docs/reference/providers.md sections 3 and 10), answering as OpenAI does today.

Models: gpt-image-1.5 takes 1024x1024, 1536x1024, 1024x1536 or auto; gpt-image-2 any WxH with sides
multiples of 16, an aspect ratio within 1:3..3:1, at most 3840 px a side and 655,360-8,294,400 pixels
(openai-python ``image_edit_params.py``; the pixel bounds second-hand).  Any other size is a 400
``invalid_request_error`` on ``size``.  An id in ``retired`` or not in ``MODELS`` answers 404
``model_not_found``, as OpenAI answers a retired or unknown id.  Every success carries ``usage`` with its
input and output token details (``images_response.py``): output tokens from the size and quality (a table
of the fake's own, of the order OpenAI's guide lists), input tokens from the prompt and the images.

Faults (``inject``): ``refusal`` (400 moderation_blocked), ``truncated`` (the image), the generic ones.
"""

from __future__ import annotations

import base64
import io

from PIL import Image

from .base import FakeServer, Reply, Seen, make_image, truncated

SIZES = {"1024x1024", "1536x1024", "1024x1536", "auto"}
#: GPT Image 2.5 and 2.6 (Flare, Sunburst) take gpt-image-2's size rule (second-hand: Comfy's node docs).
LATER = {"gpt-image-2.5-flare", "gpt-image-2.5-sunburst", "gpt-image-2.6-flare", "gpt-image-2.6-sunburst"}
MODELS = {"gpt-image-1.5", "gpt-image-2", "gpt-image-2-2026-04-21", *LATER}
FREE_SIZE = {"gpt-image-2", "gpt-image-2-2026-04-21", *LATER}
#: Output tokens per megapixel at each quality (the fake's own scale; the guide's GPT image 1 table is of
#: this order: 4160 at 1024x1024 high).
TOKENS_PER_MP = {"low": 260, "medium": 1000, "high": 3970, "auto": 3970}
IMAGE_INPUT_TOKENS = 1300  # per reference image


class FakeOpenAI(FakeServer):
    env = "HYPEEDIT_OPENAI_BASE_URL"
    key_env = "OPENAI_API_KEY"

    def __init__(self, key: str = "sk-fake-openai-0123456789"):
        super().__init__(key)
        self.retired: set[str] = set()  # ids answering 404 model_not_found (e.g. gpt-image-1.5 after 2026-12-01)
        self.usage = True  # False: replies without usage (as for an older model)
        self.route("POST", "/v1/images/edits", self.edit)
        self.key_check_route("GET", r"/v1/models/(?P<model>[^/]+)", self.model_info)

    @property
    def base(self) -> str:
        return self.url + "/v1"

    def authorized(self, seen: Seen) -> bool:
        return seen.headers.get("authorization") == f"Bearer {self.key}"

    def unauthorized(self) -> Reply:
        return Reply(401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                     "param": None, "code": "invalid_api_key"}})

    def model_info(self, seen: Seen) -> Reply:
        """``GET /v1/models/{model}`` (openai-python ``types/model.py``): the model object, or 404 as for an edit."""
        model = seen.match["model"]
        if model in self.retired or model not in MODELS:
            return Reply(404, {"error": {"message": f"The model `{model}` does not exist or you do not have access "
                                                    "to it.", "type": "invalid_request_error", "param": None,
                                         "code": "model_not_found"}})
        return Reply(200, {"id": model, "object": "model", "created": 1, "owned_by": "system"},
                     {"x-request-id": "req_model"})

    def edit(self, seen: Seen) -> Reply:
        parts = seen.form()
        fields = {name: content.decode() for name, filename, content in parts if filename is None}
        images = [content for name, filename, content in parts if name == "image[]"]
        model = fields.get("model", "gpt-image-1.5")
        if model in self.retired or model not in MODELS:
            return Reply(404, {"error": {"message": f"The model `{model}` does not exist or you do not have access "
                                                    "to it.", "type": "invalid_request_error", "param": None,
                                         "code": "model_not_found"}})
        problem = _validate(fields, images)
        if problem:
            return Reply(400, {"error": {"message": problem, "type": "invalid_request_error",
                                         "param": "size" if "size" in problem else None, "code": None}})
        if self.take_fault("refusal", seen.path):
            return Reply(400, {"error": {
                "message": "Your request was rejected by the safety system. safety_violations=[sexual].",
                "type": "image_generation_user_error", "param": None, "code": "moderation_blocked"}},
                {"x-request-id": "req_refused"})
        size = fields.get("size", "auto")
        width, height = (int(x) for x in size.split("x")) if size != "auto" else (1024, 1024)
        data = make_image(width // 16, height // 16)
        if self.take_fault("truncated", ""):
            data = truncated(data)
        body = {"created": 1, "data": [{"b64_json": base64.b64encode(data).decode()}], "background": "opaque",
                "output_format": "png", "quality": fields.get("quality", "auto"), "size": size}
        if self.usage:
            body["usage"] = usage(fields, len(images), width * height)
        return Reply(200, body, {"x-request-id": f"req_{len(self.requests)}"})


def usage(fields: dict, images: int, pixels: int) -> dict:
    text_in, image_in = len(fields["prompt"]) // 4 + 1, IMAGE_INPUT_TOKENS * images
    image_out = round(TOKENS_PER_MP[fields.get("quality", "auto")] * pixels / 1_000_000)
    return {"input_tokens": text_in + image_in,
            "input_tokens_details": {"text_tokens": text_in, "image_tokens": image_in},
            "output_tokens": image_out, "output_tokens_details": {"image_tokens": image_out, "text_tokens": 0},
            "total_tokens": text_in + image_in + image_out}


#: The form fields of images/edits besides the image[] parts, and the values each takes where they are a list
#: (openai-python types/image_edit_params.py [O1]); None: any text.
FIELDS: dict[str, tuple[str, ...] | None] = {
    "prompt": None, "model": None, "size": None, "n": None, "user": None, "output_compression": None,
    "partial_images": None, "stream": ("true", "false"), "quality": ("low", "medium", "high", "auto"),
    "input_fidelity": ("high", "low"), "output_format": ("png", "jpeg", "webp"),
    "background": ("transparent", "opaque", "auto")}


def _field_problem(fields: dict) -> str | None:
    """OpenAI's 400 for a parameter it does not know or a value outside its list (error codes guide [O7]):
    "Unknown parameter: 'x'.", "Invalid value: 'x'. Supported values are: ...".  ``n`` other than 1 is
    not accepted either: each image is billed, and the benchmark buys one candidate per request."""
    for name, value in fields.items():
        if name not in FIELDS:
            return f"Unknown parameter: '{name}'."
        allowed = FIELDS[name]
        if allowed is not None and value not in allowed:
            return f"Invalid value: '{value}'. Supported values are: {', '.join(repr(a) for a in allowed)}."
    if fields.get("n", "1") != "1":
        return f"n {fields['n']}: this fake makes (and bills) one image a request, as we buy one"
    return None


def _validate(fields: dict, images: list[bytes]) -> str | None:
    if not fields.get("prompt") or not images or len(images) > 16:
        return "prompt and 1-16 image[] parts are required"
    problem = _field_problem(fields)
    if problem:
        return problem
    size = fields.get("size", "auto")
    if not (_free_size_ok(size) if fields.get("model") in FREE_SIZE else size in SIZES):
        return f"Invalid size '{size}' for model {fields.get('model')}."
    for data in images:
        Image.open(io.BytesIO(data)).load()
    return None


def _free_size_ok(size: str) -> bool:
    if size == "auto":
        return True
    try:
        width, height = (int(x) for x in size.split("x"))
    except ValueError:
        return False
    return (width % 16 == 0 and height % 16 == 0 and max(width, height) <= 3 * min(width, height)
            and max(width, height) <= 3840 and 655_360 <= width * height <= 8_294_400)
