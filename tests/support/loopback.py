"""The one loopback HTTP framework under every fake server of the suite.

``LoopbackService`` binds 127.0.0.1 on a free port, serves on a daemon thread (a context manager, or
start()/stop()), reads each request into an ``Arrived`` (method, path, query, headers, body: Content-Length or
chunked) and hands it to the subclass's ``respond(handler, arrived)``, which answers with ``send()`` (or writes
the wire itself, for the faults that must).  The provider fakes (providers_fakes/base.py ``FakeServer``: routes
and faults), the judge fakes (genai_fakes/server.py ``LoopbackServer``: scripted replies), the SDK comparison's
``Recorder`` (providers/sdk_diff/recorder.py) and benchdata's ``FileServer`` are its subclasses: each keeps only
how it answers.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterable


class LoopbackHTTPServer(ThreadingHTTPServer):
    """A threaded server with a listen queue as deep as a real front end's (nginx listens with 511).

    socketserver's default queue is 5: when 64 calls connect at once to a fake starved of CPU, the kernel drops
    the connections it has no room for, and a client uploading a large body sees its connection reset
    ("Server disconnected without sending a response"): a fault of the fake, which a paid request, sent once,
    reports as possibly paid.  The counter TcpExtListenOverflows in /proc/net/netstat shows when it happens.
    """

    request_queue_size = 1024
    daemon_threads = True


@dataclass
class Arrived:
    """One request as it arrived: the path without its query, header names in lower case, the whole body."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    at: float


class LoopbackService:
    """A loopback HTTP server of the suite; a subclass answers in ``respond``."""

    #: "HTTP/1.1": keep-alive, as the providers' front ends; "HTTP/1.0": one request per connection.
    protocol = "HTTP/1.1"
    #: The methods answered by ``respond``; another gets http.server's 501.
    methods: tuple[str, ...] = ("GET", "POST", "PUT", "DELETE", "PATCH")

    def __init__(self) -> None:
        self._server = LoopbackHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.service = self  # type: ignore[attr-defined]
        # a short poll: shutdown() waits for it, and every test that uses a server pays for the wait
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def respond(self, handler: BaseHTTPRequestHandler, arrived: Arrived) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


def send(handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: Iterable[tuple[str, str]]) -> None:
    """A whole reply: the status, ``headers`` as given, its Content-Length, the body."""
    handler.send_response(status)
    for name, value in headers:
        handler.send_header(name, value)
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class _Handler(BaseHTTPRequestHandler):
    def setup(self) -> None:
        super().setup()
        self.protocol_version = self.server.service.protocol  # type: ignore[attr-defined]

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up mid-reply (a cap, a deadline, a timeout test): nothing to answer

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
        service = self.server.service  # type: ignore[attr-defined]
        if self.command not in service.methods:
            self.send_error(501, f"Unsupported method ({self.command!r})")
            return
        path, _, query = self.path.partition("?")
        arrived = Arrived(self.command, path, query, {k.lower(): v for k, v in self.headers.items()}, self._body(),
                          time.time())
        service.respond(self, arrived)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve
