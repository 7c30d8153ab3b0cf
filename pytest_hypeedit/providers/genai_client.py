"""The google-genai client both Gemini users share (the image provider and the judge).

One ``genai.Client`` per provider or judge instance (never per call), built on
the project's one HTTP policy: the httpx client from ``make_http_client`` goes
into google-genai through ``HttpOptions(httpx_client=...)``, so retries,
backoff, Retry-After and the cross-worker rate limits are the same as for every
other provider, and google-genai's own retries stay off (its default).  Every
``generateContent`` POST (an image, a verdict) is paid: it is marked as such
(``RequestOptions.submits``) on its way out, so the policy never sends it twice
once it may have reached Google, and a reply lost on the way is an error with
``reply_lost`` (engine/journal.py).  Google's API takes no client-chosen id or
idempotency key for it (google-genai sends none: ``_api_client.py``).

A call the pool holds an in-flight slot for (``GenerationRequest.call.slots``,
``JudgeRequest.call.slots``) is entered with ``GenaiSession.for_call``: google-genai
builds and sends its requests itself (from whatever thread it likes), so the
call's config carries a one-off token in a header; the session's request hook
takes the header off before anything is sent and puts the call's slots on the
request (``RequestOptions.slots``), so no request of the call takes a second slot.

Errors from google-genai, httpx or a reply that is not JSON become the caller's
``CallError`` subclass with a redacted message: google-genai's own ``str(exc)``
quotes the whole reply body, so it is never used as it is.  Google's 429 says
how long to wait in its body (``RetryInfo``), which the policy transport reads
and waits for; a 429 of a per-day quota is not retried and its error says so.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

import httpx
import pydantic

from ..errors import CallError, ConfigError
from ..secrets import KEY_ENV, base_url, key_for, redact
from ..transport.bounds import JSON_CAP
from ..transport.http import (
    RETRY_STATUSES,
    WAIT_DECLINED,
    RetryPolicy,
    make_http_client,
    may_have_reached_provider,
    retryable_transport,
)
from ..transport.httperrors import key_invalid_in
from ..transport.keycheck import KeyProbe
from ..transport.keyhosts import key_hosts
from ..transport.requestopts import mark, options_of
from ..transport.slots import CallSlots
from ..transport.waits import daily_quota, daily_quota_message

if TYPE_CHECKING:  # pragma: no cover
    from google.genai.errors import APIError

    from ..engine.limits import RouteLimiter

T = TypeVar("T")

ROUTE = "gemini"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"
#: GOOGLE_API_KEY wins over GEMINI_API_KEY, as in google-genai itself.
GEMINI_KEY_ENV: tuple[str, ...] = KEY_ENV[ROUTE]
#: Seconds per read of a paid call.  google-genai itself sets no timeout at all (``_api_client.py``: an
#: unset ``HttpOptions.timeout`` becomes httpx's ``timeout=None``), so a stalled read would never end; 600 s
#: is what the OpenAI and ModelArk SDKs wait (their ``_constants.py``), far above a 4K image's minute or two.
PAID_CALL_TIMEOUT_S = 600.0
#: A batch's creation is paid too, and not idempotent (docs/reference/providers.md 11.4): never sent twice either.
PAID_PATH_SUFFIX = (":generateContent", ":batchGenerateContent")
#: The header that names a call's slots between google-genai and the session's hook; never sent.
CALL_HEADER = "x-hypeedit-call"


#: Google's models.get: free, and a wrong key is answered 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
MODELS_GET_DOC = "https://ai.google.dev/api/models#method:-models.get"


def gemini_probe(user: str, route: str, model: str) -> KeyProbe:
    """The key check of a Gemini user (the image route, the judge): ``GET /v1beta/models/{model}``, the key in
    ``x-goog-api-key``, to the Gemini base URL's origin only."""
    from ..engine.rejected_keys import variable_sent

    key = key_for(ROUTE, GEMINI_KEY_ENV)
    base = base_url("gemini", DEFAULT_BASE_URL)
    return KeyProbe(user=user, route=route, variable=variable_sent(GEMINI_KEY_ENV), method="GET",
                    url=f"{base}/{API_VERSION}/models/{model}", headers={"x-goog-api-key": key}, secret=key,
                    hosts=key_hosts(route, base), doc=MODELS_GET_DOC)


def import_genai() -> tuple[ModuleType, ModuleType, ModuleType]:
    """google-genai, imported lazily (a run without Gemini never pays for the import): the modules
    ``google.genai``, ``google.genai.types`` and ``google.genai.errors``."""
    try:
        from google import genai
        from google.genai import errors, types
    except ImportError:  # pragma: no cover - it is a dependency, but be helpful
        raise ConfigError("the gemini route and judge need google-genai: pip install 'google-genai>=1.56'") from None
    return genai, types, errors


