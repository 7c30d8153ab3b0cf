"""Download a file once into the cache, shared by every xdist worker.

A file lock beside the destination makes one process download while the
others wait; the file appears under its final name only when complete and
valid (written to a temporary name, then renamed), so a killed run never
leaves a half file that a later run would trust.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import httpx
from filelock import FileLock

from .errors import InputError
from .files import atomic_write_bytes

DOWNLOAD_TIMEOUT = httpx.Timeout(60.0, connect=10.0)


def http_get(url: str) -> bytes:
    try:
        response = httpx.get(url, timeout=DOWNLOAD_TIMEOUT, follow_redirects=True)
    except httpx.HTTPError as exc:
        raise InputError(f"{url}: download failed ({type(exc).__name__}: {exc}); check the network or the URL") from None
    if response.status_code != 200:
        raise InputError(f"{url}: download failed with HTTP {response.status_code}; check the URL or use a local copy")
    return response.content


def download_once(
    url: str,
    dest: Path,
    *,
    fetch: Callable[[str], bytes] | None = None,
    validate: Callable[[bytes], None] | None = None,
) -> Path:
    """Return dest, downloading url into it first unless another process already did."""
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(dest) + ".lock", timeout=600):
        if not dest.is_file():
            raw = (fetch or http_get)(url)
            if validate:
                validate(raw)
            atomic_write_bytes(dest, raw)
    return dest
