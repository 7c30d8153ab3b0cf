"""The output layout on disk (a contract shared with the upstream review tool) and resume.

    <outputs>/<split>/<model>/<task_id>/<NNN>.<ext>   the candidate, as the provider returned it
    <outputs>/<split>/<model>/<task_id>/<NNN>.json    its record

Every write is atomic (temporary name, then rename), so a run killed at any
point leaves either the old file or the new one, never half a file that a
later run would mistake for a paid result.

A *claim* (``Store.claim``) is an exclusive lock on one candidate, across
processes, held while it is bought or judged: two processes working on the
same outputs never pay for the same candidate, and the one that waited reads
the result from disk.  Its lock files live with the outputs, in the hidden
folder ``<outputs>/.hypeedit-claims/`` (no split is named so: split names
start with a letter, a digit or "_"), so every process that shares the outputs
folder shares its claims, whatever its temp folder (containers, runners that
set TMPDIR per job, an outputs folder restored from a CI cache).

Each release of a model has its own folder (engine/release.py): ``<model>`` for the release that wrote there
first, ``<model>@<release id>`` for every other.  A store is given the folder of each (split, model) of its run
(``folders``); a model it was not given one for is in ``<model>``.

A candidate is the file its record names (``Store.find``): another image of the
same repeat beside it (``001.png`` dropped beside the real ``001.jpg``) is a
*stray*, never adopted over the record's paid verdict, only reported.  An image
with no record naming one (a run killed between writing the image and its
record: the image is written first) is adopted.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from ..files import atomic_write_bytes, new_temporary, not_regular_problem, open_regular
from ..tasks import IMAGE_SUFFIXES
from ..untrusted import RECORD_BYTES, loads_json_bytes, read_bounded_handle
from .limits import exclusive
from .records import Record


def repeat_stem(repeat: int) -> str:
    return f"{repeat:03d}"


def move_into_place(source: Path, dest: Path) -> None:
    """``source`` becomes ``dest`` in one step (a rename), never half a file under ``dest``'s name."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(source, dest)
        return
    except OSError:  # another filesystem: copy beside the target, then rename there
        pass
    fd, tmp = new_temporary(dest.parent, f".{dest.name}.")  # the user's umask, as every file of the outputs
    try:
        with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
            shutil.copyfileobj(src, out, 1024 * 1024)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    source.unlink(missing_ok=True)


#: The folder of claim lock files inside the outputs folder (hidden; see the module docstring).
CLAIMS_FOLDER = ".hypeedit-claims"
#: The name of the file that proves a folder writable (created, renamed into place, removed).
PROBE_NAME = ".hypeedit-write-probe"


def default_claims_dir(root: Path) -> Path:
    """Claims of an outputs folder: inside it, so every process that writes into it shares them."""
    return Path(root) / CLAIMS_FOLDER


def probe_writable(folder: Path) -> OSError | None:
    """Prove ``folder`` writable the way real writes happen (a temporary file written, then renamed into place);
    the error when it is not, None when it is.  A folder that does not exist yet is proved creatable: a probe
    folder is made in its nearest existing parent and written into.  Leaves nothing behind, not even ``folder``
    (a run not accepted later must not have written anything)."""
    folder = Path(folder)
    existing = next((parent for parent in (folder, *folder.parents) if parent.exists()), Path("."))
    try:
        if existing == folder:
            return _probe_file(folder)
        if not existing.is_dir():  # a file where a folder should be
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(existing))
        made = Path(tempfile.mkdtemp(dir=existing, prefix=PROBE_NAME))
    except OSError as exc:
        return exc
    try:
        return _probe_file(made)
    finally:
        with contextlib.suppress(OSError):
            made.rmdir()


def _probe_file(folder: Path) -> OSError | None:
    target = folder / f"{PROBE_NAME}-{os.getpid()}"
    try:
        atomic_write_bytes(target, b"")
        target.unlink()
    except OSError as exc:
        return exc
    return None


@dataclass(frozen=True)
class Found:
    """What the store holds for one candidate: its image, the strays beside it, a named file that is gone."""

    candidate: Path | None  # the file the record names; else, with no record naming one, the image on disk
    strays: tuple[Path, ...] = ()  # other images of the same repeat: never adopted, only reported
    missing: str | None = None  # the file the record names, when it is not on disk (or is no file name of ours)
    unusable: str | None = None  # a symbolic link (file or folder) where the candidate's files are: nothing is used


#: What identifies the bytes of a file without reading them: device, inode, size, and the modification and change
#: times in nanoseconds.  A rename over it (every write of ours, and another process's) makes a new inode; a
#: write in place moves its times; a symbolic link swapped in has the link's own inode (``lstat``).
Signature = tuple[int, int, int, int, int]


_ENCODER = json.JSONEncoder(sort_keys=True)


