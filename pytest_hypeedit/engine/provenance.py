"""A verdict belongs to the bytes it judged.

A record keeps the SHA-256 of its candidate file (``candidate_sha256``) and of each reference image
(``references_sha256``) its verdicts and pixel signals were computed on: set when the image is saved (hashed from
the bytes in memory) or adopted, and checked each time a run reuses the record: the file streamed once through
the hash (``files.sha256_with_signature``), unless it still has the signature recorded with its hash
(``candidate_stat``: device, inode, size, modification and change time; the system sets the change time on
every write, rename or restore), as git's index trusts its stat data.  What the check decides:

    same bytes                               keep: the verdict and the signals are reused
    no hash (a record of an older version)   trust it once and record the hash (the migration path), unless the
                                             file is not even an image (its header cannot be read): corrupt
    other bytes, still an image              the verdicts and signals are forgotten (kept in the record's history,
                                             ``extra["changed_candidates"]``): the run judges it again, no image
                                             bought, and says so in one warning line naming the file
    other bytes, not an image                corrupt: handled as a lost candidate (Planning.forget_lost_candidate),
                                             bought again, and said so in one warning line naming the file
    other references                         as "other bytes": the verdict judged an edit of other images

What this run found is ``extra["bytes_changed"]`` ({"file", "then": "judged again" | "bought again", "why"}), for
the session's warning lines; it is cleared by the next run's look at the disk.  No pytest.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..files import open_regular, regular_signature, sha256_of, sha256_with_signature
from .records import Record, now_iso

#: ``extra`` key: what this run found changed on disk (the warning line's source).
CHANGED = "bytes_changed"
#: ``extra`` key: every verdict forgotten because its candidate's bytes changed, oldest first.
HISTORY = "changed_candidates"
JUDGED_AGAIN, BOUGHT_AGAIN = "judged again", "bought again"


@dataclass(frozen=True)
class Checked:
    """What ``check`` decided: ``bound`` when the record changed and should be written, ``corrupt`` when the
    candidate is no image any more (the caller handles it as lost)."""

    bound: bool = False
    corrupt: bool = False


def check(record: Record, candidate: Path, root: Path, references: Sequence[str]) -> Checked:
    """Compare the candidate ``record`` names (``candidate``, inside ``root``) and the task's reference hashes
    with what the record's verdicts were computed on; update the record as the module docstring says.  Raises
    NotRegularFile for a link swapped in since the store looked (OSError for a file that cannot be read)."""
    digest, signature = candidate_digest(record, candidate, root)
    checked = _check(record, candidate, root, references, digest)
    if record.candidate_sha256 == digest and signature is not None:
        record.candidate_stat = signature  # written with the record whenever it is written
    return checked


def candidate_digest(record: Record, candidate: Path, root: Path) -> tuple[str, list[int] | None]:
    """The SHA-256 of the candidate's bytes, and the file's signature when it was read (None: not read).  The
    hash the record keeps is taken as is while the candidate is a regular file with the signature recorded with
    that hash (``candidate_stat``: the same device, inode, size, modification and change time, so no write,
    replacement or restore since); otherwise the file is streamed through the hash."""
    kept = record.candidate_stat
    if record.candidate_sha256 is not None and isinstance(kept, list) and regular_signature(candidate) == kept:
        return record.candidate_sha256, None
    return sha256_with_signature(candidate, root)


def _check(record: Record, candidate: Path, root: Path, references: Sequence[str], digest: str) -> Checked:
    if record.candidate_sha256 is None:
        # A record written before the hashes were kept: trusted once (its verdict was paid for and there is
        # nothing to compare with), and bound to the bytes now on disk, unless they are not even an image.
        problem = unreadable(candidate, root, decode=False)
        if problem:
            return corrupt(record, candidate, problem)
        bind(record, digest, references)
        return Checked(bound=True)
    candidate_changed = digest != record.candidate_sha256
    kept = record.references_sha256 if isinstance(record.references_sha256, list) else []  # a record is untrusted
    references_changed = bool(references) and bool(kept) and list(references) != kept
    if not (candidate_changed or references_changed):
        return Checked()
    if candidate_changed:
        problem = unreadable(candidate, root, decode=True)
        if problem:
            return corrupt(record, candidate, problem)
    why = ("its bytes changed since its verdict" if candidate_changed
           else "the task's reference images changed since its verdict")
    forget_verdicts(record, candidate.name, why)
    bind(record, digest, references)
    record.extra[CHANGED] = {"file": candidate.name, "then": JUDGED_AGAIN, "why": why}
    return Checked(bound=True)


def judged_same_bytes(on_disk: Record, ours: Record) -> bool:
    """Whether the verdicts of ``on_disk`` (another process's, meanwhile) are of the bytes ``ours`` is bound to; a
    record without hashes (an older version's) is the one ``ours`` was read from."""
    return on_disk.candidate_sha256 is None or (
        (on_disk.candidate_sha256, on_disk.references_sha256) == (ours.candidate_sha256, ours.references_sha256))


def corrupt(record: Record, candidate: Path, problem: str) -> Checked:
    record.extra[CHANGED] = {"file": candidate.name, "then": BOUGHT_AGAIN,
                             "why": f"not a readable image any more ({problem})"}
    return Checked(corrupt=True)


def bind(record: Record, digest: str, references: Sequence[str]) -> None:
    """The record's verdicts and signals are from now on those of these bytes."""
    record.candidate_sha256, record.references_sha256 = digest, list(references)


def forget_verdicts(record: Record, name: str, why: str) -> None:
    """The verdicts and signals of bytes that are gone: kept in the history, never counted again.  What was paid
    (``judge_cost``, the generation) stays on the record."""
    if record.judgements or record.verdict:
        history = record.extra.get(HISTORY)
        record.extra[HISTORY] = [*(history if isinstance(history, list) else []),
                                 {"file": name, "sha256": record.candidate_sha256, "verdict": record.verdict,
                                  "judgements": record.judgements, "why": why, "found_at": now_iso()}]
    record.judgements, record.signals, record.outcome = {}, {}, None
    record.verdict = record.reasoning = record.judge = record.judged_at = None
    record.votes, record.reused_verdict = [], False


def unreadable(path: Path, root: Path, *, decode: bool) -> str | None:
    """Why ``path`` is not an image (None when it is): its header only, or (``decode``) all of it."""
    from ..providers.images import IMAGE_WORK, open_checked
    from ..text import image_problem

    try:
        with open_regular(path, root) as handle, IMAGE_WORK, open_checked(handle, path.name) as image:
            if decode:
                image.load()
    except Exception as exc:  # noqa: BLE001 (Pillow raises OSError, ValueError, SyntaxError... for a non-image)
        return image_problem(exc)
    return None


class _ReferenceDigests:
    """The SHA-256 of reference images, once per process and file (by path, size and modification time): every
    repeat of every model of a task shares them."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, int, int], str] = {}
        self._lock = threading.Lock()

    def of(self, paths: Sequence[Path]) -> list[str]:
        return [self._one(Path(path)) for path in paths]

    def _one(self, path: Path) -> str:
        info = path.stat()
        key = (str(path), info.st_size, info.st_mtime_ns)
        with self._lock:
            known = self._known.get(key)
        if known is None:
            known = sha256_of(path, None)  # a reference is not one of the outputs (the images folder, the cache)
            with self._lock:
                self._known[key] = known
        return known


REFERENCES = _ReferenceDigests()
