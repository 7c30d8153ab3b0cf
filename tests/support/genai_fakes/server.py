"""A small threaded loopback HTTP server that answers from a script of replies."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable

from loopback import LoopbackHTTPServer


@dataclass
class Reply:
    """One scripted HTTP answer.  ``body`` may be a dict (sent as JSON), str or bytes."""

    status: int = 200
    body: Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (a slow server)

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


class LoopbackServer:
    """Base of the fakes: subclasses implement ``handle(request) -> Reply``."""

    def __init__(self) -> None:
        self.script: deque[Script] = deque()
        self.default: Script | None = None
        self.requests: list[SeenRequest] = []
        self._lock = threading.Lock()
        self._httpd = LoopbackHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

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

    def start(self) -> "LoopbackServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _handler_for(server: LoopbackServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            seen = SeenRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
            try:
                seen.json = json.loads(raw) if raw else None
            except ValueError:
                seen.error = "request body is not JSON"
            server.requests.append(seen)
            self._send(server.handle(seen))

        def _send(self, reply: Reply) -> None:
            if reply.delay:
                time.sleep(reply.delay)
            body = reply.encoded()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test): nothing to answer

        def log_message(self, *args) -> None:
            pass  # keep test output clean

    return Handler


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake_keys(value: Any) -> Any:
    """The same JSON with every object key in snake_case, so camelCase and snake_case requests compare equal."""
    if isinstance(value, dict):
        return {_CAMEL.sub("_", key).lower(): snake_keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [snake_keys(item) for item in value]
    return value
