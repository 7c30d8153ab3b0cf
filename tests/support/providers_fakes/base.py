"""A small threaded loopback HTTP server with routing, request log and fault injection.

A fake provider subclasses ``FakeServer`` and registers routes with
``self.route(method, path_regex, handler)``; a handler gets a ``Seen`` request
and returns a ``Reply``.  Tests queue faults with ``server.inject(...)``:
the generic ones (an HTTP status with an optional Retry-After, malformed JSON,
a slow reply, a dropped connection) are applied here before routing, matched
on ``fault_path(seen)`` (the request path unless a fake says otherwise); the
provider-specific ones (refusal, truncated image, expired URL, a failed or
lost job) are taken by the fake's own handlers with ``take_fault``.
``server.chaos = Chaos(...)`` (chaos.py) queues faults every N requests.

Faults of the wire (the hostile network of issue 14), generic too:
  ``trickle``   the routed reply, status line and headers included, one byte every ``delay`` seconds
  ``endless``   HTTP 200 whose body never ends (``headers`` sets its content type)
  ``bomb``      HTTP 200, ``Content-Encoding: gzip``, a few MB holding ``body`` bytes of zeros (2 GiB)
  ``redirect``  HTTP ``status`` (307) to ``body`` formatted with the request's ``path`` and ``query``
  ``headers``   the routed reply with ``headers`` added (e.g. a header echoing the key)
  ``relocate``  the routed JSON reply with every URL of this fake moved to ``body`` (a foreign host's base)
"""

from __future__ import annotations

import base64
import email.parser
import email.policy
import functools
import io
import itertools
import json
import re
import struct
import threading
import time
import zlib
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Iterable

import httpx
from loopback import Arrived, LoopbackService, send
from PIL import Image

GENERIC_FAULTS = {"status", "malformed", "slow", "drop", "trickle", "endless", "bomb", "redirect", "headers",
                  "relocate"}
BOMB_SIZE = 2 * 1024 ** 3


@dataclass
class Reply:
    status: int = 200
    body: Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    chunks: Iterable[bytes] | None = None  # a body written as it comes, without a length (it may never end)
    trickle: float = 0.0  # seconds between the single bytes of the whole reply

    def encoded(self) -> bytes:
        if isinstance(self.body, (dict, list)):
            return json.dumps(self.body).encode()
        if isinstance(self.body, str):
            return self.body.encode()
        return bytes(self.body)

    def head(self) -> dict[str, str]:
        """The headers it is sent with, on the wire or through the mock transport: JSON, unless they say."""
        return {"content-type": "application/json", **self.headers}


@dataclass
class Seen:
    method: str
    path: str  # without the query
    query: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float
    match: re.Match | None = None

    def json(self) -> Any:
        return json.loads(self.body)

    def form(self) -> list[tuple[str, str | None, bytes]]:
        """multipart/form-data parts as (name, filename, content)."""
        head = f"Content-Type: {self.headers['content-type']}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + self.body)
        return [(part.get_param("name", header="content-disposition"), part.get_filename(),
                 part.get_payload(decode=True)) for part in message.iter_parts()]


@dataclass
class Fault:
    kind: str  # "status", "malformed", "slow", "drop", or a provider-specific kind
    path: str = ""  # regex searched in the request path; "" matches every request
    count: int = 1
    status: int = 503
    retry_after: str | None = None
    body: Any = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


