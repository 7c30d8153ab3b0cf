"""Download a file once into the cache, shared by every xdist worker.

A file lock beside the destination makes one process download while the
others wait; the file appears under its final name only when complete and
valid (written to a temporary name, then renamed), so a killed run never
leaves a half file that a later run would trust.

Downloads go through the one HTTP policy (transport/http.py) with no key and,
as before, no retries (a failed download is an input error that says what to
check): the same overall deadline and decoded-size cap as a provider's reply, so
a task file, reference image or judge script that never ends, trickles or is a
compression bomb stops with an error naming its URL instead of filling memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import httpx
from filelock import FileLock

from .errors import InputError
from .files import atomic_write_bytes

#: Seconds per read (connect: 10 s).
READ_TIMEOUT = 60.0
#: Seconds a whole download may take (None: the policy's default, 15 minutes).
DEADLINE_S: float | None = None
#: The most a downloaded file may weigh, decoded: reference images (bounds.IMAGE_CAP), task files and the
#: judge script alike; none of the benchmark's comes near it.
MAX_DOWNLOAD_BYTES = 96 * 1024 * 1024


def http_get(url: str, *, max_bytes: int | None = None) -> bytes:
    from .transport.http import RetryPolicy, make_http_client, retryable_transport

    policy = RetryPolicy(max_attempts=1)
    with make_http_client("download", timeout=READ_TIMEOUT, policy=policy, deadline_s=DEADLINE_S,
                          reply_cap=max_bytes or MAX_DOWNLOAD_BYTES) as client:
        try:
            response = client.get(url)
        except httpx.HTTPError as exc:
            hint = "check the network or the URL" if retryable_transport(exc) else "check the URL or use a local copy"
            raise InputError(f"{url}: download failed ({type(exc).__name__}: {exc}); {hint}") from None
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
