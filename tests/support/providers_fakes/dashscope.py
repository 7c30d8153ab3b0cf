"""Fake DashScope multimodal-generation (Qwen Image Edit; docs/reference/providers.md section 6)."""

from __future__ import annotations

import base64
import io
import re

from PIL import Image

from .base import FakeServer, Reply, Seen
from .files import FileStore


class FakeDashScope(FakeServer):
    env = "HYPEEDIT_DASHSCOPE_BASE_URL"
    key_env = "DASHSCOPE_API_KEY"

    def __init__(self, key: str = "sk-dashscope-fake-0123456789"):
        super().__init__(key)
        self.files = FileStore(self, "/oss")
        self.route("POST", "/api/v1/services/aigc/multimodal-generation/generation", self.generate)

    @property
    def base(self) -> str:
        return self.url + "/api/v1"

    def authorized(self, seen: Seen) -> bool:
        return seen.path.startswith("/oss") or seen.headers.get("authorization") == f"Bearer {self.key}"

    def unauthorized(self) -> Reply:
        return Reply(401, {"request_id": "r-401", "code": "InvalidApiKey", "message": "Invalid API-key provided."})

    def generate(self, seen: Seen) -> Reply:
        body = seen.json()
        odd_id = self.take_fault("request_id", seen.path)  # the reply's request_id: the fault's body, any JSON
        request_id = odd_id.body if odd_id else f"ds-{len(self.requests)}"
        problem = _validate(body)
        if problem:
            return Reply(400, {"request_id": request_id, "code": "InvalidParameter", "message": problem})
        if self.take_fault("refusal", seen.path):
            return Reply(400, {"request_id": request_id, "code": "DataInspectionFailed",
                               "message": "Input data may contain inappropriate content."})
        width, height = (int(x) for x in body["parameters"]["size"].split("*"))
        url = self.files.put(self.files.new_image(width // 16, height // 16))
        return Reply(200, {"output": {"choices": [{"finish_reason": "stop", "message": {
            "role": "assistant", "content": [{"image": url}]}}]},
            "usage": {"width": width, "height": height, "image_count": 1}, "request_id": request_id})


#: The request's top-level fields and ``parameters`` of qwen-image-edit, with their JSON types (Model Studio,
#: qwen-image-edit API reference [Q1][Q2]): another name, a wrong type or a null is a 400 InvalidParameter
#: ``{request_id, code, message}`` [Q4 2nd].  ``n`` other than 1 is not accepted either: each image is billed and the
#: benchmark buys one candidate per request.
TOP_FIELDS = {"model": (str,), "input": (dict,), "parameters": (dict,)}
PARAMETERS = {"n": (int,), "size": (str,), "negative_prompt": (str,), "prompt_extend": (bool,), "watermark": (bool,),
              "seed": (int,)}


def _field_problem(body: dict) -> str | None:
    for where, fields, value in (("", TOP_FIELDS, body), ("parameters.", PARAMETERS, body.get("parameters") or {})):
        for name, item in value.items():
            kinds = fields.get(name)
            if kinds is None:
                return f"{where}{name} is not a valid parameter"
            if not isinstance(item, kinds) or (isinstance(item, bool) and bool not in kinds):
                return f"{where}{name} must be {kinds[0].__name__}, got {item!r:.40}"
    if (body.get("parameters") or {}).get("n", 1) != 1:
        return f"parameters.n {body['parameters']['n']}: this fake makes (and bills) one image a request"
    return None


def _validate(body: dict) -> str | None:
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    problem = _field_problem(body)
    if problem:
        return problem
    try:
        content = body["input"]["messages"][0]["content"]
    except (KeyError, IndexError, TypeError):
        return "input.messages[0].content is required"
    images = [part["image"] for part in content if "image" in part]
    if not 1 <= len(images) <= 3 or not any("text" in part for part in content):
        return "1-3 images and a text are required"
    for url in images:
        image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        image.load()
        if not (384 <= min(image.size) and max(image.size) <= 3072):
            return "image sides must be 384-3072 px"
    size = body.get("parameters", {}).get("size", "1024*1024")
    match = re.fullmatch(r"(\d+)\*(\d+)", size)
    if not match or not all(512 <= int(side) <= 2048 for side in match.groups()):
        return f"size {size} must be W*H with sides 512-2048"
    return None