class FakeServer(LoopbackService):
    """Binds 127.0.0.1 on a free port (loopback.py); use as a context manager or call start()/stop()."""

    def __init__(self, key: str = "fake-key-0123456789"):
        super().__init__()
        self.key = key
        self.requests: list[Seen] = []
        #: the free key checks received (``key_check_route``), kept apart from ``requests``: a run sends one
        #: before anything is paid (pytest_hypeedit/transport/keycheck.py), and ``requests`` counts the paid work
        self.key_checks: list[Seen] = []
        self.faults: list[Fault] = []
        self._routes: list[tuple[str, re.Pattern, Callable[[Seen], Reply]]] = []
        self._check_routes: list[tuple[str, re.Pattern]] = []
        self._lock = threading.Lock()
        self.chaos = None  # a chaos.Chaos that queues faults every N requests

    # ---------------------------------------------------------------- configuration
    def route(self, method: str, path: str, handler: Callable[[Seen], Reply]) -> None:
        self._routes.append((method, re.compile(path), handler))

    def key_check_route(self, method: str, path: str, handler: Callable[[Seen], Reply]) -> None:
        """A route of the provider's free call that proves a key: served first, recorded in ``key_checks``."""
        self._routes.insert(0, (method, re.compile(path), handler))
        self._check_routes.append((method, re.compile(path)))

    def is_key_check(self, seen: Seen) -> bool:
        return any(method == seen.method and pattern.fullmatch(seen.path) for method, pattern in self._check_routes)

    def inject(self, kind: str, **kwargs: Any) -> Fault:
        fault = Fault(kind, **kwargs)
        with self._lock:
            self.faults.append(fault)
        return fault

    def take_fault(self, kind: str, path: str) -> Fault | None:
        """The first queued fault of ``kind`` matching ``path`` (consumed), else None."""
        with self._lock:
            for fault in self.faults:
                if fault.kind == kind and re.search(fault.path, path) and fault.count > 0:
                    fault.count -= 1
                    if fault.count == 0:
                        self.faults.remove(fault)
                    return fault
        return None

    def _take_generic(self, path: str) -> Fault | None:
        for kind in GENERIC_FAULTS:
            fault = self.take_fault(kind, path)
            if fault is not None:
                return fault
        return None

    # ---------------------------------------------------------------- serving
    def fault_path(self, seen: Seen) -> str:
        """What generic faults' ``path`` regexes are matched against (a fake with one URL for several
        operations adds the operation)."""
        return seen.path

    def dispatch(self, seen: Seen) -> Reply | None:
        fault = self._take_generic(self.fault_path(seen))
        if fault is not None:
            if fault.kind == "drop":
                return None
            if fault.kind == "slow":
                time.sleep(fault.delay)
            elif fault.kind == "status":
                return self.error_reply(fault)
            elif fault.kind == "malformed":
                return Reply(200, fault.body or b'{"data": [ {"url": ', {"content-type": "application/json"})
            elif fault.kind in WIRE_FAULTS:
                return WIRE_FAULTS[fault.kind](fault, seen)
        reply = self._route(seen)
        if fault is not None and fault.kind == "trickle":
            reply.trickle = fault.delay or 1.0
        elif fault is not None and fault.kind == "headers":
            reply.headers = {**reply.headers, **fault.headers}
        elif fault is not None and fault.kind == "relocate":
            reply.body = json.loads(json.dumps(reply.body).replace(self.url, str(fault.body)))
        return reply

    def _route(self, seen: Seen) -> Reply:
        for method, pattern, handler in self._routes:
            match = pattern.fullmatch(seen.path)
            if match and method == seen.method:
                seen.match = match
                if not self.authorized(seen):
                    return self.unauthorized()
                return handler(seen)
        return Reply(404, {"error": {"code": "NotFound", "message": f"no route {seen.method} {seen.path}"}})

    def error_reply(self, fault: Fault) -> Reply:
        headers = dict(fault.headers)
        if fault.retry_after is not None:
            headers["Retry-After"] = fault.retry_after
        body = fault.body if fault.body is not None else {"error": {"code": str(fault.status), "message": "injected"}}
        return Reply(fault.status, body, headers)

    # Subclasses check their own auth header.
    def authorized(self, seen: Seen) -> bool:
        return True

    def unauthorized(self) -> Reply:
        return Reply(401, {"error": {"code": "AuthenticationError", "message": "bad key"}})

    def record(self, seen: Seen) -> None:
        if self.is_key_check(seen):
            with self._lock:
                self.key_checks.append(seen)
            return
        with self._lock:
            self.requests.append(seen)
        if self.chaos is not None:
            self.chaos.on_request(self, self.fault_path(seen))

    def seen(self, path: str = "") -> list[Seen]:
        """The requests whose ``fault_path`` (usually the path) matches the regex ``path``."""
        with self._lock:
            requests = list(self.requests)
        return [request for request in requests if re.search(path, self.fault_path(request))]

    def transport(self) -> httpx.MockTransport:
        """The same fake with no socket: an ``httpx.MockTransport`` for a client to send through (the adapters'
        ``Runtime.transport``), for the tests where the wire adds nothing.  The replies, faults and request log
        are the loopback server's; what only a socket can show (a read timeout, a reply trickled, written
        without end or as a gzip bomb) is refused here, so such a test runs on the wire."""
        return httpx.MockTransport(self._answer)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        path, _, query = request.url.raw_path.decode("ascii").partition("?")
        seen = Seen(request.method, path, query, {k.lower(): v for k, v in request.headers.items()}, request.read(),
                    time.time())
        reply = self._reply_to(seen)
        if reply is None:  # a dropped connection, as httpx reports it from a socket
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        if reply.chunks is not None or reply.trickle or "content-encoding" in {k.lower() for k in reply.headers}:
            raise AssertionError(f"{seen.method} {seen.path}: this reply needs a socket; mark the test wire")
        return httpx.Response(reply.status, headers=reply.head(), content=reply.encoded())

    def respond(self, handler: BaseHTTPRequestHandler, arrived: Arrived) -> None:
        reply = self._reply_to(Seen(arrived.method, arrived.path, arrived.query, arrived.headers, arrived.body,
                                    arrived.at))
        if reply is None:  # a dropped connection
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        if reply.chunks is not None or reply.trickle:
            _write_wire(handler, reply)
            return
        send(handler, reply.status, reply.encoded(), reply.head().items())

    def _reply_to(self, seen: Seen) -> Reply | None:
        """The request logged, and the reply the fake gives it (None: the connection dropped)."""
        self.record(seen)
        return self.dispatch(seen)


