"""What a request says on the wire, in a form two requests can be compared in, field by field.

``normal(request, key)`` turns a recorded request into a ``Wire``: method, path,
query, the headers that are not transport noise, and the body as a tree.  A
JSON body is parsed; a multipart body becomes its fields (a dict: their order
means nothing to a server) and its file parts (a list: the order of the
references is the order the model sees them).  Every image anywhere in a body,
a data URI or plain base64, becomes a ``Blob`` compared by its decoded bytes
(and a data URI by its media type too), never as text: two encoders may wrap or
pad base64 differently and still send the same file.

``differences(ours, theirs)`` lists every place where two ``Wire``s disagree,
each with a dotted path (``body.inputs.referenceImages[1]``,
``header.authorization``); ``unexplained(diffs, allowed)`` drops the ones a
route documents as harmless (an ``Allow`` says which, and why).
"""

from __future__ import annotations

import base64
import binascii
import email.parser
import email.policy
import fnmatch
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from .recorder import Recorded

#: Headers the HTTP library sets for the connection, not the API: left out of every comparison.
TRANSPORT_HEADERS = {
    "host": "the address of the loopback server, set by the HTTP library",
    "content-length": "follows from the body, which is compared on its own",
    "transfer-encoding": "how the body is framed (chunked or not), not what it says",
    "connection": "keep-alive handling of the HTTP library",
    "accept-encoding": "compression the HTTP library can read; every reply here is JSON either way",
    "user-agent": "names the client (ours says pytest-hypeedit by design); no API here reads it",
    "accept": "httpx sends */*, the SDKs application/json; every API here answers JSON whatever it asks",
}
#: The key both sides are given; it becomes <KEY> in headers, so the auth scheme is compared, not the key.
KEY = "sk-sdkdiff-0123456789abcdef"
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"RIFF", "image/webp"))
_URLSAFE = re.compile(r"[A-Za-z0-9_-]*[_-][A-Za-z0-9_-]*=*")
_DATA_URI = re.compile(r"^data:([\w.+-]+/[\w.+-]+);base64,(.*)$", re.S)


@dataclass(frozen=True)
class Blob:
    """An image inside a body: how it was written (``data-uri``, ``base64`` or a multipart ``file``), its
    declared media type (a data URI's, a part's Content-Type) and its bytes."""

    kind: str
    mime: str | None
    data: bytes = field(repr=False)

    def __repr__(self) -> str:
        digest = hashlib.sha256(self.data).hexdigest()[:12]
        return f"<{self.kind} {self.mime or '-'} {len(self.data)} bytes sha256:{digest}>"


@dataclass(frozen=True)
class Wire:
    method: str
    path: str
    query: dict
    headers: dict[str, str]
    body: Any

    def tree(self) -> dict:
        return {"method": self.method, "path": self.path, "query": self.query, "header": self.headers,
                "body": self.body}


@dataclass(frozen=True)
class Difference:
    path: str  # e.g. "body.image[1]", "header.x-client-request-id"
    ours: Any  # MISSING when only the SDK sent it
    theirs: Any  # MISSING when only we sent it
    request: int = 0  # which request of the exchange (0: the submission; then polls and downloads, in order)

    @property
    def kind(self) -> str:
        if self.ours is MISSING:
            return "only-sdk"
        return "only-ours" if self.theirs is MISSING else "value"

    def __str__(self) -> str:
        where = f"request {self.request}: " if self.request else ""
        return f"{where}{self.path}: ours {self.ours!r} / SDK {self.theirs!r}"


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


MISSING = _Missing()


@dataclass(frozen=True)
class Allow:
    """A difference a route documents as harmless: ``pattern`` matches its path (fnmatch's ``*`` and ``?``;
    brackets are literal, as in ``body[0]``), ``when`` its values; ``why`` is the reason, with its source."""

    pattern: str
    why: str
    when: Callable[[Difference], bool] = lambda difference: True

    def covers(self, difference: Difference) -> bool:
        pattern = self.pattern.replace("[", "[[]")
        return fnmatch.fnmatchcase(difference.path, pattern) and self.when(difference)


# --------------------------------------------------------------------------- normal form


