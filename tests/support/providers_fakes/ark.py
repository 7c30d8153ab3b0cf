"""Fake BytePlus ModelArk ``images/generations`` (docs/reference/providers.md sections 2 and 10), answering as it does today.

Models (``MODELS``, with the total pixels a WxH size may have): seedream 4.0, 4.5, 5.0, 5.0 Pro and 5.5 (5.0 Pro
does not accept ``sequential_image_generation`` or ``stream``, whatever their value); any other id,
or one in ``retired``, answers 404 ``InvalidEndpointOrModel.NotFound``.  ``output_format`` is png or jpeg.
Faults (``inject``): ``refusal`` (400 InputImageSensitiveContentDetected), ``reply_error`` (an error in a 200),
``truncated`` and ``expired`` (the result file), the generic ones.
"""

from __future__ import annotations

import base64
import io
import itertools
import re

from PIL import Image

from .base import FakeServer, Reply, Seen
from .files import FileStore

PREFIX = "/api/v3"
MODELS = {"seedream-4-0-250828": (1024 * 1024, 4096 * 4096), "seedream-4-5-251128": (3_686_400, 16_777_216),
          "seedream-5-0-260128": (3_686_400, 3072 * 3072), "seedream-5-5-261028": (921_600, 2048 * 2048),
          "seedream-5-0-pro-260628": (1024 * 1024, 2048 * 2048)}
#: Models that answer 400 to any ``sequential_image_generation`` or ``stream``, "disabled" included (5.0 Pro,
#: second-hand: APIYI's and LaoZhang's notes).
NO_SEQUENTIAL = {"seedream-5-0-pro-260628"}


class FakeArk(FakeServer):
    env = "HYPEEDIT_ARK_BASE_URL"
    key_env = "ARK_API_KEY"

    def __init__(self, key: str = "ark-fake-key-0123456789"):
        super().__init__(key)
        self.files = FileStore(self)
        self.retired: set[str] = set()
        self._request_ids = itertools.count(1)
        self.route("POST", f"{PREFIX}/images/generations", self.generate)

    @property
    def base(self) -> str:
        return self.url + PREFIX

    def authorized(self, seen: Seen) -> bool:
        return seen.path.startswith("/files") or seen.headers.get("authorization") == f"Bearer {self.key}"

    def unauthorized(self) -> Reply:
        """ModelArk's 401 AuthenticationError; its message quotes the request id its header carries (as the
        messages of Volcengine's gateway do, second-hand), a new one per request."""
        request_id = f"0217{next(self._request_ids):016d}"
        return Reply(401, {"error": {"code": "AuthenticationError", "type": "Unauthorized",
                                     "message": "The API key or AK/SK in the request is missing or invalid. "
                                                f"Request id: {request_id}"}}, {"x-request-id": request_id})

    def generate(self, seen: Seen) -> Reply:
        body = seen.json()
        if body.get("model") not in MODELS or body.get("model") in self.retired:
            return Reply(404, {"error": {"code": "InvalidEndpointOrModel.NotFound",
                                         "message": f"The model or endpoint {body.get('model')} does not exist or you "
                                                    "do not have access to it.", "param": "model", "type": "NotFound"}})
        problem = _validate(body)
        if problem:
            return Reply(400, {"error": {"code": "InvalidParameter", "message": problem, "param": "", "type": "BadRequest"}})
        if self.take_fault("refusal", seen.path):
            return Reply(400, {"error": {"code": "InputImageSensitiveContentDetected",
                                         "message": "The request failed because the input image may contain sensitive information.",
                                         "param": "image", "type": "BadRequest"}}, {"x-request-id": "ark-req-refused"})
        failure = self.take_fault("reply_error", seen.path)
        if failure:
            # The SDK's ImagesResponse has a top-level ``error: Error{code, message}`` beside ``data``
            # (byteplussdkarkruntime/types/images/images.py): an HTTP 200 that generated nothing.
            return Reply(200, {"model": body["model"], "created": 1, "data": [],
                               "error": failure.body or {"code": "OutputImageSensitiveContentDetected",
                                                         "message": "The request failed because the output "
                                                                    "image may contain sensitive information."},
                               "usage": {"generated_images": 0, "output_tokens": 0, "total_tokens": 0}},
                         {"x-request-id": f"ark-req-{len(self.requests)}"})
        width, height = (int(x) for x in body["size"].split("x"))
        data = self.files.new_image(width // 32, height // 32)
        item = {"url": self.files.put(data), "size": body["size"]}
        if body.get("response_format") == "b64_json":
            item = {"b64_json": base64.b64encode(data).decode(), "size": body["size"]}
        return Reply(200, {"model": body["model"], "created": 1, "data": [item],
                           "usage": {"generated_images": 1, "output_tokens": 16384, "total_tokens": 16384}},
                     {"x-request-id": f"ark-req-{len(self.requests)}"})


#: The parameters of images.generate and the JSON types each takes (byteplus-python-sdk-v2
#: byteplussdkarkruntime/resources/images/images.py; ModelArk image generation API [B3]).  Null is accepted for
#: every one: the official SDK sends each parameter it was not given as null (the whole body dict).
PARAMETERS: dict[str, tuple[type, ...]] = {
    "model": (str,), "prompt": (str,), "image": (str, list), "size": (str,), "seed": (int,),
    "sequential_image_generation": (str,), "sequential_image_generation_options": (dict,), "stream": (bool,),
    "guidance_scale": (int, float), "response_format": (str,), "watermark": (bool,),
    "optimize_prompt_options": (dict,), "output_format": (str,)}


def _parameter_problem(body: dict) -> str | None:
    """An unknown parameter or a value of the wrong type: ModelArk's 400 InvalidParameter [B9]."""
    for name, value in body.items():
        kinds = PARAMETERS.get(name)
        if kinds is None:
            return f"the parameter {name} specified in the request is not valid"
        if value is not None and (not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)):
            return f"the parameter {name} must be {' or '.join(kind.__name__ for kind in kinds)}, got {value!r:.40}"
    if body.get("response_format") not in (None, "url", "b64_json"):
        return f"the parameter response_format must be url or b64_json, got {body['response_format']!r}"
    return None


