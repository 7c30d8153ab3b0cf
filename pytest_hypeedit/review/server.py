"""The review app's HTTP server: stdlib ``ThreadingHTTPServer``, a fixed set of routes.

Nothing is ever served from a path taken from the URL.  The routes are an
exact-match table (three static files, two JSON endpoints) plus
``/img/<id>``, where ``<id>`` is looked up in a table built at start-up from
the scanned outputs and the tasks' reference images.  A file is served only
while it is a regular file inside the folder it was found in, reached without
a symbolic link (the split's outputs for a candidate; the images folder or the
cache for a reference), checked at start-up and again on every request: a file
swapped for a symbolic link after the start is not accepted, like one that was a
link from the beginning.  Every image is decoded
and re-encoded as PNG without metadata, so neither the file format nor any
embedded metadata (software tags, C2PA manifests) can tell the rater which
model made it.  Requests whose Host is not a name of the address the server listens on
are not accepted (DNS rebinding), whatever that address, and POSTs must be JSON from the same origin.

Memory is bounded whatever the images: re-encoded PNGs are cached up to ``CACHE_BYTES`` in all (20 references
of 5504x3072 once held 741 MB when the cache counted images), and at most ``DECODES`` images are decoded at
once (six parallel requests once peaked at 2.3 GB); the other requests wait their turn.
"""

from __future__ import annotations

import io
import json
import os
import re
import socket
import sys
import threading
from collections import OrderedDict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..files import check_regular
from .catalog import Candidate, Catalog, opaque_id
from .labels_store import LabelsStore

STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
          "/static/app.css": ("app.css", "text/css; charset=utf-8")}
IMAGE_ROUTE = re.compile(r"^/img/([0-9a-f]{16})$")
MAX_BODY = 1 << 20
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
#: The most the cache of re-encoded PNGs holds, in bytes: a few dozen full-size references, a few hundred
#: candidates of the usual sizes.  A PNG larger than a quarter of it is served but not kept.
CACHE_BYTES = 192 << 20
#: Images decoded at once: a 5504x3072 image takes about 200 MB while it is decoded and re-encoded.
DECODES = 2
#: The listen backlog (the stdlib's 5 made a burst of 50 requests wait up to 7.7 s).
BACKLOG = 128
#: Seconds a connection may stay silent (no request, or a request or reply that stops moving) before it is
#: closed: a browser's idle keep-alive connection is closed and opened again, at no cost to the rater.  Without it
#: 2,000 idle connections held 1,995 threads for as long as their clients wished.
IDLE_TIMEOUT_S = 20.0
#: Connections served at once, each on a thread of its own: a browser opens about six per server.  One more waits
#: up to ACCEPT_WAIT_S for a thread to come free, then is closed unanswered (the browser tries again).
MAX_CONNECTIONS = 32
ACCEPT_WAIT_S = 2.0


def inside(path: Path, roots: list[Path]) -> Path | None:
    """The real path of ``path`` when it is a regular file inside one of ``roots`` reached without a symbolic
    link (files.check_regular: the run and the report do not accept links either), else None."""
    for root in roots:
        try:
            check_regular(path, root)
            return path.resolve(strict=True)
        except (OSError, RuntimeError):  # missing, a link, or not under this root
            continue
    return None


