"""The one HTTP policy every adapter (and google-genai, through its ``httpx_client``) uses.

``make_http_client`` returns an ``httpx.Client`` whose transport
- takes a request-per-minute token from the route's cross-worker
  ``RouteLimiter`` for every HTTP request (retries and polls too), and an
  in-flight slot unless the request carries a live slot of the route (its
  ``RequestOptions.slots``, transport/requestopts.py: the pool takes one slot
  per call and the call hands it to each of its requests, from any thread),
- reads the whole body inside that slot, so a read timeout is retried too,
- tells the limiter every reply's status, for the adaptive concurrency,
- retries 408, 429 and 5xx replies and connection errors / timeouts with
  exponential backoff and jitter, honouring ``Retry-After`` (and the
  ``retry-after-ms``, ``x-should-retry`` and ``X-Fal-Retryable`` headers),
- never retries other 4xx (moderation, auth, validation) or a 429 that says
  the quota is used up: waiting does not fix those,
- never sends a paid request (``submits``: a job submission, a synchronous
  generation, a paid judge call) again once it may have reached the provider
  (a read timeout, a dropped connection): the provider may have accepted, and
  billed, the first one.  Only a request that never left (connection refused,
  connect timeout) or a reply that says it was not taken (429, 5xx) is retried,
- bounds every attempt (transport/bounds.py): an overall deadline from the first byte sent to the last
  byte read, and a cap on the body, decoded, checked while it is decompressed,
- waits what the server asks (transport/waits.py): ``Retry-After`` and ``retry-after-ms`` headers, Google's
  ``RetryInfo`` and BFL's ``retry_after`` in the error body; an unusable value (``nan``) is ignored, a wait
  longer than ``max_retry_after`` returns the error at once, a Google per-day quota is never retried,
- sends a key only to the route's own hosts and never follows a redirect off the origin with it
  (transport/keyhosts.py).

``raise_for_status`` turns a failed reply into a redacted ``ProviderError`` (transport/httperrors.py, whose
names are importable from here too).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, cast

import httpx

from ..errors import ProviderError
from ..files import new_temporary
from ..secrets import install_log_redaction, redact, register_secret
from .addresses import quoted
from .bounds import (
    ACCEPT_ENCODING,
    IMAGE_CAP,
    JSON_CAP,
    BoundedStream,
    DeadlinePassed,
    Until,
    arm,
    bounded_chunks,
    deadline_for,
    decoded_headers,
    network_transport,
)
from .httperrors import (
    NOT_SENT,
    QUOTA_MARKERS,
    RETRY_STATUSES,
    STOPPED_BY_CLIENT,
    WAIT_DECLINED,
    error_details,
    is_retryable,
    may_have_reached_provider,
    next_step,
    raise_for_status,
    request_id_of,
    retryable_transport,
    transport_error,
    url_without_query,
    wait_note,
)
from .keyhosts import KeyHosts, check_request, redirect_guard
from .requestopts import OPTIONS, RequestOptions, options_of, with_options
from .slots import CallSlots
from .waits import header_wait, server_wait

if TYPE_CHECKING:  # pragma: no cover
    from .slots import Limiter

log = logging.getLogger("pytest_hypeedit.http")

#: Bytes written at a time by a download (its memory while in flight).
CHUNK = 256 * 1024
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
        numbers = (self.base_delay, self.max_delay, self.max_retry_after, self.jitter)
        if (self.max_attempts < 1 or not all(math.isfinite(n) and n >= 0 for n in numbers)
                or not 0 <= self.jitter <= 1):
            raise ValueError(f"invalid RetryPolicy {self!r}")

    def backoff(self, attempt: int, retry_after: float | None = None, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None and math.isfinite(retry_after):
            # The server said when: wait at least that, plus a little spread.
            return max(retry_after, 0.0) + rand() * self.jitter * self.base_delay
        delay = min(self.base_delay * 2.0 ** (attempt - 1), self.max_delay)
        return delay * (1 - self.jitter) + delay * self.jitter * rand()


DEFAULT_POLICY = RetryPolicy()


def parse_retry_after(headers: httpx.Headers, now: float | None = None, *, route: str = "") -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms``, or ``Retry-After`` as seconds or an HTTP date;
    None when there is none, or when it is not a finite number >= 0 (``nan``, ``inf``, garbage)."""
    return header_wait(headers, route=route, now=now)