def normal(request: Recorded, key: str = KEY) -> Wire:
    headers = {name: value.replace(key, "<KEY>") for name, value in request.headers.items()
               if name not in TRANSPORT_HEADERS}
    media_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if "content-type" in headers:
        headers["content-type"] = media_type  # a multipart boundary is random on both sides
    return Wire(request.method, request.path, request.query, headers, body_tree(request, media_type))


def body_tree(request: Recorded, media_type: str) -> Any:
    if not request.body:
        return None
    if media_type == "multipart/form-data":
        return multipart_tree(request)
    try:
        return images_in(json.loads(request.body))
    except ValueError:
        return Blob("raw", media_type or None, request.body)


def multipart_tree(request: Recorded) -> dict:
    head = f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + request.body)
    fields: dict[str, Any] = {}
    files: list[dict] = []  # each part compared field by field: name, filename, content type, bytes
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        if part.get_filename() is None:
            value = payload.decode("utf-8")
            fields[name] = [*fields[name], value] if isinstance(fields.get(name), list) else (
                [fields[name], value] if name in fields else value)
        else:
            content_type = part.get("content-type")
            files.append({"name": name, "filename": part.get_filename(),
                          "content_type": str(content_type) if content_type else None,
                          "content": Blob("file", sniff(payload), payload)})
    return {"fields": fields, "files": files}


def images_in(value: Any) -> Any:
    """``value`` with every data URI and every base64 image replaced by a ``Blob``."""
    if isinstance(value, dict):
        return {key: images_in(item) for key, item in value.items()}
    if isinstance(value, list):
        return [images_in(item) for item in value]
    if isinstance(value, str):
        return image_blob(value) or value
    return value


def image_blob(text: str) -> Blob | None:
    match = _DATA_URI.match(text)
    if match:
        data = _b64(match.group(2))
        return Blob("data-uri", match.group(1).lower(), data) if data is not None else None
    if len(text) < 64:
        return None
    data = _b64(text)
    return Blob("base64", None, data) if data is not None and sniff(data) else None


def _b64(text: str) -> bytes | None:
    """Standard or URL-safe base64 (google-genai writes bytes URL-safe, ``_common.py``), else None."""
    alphabet = "+/" if _URLSAFE.fullmatch(text) is None else "-_"
    try:
        return base64.b64decode(text, altchars=alphabet.encode(), validate=True)
    except (binascii.Error, ValueError):
        return None


def sniff(data: bytes) -> str | None:
    for magic, mime in _MAGIC:
        if data.startswith(magic) and (mime != "image/webp" or data[8:12] == b"WEBP"):
            return mime
    return None


# --------------------------------------------------------------------------- comparison


def differences(ours: Wire, theirs: Wire) -> list[Difference]:
    found: list[Difference] = []
    _walk(ours.tree(), theirs.tree(), "", found)
    return found


def _walk(ours: Any, theirs: Any, path: str, found: list[Difference]) -> None:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in [*ours, *(k for k in theirs if k not in ours)]:
            _walk(ours.get(key, MISSING), theirs.get(key, MISSING), f"{path}.{key}" if path else str(key), found)
    elif isinstance(ours, list) and isinstance(theirs, list):
        for index in range(max(len(ours), len(theirs))):
            _walk(ours[index] if index < len(ours) else MISSING,
                  theirs[index] if index < len(theirs) else MISSING, f"{path}[{index}]", found)
    elif not same(ours, theirs):
        found.append(Difference(path, ours, theirs))


def same(ours: Any, theirs: Any) -> bool:
    """Equal and of the same JSON type: 1, 1.0 and true are three different values on the wire."""
    return type(ours) is type(theirs) and ours == theirs


def unexplained(found: list[Difference], allowed: tuple[Allow, ...]) -> list[Difference]:
    return [difference for difference in found if not any(allow.covers(difference) for allow in allowed)]


def only_sdk(difference: Difference) -> bool:
    """The SDK sent it and we did not."""
    return difference.ours is MISSING


def only_sdk_null(difference: Difference) -> bool:
    """The SDK sent null where we sent nothing."""
    return difference.ours is MISSING and difference.theirs is None


def both_uuid4(difference: Difference) -> bool:
    uuid4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    return all(isinstance(v, str) and uuid4.match(v) for v in (difference.ours, difference.theirs))
