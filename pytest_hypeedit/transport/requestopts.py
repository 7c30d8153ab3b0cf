"""What one HTTP request asks of the policy transport (transport/http.py), as one typed value.

A request carries a ``RequestOptions`` under one httpx request extension (``OPTIONS``), httpx's own seam for
per-request data a transport reads.  It says whether the request is paid (``submits``: never sent twice once it
may have reached the provider), a download of a result file from storage (``download``: no request-per-minute
token; ``stream``: handed back unread, so the file never sits in memory whole), the cap of its reply body
(``max_bytes``), and the in-flight slots of the call it is part of (``slots``, engine/limits.py): a request that
carries a live slot of its route takes no second one, whatever thread sends it; a request without one (a library
user calling an adapter directly) takes its own.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import httpx

from .slots import CallSlots

#: The one request extension the policy reads.
OPTIONS = "hypeedit"


@dataclass(frozen=True)
class RequestOptions:
    submits: bool = False  # a paid request (a job submission, a synchronous generation, a paid verdict)
    download: bool = False  # a result file from storage, not a request to the provider's API
    stream: bool = False  # a download read by the caller as it arrives
    max_bytes: int | None = None  # the cap of the reply body, decoded (None: the client's)
    slots: CallSlots = dataclasses.field(default=(), repr=False)  # the slots of the call it is part of


NONE = RequestOptions()


def options_of(request: httpx.Request) -> RequestOptions:
    """The options a request carries (the defaults when it carries none, or something that is not ours)."""
    found = request.extensions.get(OPTIONS)
    return found if isinstance(found, RequestOptions) else NONE


def with_options(extensions: dict[str, Any] | None, **changes: Any) -> dict[str, Any]:
    """``extensions`` (not changed) with its RequestOptions changed by ``changes``."""
    extensions = dict(extensions or {})
    current = extensions.get(OPTIONS)
    base = current if isinstance(current, RequestOptions) else NONE
    extensions[OPTIONS] = dataclasses.replace(base, **changes)
    return extensions


def mark(request: httpx.Request, **changes: Any) -> None:
    """Change the options of a request already built (an httpx request hook: google-genai builds its own)."""
    request.extensions = with_options(request.extensions, **changes)
