"""JSON request bodies that carry images without holding them in memory.

Most image APIs take references inline, as base64 in a JSON body.  Built the
plain way, an image in flight is held four times over (the file's bytes, the
base64 text, the JSON text, the encoded body) for as long as the request
takes; with 64 calls in flight and 4K references that is gigabytes.  Here an
image in a body is an ``InlineImage`` (a file and a prefix such as
``data:image/jpeg;base64,``); ``JsonBody`` writes the JSON around it and
base64-encodes the file in small chunks while the body is sent, so an image in
flight is held about once: as the file, on disk.

The body is re-iterable (a retry sends it again) and its length is known in
advance (``Content-Length``; some servers do not accept chunked uploads).  The bytes
on the wire are exactly ``json.dumps`` of the same value with the images as
strings.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Iterator

import httpx

#: Bytes read per chunk: a multiple of 3, so chunks base64-encode with no padding in between.
CHUNK = 3 * 64 * 1024


class InlineImage:
    """A file that goes into a JSON body as base64 text after ``prefix`` (e.g. a data URL's header)."""

    def __init__(self, path: Path, prefix: str = "", data: bytes | None = None):
        self.path, self.prefix, self._data = Path(path), prefix, data
        self.size = len(data) if data is not None else self.path.stat().st_size

    def __len__(self) -> int:
        """The length of the text it stands for (a data URL's length, for limits such as Replicate's 1 MB)."""
        return len(self.prefix) + 4 * ((self.size + 2) // 3)

    def __str__(self) -> str:
        return self.prefix + base64.b64encode(self._read()).decode("ascii")

    def startswith(self, text: str) -> bool:
        return self.prefix.startswith(text) if len(text) <= len(self.prefix) else str(self).startswith(text)

    def chunks(self) -> Iterator[bytes]:
        yield self.prefix.encode("ascii")
        if self._data is not None:
            for start in range(0, len(self._data), CHUNK):
                yield base64.b64encode(self._data[start:start + CHUNK])
            return
        with open(self.path, "rb") as handle:
            while block := handle.read(CHUNK):
                yield base64.b64encode(block)

    def _read(self) -> bytes:
        return self._data if self._data is not None else self.path.read_bytes()


class JsonBody(httpx.SyncByteStream):
    """``value`` as a JSON body whose ``InlineImage``s are encoded while it is sent (see the module docstring)."""

    def __init__(self, value: Any):
        self._pieces = _merged(_pieces(value))
        self.length = sum(len(p) + 2 if isinstance(p, InlineImage) else len(p) for p in self._pieces)

    def __iter__(self) -> Iterator[bytes]:
        for piece in self._pieces:
            if isinstance(piece, InlineImage):
                yield b'"'
                yield from piece.chunks()
                yield b'"'
            else:
                yield piece


def has_inline(value: Any) -> bool:
    if isinstance(value, InlineImage):
        return True
    if isinstance(value, dict):
        return any(has_inline(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_inline(v) for v in value)
    return False


def json_request(value: Any, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """The ``client.request`` keyword arguments that send ``value`` as JSON: streamed when it carries images."""
    if not has_inline(value):
        return {"json": value, "headers": headers or {}}
    body = JsonBody(value)
    return {"content": body,
            "headers": {**(headers or {}), "content-type": "application/json", "content-length": str(body.length)}}


def _pieces(value: Any) -> Iterator[bytes | InlineImage]:
    # The separators of json.dumps' defaults, so the wire bytes match it exactly.
    if isinstance(value, InlineImage):
        yield value
    elif isinstance(value, dict):
        yield b"{"
        for index, (key, item) in enumerate(value.items()):
            yield (b", " if index else b"") + json.dumps(str(key)).encode("ascii") + b": "
            yield from _pieces(item)
        yield b"}"
    elif isinstance(value, (list, tuple)):
        yield b"["
        for index, item in enumerate(value):
            if index:
                yield b", "
            yield from _pieces(item)
        yield b"]"
    else:
        yield json.dumps(value).encode("ascii")


def _merged(pieces: Iterator[bytes | InlineImage]) -> list[bytes | InlineImage]:
    merged: list[bytes | InlineImage] = []
    for piece in pieces:
        if isinstance(piece, bytes) and merged and isinstance(merged[-1], bytes):
            merged[-1] += piece
        else:
            merged.append(piece)
    return merged
