"""One loopback HTTP server that records every request and answers as a route's canned replies say.

Both sides of a differential test (our adapter, and the provider's official
SDK) are pointed at the same ``Recorder``; the test then compares what each
side sent.  It speaks plain HTTP/1.1 on 127.0.0.1 (keep-alive, Content-Length
or chunked request bodies), so every SDK's own HTTP stack (httpx, httpx2,
requests, aiohttp) can talk to it unchanged.
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable
from urllib.parse import parse_qs

from loopback import Arrived, LoopbackService, send


@dataclass(frozen=True)
class Recorded:
    """One request as it arrived: method, path, decoded query, headers (lower-case names), raw body."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list -> JSON; bytes as they are
    headers: dict[str, str] = field(default_factory=dict)

    def encoded(self) -> tuple[bytes, str]:
        if isinstance(self.body, (bytes, bytearray)):
            return bytes(self.body), self.headers.get("content-type", "application/octet-stream")
        return json.dumps(self.body if self.body is not None else {}).encode(), "application/json"


#: How a route answers: given the recorder (for its URL) and the request, the reply.
Answer = Callable[["Recorder", Recorded], Reply]


class Recorder(LoopbackService):
    """Binds 127.0.0.1 on a free port (loopback.py); a context manager.  ``answer`` decides every reply."""

    def __init__(self, answer: Answer):
        super().__init__()
        self.answer = answer
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def take(self) -> list[Recorded]:
        """The requests recorded so far, in arrival order; the log starts empty again."""
        with self._lock:
            taken, self.requests = self.requests, []
        return taken

    def respond(self, handler: BaseHTTPRequestHandler, arrived: Arrived) -> None:
        # http.server writes the headers and the body in two sends: with Nagle's algorithm the body waited for
        # the client's delayed ACK (up to 40 ms a reply); the bytes on the wire are the same either way
        handler.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        request = Recorded(arrived.method, arrived.path, parse_qs(arrived.query, keep_blank_values=True),
                           arrived.headers, arrived.body)
        self.record(request)
        reply = self.answer(self, request)
        data, content_type = reply.encoded()
        send(handler, reply.status, data, {"content-type": content_type, **reply.headers}.items())