class ImageTable:
    """Opaque image id -> file, with a small cache of re-encoded PNGs.

    ``roots`` maps "candidate" and "reference" to the folders each may be served from (resolved); None: the
    folders are not known (tests that build a table by hand), every file given is allowed."""

    def __init__(self, catalog: Catalog, reference_paths: dict[str, list[Path]],
                 roots: dict[str, list[Path]] | None = None, cache_bytes: int = CACHE_BYTES,
                 decodes: int = DECODES):
        self.paths: dict[str, Path] = {}
        self.roots: dict[str, list[Path]] = {}
        self.candidate_image: dict[str, str | None] = {}  # None: a link out of its folder, never served
        self.reference_images: dict[str, list[str]] = {}
        self._allowed = roots
        for candidate in catalog.candidates:
            self.candidate_image[candidate.item_id] = self._add(candidate.path, "candidate", candidate.item_id)
        for task_id, paths in reference_paths.items():
            found = [self._add(p, "reference", task_id, p.name) for p in paths]
            self.reference_images[task_id] = [image_id for image_id in found if image_id is not None]
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cache_bytes, self.cached_bytes = cache_bytes, 0
        self._lock = threading.Lock()
        self._decoding = threading.BoundedSemaphore(decodes)

    def _add(self, path: Path, kind: str, *parts: str) -> str | None:
        image_id = opaque_id(kind, *parts)
        roots = [path.parent.resolve()] if self._allowed is None else self._allowed[kind]
        if inside(path, roots) is None:
            return None  # a link that leads out of its folder: never listed, never served
        self.paths[image_id], self.roots[image_id] = path, roots
        return image_id

    def servable(self, image_id: str) -> bool:
        """A known image whose file still lies inside its folder (checked on every request)."""
        return image_id in self.paths and inside(self.paths[image_id], self.roots[image_id]) is not None

    def png(self, image_id: str) -> bytes | None:
        real = inside(self.paths[image_id], self.roots[image_id])  # again now: the file may have been swapped
        if real is None:
            return None
        cached = self._cached(image_id)
        if cached is not None:
            return cached
        with self._decoding:  # at most ``decodes`` images in memory being decoded
            cached = self._cached(image_id)  # a request that waited for the same image finds it done
            if cached is not None:
                return cached
            data = _reencode_png(real)
        if data is not None:
            self._keep(image_id, data)
        return data

    def _cached(self, image_id: str) -> bytes | None:
        with self._lock:
            if image_id in self._cache:
                self._cache.move_to_end(image_id)
                return self._cache[image_id]
        return None

    def _keep(self, image_id: str, data: bytes) -> None:
        if len(data) > self._cache_bytes // 4:
            return  # served, not kept: one huge image must not push out every other
        with self._lock:
            if image_id in self._cache:
                return
            self._cache[image_id] = data
            self.cached_bytes += len(data)
            while self.cached_bytes > self._cache_bytes:
                _, dropped = self._cache.popitem(last=False)
                self.cached_bytes -= len(dropped)


def _reencode_png(path: Path) -> bytes | None:
    from PIL import Image

    from ..providers.images import orientation, upright

    try:
        with open(path, "rb", opener=_no_follow) as handle, Image.open(handle) as image:
            image.load()
            mode = "RGBA" if "A" in image.getbands() or "transparency" in image.info else "RGB"
            out = io.BytesIO()
            shown = upright(image.convert(mode), orientation(image))  # as the report and the signals see it
            shown.save(out, format="PNG", compress_level=1)  # no info: metadata dropped
            return out.getvalue()
    except Exception:  # an undecodable candidate is shown as unavailable, not a crash
        return None


def _no_follow(path: str, flags: int) -> int:
    """``open``'s opener: a file swapped for a link since it was checked is not followed (where O_NOFOLLOW is)."""
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0))


