"""The one HTTP policy every adapter (and google-genai, through its ``httpx_client``) uses.

``make_http_client`` returns an ``httpx.Client`` whose transport
- takes a request-per-minute token from the route's cross-worker
  ``RouteLimiter`` for every HTTP request (retries and polls too), and an
  in-flight slot unless the request is part of a call that holds one already
  (engine/limits.py: the pool takes one slot per call),
- reads the whole body inside that slot, so a read timeout is retried too,
- tells the limiter every reply's status, for the adaptive concurrency,
- retries 408, 429 and 5xx replies and connection errors / timeouts with
  exponential backoff and jitter, honouring ``Retry-After`` (and the
  ``retry-after-ms``, ``x-should-retry`` and ``X-Fal-Retryable`` headers),
- never retries other 4xx (moderation, auth, validation) or a 429 that says
  the quota is used up: waiting does not fix those,
- never sends a paid request (``SUBMITS``: a job submission, a synchronous
  generation, a paid judge call) again once it may have reached the provider
  (a read timeout, a dropped connection): the provider may have accepted, and
  billed, the first one.  Only a request that never left (connection refused,
  connect timeout) or a reply that says it was not taken (429, 5xx) is retried.

``raise_for_status`` turns a failed reply into a redacted ``ProviderError``.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import os
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import httpx

from ..errors import ProviderError
from ..secrets import KEY_ENV, redact, register_secret

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.limits import RouteLimiter

log = logging.getLogger("pytest_hypeedit.http")

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
#: The request extension that marks a paid request, never sent twice (``send(..., submits=True)``).
SUBMITS = "hypeedit_submits_job"
#: The request extension that marks the download of a result file from storage: no API rate limit applies.
DOWNLOAD = "hypeedit_download"
#: The request extension of a download streamed to disk: a successful reply is handed back unread, so the
#: file never sits in memory whole (an error reply is read, for the retry decision).
STREAM = "hypeedit_stream"
#: Transport errors raised before the request left: retrying them cannot submit twice.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
#: Bytes written at a time by a download (its memory while in flight).
CHUNK = 256 * 1024
#: Words in a 429 body that mean "out of money", not "slow down" (OpenAI insufficient_quota, ...).
QUOTA_MARKERS = ("insufficient_quota", "quota_exceeded", "billing_hard_limit", "accountoverdue")
USER_AGENT = "pytest-hypeedit"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently one HTTP request is retried."""

    max_attempts: int = 5  # first try included
    base_delay: float = 1.0  # seconds before the 2nd attempt, doubled each time
    max_delay: float = 60.0
    #: A Retry-After longer than this is not waited for: the error is returned at once
    #: (the run records an error and the next run retries the candidate).
    max_retry_after: float = 120.0
    jitter: float = 0.5  # share of each backoff that is random, so workers do not retry in step

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.base_delay < 0 or self.max_delay < 0 or not 0 <= self.jitter <= 1:
            raise ValueError(f"invalid RetryPolicy {self!r}")

    def backoff(self, attempt: int, retry_after: float | None = None, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            # The server said when: wait at least that, plus a little spread.
            return max(retry_after, 0.0) + rand() * self.jitter * self.base_delay
        delay = min(self.base_delay * 2 ** (attempt - 1), self.max_delay)
        return delay * (1 - self.jitter) + delay * self.jitter * rand()


DEFAULT_POLICY = RetryPolicy()


def parse_retry_after(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms``, or ``Retry-After`` as seconds or an HTTP date."""
    millis = headers.get("retry-after-ms")
    if millis:
        with contextlib.suppress(ValueError):
            return float(millis) / 1000
    value = headers.get("retry-after")
    if not value:
        return None
    with contextlib.suppress(ValueError):
        return max(float(value), 0.0)
    with contextlib.suppress(TypeError, ValueError, IndexError):
        when = email.utils.parsedate_to_datetime(value).timestamp()
        return max(when - (time.time() if now is None else now), 0.0)
    return None


def _flag(headers: httpx.Headers, name: str) -> bool | None:
    value = headers.get(name, "").strip().lower()
    return {"true": True, "1": True, "false": False, "0": False}.get(value)


def is_retryable(response: httpx.Response) -> bool:
    """Whether trying the same request again may succeed (providers.md section 8)."""
    for header in ("x-should-retry", "x-fal-retryable"):
        flag = _flag(response.headers, header)
        if flag is not None:
            return flag
    status = response.status_code
    if status == 429 and _says_quota(response):
        return False
    return status in RETRY_STATUSES or status >= 500


def _says_quota(response: httpx.Response) -> bool:
    try:
        body = response.content[:4000].decode("utf-8", "replace").lower()
    except httpx.ResponseNotRead:
        return False
    return any(marker in body for marker in QUOTA_MARKERS)


class PolicyTransport(httpx.BaseTransport):
    """Wraps a transport with the limiter, the body read and the retries."""

    def __init__(self, inner: httpx.BaseTransport, policy: RetryPolicy, limiter: "RouteLimiter | None" = None,
                 *, route: str = "", sleep: Callable[[float], None] = time.sleep):
        self.inner, self.policy, self.limiter, self.route, self.sleep = inner, policy, limiter, route, sleep

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        attempt = 1
        while True:
            try:
                response, twin = self._send_once(request)
            except httpx.TransportError as exc:
                self._observe(None)
                if attempt >= self.policy.max_attempts or (request.extensions.get(SUBMITS)
                                                           and not isinstance(exc, NOT_SENT)):
                    raise
                delay, why = self.policy.backoff(attempt), type(exc).__name__
            else:
                self._observe(response.status_code)
                retry_after = parse_retry_after(response.headers)
                if (attempt >= self.policy.max_attempts or twin is None or not is_retryable(twin)
                        or (retry_after or 0) > self.policy.max_retry_after):
                    return response
                delay, why = self.policy.backoff(attempt, retry_after), f"HTTP {response.status_code}"
            log.info("%s: %s from %s %s; retry %d in %.2fs", self.route, why, request.method,
                     redact(_url_without_query(request.url)), attempt, delay)
            self.sleep(delay)
            attempt += 1

    def _send_streamed(self, request: httpx.Request) -> tuple[httpx.Response, httpx.Response | None]:
        """A download read by the caller as it arrives (no request-per-minute token, no in-flight slot: it
        is a file from storage, inside a call that holds the route's slot already)."""
        response = self.inner.handle_request(request)
        if response.is_success:
            return response, None
        try:
            raw = b"".join(response.stream)
        finally:
            response.close()
        fresh = httpx.Response(response.status_code, headers=response.headers, stream=httpx.ByteStream(raw),
                               extensions=response.extensions, request=request)
        return fresh, _decoded_twin(fresh, raw)

    def _observe(self, status: int | None) -> None:
        observe = getattr(self.limiter, "observe", None)  # any object with slot() can limit (tests)
        if observe is not None:
            observe(status)

    def _send_once(self, request: httpx.Request) -> tuple[httpx.Response, httpx.Response | None]:
        if request.extensions.get(STREAM):
            return self._send_streamed(request)
        if self.limiter is None:
            slot = contextlib.nullcontext()
        elif request.extensions.get(DOWNLOAD):
            slot = self.limiter.slot(rpm=False)  # storage, not the provider's API: no request-per-minute token
        else:
            slot = self.limiter.slot()
        with slot:
            response = self.inner.handle_request(request)
            try:
                raw = b"".join(response.stream)  # still content-encoded; the client decodes it
            finally:
                response.close()
        # The client gets a fresh, unread response (so httpx's own read/close/elapsed
        # bookkeeping works); the retry decision reads a decoded twin of it.  A success is
        # never retried, so its body (often a large image) is not decoded a second time.
        fresh = httpx.Response(response.status_code, headers=response.headers, stream=httpx.ByteStream(raw),
                               extensions=response.extensions, request=request)
        return fresh, (None if fresh.is_success and not _has_retry_flag(fresh) else _decoded_twin(fresh, raw))

    def close(self) -> None:
        self.inner.close()


def _has_retry_flag(response: httpx.Response) -> bool:
    return any(name in response.headers for name in ("x-should-retry", "x-fal-retryable"))


def _decoded_twin(response: httpx.Response, raw: bytes) -> httpx.Response:
    twin = httpx.Response(response.status_code, headers=response.headers, stream=httpx.ByteStream(raw))
    with contextlib.suppress(httpx.DecodingError):
        twin.read()
    return twin


def make_http_client(route: str, *, secrets: Sequence[str] = (), timeout: float = 120.0,
                     policy: RetryPolicy | None = None, limiter: "RouteLimiter | None" = None,
                     transport: httpx.BaseTransport | None = None,
                     sleep: Callable[[float], None] = time.sleep) -> httpx.Client:
    """An httpx.Client for ``route`` that applies the one HTTP policy (see the module docstring).

    ``secrets`` are extra values to redact from errors (the route's own key
    variables are always redacted).  ``transport`` replaces the network (tests).
    """
    for value in secrets:
        register_secret(value)
    inner = transport if transport is not None else httpx.HTTPTransport()
    return httpx.Client(
        transport=PolicyTransport(inner, policy or DEFAULT_POLICY, limiter, route=route, sleep=sleep),
        timeout=httpx.Timeout(timeout, connect=min(timeout, 20.0)),
        follow_redirects=True,
        headers={"user-agent": USER_AGENT},
    )


# --------------------------------------------------------------------------- errors


def _url_without_query(url: httpx.URL | str) -> str:
    # Signed result URLs carry long signatures in the query: noise in a message.
    return str(httpx.URL(str(url)).copy_with(query=None, fragment=None))


def error_details(response: httpx.Response) -> tuple[str | None, str]:
    """(code, message) from the error envelopes the providers use (providers.md)."""
    try:
        body: Any = response.json()
    except (ValueError, httpx.ResponseNotRead):
        return None, response.text[:300].strip() if _is_read(response) else ""
    return _code_and_message(body)


def _is_read(response: httpx.Response) -> bool:
    return hasattr(response, "_content")


def _code_and_message(body: Any) -> tuple[str | None, str]:
    if not isinstance(body, dict):
        return None, json.dumps(body)[:300]
    error = body.get("error", body)
    if isinstance(error, str):
        return None, error
    if not isinstance(error, dict):
        return None, json.dumps(error)[:300]
    code = error.get("code") or error.get("Code") or error.get("type") or error.get("status")
    message = error.get("message") or error.get("Message") or error.get("detail") or error.get("msg")
    if message is None:
        message = json.dumps(error)[:300]
    elif not isinstance(message, str):
        message = json.dumps(message)[:300]
    return (None if code is None else str(code)), message


def request_id_of(response: httpx.Response) -> str | None:
    for header in ("x-request-id", "request-id", "x-fal-request-id", "x-tt-logid"):
        if header in response.headers:
            return response.headers[header]
    return None


def raise_for_status(response: httpx.Response, *, route: str, model: str) -> None:
    """Nothing for a 2xx reply; else a ProviderError with the status, the provider's code and message, redacted."""
    if response.is_success:
        return
    code, message = error_details(response)
    where = f"{response.request.method} {_url_without_query(response.request.url)}"
    text = f"{model} via {route}: HTTP {response.status_code} from {where}"
    if code:
        text += f": {code}"
    if message:
        text += f": {message[:500]}"
    request_id = request_id_of(response)
    if request_id:
        text += f" (request id {request_id})"
    retryable = is_retryable(response)
    text += next_step(response.status_code, route, retryable)
    raise ProviderError(redact(text), retryable=retryable, status=response.status_code)


def next_step(status: int, route: str, retryable: bool) -> str:
    """What the user can do about a failed call, said once here for every route."""
    if status in (401, 403):
        names = " or ".join(KEY_ENV.get(route, ())) or "the route's API key"
        return f"; check {names} and that the key may use this model"
    if status == 402 or (status == 429 and not retryable):
        return "; the account's credit or quota is used up: top it up, then rerun"
    if retryable:
        return "; the provider is busy or failing: rerun later, only what is missing is done"
    return ""


def transport_error(exc: httpx.HTTPError, *, route: str, model: str, submits: bool = False) -> ProviderError:
    """A ProviderError for a network error or timeout that outlasted the retries."""
    where = ""
    with contextlib.suppress(RuntimeError):
        where = f" on {exc.request.method} {_url_without_query(exc.request.url)}"
    detail = str(exc) or type(exc).__name__
    text = f"{model} via {route}: {type(exc).__name__}{where}: {detail}"
    lost = submits and not isinstance(exc, NOT_SENT)
    if lost:
        text += ("; the submission may have reached the provider, so it was not sent again (that could pay "
                 "twice): rerun to submit it, and look for an orphan job in the provider's dashboard")
    return ProviderError(redact(text), retryable=True, reply_lost=lost)


def download_to(client: httpx.Client, url: str, folder: Path, *, route: str, model: str,
                headers: dict[str, str] | None = None, gone: Callable[[int], Exception] | None = None,
                attempts: int = 3) -> Path:
    """The file at ``url`` written into a new file in ``folder`` as it arrives; its path.  A status in
    ``gone``'s care (e.g. 403/404/410 of an expired signed URL) raises what ``gone`` returns; another error
    reply raises as ``raise_for_status`` does; a connection lost while reading is tried again."""
    extensions = {DOWNLOAD: True, STREAM: True}
    folder.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, attempts + 1):
        fd, name = tempfile.mkstemp(dir=folder, prefix=".download-", suffix=".part")
        target = Path(name)
        try:
            with os.fdopen(fd, "wb") as out, client.stream("GET", url, headers=headers or {},
                                                           extensions=extensions) as response:
                if gone is not None and (problem := gone(response.status_code)) is not None:
                    raise problem
                if not response.is_success:
                    response.read()
                    raise_for_status(response, route=route, model=model)
                for chunk in response.iter_bytes(CHUNK):
                    out.write(chunk)
            return target
        except httpx.TransportError as exc:
            target.unlink(missing_ok=True)
            if attempt == attempts:
                raise transport_error(exc, route=route, model=model) from None
        except BaseException:
            target.unlink(missing_ok=True)
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def send(client: httpx.Client, method: str, url: str, *, route: str, model: str, submits: bool = False,
         download: bool = False, **kwargs: Any) -> httpx.Response:
    """``client.request`` with network errors turned into ProviderError; the status is NOT checked here,
    so the adapter can look for a refusal first and then call ``raise_for_status``.  ``submits`` marks a
    paid request (a job submission or a synchronous generation): it is never sent twice (see the module
    docstring), and a reply lost on the way is a ProviderError with ``reply_lost``; ``download`` one
    that fetches a result file from storage, which takes no request-per-minute token."""
    flags = {name: True for name, on in ((SUBMITS, submits), (DOWNLOAD, download)) if on}
    if flags:
        kwargs["extensions"] = {**kwargs.get("extensions", {}), **flags}
    try:
        return client.request(method, url, **kwargs)
    except httpx.HTTPError as exc:
        raise transport_error(exc, route=route, model=model, submits=submits) from None
