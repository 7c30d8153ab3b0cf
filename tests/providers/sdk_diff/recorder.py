"""One loopback HTTP server that records every request and answers as a route's canned replies say.

Both sides of a differential test (our adapter, and the provider's official
SDK) are pointed at the same ``Recorder``; the test then compares what each
side sent.  It speaks plain HTTP/1.1 on 127.0.0.1 (keep-alive, Content-Length
or chunked request bodies), so every SDK's own HTTP stack (httpx, httpx2,
requests, aiohttp) can talk to it unchanged.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable
from urllib.parse import parse_qs

from loopback import LoopbackHTTPServer


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


class Recorder:
    """Binds 127.0.0.1 on a free port; a context manager.  ``answer`` decides every reply."""

    def __init__(self, answer: Answer):
        self.answer = answer
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = LoopbackHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "Recorder":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def take(self) -> list[Recorded]:
        """The requests recorded so far, in arrival order; the log starts empty again."""
        with self._lock:
            taken, self.requests = self.requests, []
        return taken


def _handler_for(recorder: Recorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def _body(self) -> bytes:
            if "chunked" in self.headers.get("transfer-encoding", "").lower():
                return self._chunked()
            length = int(self.headers.get("content-length") or 0)
            return self.rfile.read(length) if length else b""

        def _chunked(self) -> bytes:
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()

        def _serve(self) -> None:
            path, _, query = self.path.partition("?")
            request = Recorded(self.command, path, parse_qs(query, keep_blank_values=True),
                               {k.lower(): v for k, v in self.headers.items()}, self._body())
            recorder.record(request)
            reply = recorder.answer(recorder, request)
            data, content_type = reply.encoded()
            self.send_response(reply.status)
            for name, value in {"content-type": content_type, **reply.headers}.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

    return Handler