class GenaiSession:
    """A google-genai client over the project's HTTP policy; ``close()`` releases both."""

    def __init__(self, *, route: str = ROUTE, timeout_s: float = 120.0, policy: RetryPolicy | None = None,
                 limiter: RouteLimiter | None = None, reply_cap: int = JSON_CAP, deadline_s: float | None = None,
                 transport: httpx.BaseTransport | None = None):
        genai, types, _ = import_genai()
        key = key_for(ROUTE, GEMINI_KEY_ENV)
        base = base_url("gemini", DEFAULT_BASE_URL)
        # google-genai builds every URL from the base: the key goes to its origin only.
        self.http = make_http_client(route, secrets=(key,), timeout=timeout_s, policy=policy, limiter=limiter,
                                     reply_cap=reply_cap, deadline_s=deadline_s, key_hosts=key_hosts(route, base),
                                     transport=transport)
        self._calls: dict[str, CallSlots] = {}  # token -> the slots of a call in progress (``for_call``)
        self._calls_lock = threading.Lock()
        hooks = [*self.http.event_hooks["request"], mark_paid, self._mark_call]
        self.http.event_hooks = {**self.http.event_hooks, "request": hooks}
        options = types.HttpOptions(
            base_url=base + "/",
            api_version=API_VERSION,
            timeout=int(timeout_s * 1000),  # google-genai wants ms and passes it on every request
            httpx_client=self.http,
        )
        # vertexai=False: a stray GOOGLE_GENAI_USE_VERTEXAI must not send our key to Vertex paths.
        self.client = genai.Client(api_key=key, vertexai=False, http_options=options)

    @contextlib.contextmanager
    def for_call(self, slots: CallSlots) -> Iterator[dict[str, Any]]:
        """The ``GenerateContentConfig`` fields that tie google-genai's requests to a call holding ``slots``
        (none without slots: each request takes its own); valid for the ``with`` block."""
        if not slots:
            yield {}
            return
        _, types, _ = import_genai()
        token = secrets.token_hex(12)
        with self._calls_lock:
            self._calls[token] = slots
        try:
            yield {"http_options": types.HttpOptions(headers={CALL_HEADER: token})}
        finally:
            with self._calls_lock:
                del self._calls[token]

    def _mark_call(self, request: httpx.Request) -> None:
        """An httpx request hook: the call's token off the request, its slots on (an unknown token: none)."""
        token = request.headers.pop(CALL_HEADER, None)
        if token is None:
            return
        with self._calls_lock:
            slots = self._calls.get(token, ())
        mark(request, slots=slots)

    def close(self) -> None:
        self.http.close()


def call(fn: Callable[[], T], *, what: str, error: type[CallError]) -> T:
    """``fn()`` with every failure turned into ``error`` (ProviderError or JudgeError), redacted."""
    _, _, genai_errors = import_genai()
    try:
        return fn()
    except genai_errors.APIError as exc:
        raise api_error(exc, what=what, error=error) from None
    except httpx.HTTPError as exc:
        # The policy already retried it; what is left is an error the next run retries (unless the policy
        # did not send it or take its reply: a key for a stranger, a reply too large).
        lost = reply_lost(exc)
        note = ("; the request may have reached Google, so it was not sent again (that could pay twice)"
                if lost else "")
        raise error(redact(f"{what}: {type(exc).__name__}: {exc or 'no detail'}{note}"),
                    retryable=retryable_transport(exc), reply_lost=lost) from None
    except json.JSONDecodeError as exc:
        raise error(redact(f"{what}: the reply is not valid JSON ({exc.msg} at char {exc.pos})"), retryable=True) from None
    except pydantic.ValidationError as exc:  # JSON, but not the documented shape (e.g. bad base64 image data)
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        raise error(redact(f"{what}: the reply does not have the documented shape ({problems})"), retryable=True) from None


def mark_paid(request: httpx.Request) -> None:
    """An httpx request hook: a ``generateContent`` POST is a paid call, never sent twice."""
    if request.method == "POST" and request.url.path.endswith(PAID_PATH_SUFFIX):
        mark(request, submits=True)


def reply_lost(exc: httpx.HTTPError) -> bool:
    """Whether ``exc`` ended a paid request that may have reached the provider (not one that never left)."""
    try:
        paid = options_of(exc.request).submits
    except RuntimeError:  # an error with no request attached
        return False
    return paid and may_have_reached_provider(exc)


def api_error(exc: APIError, *, what: str, error: type[CallError]) -> CallError:
    """A google-genai ClientError/ServerError as ``error``: status, Google's status name and message."""
    code = exc.code if isinstance(exc.code, int) else None
    message = exc.message if isinstance(exc.message, str) else ""
    text = f"{what}: HTTP {code} {exc.status or ''}".rstrip() + (f": {message[:500]}" if message else "")
    # docs/reference/providers.md section 8: 408, 429, 5xx are worth another try; 400/403/404 are not; nor is a per-day quota.
    retryable = code is not None and (code in RETRY_STATUSES or code >= 500)
    quota = daily_quota(exc.details) if code == 429 else None
    # Google answers a wrong key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID: a rejected key, as a 401 is
    invalid = key_invalid_in(exc.details) if isinstance(exc.details, dict) else None
    if quota:
        text, retryable = f"{text}; {daily_quota_message(quota)}", False
    elif invalid:
        text, retryable = f"{text} ({invalid})", False
    elif (wait := _declined_wait(exc)) is not None:
        text += (f"; Google asked to wait {wait:g} s, longer than the policy waits (max_retry_after): not waited "
                 "for; rerun later, only what is missing is done")
    failed = error(redact(text), retryable=retryable, status=code)
    failed.key_invalid = invalid is not None
    return failed


def _declined_wait(exc: APIError) -> float | None:
    response = getattr(exc, "response", None)
    extensions = getattr(response, "extensions", None)
    # the wait PolicyTransport declined, a float, which it puts there itself (http.py ``_retry_after``)
    wait: float | None = extensions.get(WAIT_DECLINED) if isinstance(extensions, dict) else None
    return wait


def enum_name(value: object) -> str | None:
    """The name of a google-genai enum value (tolerates unknown values and plain strings)."""
    if value is None:
        return None
    return str(getattr(value, "value", value)).upper()
