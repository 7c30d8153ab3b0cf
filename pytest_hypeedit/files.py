"""Writing a file so that a crash never leaves half of it under its real name.

Used by everything that writes a result (candidates, records, results, labels,
report assets) and by the cross-worker state files (budget, rate limits): the
data goes to a temporary file in the same folder, then is renamed over the
destination, which is atomic on one filesystem.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_bytes(dest: Path, data: bytes, *, durable: bool = False) -> None:
    """Write ``data`` to ``dest`` atomically; ``durable`` also fsyncs, for what a person typed."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
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