def pause(seconds: float) -> None:
    """How the policy waits between attempts (a test replaces it to wait on a fake clock)."""
    time.sleep(seconds)


@dataclass(frozen=True)
class Bounds:
    """The limits of every attempt of a client's requests (transport/bounds.py)."""

    deadline_s: float
    reply_cap: int = JSON_CAP  # an API reply, decoded
    download_cap: int = IMAGE_CAP  # a result file (``download=True``), decoded

    def cap(self, request: httpx.Request) -> int:
        options = options_of(request)
        if options.max_bytes is not None:
            return options.max_bytes
        return self.download_cap if options.download else self.reply_cap


#: Errors that another attempt would only repeat: a body past its cap or in an encoding not asked for, a
#: key not sent (these are not TransportErrors, so they are never retried), a deadline that passed and an address
#: without http:// or https:// (transport/addresses.py).
def _final(exc: Exception) -> bool:
    return isinstance(exc.__cause__, DeadlinePassed) or isinstance(exc, (DeadlinePassed, *STOPPED_BY_CLIENT))


class PolicyTransport(httpx.BaseTransport):
    """Wraps a transport with the limiter, the bounded body read, the key guard and the retries."""

    def __init__(self, inner: httpx.BaseTransport, policy: RetryPolicy, limiter: "Limiter | None" = None,
                 *, route: str = "", sleep: Callable[[float], None] | None = None, bounds: Bounds | None = None,
                 key_hosts: KeyHosts | None = None, secrets: Sequence[str] = ()):
        self.inner, self.policy, self.limiter, self.route, self.sleep = inner, policy, limiter, route, sleep
        self.bounds = bounds or Bounds(deadline_for(120.0))
        self.key_hosts, self.secrets = key_hosts, tuple(secrets)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        check_request(request, self.key_hosts, self.secrets)  # before anything: nothing leaves for a stranger
        attempt = 1
        while True:
            try:
                response, twin = self._send_once(request)
            except httpx.TransportError as exc:
                self._observe(None)
                if attempt >= self.policy.max_attempts or _final(exc) or (options_of(request).submits
                                                                          and not isinstance(exc, NOT_SENT)):
                    raise
                delay, why = self.policy.backoff(attempt), type(exc).__name__
            else:
                self._observe(response.status_code)
                decision = self._retry_after(response, twin, attempt)
                if decision is None:
                    return response
                delay, why = decision, f"HTTP {response.status_code}"
            log.info("%s: %s from %s %s; retry %d in %.2fs", self.route, why, request.method,
                     redact(url_without_query(request.url)), attempt, delay)
            (self.sleep or pause)(delay)
            attempt += 1

    def _retry_after(self, response: httpx.Response, twin: httpx.Response | None, attempt: int) -> float | None:
        """Seconds to wait before trying again, or None when the reply is final."""
        if attempt >= self.policy.max_attempts or twin is None or not is_retryable(twin):
            return None
        wait = server_wait(twin, route=self.route)
        if wait is not None and wait > self.policy.max_retry_after:
            response.extensions[WAIT_DECLINED] = wait  # raise_for_status says so
            return None
        return self.policy.backoff(attempt, wait)

    def _observe(self, status: int | None) -> None:
        observe = getattr(self.limiter, "observe", None)  # any object with slot() can limit (tests)
        if observe is not None:
            observe(status)

    def _send_once(self, request: httpx.Request) -> tuple[httpx.Response, httpx.Response | None]:
        deadline = arm(request, self.bounds.deadline_s)
        options = options_of(request)
        if options.stream:
            return self._send_streamed(request, deadline)
        slot: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
        if self.limiter is not None:
            # A download is storage, not the provider's API: no request-per-minute token.  A request of a call
            # that holds this route's slot takes no second one, whatever thread sends it.
            slot = self.limiter.slot(rpm=not options.download, taken=options.slots)
        with slot:
            response = self.inner.handle_request(request)
            raw = self._read(response, self.bounds.cap(request), deadline)
        return self._fresh(request, response, raw)

    def _send_streamed(self, request: httpx.Request, deadline: Until) -> tuple[httpx.Response, httpx.Response | None]:
        """A download read by the caller as it arrives (no request-per-minute token, no in-flight slot: it
        is a file from storage, inside a call that holds the route's slot already), decoded and bounded as
        it is read; an error reply is read here, for the retry decision."""
        response = self.inner.handle_request(request)
        if response.is_success:
            stream = BoundedStream(response, cap=self.bounds.cap(request), what="download", deadline=deadline)
            return httpx.Response(response.status_code, headers=decoded_headers(response.headers), stream=stream,
                                  extensions=response.extensions, request=request), None
        return self._fresh(request, response, self._read(response, JSON_CAP, deadline))

    @staticmethod
    def _read(response: httpx.Response, cap: int, deadline: Until) -> bytes:
        try:
            # A sync Client's reply: httpx types ``stream`` for the async client too.
            return b"".join(bounded_chunks(cast(Iterable[bytes], response.stream), response.headers, cap=cap, what="reply",
                                           deadline=deadline))
        finally:
            response.close()

    @staticmethod
    def _fresh(request: httpx.Request, response: httpx.Response, raw: bytes
               ) -> tuple[httpx.Response, httpx.Response | None]:
        # The client gets a fresh, unread response (so httpx's own read/close/elapsed bookkeeping works),
        # already decoded; the retry decision reads a twin of it (same bytes).  A success without retry
        # flags is never retried, so it needs no twin.
        headers = decoded_headers(response.headers, len(raw))
        fresh = httpx.Response(response.status_code, headers=headers, stream=httpx.ByteStream(raw),
                               extensions=response.extensions, request=request)
        if fresh.is_success and not _has_retry_flag(fresh):
            return fresh, None
        return fresh, httpx.Response(response.status_code, headers=headers, content=raw)

    def close(self) -> None:
        self.inner.close()


