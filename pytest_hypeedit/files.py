"""Writing a file so that a crash never leaves half of it under its real name; reading one of the outputs
only when it is a regular file inside them.

Used by everything that writes a result (candidates, records, results, labels,
report assets) and by the cross-worker state files (budget, rate limits): the
data goes to a temporary file in the same folder, then is renamed over the
destination, which is atomic on one filesystem.

Every reader of the outputs tree (the run, the pixel signals, the report, the review app) opens its files with
``open_regular``: a symbolic link (the file, or a task, model or split folder on the way to it) is not accepted, never
followed, so a link to ``/etc/passwd`` or to another image is neither judged, copied into a report nor shown.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from pathlib import Path
from typing import BinaryIO

from .errors import NotRegularFile

#: How much of a file ``sha256_of`` reads at a time: a 4K candidate is hashed in a few reads, in constant memory.
HASH_CHUNK = 1024 * 1024


#: How a new file is opened: created, never an existing one or a link (as ``tempfile.mkstemp`` opens its files).
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) \
    | getattr(os, "O_BINARY", 0)


def new_temporary(folder: Path | str, prefix: str) -> tuple[int, str]:
    """A new temporary file ``<prefix><random>.part`` in ``folder``, opened for writing: (fd, path).  Created with mode 0o666,
    which the user's umask narrows as for any file they make (``mkstemp`` makes every file 0600 whatever the
    umask: a report or results file a team shares was unreadable to it)."""
    for _ in range(100):
        path = os.path.join(folder, f"{prefix}{secrets.token_hex(4)}.part")
        try:
            return os.open(path, _NEW_FILE, 0o666), path
        except FileExistsError:  # another writer's temporary file: another name
            continue
    raise FileExistsError(f"{folder}: no free temporary name {prefix}*.part")


def atomic_write_bytes(dest: Path, data: bytes, *, durable: bool = False) -> None:
    """Write ``data`` to ``dest`` atomically, with the mode the user's umask gives a new file; ``durable`` also
    fsyncs, for what a person typed."""
    dest = Path(dest)
    try:
        fd, tmp = new_temporary(dest.parent, f".{dest.name}.")
    except FileNotFoundError:  # the folder is made only when missing: a mkdir per write was a tenth of its time
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = new_temporary(dest.parent, f".{dest.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        _fsync_dir(dest.parent)


def _fsync_dir(folder: Path) -> None:
    # The rename is durable only once the folder itself is on disk.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some platforms cannot open a folder; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_regular(path: Path, root: Path) -> None:
    """Raise NotRegularFile unless ``path`` is a regular file inside ``root`` reached without a symbolic link
    (``root`` itself may be one: the user chose it); FileNotFoundError when it is missing.  Walks up from the
    file with ``lstat`` (never following a link) until it meets ``root``: one call per level of the tree."""
    try:
        top = os.stat(root)
    except OSError as exc:
        raise FileNotFoundError(exc.errno, exc.strerror, str(root)) from None
    # Strings and one lstat per level, not Path objects and a stat and an lstat: a replay checks every candidate
    # and record of thousands this way (a folder that is no link has the same identity either way).
    here = os.path.abspath(path)
    mode = os.lstat(here).st_mode  # FileNotFoundError when missing
    problem = not_regular_problem(path, mode)
    if problem:
        raise NotRegularFile(problem)
    identity = (top.st_dev, top.st_ino)
    parent = os.path.dirname(here)
    while parent != here:
        info = os.lstat(parent)
        linked = stat.S_ISLNK(info.st_mode)
        if linked:  # ``root`` itself may be a link (the user chose it): it is known by what it points to
            info = os.stat(parent)
        if (info.st_dev, info.st_ino) == identity:
            return
        if linked:
            raise NotRegularFile(f"{parent}: a symbolic link inside {root}; the outputs hold real folders only, "
                                 f"it was not followed (for {os.path.basename(path)}): replace it with the folder "
                                 "itself")
        here, parent = parent, os.path.dirname(parent)
    raise NotRegularFile(f"{path}: not inside {root}; it was not read")


def not_regular_problem(path: Path | str, mode: int) -> str | None:
    """Why a file of this ``lstat`` mode is not one of the outputs' regular files (a link, a folder, a device), or
    None when it is one."""
    if stat.S_ISLNK(mode):
        return (f"{path}: a symbolic link; the outputs hold regular files only, it was not followed: replace it with "
                "the file itself, or remove it")
    if not stat.S_ISREG(mode):
        return f"{path}: not a regular file (a folder or a device under a file's name); remove it"
    return None


def open_regular(path: Path, root: Path) -> BinaryIO:
    """``path`` opened for reading when ``check_regular`` allows it; O_NOFOLLOW (where the platform has it) fails
    on a link swapped in between the check and the open, and the opened file is checked again (fstat)."""
    check_regular(path, root)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        if os.path.islink(path):
            raise NotRegularFile(f"{path}: a symbolic link; the outputs hold regular files only, it was not "
                                 "followed: replace it with the file itself, or remove it") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegularFile(f"{path}: not a regular file; remove it")
    return os.fdopen(fd, "rb")


def read_regular(path: Path, root: Path) -> bytes:
    """The bytes of ``path``, a regular file inside ``root`` (``open_regular``)."""
    with open_regular(path, root) as handle:
        return handle.read()


def sha256_of(path: Path, root: Path | None) -> str:
    """The SHA-256 (hex) of ``path``'s bytes, a regular file inside ``root`` (any file when None: not one of the
    outputs), read in HASH_CHUNK pieces."""
    if root is not None:
        return sha256_with_signature(path, root)[0]
    with open(path, "rb") as handle:
        return _sha256_of_handle(handle)


def file_signature(info: os.stat_result) -> list[int]:
    """A file's identity and last change as the system keeps them: device, inode, size, modification and change
    times (ns).  The change time is set by the system on every write, rename or restore, never by a program, so
    the same signature means the same bytes, as git's index trusts its stat data."""
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def regular_signature(path: Path) -> list[int] | None:
    """``file_signature`` of the regular file at ``path`` (a link is not followed); None for anything else, or
    nothing there."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return file_signature(info) if stat.S_ISREG(info.st_mode) else None


def sha256_with_signature(path: Path, root: Path) -> tuple[str, list[int]]:
    """``sha256_of`` a regular file inside ``root``, with the signature (``file_signature``) of the file read,
    taken from the open file once every byte was read."""
    with open_regular(path, root) as handle:
        return _sha256_of_handle(handle), file_signature(os.fstat(handle.fileno()))


def _sha256_of_handle(handle: BinaryIO) -> str:
    """The SHA-256 (hex) of what is left to read from ``handle``, read in HASH_CHUNK pieces."""
    digest = hashlib.sha256()
    while chunk := handle.read(HASH_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
