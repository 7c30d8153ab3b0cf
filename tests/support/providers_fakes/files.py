"""Result files served by a fake: signed-looking URLs that can expire or come back truncated."""

from __future__ import annotations

import itertools
import threading

from .base import FakeServer, Reply, Seen, huge_png, make_image, truncated

_ids = itertools.count(1)


class FileStore:
    """Mounts ``GET /files/<id>.<ext>`` on a fake; ``put`` returns the URL of a new result image."""

    def __init__(self, server: FakeServer, prefix: str = "/files"):
        self.server, self.prefix = server, prefix
        self.files: dict[str, bytes] = {}
        self.owners: dict[str, object] = {}  # file name -> what the fake says it belongs to (e.g. a candidate)
        self.on_expired = None  # called with the owner of a file that answered "expired"
        self._lock = threading.Lock()
        server.route("GET", rf"{prefix}/(?P<name>[^/]+)", self.serve)

    def new_image(self, width: int, height: int, fmt: str = "PNG", path: str = "") -> bytes:
        """A result image for the next request: truncated when a 'truncated' fault is queued, a 12000 x 12000
        PNG (140 KB, 144 MP) when a 'huge' one is."""
        if self.server.take_fault("huge", path) is not None:
            return huge_png()
        data = make_image(width, height, fmt)
        if self.server.take_fault("truncated", path) is not None:
            data = truncated(data)
        return data

    def put(self, data: bytes, ext: str = "png", owner: object = None) -> str:
        name = f"{next(_ids)}.{ext}"
        with self._lock:
            self.files[name] = data
            self.owners[name] = owner
        return f"{self.server.url}{self.prefix}/{name}?X-Tos-Expires=86400&X-Tos-Signature=abc"

    def serve(self, seen: Seen) -> Reply:
        if self.server.take_fault("expired", seen.path) is not None:
            if self.on_expired is not None:
                self.on_expired(self.owners.get(seen.match["name"]))
            return Reply(403, "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>",
                         {"content-type": "application/xml"})
        data = self.files.get(seen.match["name"])
        if data is None:
            return Reply(404, "not found", {"content-type": "text/plain"})
        ext = seen.match["name"].rsplit(".", 1)[-1]
        return Reply(200, data, {"content-type": {"jpg": "image/jpeg"}.get(ext, f"image/{ext}")})
