"""Every HTTP request is bounded: in time (an overall deadline) and in size (a cap on its body, decoded).

**The deadline.**  httpx's timeouts are per operation: a read timeout of 600 s is 600 s between two bytes,
so a reply trickled at one byte a second never ends.  Each attempt of a request gets an overall deadline
(``DEFAULT_DEADLINE_S``, 15 minutes, or 1.5x the read timeout when that is longer: the OpenAI and ModelArk
SDKs wait 600 s per read, ``_constants.py`` in both), counted from the first byte sent to the last byte
read.  It is enforced below httpx, in the network stream httpcore reads from: every read and write is
given at most the time left (``DeadlineBackend``), so a slow header, a slow body and a slow upload all end
with ``DeadlinePassed`` ("... not complete within the overall deadline of N s").  The time left travels
with the request as its timeout values (``Until``, a float that also knows when the attempt must end).

**The caps.**  A reply is read through ``Inflate``/``bounded_chunks``: its ``Content-Encoding`` (gzip,
deflate, or none: the only ones we ask for) is decoded here, a piece of at most ``CHUNK`` bytes at a time
(zlib's ``max_length``), and the decoded size is counted against the cap as it grows, so a compression
bomb (a few MB of gzip holding gigabytes of zeros) stops at the cap, while decompressing, and never sits
in memory whole.  An encoding we did not ask for (br, zstd) is not accepted, not decoded.  Caps:
``JSON_CAP`` (8 MB) for replies that are JSON about a job or a verdict; ``IMAGE_CAP`` (96 MB) for a result
file: the largest output any route documents is a 4K image of about 17 MP (Gemini 4K at 21:9, ModelArk
up to 16.7 MP, Runware 6048x2592), at most 68 MB even as an uncompressed RGBA PNG, plus a margin; and
``inline_cap`` for a JSON reply that carries such an image as base64 (4/3 of the image, plus the JSON).
"""

from __future__ import annotations

import functools
import os
import ssl
import time
import urllib.request
import zlib
from typing import Any, Iterable, Iterator, Mapping, cast

import httpcore
import httpx

MiB = 1024 * 1024
#: The overall deadline of one attempt of one request, unless the read timeout calls for more.
DEFAULT_DEADLINE_S = 900.0
#: A JSON reply about a job, a status or a verdict ("a few MB" is already far more than any needs).
JSON_CAP = 8 * MiB
#: A result image file (see the module docstring).
IMAGE_CAP = 96 * MiB
#: Decoded bytes handed on at a time: what a compressed reply can grow by in one step.
CHUNK = 256 * 1024
#: The encodings we ask for (``Accept-Encoding``) and decode ourselves, within the cap.
ACCEPT_ENCODING = "gzip, deflate"


def deadline_for(read_timeout: float, deadline_s: float | None = None) -> float:
    """The overall deadline of an attempt: ``deadline_s`` when given, else 15 min or 1.5x the read timeout."""
    if deadline_s is not None:
        return float(deadline_s)
    return max(DEFAULT_DEADLINE_S, 1.5 * float(read_timeout))


def image_cap_of(options: Mapping[str, Any]) -> int:
    """A model's cap of a result image: ``options.max_image_mb``, else IMAGE_CAP."""
    mb = options.get("max_image_mb")
    return int(float(mb) * MiB) if mb is not None else IMAGE_CAP


def inline_cap(image_cap: int = IMAGE_CAP) -> int:
    """The cap of a JSON reply that carries an image inline as base64."""
    return image_cap * 4 // 3 + JSON_CAP


# --------------------------------------------------------------------------- the deadline


class Until(float):
    """A per-operation timeout (its float value) that also knows the monotonic time its attempt must end by."""

    until: float
    seconds: float

    def __new__(cls, timeout: float | None, until: float, seconds: float) -> "Until":
        value = super().__new__(cls, seconds if timeout is None else timeout)
        value.until, value.seconds = until, seconds
        return value


class DeadlinePassed(httpcore.ReadTimeout):
    """The attempt was not complete within its overall deadline (httpx raises it as ``httpx.ReadTimeout``)."""


def passed_message(seconds: float) -> str:
    return (f"the reply was not complete within the overall deadline of {seconds:g} s (a server that sends "
            "slowly or without end); change it with the model's options.deadline_s")


def arm(request: httpx.Request, seconds: float) -> Until:
    """Give this attempt of ``request`` its deadline: its read and write timeouts become ``Until`` values."""
    timeouts = dict(request.extensions.get("timeout") or {})
    until = time.monotonic() + seconds
    armed = {name: Until(_plain(timeouts.get(name)), until, seconds) for name in ("read", "write")}
    timeouts.update(armed)
    request.extensions["timeout"] = timeouts
    return armed["read"]


