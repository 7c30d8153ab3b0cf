"""The batch tier's reference uploads: each reference image is uploaded once per run, whatever the process.

A batch line names its references by the id the provider's Files API gave them (OpenAI ``file-…``, Gemini a
file ``uri``), so the ten repeats of a task, and the xdist workers that share them, upload each reference once:
the id is kept in memory for this process and in the run's state folder for the others
(``<state>/batch-uploads/<route>/<sha256>.json``, written atomically under a per-reference lock).  A file read
back from there is untrusted: an id that is not of the provider's shape is ignored and the reference uploaded
again.  Without a state folder (a library user, a unit test) the ids are kept in memory only.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Callable

from ..engine.limits import exclusive
from ..files import atomic_write_bytes


class Uploads:
    def __init__(self, folder: Path | None, shape: re.Pattern[str]):
        self.folder, self.shape = folder, shape
        self._known: dict[str, str] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.count = 0  # uploads this process made

    def id_of(self, data: bytes, upload: Callable[[], str]) -> str:
        """The id of the reference ``data``: known already (this process or another), else ``upload()``'s."""
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            lock = self._locks.setdefault(digest, threading.Lock())
        with lock:
            if digest not in self._known:
                self._known[digest] = self._shared(digest, upload)
            return self._known[digest]

    def _shared(self, digest: str, upload: Callable[[], str]) -> str:
        if self.folder is None:
            return self._upload(upload)
        self.folder.mkdir(parents=True, exist_ok=True)
        with exclusive(self.folder / f"{digest}.lock"):
            known = self._read(self.folder / f"{digest}.json")
            if known is not None:
                return known
            found = self._upload(upload)
            atomic_write_bytes(self.folder / f"{digest}.json", json.dumps({"id": found}).encode())
            return found

    def _upload(self, upload: Callable[[], str]) -> str:
        found = upload()
        self.count += 1
        return found

    def _read(self, path: Path) -> str | None:
        try:
            found = json.loads(path.read_bytes()[:4096]).get("id")
        except (OSError, ValueError, AttributeError):
            return None
        return found if isinstance(found, str) and self.shape.fullmatch(found) else None


def uploads_folder(state_dir: Path | None, route: str) -> Path | None:
    return None if state_dir is None else state_dir / "batch-uploads" / route