def record_text(fields: dict[str, Any]) -> str:
    """A record's JSON, a field a line in the order of their names (as ``json.dumps(indent=2, sort_keys=True)``
    laid it out, but each field's value on its one line): with ``indent`` the json module leaves its C encoder
    for its Python one, which made writing 7,000 records take seconds."""
    return "{\n" + ",\n".join(f"  {json.dumps(name)}: {_ENCODER.encode(fields[name])}" for name in sorted(fields)) + "\n}"


def _is_link(path: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:  # missing: no link
        return False


def _signature(info: os.stat_result) -> Signature:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class Store:
    def __init__(self, root: Path, claims_dir: Path | None = None,
                 folders: Mapping[tuple[str, str], str] | None = None):
        self.root = Path(root)
        #: (split, model) -> the folder of the run's release of that model (see the module docstring)
        self.folders: Mapping[tuple[str, str], str] = folders or {}
        self.claims_dir = Path(claims_dir) if claims_dir else default_claims_dir(self.root)
        #: Each record read, by path: the signature of the file it was read from, and the record's JSON as
        #: ``Record.from_dict`` checked and cleaned it.  A run asks for a record several times (the up-front
        #: survey, the triage, the merge before each write under the candidate's claim), and a 7,000-candidate
        #: replay spent most of its reading in opening the same files and checking the same fields again.  A
        #: record whose file changed in any way (``Signature``) is read and checked again; otherwise the checked
        #: text is parsed again, so each caller gets a Record of its own (never one shared).
        self._records: dict[Path, tuple[Signature, str]] = {}
        self._claim_folders: set[str] = set()  # claim folders this process made (or found made)

    @contextlib.contextmanager
    def claim(self, split: str, model: str, task_id: str, repeat: int) -> Iterator[None]:
        """Claim this candidate against every other process and thread while it is bought or judged."""
        folder = os.path.join(self.claims_dir, split, self.folder(split, model), task_id)
        if folder not in self._claim_folders:  # made once per process: a replay claims thousands in a few
            os.makedirs(folder, exist_ok=True)
            self._claim_folders.add(folder)
        path = Path(folder, f"{repeat_stem(repeat)}.lock")
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(exclusive(path))
            except FileNotFoundError:  # its folder was removed since (a clean-up): made again
                os.makedirs(folder, exist_ok=True)
                held.enter_context(exclusive(path))
            yield

    def folder(self, split: str, model: str) -> str:
        """The folder of the run's release of ``model`` in ``split`` (a plain name, or ``<model>@<id>``)."""
        return self.folders.get((split, model), model)

    def task_dir(self, split: str, model: str, task_id: str) -> Path:
        # split, model and task_id were validated as plain names when loaded
        return Path(os.path.join(self.root, split, self.folder(split, model), task_id))

    def find(self, split: str, model: str, task_id: str, repeat: int, named: str | None = None) -> Found:
        """The candidate of this repeat: the file ``named`` by its record, else (no record names one) the image
        on disk, in the order of IMAGE_SUFFIXES; every other image of the repeat is a stray.

        Asked of every candidate several times in a run, so it reads only what it must: the three folders on the
        way (``lstat``: a link among them makes the candidate unusable, even with no file in it yet), then each name the
        repeat's image may have and its record's (``lstat``).  With no link among the folders, a file there is
        inside the outputs by construction (the names were validated as plain names); what is read later is
        opened with ``open_regular``, which checks the whole way again."""
        folder = os.path.join(self.root, split, self.folder(split, model), task_id)
        unusable = self._linked_folder(split, model, task_id)
        images: list[Path] = []
        if unusable is None:
            images, unusable = self._images(folder, repeat)
        unusable = unusable or self._linked_record(folder, repeat)
        if unusable is not None:
            return Found(None, missing=named, unusable=unusable)
        if named is None:
            return Found(images[0], tuple(images[1:])) if images else Found(None)
        chosen = next((path for path in images if path.name == named), None)
        if chosen is None:  # gone, empty, or a name a doctored record made up: nothing of it is used
            return Found(None, tuple(images), missing=named)
        return Found(chosen, tuple(path for path in images if path != chosen))

    def has_file(self, split: str, model: str, task_id: str, repeat: int, named: str | None) -> bool:
        """Whether the file ``named`` by the candidate's record is there, as ``find`` would say, with one
        ``lstat``: a regular file that is not empty, or a link (``find`` follows no link: not bought either).
        False when it cannot tell in one look (no name, a name that is no image name of this repeat, a file
        missing or empty): ask ``find``."""
        stem = repeat_stem(repeat)
        if named is None or named[len(stem):] not in IMAGE_SUFFIXES or not named.startswith(stem):
            return False  # a record is untrusted: only a name of this repeat's images is looked up
        try:
            info = os.lstat(os.path.join(self.root, split, self.folder(split, model), task_id, named))
        except OSError:
            return False
        return stat.S_ISLNK(info.st_mode) or (stat.S_ISREG(info.st_mode) and info.st_size > 0)

    def find_candidate(self, split: str, model: str, task_id: str, repeat: int, named: str | None = None) -> Path | None:
        return self.find(split, model, task_id, repeat, named).candidate

    @staticmethod
    def _images(folder: str, repeat: int) -> tuple[list[Path], str | None]:
        """The repeat's images in ``folder`` (regular, not empty), and why one is unusable (a link), if one is."""
        found = []
        stem = repeat_stem(repeat)
        for suffix in IMAGE_SUFFIXES:  # readers accept every format a provider may return
            path = os.path.join(folder, stem + suffix)
            try:
                info = os.lstat(path)
            except OSError:  # missing (or unreadable): not an image of this repeat
                continue
            problem = not_regular_problem(path, info.st_mode)
            if problem:
                return [], problem
            if info.st_size > 0:
                found.append(Path(path))
        return found, None

    def _linked_folder(self, split: str, model: str, task_id: str) -> str | None:
        """A split, model or task folder that is a symbolic link (even with no file in it yet: nothing is written
        through it)."""
        folder = str(self.root)
        for part in (split, self.folder(split, model), task_id):
            folder = os.path.join(folder, part)
            if _is_link(folder):
                return (f"{folder}: a symbolic link inside {self.root}; the outputs hold real folders only, it was "
                        "not followed: replace it with the folder itself")
        return None

    @staticmethod
    def _linked_record(folder: str, repeat: int) -> str | None:
        path = os.path.join(folder, f"{repeat_stem(repeat)}.json")
        if _is_link(path):
            return (f"{path}: a symbolic link; the outputs hold regular files only, it was not followed: replace it "
                    "with the record itself, or remove it")
        return None

    def record_path(self, split: str, model: str, task_id: str, repeat: int) -> Path:
        return Path(os.path.join(self.root, split, self.folder(split, model), task_id, f"{repeat_stem(repeat)}.json"))

    def read_record(self, split: str, model: str, task_id: str, repeat: int) -> Record | None:
        """The record on disk, or None when there is none or it cannot be read (it is then rewritten)."""
        return self.load_record(split, model, task_id, repeat)[0]

    def load_record(self, split: str, model: str, task_id: str, repeat: int) -> tuple[Record | None, str | None]:
        """(the record on disk, None), or (None, why it is not used) when a file is there but is no record of
        this candidate: unreadable, not JSON, past the size or depth bounds, or a field of the wrong type.  Such
        a file is untrusted input, treated as absent (and rewritten), never a crash.  (None, None): no file."""
        path = self.record_path(split, model, task_id, repeat)
        try:
            record = self._record_in(path)
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            return None, f"cannot be read ({exc.strerror or exc})"
        except ValueError as exc:  # UntrustedInput, MalformedRecord
            return None, str(exc)
        if record.key != (split, model, task_id, repeat):
            return None, f"its split, model, task_id and repeat are {record.key!r:.200}, not this candidate's"
        return record, None

    def _record_in(self, path: Path) -> Record:
        """The record in the file at ``path``: checked once while the file stays the same (``Signature``, see
        ``_records``), else read again with no link followed, bounded, and checked (OSError, UntrustedInput and
        MalformedRecord as raised)."""
        kept = self._records.get(path)
        if kept is not None and kept[0] == _signature(os.lstat(path)):
            return Record.from_checked_json(kept[1])
        self._records.pop(path, None)
        with open_regular(path, self.root) as handle:  # no link followed
            data = read_bounded_handle(handle, RECORD_BYTES)
            signature = _signature(os.fstat(handle.fileno()))
        fields = loads_json_bytes(data)
        record = Record.from_dict(fields)
        # kept as the file's own text when it is the record exactly (written by this version, nothing cleaned
        # away or left out): encoding it again was a sixth of reading 7,000 records
        exact = isinstance(fields, dict) and record.to_dict() == fields
        self._records[path] = (signature, data.decode("utf-8") if exact else record.to_json())
        return record

    def write_candidate(self, split: str, model: str, task_id: str, repeat: int, data: bytes | Path,
                        ext: str) -> Path:
        """The candidate under its name, atomically: bytes are written, a downloaded file is moved (renamed when
        it is on the same filesystem, else copied beside its target first)."""
        path = self.task_dir(split, model, task_id) / f"{repeat_stem(repeat)}.{ext}"
        if isinstance(data, Path):
            move_into_place(data, path)
        else:
            atomic_write_bytes(path, data)
        return path

    def write_record(self, record: Record) -> Path:
        path = self.record_path(*record.key)
        text = record_text(record.to_dict())
        self._records.pop(path, None)  # the file is replaced: what was kept of it is no longer needed
        atomic_write_bytes(path, text.encode("utf-8"))
        return path