class ReviewApp:
    """Everything a request handler needs, shared by all handler threads."""

    def __init__(self, catalog: Catalog, store: LabelsStore, images: ImageTable, rater: str):
        self.catalog, self.store, self.images, self.rater = catalog, store, images, rater
        self.static = {route: (resources.files(__package__).joinpath("static").joinpath(name).read_bytes(), kind)
                       for route, (name, kind) in STATIC.items()}
        self.allowed_hosts: set[str] | None = None  # set once the port is known

    def state(self) -> dict[str, Any]:
        """The whole session for the browser: aliases and opaque ids only, never a model name or a path."""
        shown = {c.task_id for c in self.catalog.candidates}
        tasks: dict[str, dict[str, Any]] = {tid: {"instruction": t.instruction, "types": list(t.task_types), "size": [t.width, t.height],
                       "refs": self.images.reference_images.get(tid, []),
                       "refs_missing": len(t.input_images) - len(self.images.reference_images.get(tid, []))}
                 for tid, t in self.catalog.tasks.items()
                 if tid in shown}
        items = [self._item(c) for c in self.catalog.candidates]
        return {"rater": self.rater, "split": self.catalog.split, "store_key": opaque_id(self.store.path.resolve()),
                "aliases": sorted(self.catalog.aliases), "task_types": sorted({t for v in tasks.values() for t in v["types"]}),
                "tasks": tasks, "items": items,
                "resume": next((i["id"] for i in items if i["verdict"] is None), None)}

    def _item(self, candidate: Candidate) -> dict[str, Any]:
        entry = self.store.verdict_of(candidate) or {}
        # The rater's own verdict and note only: never the model, the judge's verdict or its reasoning.
        return {"id": candidate.item_id, "alias": candidate.alias, "task": candidate.task_id,
                "repeat": candidate.repeat, "image": self.images.candidate_image.get(candidate.item_id),
                "verdict": entry.get("verdict"), "ms": entry.get("ms"), "note": entry.get("note")}