def _validate(body: dict) -> str | None:
    if not body.get("model") or not body.get("prompt"):
        return "model and prompt are required"
    problem = _parameter_problem(body)
    if problem:
        return problem
    images = body.get("image")
    images = [images] if isinstance(images, str) else images or []
    for url in images:
        match = re.match(r"data:image/(png|jpeg|webp|bmp|tiff|gif);base64,(.*)$", url, re.S)
        if not match:
            return "image must be a URL or data:image/<fmt>;base64"
        image = Image.open(io.BytesIO(base64.b64decode(match[2])))
        image.load()
        # "Aspect ratio (width/height): Range is [1/3, 3]" (Seedream 4.0 input requirements, docs/reference/providers.md [B6])
        if not 1 / 3 <= image.width / image.height <= 3:
            return f"image aspect ratio {image.width}x{image.height} is outside [1/3, 3]"
    unsupported = sorted({"sequential_image_generation", "stream"} & set(body)) if body["model"] in NO_SEQUENTIAL else []
    if unsupported:
        return f"{unsupported[0]} is not supported by {body['model']}"
    size = str(body.get("size", "2K"))
    if not re.fullmatch(r"\d+x\d+|[1-4]K", size):
        return f"bad size {size}"
    low, high = MODELS[body["model"]]
    if "x" in size and not low <= (lambda w, h: w * h)(*map(int, size.split("x"))) <= high:
        return f"size {size}: total pixels must be within [{low}, {high}] for {body['model']}"
    if body.get("output_format", "jpeg") not in ("png", "jpeg"):
        return f"output_format {body.get('output_format')!r} must be png or jpeg"
    return None
