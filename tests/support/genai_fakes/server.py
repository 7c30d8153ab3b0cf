"""A small threaded loopback HTTP server that answers from a script of replies."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Iterable

import httpx
from loopback import Arrived, LoopbackService, send


@dataclass
class Reply:
    """One scripted HTTP answer.  ``body`` may be a dict (sent as JSON), str or bytes."""

    status: int = 200
    body: Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (a slow server)
    chunks: Iterable[bytes] | None = None  # a body written as it comes, without a length (the connection closes)

    def encoded(self) -> bytes:
        if isinstance(self.body, (dict, list)):
            return json.dumps(self.body).encode()
        if isinstance(self.body, str):
            return self.body.encode()
        return self.body


#: A reply, or a function of the request that returns one (e.g. to echo what it got).
Script = Reply | Callable[["SeenRequest"], Reply]


@dataclass
class SeenRequest:
    """What the fake server received, normalised for assertions."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    raw: bytes
    json: Any = None
    error: str | None = None  # why the request was rejected, if it was
    parsed: dict[str, Any] = field(default_factory=dict)  # server-specific normalised view
    at: float = 0.0  # when it had arrived whole (time.time())


class LoopbackServer(LoopbackService):
    """Base of the judge fakes (loopback.py serves them): subclasses implement ``handle(request) -> Reply``."""

    methods = ("GET", "POST")  # GET: the batch fakes' polls and downloads (gemini_batch.py)

    def __init__(self) -> None:
        super().__init__()
        self.script: deque[Script] = deque()
        self.default: Script | None = None
        self.requests: list[SeenRequest] = []
        #: the free key checks received (``is_key_check``), kept apart from ``requests``: a run sends one before
        #: anything is paid (pytest_hypeedit/transport/keycheck.py), and ``requests`` holds the paid work
        self.key_checks: list[SeenRequest] = []
        self._lock = threading.Lock()

    def queue(self, *replies: Script) -> None:
        with self._lock:
            self.script.extend(replies)

    def next_reply(self, request: SeenRequest) -> Reply:
        with self._lock:
            script = self.script.popleft() if self.script else self.default
        if script is None:
            return Reply(500, {"error": {"code": 500, "message": "fake server: no reply scripted", "status": "INTERNAL"}})
        return script(request) if callable(script) else script

    def handle(self, request: SeenRequest) -> Reply:  # pragma: no cover - overridden
        raise NotImplementedError

    def is_key_check(self, request: SeenRequest) -> bool:
        """Whether ``request`` is the provider's free call that proves a key (none by default)."""
        return False

    def respond(self, handler: BaseHTTPRequestHandler, arrived: Arrived) -> None:
        path = f"{arrived.path}?{arrived.query}" if arrived.query else arrived.path
        reply = self._reply_to(SeenRequest(arrived.method, path, arrived.headers, arrived.body, at=arrived.at))
        if reply.delay:
            time.sleep(reply.delay)
        if reply.chunks is not None:
            _send_chunks(handler, reply.status, reply.chunks, _headers(reply))
            return
        send(handler, reply.status, reply.encoded(), _headers(reply))

    def transport(self) -> httpx.MockTransport:
        """The same fake with no socket: an ``httpx.MockTransport`` for a client to send through (an adapter's
        ``Runtime.transport``), for the tests where the wire adds nothing: the same script and request log.  A
        reply only a socket can give (late, or written piece by piece) is refused, so such a test runs on the
        wire."""
        return httpx.MockTransport(self._answer)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        seen = SeenRequest(request.method, request.url.raw_path.decode("ascii"),
                           {name.lower(): value for name, value in request.headers.items()}, request.read(),
                           at=time.time())
        reply = self._reply_to(seen)
        if reply.delay or reply.chunks is not None:
            raise AssertionError(f"{seen.method} {seen.path}: this reply needs a socket; run the test on the wire")
        return httpx.Response(reply.status, headers=_headers(reply), content=reply.encoded())

    def _reply_to(self, seen: SeenRequest) -> Reply:
        """The request parsed and logged, and the reply the fake gives it."""
        try:
            seen.json = json.loads(seen.raw) if seen.raw else None
        except ValueError:
            seen.error = "request body is not JSON"
        (self.key_checks if self.is_key_check(seen) else self.requests).append(seen)
        return self.handle(seen)


def _headers(reply: Reply) -> list[tuple[str, str]]:
    # a reply may name its own content type (the batch fakes' file downloads: gemini_batch.py)
    default = [] if "content-type" in {name.lower() for name in reply.headers} else [
        ("Content-Type", "application/json; charset=UTF-8")]
    return [*default, *reply.headers.items()]


def _send_chunks(handler: BaseHTTPRequestHandler, status: int, chunks: Iterable[bytes],
                 headers: list[tuple[str, str]]) -> None:
    """A reply whose body is written piece by piece, ended by closing the connection (a batch's big file)."""
    handler.send_response(status)
    for name, value in [*headers, ("connection", "close")]:
        handler.send_header(name, value)
    handler.end_headers()
    handler.close_connection = True
    try:
        for chunk in chunks:
            handler.wfile.write(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client stopped reading


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake_keys(value: Any) -> Any:
    """The same JSON with every object key in snake_case, so camelCase and snake_case requests compare equal."""
    if isinstance(value, dict):
        return {_CAMEL.sub("_", key).lower(): snake_keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [snake_keys(item) for item in value]
    return value
