"""Reading a failed reply or a failed request: may it be tried again, may it have been paid, and the one
redacted ``ProviderError`` that says what happened and what to do next (transport/http.py applies them).

``is_retryable`` reads a reply (408, 429 and 5xx, the ``x-should-retry`` and ``X-Fal-Retryable`` flags; never
a 429 that says the quota is used up); ``may_have_reached_provider`` and ``retryable_transport`` read a request
that got no usable reply; ``raise_for_status`` and ``transport_error`` turn either into a ``ProviderError``.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import httpx

from ..errors import ProviderError
from ..secrets import KEY_ENV, redact
from .bounds import BodyTooLarge, UnexpectedEncoding
from .keyhosts import KeyNotSent
from .waits import daily_quota, daily_quota_message, error_body

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
#: Transport errors raised before the request left: retrying them cannot submit twice.
#: (An address without http:// or https:// is not accepted before anything leaves: UnsupportedProtocol; so is a
#: header the client may not send, such as a key holding a newline: LocalProtocolError.)
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol,
            httpx.LocalProtocolError)
#: Of those, the ones another attempt would only repeat.
STOPPED_BY_CLIENT = (httpx.UnsupportedProtocol, httpx.LocalProtocolError)
#: The reply extension that records a wait the server asked for and the policy would not wait (seconds).
WAIT_DECLINED = "hypeedit_wait_declined"
#: Words in a 429 body that mean "out of money", not "slow down" (OpenAI insufficient_quota, ...).
QUOTA_MARKERS = ("insufficient_quota", "quota_exceeded", "billing_hard_limit", "accountoverdue")


def _flag(headers: httpx.Headers, name: str) -> bool | None:
    value = headers.get(name, "").strip().lower()
    return {"true": True, "1": True, "false": False, "0": False}.get(value)


def is_retryable(response: httpx.Response) -> bool:
    """Whether trying the same request again may succeed (docs/reference/providers.md section 8)."""
    for header in ("x-should-retry", "x-fal-retryable"):
        flag = _flag(response.headers, header)
        if flag is not None:
            return flag
    status = response.status_code
    if status == 429 and (_says_quota(response) or daily_quota(error_body(response))):
        return False
    return status in RETRY_STATUSES or status >= 500


def _says_quota(response: httpx.Response) -> bool:
    try:
        body = response.content[:4000].decode("utf-8", "replace").lower()
    except httpx.ResponseNotRead:
        return False
    return any(marker in body for marker in QUOTA_MARKERS)


def url_without_query(url: httpx.URL | str) -> str:
    # Signed result URLs carry long signatures in the query: noise in a message.
    return str(httpx.URL(str(url)).copy_with(query=None, fragment=None))


def error_details(response: httpx.Response) -> tuple[str | None, str]:
    """(code, message) from the error envelopes the providers use (docs/reference/providers.md)."""
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


#: What a reply's body says when the key itself is invalid, whatever the status: Google's ``ErrorInfo.reason``
#: (a wrong key is HTTP 400 INVALID_ARGUMENT with the reason API_KEY_INVALID, ai.google.dev/gemini-api/docs/
#: troubleshooting) and Runware's error codes (runware-python ``errors.py``), compared lower-cased.
KEY_INVALID_REASONS = frozenset({"api_key_invalid", "invalidapikey", "missingapikey"})


def key_invalid_reason(response: httpx.Response) -> str | None:
    """The reason a reply gives for rejecting the key itself (``API_KEY_INVALID``), else None."""
    try:
        body: Any = response.json()
    except (ValueError, httpx.ResponseNotRead):
        return None
    return key_invalid_in(body)


def key_invalid_in(body: Any) -> str | None:
    """``key_invalid_reason`` of a parsed error body: Google's ``error.details[].reason`` or Runware's
    ``errors[].code``."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    details = error.get("details") if isinstance(error, dict) else None
    codes = body.get("errors")
    entries = [*(details if isinstance(details, list) else []), *(codes if isinstance(codes, list) else [])]
    for entry in entries:
        if isinstance(entry, dict):
            reason = entry.get("reason") or entry.get("code")
            if isinstance(reason, str) and reason.lower() in KEY_INVALID_REASONS:
                return reason
    return None


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
    where = f"{response.request.method} {url_without_query(response.request.url)}"
    text = f"{model} via {route}: HTTP {response.status_code} from {where}"
    if code:
        text += f": {code}"
    if message:
        text += f": {message[:500]}"
    request_id = request_id_of(response)
    if request_id and request_id not in text:  # a provider's message may quote it already: said once
        text += f" (request id {request_id})"
    invalid = key_invalid_reason(response)
    retryable = is_retryable(response) and not invalid
    text += wait_note(response, route) or next_step(401 if invalid else response.status_code, route, retryable)
    error = ProviderError(redact(text), retryable=retryable, status=response.status_code)
    error.key_invalid = invalid is not None
    raise error


def wait_note(response: httpx.Response, route: str) -> str:
    """Why a reply the server asked us to wait for was not waited for: a per-day quota, or a wait past
    ``max_retry_after``; "" otherwise."""
    quota = daily_quota(error_body(response)) if response.status_code == 429 else None
    if quota:
        return f"; {daily_quota_message(quota)}"
    wait = response.extensions.get(WAIT_DECLINED)
    if wait is not None:
        return (f"; the server asked to wait {wait:g} s, longer than the {route} policy waits (max_retry_after): "
                "not waited for; rerun later, only what is missing is done")
    return ""


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
        where = f" on {exc.request.method} {url_without_query(exc.request.url)}"
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.LocalProtocolError):  # it quotes the header, a key's pieces escaped past redaction
        detail = ("not sent: a header the client may not send (a control character such as a newline in a key or "
                  "setting?)")
    text = f"{model} via {route}: {type(exc).__name__}{where}: {detail}"
    lost = submits and may_have_reached_provider(exc)
    if lost:
        text += ("; the submission may have reached the provider, so it was not sent again (that could pay "
                 "twice): rerun to submit it, and look for an orphan job in the provider's dashboard")
    return ProviderError(redact(text), retryable=retryable_transport(exc), reply_lost=lost)


def may_have_reached_provider(exc: Exception) -> bool:
    """Whether a request that failed without a usable reply may have reached the provider, and so have been
    paid: a read timeout, a dropped connection, a reply past its deadline or its size cap.  Not a request that
    never left (a refused or timed-out connection) nor one the policy did not send (a key for a stranger)."""
    return isinstance(exc, (httpx.TransportError, httpx.DecodingError)) and not isinstance(exc, NOT_SENT)


def retryable_transport(exc: Exception) -> bool:
    """Whether a request that failed without a reply may succeed later: not when the policy did not send it (a key
    for a stranger), nor when the reply was too large or in an encoding not asked for (it would be again)."""
    return not isinstance(exc, (KeyNotSent, BodyTooLarge, UnexpectedEncoding, *STOPPED_BY_CLIENT))