def _plain(value: Any) -> float | None:
    return None if value is None else float(value)


def time_left(timeout: Any) -> Any:
    """The timeout for one network operation: the request's own, but never past its deadline."""
    until = getattr(timeout, "until", None)
    if until is None:
        return timeout
    left = until - time.monotonic()
    if left <= 0:
        raise DeadlinePassed(passed_message(timeout.seconds))
    return min(float(timeout), left)


def check_deadline(deadline: Until | None) -> None:
    if deadline is not None:
        time_left(deadline)


class DeadlineStream(httpcore.NetworkStream):
    """A network stream whose reads and writes stop at the request's deadline (see ``Until``)."""

    def __init__(self, inner: httpcore.NetworkStream):
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            return self.inner.read(max_bytes, time_left(timeout))
        except httpcore.ReadTimeout:
            time_left(timeout)  # the deadline, not the read timeout, ran out: say so
            raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            self.inner.write(buffer, time_left(timeout))
        except httpcore.WriteTimeout:
            time_left(timeout)
            raise

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return DeadlineStream(self.inner.start_tls(ssl_context, server_hostname, time_left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend with ``DeadlineStream`` streams."""

    def __init__(self, inner: httpcore.NetworkBackend):
        self.inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None) -> httpcore.NetworkStream:
        return DeadlineStream(self.inner.connect_tcp(host, port, time_left(timeout), local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None
                            ) -> httpcore.NetworkStream:  # pragma: no cover
        return DeadlineStream(self.inner.connect_unix_socket(path, time_left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:  # pragma: no cover - httpcore's retries are off
        self.inner.sleep(seconds)


def with_deadlines(transport: httpx.HTTPTransport) -> httpx.HTTPTransport:
    """``transport`` reading through ``DeadlineBackend``.  httpx keeps its httpcore pool in ``_pool`` and the
    pool its backend in ``_network_backend`` (httpx 0.23 to 0.28, httpcore 0.17 to 1.0): if a later version
    moves them, the deadline is still checked between the chunks of a body (``bounded_chunks``)."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if pool is not None and backend is not None and not isinstance(backend, DeadlineBackend):
        pool._network_backend = DeadlineBackend(backend)
    return transport


class EnvProxyTransport(httpx.BaseTransport):
    """Direct, or through the proxy the environment names (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``,
    ``NO_PROXY``), as httpx would choose with ``trust_env``.  httpx ignores the environment's proxies when it
    is given a transport of its own (``allow_env_proxies = trust_env and transport is None``), so a network
    reachable only through a proxy was not reachable at all; here the proxy sits *inside* the policy
    transport, so a proxied request is still retried, limited, bounded and kept from sending keys astray."""

    def __init__(self, proxies: dict[str, str]):
        self.direct = with_deadlines(httpx.HTTPTransport(verify=shared_tls_context()))
        self.proxies = proxies
        self._via: dict[str, httpx.HTTPTransport] = {}

    def _transport_for(self, url: httpx.URL) -> httpx.BaseTransport:
        proxy = self.proxies.get(url.scheme) or self.proxies.get("all")
        if proxy is None or urllib.request.proxy_bypass(url.host):
            return self.direct
        if proxy not in self._via:
            self._via[proxy] = with_deadlines(httpx.HTTPTransport(proxy=proxy, verify=shared_tls_context()))
        return self._via[proxy]

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._transport_for(request.url).handle_request(request)

    def close(self) -> None:
        for transport in (self.direct, *self._via.values()):
            transport.close()


def network_transport() -> httpx.BaseTransport:
    """The real network, with deadlines, honouring the environment's proxies."""
    proxies = {scheme: url for scheme, url in urllib.request.getproxies().items()
               if scheme in ("http", "https", "all") and url}
    return EnvProxyTransport(proxies) if proxies else with_deadlines(httpx.HTTPTransport(verify=shared_tls_context()))


def shared_tls_context() -> ssl.SSLContext:
    """One TLS context per process for every transport of ours.  httpx builds a new one for each transport,
    loading certifi's CA bundle every time (~40 ms: a run, a judge and each test opened several); a context is
    safe to share between threads and connection pools, and httpcore only sets ALPN on it, the same
    ``http/1.1`` for every transport here (none speaks HTTP/2).  Keyed by the variables httpx reads when it
    builds one (``trust_env``), so a CA bundle named later in the process is still honoured."""
    return _tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.lru_cache(maxsize=4)
def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    return httpx.create_ssl_context()  # httpx's own defaults: certifi, or the variables above


# --------------------------------------------------------------------------- the caps


class BodyTooLarge(httpx.DecodingError):
    """A reply body (decoded) longer than its cap."""


class UnexpectedEncoding(httpx.DecodingError):
    """A reply in a Content-Encoding we did not ask for."""


def too_large(cap: int, what: str) -> BodyTooLarge:
    return BodyTooLarge(f"the {what} passed {cap / MiB:g} MB (decoded), the most it may take; the rest was "
                        "not read (a reply without end, or a compression bomb)")


class Inflate:
    """Decodes one Content-Encoding (gzip or deflate) a bounded piece at a time."""

    def __init__(self, encoding: str):
        self.encoding = encoding
        wbits = 16 + zlib.MAX_WBITS if encoding in ("gzip", "x-gzip") else zlib.MAX_WBITS
        self.zlib = zlib.decompressobj(wbits)
        self.started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data:
            try:
                piece = self.zlib.decompress(data, CHUNK)
            except zlib.error as exc:
                if self.encoding != "deflate" or self.started:
                    raise httpx.DecodingError(f"the reply's {self.encoding} data is corrupt ({exc})") from None
                self.zlib = zlib.decompressobj(-zlib.MAX_WBITS)  # "deflate" sent raw, without its zlib header
                continue
            self.started = True
            data = self.zlib.unconsumed_tail
            if piece:
                yield piece
            if not data and len(piece) == CHUNK:  # output was cut at CHUNK: more may wait inside zlib
                yield from self._drain()

    def _drain(self) -> Iterator[bytes]:
        while True:
            piece = self.zlib.decompress(b"", CHUNK)
            if not piece:
                return
            yield piece

    def finish(self) -> Iterator[bytes]:
        yield from self._drain()


def decoders(headers: httpx.Headers) -> list[Inflate]:
    """The decoders of a reply's Content-Encoding, in the order they apply; an encoding we did not ask for
    is not accepted (it is never decoded, so it cannot be a bomb)."""
    names = [name.strip().lower() for name in headers.get("content-encoding", "").split(",") if name.strip()]
    chain = []
    for name in reversed(names):  # the last encoding applied is undone first
        if name == "identity":
            continue
        if name not in ("gzip", "x-gzip", "deflate"):
            raise UnexpectedEncoding(f"the reply is {name}-encoded, which was not asked for "
                                     f"(Accept-Encoding: {ACCEPT_ENCODING}); it was not decoded")
        chain.append(Inflate(name))
    return chain


def _through(chunks: Iterable[bytes], decoder: Inflate) -> Iterator[bytes]:
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.finish()


def bounded_chunks(raw: Iterable[bytes], headers: httpx.Headers, *, cap: int, what: str,
                   deadline: Until | None = None) -> Iterator[bytes]:
    """The decoded body of a reply from its raw chunks, stopping with ``BodyTooLarge`` past ``cap`` (raw or
    decoded) and with ``DeadlinePassed`` past the deadline."""
    received = 0

    def counted(chunks: Iterable[bytes]) -> Iterator[bytes]:
        nonlocal received
        for chunk in chunks:
            check_deadline(deadline)
            received += len(chunk)
            if received > cap:
                raise too_large(cap, what)
            yield chunk

    stream: Iterable[bytes] = counted(raw)
    for decoder in decoders(headers):
        stream = _through(stream, decoder)
    decoded = 0
    for piece in stream:
        decoded += len(piece)
        if decoded > cap:
            raise too_large(cap, what)
        yield piece


def decoded_headers(headers: httpx.Headers, length: int | None = None) -> httpx.Headers:
    """The reply's headers for its decoded body: no Content-Encoding, and its real length when known."""
    fresh = httpx.Headers(headers)
    fresh.pop("content-encoding", None)
    fresh.pop("content-length", None)
    if length is not None:
        fresh["content-length"] = str(length)
    return fresh


class BoundedStream(httpx.SyncByteStream):
    """A streamed reply (a download) decoded and bounded as the caller reads it; closing it closes the reply."""

    def __init__(self, response: httpx.Response, *, cap: int, what: str, deadline: Until | None):
        self.response, self.cap, self.what, self.deadline = response, cap, what, deadline

    def __iter__(self) -> Iterator[bytes]:
        # A sync Client's reply: httpx types ``stream`` for the async client too.
        yield from bounded_chunks(cast(Iterable[bytes], self.response.stream), self.response.headers, cap=self.cap, what=self.what,
                                  deadline=self.deadline)

    def close(self) -> None:
        self.response.close()