def _has_retry_flag(response: httpx.Response) -> bool:
    return any(name in response.headers for name in ("x-should-retry", "x-fal-retryable"))


def make_http_client(route: str, *, secrets: Sequence[str] = (), timeout: float = 120.0,
                     policy: RetryPolicy | None = None, limiter: "Limiter | None" = None,
                     transport: httpx.BaseTransport | None = None,
                     sleep: Callable[[float], None] | None = None, deadline_s: float | None = None,
                     reply_cap: int = JSON_CAP, download_cap: int = IMAGE_CAP,
                     key_hosts: KeyHosts | None = None) -> httpx.Client:
    """An httpx.Client for ``route`` that applies the one HTTP policy (see the module docstring).

    ``secrets`` are extra values to redact from errors and logs (the route's own key variables always
    are); ``key_hosts`` where a request carrying a key may go (None: anywhere, but never off its origin by a
    redirect).  ``timeout`` is per read; ``deadline_s`` bounds each attempt whole (default
    ``bounds.deadline_for``).  ``reply_cap`` and ``download_cap`` cap the decoded bodies of API replies and of
    result files.  ``transport`` replaces the network (tests).
    """
    for value in secrets:
        register_secret(value)
    install_log_redaction()
    inner = transport if transport is not None else network_transport()
    bounds = Bounds(deadline_for(timeout, deadline_s), reply_cap, download_cap)
    return httpx.Client(
        transport=PolicyTransport(inner, policy or DEFAULT_POLICY, limiter, route=route, sleep=sleep, bounds=bounds,
                                  key_hosts=key_hosts, secrets=secrets),
        timeout=httpx.Timeout(timeout, connect=min(timeout, 20.0)),
        follow_redirects=True,
        # The environment's proxies are honoured inside the policy (bounds.network_transport), not by httpx.
        trust_env=False,
        headers={"user-agent": USER_AGENT, "accept-encoding": ACCEPT_ENCODING},
        event_hooks={"response": [redirect_guard(secrets)]},
    )