@functools.lru_cache(maxsize=2)
def gzip_bomb(size: int = BOMB_SIZE, block: int = 1 << 20) -> bytes:
    """A valid gzip file of ``size`` zero bytes, about 1/1000 of that long: the same deflate block (a full
    flush resets the window, so each is byte for byte the same) ``size / block`` times, and the true CRC."""
    zeros, count = bytes(block), size // block
    deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    first = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    same = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(zeros, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + first + same * (count - 1) + deflate.flush() + struct.pack("<II", crc, (count * block) & 0xFFFFFFFF)


def _endless(fault: Fault, seen: Seen) -> Reply:
    kind = fault.headers.get("content-type", "application/json")
    return Reply(200, headers={"content-type": kind}, chunks=itertools.chain([b"{"], itertools.repeat(b" " * 65536)))


def _bomb(fault: Fault, seen: Seen) -> Reply:
    kind = fault.headers.get("content-type", "application/json")
    return Reply(200, gzip_bomb(fault.body or BOMB_SIZE), {"content-type": kind, "content-encoding": "gzip"})


def _redirect(fault: Fault, seen: Seen) -> Reply:
    status = fault.status if 300 <= fault.status < 400 else 307
    return Reply(status, b"", {"location": str(fault.body).format(path=seen.path, query=seen.query)})


WIRE_FAULTS = {"endless": _endless, "bomb": _bomb, "redirect": _redirect}


def _head(reply: Reply, length: int | None) -> bytes:
    phrase = HTTPStatus(reply.status).phrase if reply.status in HTTPStatus._value2member_map_ else "Unknown"
    headers = reply.head()
    headers.update({"content-length": str(length)} if length is not None else {"connection": "close"})
    lines = [f"HTTP/1.1 {reply.status} {phrase}", *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    return "\r\n".join(lines).encode("latin-1")


def _write_wire(handler: BaseHTTPRequestHandler, reply: Reply) -> None:
    """A trickled or endless reply, written by hand (http.server's helpers buffer the head)."""
    body = None if reply.chunks is not None else reply.encoded()
    pieces: Iterable[bytes] = [_head(reply, None if body is None else len(body)), *([body] if body else [])]
    if reply.chunks is not None:
        pieces = itertools.chain(pieces, reply.chunks)
        handler.close_connection = True
    if reply.trickle:
        pieces = (bytes([byte]) for piece in pieces for byte in piece)
    try:
        for piece in pieces:
            handler.wfile.write(piece)
            handler.wfile.flush()
            if reply.trickle:
                time.sleep(reply.trickle)
    except (BrokenPipeError, ConnectionResetError, OSError):
        handler.close_connection = True  # the client gave up: that is the point


# --------------------------------------------------------------------------- images


def make_image(width: int = 64, height: int = 48, fmt: str = "PNG", color=(200, 30, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format=fmt)
    return buffer.getvalue()


@functools.lru_cache(maxsize=2)
def huge_png(width: int = 12000, height: int = 12000) -> bytes:
    """A valid grayscale PNG of ``width`` x ``height`` black pixels, written row by row (never held decoded):
    12000 x 12000 is about 140 KB on the wire and 144 MP, 430 MB as RGB once decoded."""
    deflate = zlib.compressobj(6)
    row = bytes(width + 1)  # filter byte 0, then the row's pixels
    idat = b"".join(deflate.compress(row) for _ in range(height)) + deflate.flush()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def truncated(data: bytes) -> bytes:
    """The first third of an image: the magic number is right, the pixels are missing."""
    return data[: max(len(data) // 3, 16)]


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"
