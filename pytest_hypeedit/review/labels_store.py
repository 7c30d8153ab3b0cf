"""One rater's labels file, kept in memory and written through on every verdict.

Every batch of verdicts from the browser is applied under a lock and written
atomically (temp file, fsync, rename) before the browser gets its
acknowledgement, so an acknowledged verdict is on disk.  The browser keeps
each verdict in localStorage until acknowledged and resends it after a crash
of either side; applying a verdict twice is harmless.  A verdict may carry the
rater's note (``note``), kept on the verdict entry of the upstream schema; a
note changed later is sent as the same verdict again with the new note.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .. import labels
from .catalog import Candidate, Catalog

MAX_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class OpResult:
    acked: list[str]
    rejected: list[dict[str, str]]


class LabelsStore:
    def __init__(self, path: Path, catalog: Catalog, doc: dict[str, Any]):
        self.path = path
        self.catalog = catalog
        self.doc = doc
        self._by_id = catalog.by_id()
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: Path, catalog: Catalog, doc: dict[str, Any] | None, **meta: Any) -> "LabelsStore":
        """Use the existing document (aliases already merged into the catalog) or start a new one."""
        if doc is None:
            doc = labels.new_document(catalog.aliases, **meta)
        else:
            doc["models"] = dict(catalog.aliases)  # existing aliases kept, new models appended
        store = cls(path, catalog, doc)
        labels.write_document(path, doc)  # fail now, not at the first verdict, if the folder is not writable
        return store

    def verdict_of(self, candidate: Candidate) -> dict[str, Any] | None:
        return labels.get_verdict(self.doc, candidate.task_id, candidate.alias, candidate.file_name)

    def labelled_count(self) -> int:
        return sum(1 for c in self.catalog.candidates if self.verdict_of(c))

    def apply(self, ops: Iterable[Any]) -> OpResult:
        acked, rejected = [], []
        with self._lock:
            for op in ops:
                problem = self._apply_one(op)
                op_id = str(op.get("op", "")) if isinstance(op, dict) else ""
                (rejected.append({"op": op_id, "reason": problem}) if problem else acked.append(op_id))
            if acked:
                labels.write_document(self.path, self.doc)
        return OpResult(acked, rejected)

    def _apply_one(self, op: Any) -> str | None:
        """Apply one verdict; the reason it was not accepted, or None."""
        if not isinstance(op, dict) or not isinstance(op.get("op"), str):
            return "an op is an object with an 'op' id"
        item = op.get("item")
        candidate = self._by_id.get(item) if isinstance(item, str) else None  # ids are text
        verdict, ms, note = op.get("verdict"), op.get("ms"), op.get("note")
        if candidate is None:
            return "unknown item"
        if verdict not in ("PASS", "FAIL", None):
            return "verdict must be PASS, FAIL or null (undo)"
        if verdict is not None and (isinstance(ms, bool) or not isinstance(ms, int) or not 0 <= ms <= MAX_MS):
            return "ms must be a whole number of milliseconds"
        if note is not None and (not isinstance(note, str) or len(note) > labels.MAX_NOTE):
            return f"note must be text of at most {labels.MAX_NOTE} characters, or null"
        extra = {} if verdict is None else {"ms": ms}
        if verdict is not None and note and labels.clean_note(note):
            extra["note"] = labels.clean_note(note)  # an extra field of the verdict entry: upstream ignores it
        labels.set_verdict(self.doc, candidate.task_id, candidate.alias, candidate.file_name, verdict, **extra)
        return None