def download_to(client: httpx.Client, url: str, folder: Path, *, route: str, model: str,
                headers: dict[str, str] | None = None, gone: Callable[[int], Exception | None] | None = None,
                attempts: int = 3, slots: CallSlots = ()) -> Path:
    """The file at ``url`` written into a new file in ``folder`` as it arrives; its path.  A status in
    ``gone``'s care (e.g. 403/404/410 of an expired signed URL) raises what ``gone`` returns; another error
    reply raises as ``raise_for_status`` does; a connection lost while reading is tried again."""
    extensions = with_options(None, download=True, stream=True, slots=slots)
    folder.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, attempts + 1):
        fd, name = new_temporary(folder, ".download-")  # the user's umask, as every file of the outputs
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
            if attempt == attempts or _final(exc):
                raise transport_error(exc, route=route, model=model) from None
        except httpx.HTTPError as exc:  # too large, an encoding not asked for, a key not sent: not tried again
            target.unlink(missing_ok=True)
            raise transport_error(exc, route=route, model=model) from None
        except BaseException:
            target.unlink(missing_ok=True)
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def send(client: httpx.Client, method: str, url: str, *, route: str, model: str, submits: bool = False,
         download: bool = False, slots: CallSlots = (), **kwargs: Any) -> httpx.Response:
    """``client.request`` with network errors turned into ProviderError; the status is NOT checked here,
    so the adapter can look for a refusal first and then call ``raise_for_status``.  ``submits`` marks a
    paid request (a job submission or a synchronous generation): it is never sent twice (see the module
    docstring), and a reply lost on the way is a ProviderError with ``reply_lost``; ``download`` one
    that fetches a result file from storage, which takes no request-per-minute token; ``slots`` the in-flight
    slots of the call it is part of (engine/limits.py), so it takes no second one."""
    kwargs["extensions"] = with_options(kwargs.get("extensions"), submits=submits, download=download, slots=slots)
    try:
        return client.request(method, url, **kwargs)
    except httpx.HTTPError as exc:
        raise transport_error(exc, route=route, model=model, submits=submits) from None
    except httpx.InvalidURL as exc:  # not accepted while the request was built: nothing left, nothing was paid
        raise ProviderError(redact(f"{model} via {route}: not sent: its address {quoted(str(url))} cannot be used "
                                   f"({exc}); check the route's HYPEEDIT_<PROVIDER>_BASE_URL"),
                            retryable=False) from None
    except UnicodeEncodeError:  # a header that is not ASCII (a key pasted with a stray character): nothing left
        raise ProviderError(f"{model} via {route}: not sent: a header of the request is not plain ASCII text "
                            "(check the route's API key variable for a stray character)", retryable=False) from None


#: Re-exported: callers import the reading of failed replies from here (transport/httperrors.py).
__all__ = ["CHUNK", "DEFAULT_POLICY", "NOT_SENT", "OPTIONS", "QUOTA_MARKERS", "RETRY_STATUSES", "USER_AGENT",
           "WAIT_DECLINED", "Bounds", "PolicyTransport", "RequestOptions", "RetryPolicy", "download_to", "error_details",
           "is_retryable", "make_http_client", "may_have_reached_provider", "next_step", "parse_retry_after", "pause",
           "raise_for_status", "request_id_of", "retryable_transport", "send", "transport_error", "wait_note"]