class Handler(BaseHTTPRequestHandler):
    server_version = "hypeedit-review"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    #: each read and write of the connection (StreamRequestHandler sets it on the socket): a silent one is closed
    timeout = IDLE_TIMEOUT_S
    app: ReviewApp  # set on the subclass made by make_server
    verbose = False

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        if not self._host_ok():
            return
        path = urlsplit(self.path).path
        if path in self.app.static:
            body, kind = self.app.static[path]
            return self._send(HTTPStatus.OK, body, kind)
        if path == "/api/state":
            return self._json(HTTPStatus.OK, self.app.state())
        match = IMAGE_ROUTE.match(path)
        if match and self.app.images.servable(match.group(1)):
            return self._image(match.group(1))
        self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802
        if not self._host_ok() or not self._same_origin():
            return
        if urlsplit(self.path).path != "/api/verdicts":
            return self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})
        payload = self._read_json()
        if payload is None:
            return
        ops = payload.get("ops") if isinstance(payload, dict) else None
        if not isinstance(ops, list):
            return self._json(HTTPStatus.BAD_REQUEST, {"error": "expected {\"ops\": [...]}"})
        result = self.app.store.apply(ops)
        self._json(HTTPStatus.OK, {"acked": result.acked, "rejected": result.rejected,
                                   "labelled": self.app.store.labelled_count(),
                                   "total": len(self.app.catalog.candidates)})

    def _read_json(self) -> Any:  # the body as parsed, before the caller checks its shape
        length = self.headers.get("Content-Length", "")
        if not length.isdigit() or int(length) > MAX_BODY:
            self._json(HTTPStatus.BAD_REQUEST, {"error": "a JSON body under 1 MiB with Content-Length"})
            return None
        if self.headers.get_content_type() != "application/json":
            self._json(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": "Content-Type must be application/json"})
            return None
        try:
            return json.loads(self.rfile.read(int(length)))
        except (UnicodeDecodeError, json.JSONDecodeError):
            self._json(HTTPStatus.BAD_REQUEST, {"error": "body is not JSON"})
            return None

    def _image(self, image_id: str) -> None:
        data = self.app.images.png(image_id)
        if data is None:
            return self._json(HTTPStatus.UNPROCESSABLE_ENTITY, {"error": "the image cannot be decoded"})
        self._send(HTTPStatus.OK, data, "image/png", cache="private, max-age=3600")

    def _host_ok(self) -> bool:
        allowed = self.app.allowed_hosts
        if allowed is None or (self.headers.get("Host") or "").lower() in allowed:
            return True
        self._json(HTTPStatus.MISDIRECTED_REQUEST, {"error": "unexpected Host header"})
        return False

    def _same_origin(self) -> bool:
        origin = self.headers.get("Origin")
        allowed = self.app.allowed_hosts
        if origin is None or allowed is None or urlsplit(origin).netloc.lower() in allowed:
            return True
        self._json(HTTPStatus.FORBIDDEN, {"error": "cross-origin request not accepted"})
        return False

    def _json(self, status: HTTPStatus, data: object) -> None:
        self._send(status, json.dumps(data, ensure_ascii=False).encode("utf-8"), "application/json")

    def _send(self, status: HTTPStatus, body: bytes, kind: str, cache: str = "no-store") -> None:
        self.send_response(status)
        for name, value in (("Content-Type", kind), ("Content-Length", str(len(body))), ("Cache-Control", cache),
                            ("Content-Security-Policy", CSP), ("X-Content-Type-Options", "nosniff"),
                            ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY")):
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's signature)
        if self.verbose:
            sys.stderr.write(f"[hypeedit-review] {format % args}\n")


class ReviewServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True  # a restart right after a kill gets the same port back
    request_queue_size = BACKLOG

    def __init__(self, *args: Any, max_connections: int = MAX_CONNECTIONS, accept_wait_s: float = ACCEPT_WAIT_S,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connections = threading.BoundedSemaphore(max_connections)  # a thread each, at most this many
        self.accept_wait_s = accept_wait_s

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread for the connection when one of ``max_connections`` is free within ``accept_wait_s``; else it
        is closed unanswered (threads stay bounded whatever the number of connections opened)."""
        if not self.connections.acquire(timeout=self.accept_wait_s):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: its slot is free again
            self.connections.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.connections.release()


def make_server(app: ReviewApp, host: str = "127.0.0.1", port: int = 0, verbose: bool = False,
                allow_hosts: tuple[str, ...] = (), *, idle_timeout_s: float = IDLE_TIMEOUT_S,
                max_connections: int = MAX_CONNECTIONS, accept_wait_s: float = ACCEPT_WAIT_S) -> ReviewServer:
    """A server on ``host``:``port`` that answers only requests naming it (``Host``, ``Origin``): by its loopback
    names, the address it listens on, and ``allow_hosts`` (names it is reached by, e.g. through a proxy); on a
    wildcard address, also this machine's name and addresses.  A connection silent for ``idle_timeout_s`` is
    closed; at most ``max_connections`` are served at once."""
    handler = type("BoundHandler", (Handler,), {"app": app, "verbose": verbose, "timeout": idle_timeout_s})
    server_class = ReviewServer
    if ":" in host:
        class ReviewServer6(ReviewServer):
            address_family = socket.AF_INET6

        server_class = ReviewServer6
    server = server_class((host, port), handler, max_connections=max_connections, accept_wait_s=accept_wait_s)
    bound_port = server.server_address[1]
    app.allowed_hosts = {_host_header(name, bound_port) for name in host_names(host, allow_hosts)}
    return server


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


def host_names(host: str, allow_hosts: tuple[str, ...] = ()) -> set[str]:
    """The names a request may call the server by (lower case, no port)."""
    names = {"127.0.0.1", "localhost", "::1", host.lower(), *(name.lower() for name in allow_hosts)}
    if host in ("", "0.0.0.0", "::"):  # every address of this machine: its names and their addresses
        machine = {socket.gethostname(), socket.getfqdn()}
        names |= {name.lower() for name in machine}
        for name in machine:
            try:
                names |= {str(info[4][0]) for info in socket.getaddrinfo(name, None)}  # the address: text
            except OSError:
                pass
    names.discard("")
    return names


def _host_header(name: str, port: int) -> str:
    return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"


def exposure_warning(host: str, port: int, rater: str) -> str | None:
    """What to tell the user when the server listens beyond this machine, else None."""
    if is_loopback(host):
        return None
    return (f"listening on {host or '0.0.0.0'}:{port}, not on this machine only: anyone who can reach it can see "
            f"the candidates and label them as {rater}; requests must name the server by one of its addresses "
            "(add others with --allow-host NAME). Use the default --host 127.0.0.1 unless you need this")
