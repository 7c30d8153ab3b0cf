"""A batch's results file, read line by line: never one reply in memory, whatever its size.

A provider writes a batch's results as JSONL, one line per request, each holding a whole image as base64: a
batch of 500 2K PNGs is a file of gigabytes, far past the cap of one reply (``bounds.inline_cap``: one image).
So the file is streamed (``stream=True``: the policy transport hands the body over as it arrives) and split at
``b"\\n"`` only: JSON escapes every control character inside a string, but U+2028, U+2029 and U+0085 may stand raw
in a valid line, and ``str.splitlines`` also splits at them (and at \\v, \\f, \\x1c-\\x1e), which cut valid lines
in two.  Each line is capped at one image reply (``line_cap``); a longer line is not kept (its first bytes are, to
name its key) and costs only itself, as does a line that is not JSON: the rest of the batch lands.

The lines are written to a spool (an unlinked temporary file in the run's downloads folder: the disk frees it when
the last line read from it is gone) and indexed by key; each candidate reads its own line back when its turn
comes, a few at a time (``LINE_WORK``), and writes its image to a file in its own folder before it lets go of
``LINE_WORK`` (``land``): what leaves the reader is a path, not megabytes.  A batch ends all its lines at once, and
a candidate that kept its decoded image until its turn to be saved kept it beside every other one of its batch;
so the process holds a few lines in memory, not the batch.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..files import new_temporary
from ..transport.bounds import MiB

#: Bytes kept of a line past its cap: enough to find its key (custom_id, key), which comes first.
HEAD = 64 * 1024
#: Lines read back, decoded and landed at a time, by all the candidates of a process (each a 2K image: ~16 MB in
#: memory, a few times that while its line is parsed and decoded).
LINES_AT_ONCE = 4
LINE_WORK = threading.BoundedSemaphore(LINES_AT_ONCE)
#: A key written as JSON text at the start of a line: how a line that cannot be parsed is still named.
_KEY = re.compile(rb'"(?:custom_id|key)"\s*:\s*"([A-Za-z0-9_./:-]{1,300})"')


@dataclass(frozen=True)
class RawLine:
    number: int  # 1-based, in the file
    data: bytes | None  # None: past the cap (not kept)
    head: bytes  # its first bytes, to name it
    size: int


def split_lines(chunks: Iterable[bytes], cap: int) -> Iterator[RawLine]:
    """The lines of a streamed body, split at ``b"\\n"`` only; a line of more than ``cap`` bytes is not kept."""
    parts: list[bytes] = []
    size, head, number = 0, b"", 0
    for chunk in chunks:
        for index, piece in enumerate(chunk.split(b"\n")):
            if index:  # a newline ended the line before this piece
                number += 1
                yield _line(number, parts, size, head, cap)
                parts, size, head = [], 0, b""
            if len(head) < HEAD:
                head += piece[:HEAD - len(head)]
            size += len(piece)
            if size <= cap:
                parts.append(piece)
            elif parts:
                parts = []  # past the cap: the rest of this line is only counted
    if size:  # the last line, without its newline
        yield _line(number + 1, parts, size, head, cap)


def _line(number: int, parts: list[bytes], size: int, head: bytes, cap: int) -> RawLine:
    return RawLine(number, b"".join(parts) if size <= cap else None, head, size)


def key_in(head: bytes) -> str | None:
    """The key a line names in its first bytes (a line that cannot be parsed whole)."""
    found = _KEY.search(head)
    return found.group(1).decode() if found else None


class Spool:
    """The lines of one results file on disk, each read back by its place (``os.pread``: thread-safe)."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.file = tempfile.TemporaryFile(dir=folder, prefix=".batch-results-")
        self.size = 0

    def add(self, data: bytes) -> tuple[int, int]:
        offset = self.size
        self.file.write(data)
        self.size += len(data)
        return offset, len(data)

    def done(self) -> None:
        self.file.flush()

    def read(self, offset: int, length: int) -> bytes:
        pieces, got = [], 0
        while got < length:
            piece = os.pread(self.file.fileno(), length - got, offset + got)
            if not piece:
                raise OSError(f"the results spool ended at {offset + got} of {offset + length} bytes")
            pieces.append(piece)
            got += len(piece)
        return b"".join(pieces)


@dataclass(frozen=True)
class SpooledLine:
    """One line of a results file, kept on disk until its candidate reads it (``load``, under ``LINE_WORK``)."""

    spool: Spool
    offset: int
    length: int
    number: int
    file: str

    def load(self) -> dict[str, Any]:
        value = json.loads(self.spool.read(self.offset, self.length))
        assert isinstance(value, dict)  # checked when it was spooled
        return value


@dataclass
class Entry:
    """A line of a results file as the index reads it: its key and parsed value (dropped once looked at), or the
    problem that keeps it from being read."""

    number: int
    key: str | None
    value: dict[str, Any] | None = None
    line: SpooledLine | None = None
    problem: str | None = None


def index(chunks: Iterable[bytes], *, cap: int, spool: Spool, file: str,
          key_of: Callable[[dict[str, Any]], Any]) -> Iterator[Entry]:
    """Every line of a streamed results file: spooled and parsed (one at a time), or with the problem that keeps
    it from being read (past ``cap``, not JSON, no key), named by the key in its first bytes when it has one."""
    for raw in split_lines(chunks, cap):
        if raw.data is None:
            yield Entry(raw.number, key_in(raw.head), problem=f"line {raw.number} of {file} is {raw.size} bytes, "
                        f"past the cap of one line ({cap / MiB:g} MB; the model's options.max_image_mb raises it)")
            continue
        if not raw.data.strip():
            continue
        try:
            value = json.loads(raw.data)
        except ValueError as exc:
            yield Entry(raw.number, key_in(raw.head), problem=f"line {raw.number} of {file} is not JSON "
                        f"({type(exc).__name__})")
            continue
        key = key_of(value) if isinstance(value, dict) else None
        if not isinstance(value, dict) or not isinstance(key, str):
            yield Entry(raw.number, None, problem=f"line {raw.number} of {file} names no key")
            continue
        offset, length = spool.add(raw.data)
        yield Entry(raw.number, key, value, SpooledLine(spool, offset, length, raw.number, file))
    spool.done()


def land(data: bytes, folder: Path) -> Path:
    """A line's image written to a new file in ``folder`` (the candidate's folder in the outputs, as a download
    lands), under ``LINE_WORK``: its candidate holds the path until the file is moved into place."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = new_temporary(folder, ".batch-line-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


def duplicated(numbers: list[int], file: str) -> str:
    """The problem of a key that lines of one results file share: neither is taken (which one is the answer?)."""
    return f"lines {', '.join(map(str, numbers))} of {file} all name it, so none is taken"
