"""A fake OpenAI-style ``POST {base}/chat/completions`` server (OpenAI, vLLM, Ollama all speak it).

It checks the shape a vision judge sends (``messages[].content[]`` of ``text``
and ``image_url`` parts whose URLs are base64 data URLs) and answers from its
script.  ``requests[i].parsed`` has ``model``, ``texts`` and ``images``.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import replace

from .server import LoopbackServer, Reply, SeenRequest


class FakeChat(LoopbackServer):
    def __init__(self, expected_key: str | None = None) -> None:
        super().__init__()
        self.expected_key = expected_key
        #: asked model -> the model that answers (the reply's ``model``; OpenAI answers an alias with a dated
        #: snapshot); an id not listed is answered by itself
        self.answered_by: dict[str, str] = {}

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def is_key_check(self, request: SeenRequest) -> bool:
        return request.method == "GET" and request.path.split("?")[0].startswith("/v1/models/")

    def handle(self, request: SeenRequest) -> Reply:
        if self.is_key_check(request):  # OpenAI's models retrieve: the key check of a judge on OpenAI's API
            if self.expected_key is not None and request.headers.get("authorization") != f"Bearer {self.expected_key}":
                return error_reply(401, "Incorrect API key provided.", "invalid_api_key")
            model = request.path.split("?")[0].removeprefix("/v1/models/")
            return Reply(200, {"id": model, "object": "model", "created": 1, "owned_by": "system"})
        if request.path.split("?")[0] != "/v1/chat/completions":
            return error_reply(404, f"fake chat: no route {request.path}", "not_found")
        if self.expected_key is not None and request.headers.get("authorization") != f"Bearer {self.expected_key}":
            return error_reply(401, "Incorrect API key provided.", "invalid_api_key")
        problem = _parse_body(request)
        if problem:
            request.error = problem
            return error_reply(400, problem, "invalid_request_error")
        reply = self.next_reply(request)
        if reply.status != 200 or not isinstance(reply.body, dict) or "choices" not in reply.body \
                or "model" in reply.body:
            return reply
        model = request.json["model"]
        return replace(reply, body={**reply.body, "model": self.answered_by.get(model, model)})


def _parse_body(request: SeenRequest) -> str | None:
    body = request.json
    if request.error or not isinstance(body, dict) or not body.get("model") or not body.get("messages"):
        return request.error or "'model' and 'messages' are required"
    texts, images = [], []
    for message in body["messages"]:
        content = message.get("content")
        for part in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
            problem = _read_part(part, texts, images)
            if problem:
                return problem
    request.parsed = {"model": body["model"], "texts": texts, "images": images}
    return None


def _read_part(part: dict, texts: list, images: list) -> str | None:
    if part.get("type") == "text":
        texts.append(part.get("text") or "")
        return None
    url = ((part.get("image_url") or {}).get("url")) if part.get("type") == "image_url" else None
    if not isinstance(url, str) or not url.startswith("data:image/") or ";base64," not in url:
        return f"unsupported content part {part.get('type')!r} (expected text or an image_url data URL)"
    header, data = url.split(",", 1)
    try:
        images.append((header[5:].split(";")[0], base64.b64decode(data, validate=True)))
    except (binascii.Error, ValueError):
        return "image_url: invalid base64"
    return None


def chat_reply(content: str, usage: dict | None = None) -> Reply:
    usage = usage or {"prompt_tokens": 1500, "completion_tokens": 70, "total_tokens": 1570}
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    return Reply(200, {"id": "chatcmpl-fake", "object": "chat.completion", "choices": [choice], "usage": usage})


def verdict_reply(verdict: str = "PASS", reasoning: str = "All required edits are present.") -> Reply:
    return chat_reply(json.dumps({"verdict": verdict, "reasoning": reasoning}))


def error_reply(code: int, message: str, kind: str, retry_after: float | None = None) -> Reply:
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    return Reply(code, {"error": {"message": message, "type": kind, "param": None, "code": kind}}, headers)


def malformed_reply() -> Reply:
    return Reply(200, b'{"choices": [{"message": ')
