"""How long a server asks us to wait before trying again, and when waiting will not help.

Servers say it in three places:

- headers: ``Retry-After`` (seconds or an HTTP date, RFC 9110 10.2.3) and OpenAI's ``retry-after-ms``
  (openai-python ``_base_client.py`` reads both);
- Google's error body: a 429 carries ``error.details[]`` entries with ``@type``
  ``type.googleapis.com/google.rpc.RetryInfo`` and ``retryDelay``, a protobuf Duration in JSON ("34s",
  "45.837906927s"), and no Retry-After header (gemini-cli ``packages/core/src/utils/googleQuotaErrors.ts``
  parses ``retryDelay`` with an "s" or "ms" suffix; dcdpr/jp#1061: "Gemini answers a 429 without a
  Retry-After header and reports how long to wait only in the response body");
- BFL's 429 body: ``{"error": "rate_limit_exceeded", "message": ..., "retry_after": 5}`` (seconds;
  black-forest-labs/skills ``skills/bfl-api/references/rate-limiting.md``, "HTTP 429 Response").

A value that is not a finite, non-negative number of seconds (``nan``, ``inf``, ``-3``, garbage) is no
advice at all: it is ignored, as if the server had said nothing, and the policy's own backoff applies.

A Google 429 whose ``google.rpc.QuotaFailure`` names a per-day quota (``violations[].quotaId`` containing
"PerDay", e.g. ``GenerateRequestsPerDayPerProjectPerModel-FreeTier``, or "Daily") will not clear by
waiting: it is never retried (gemini-cli ``classifyGoogleError``: "If the error indicates a daily limit
(in QuotaFailure), it's a TerminalQuotaError", checked before RetryInfo).
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import re
import time
from typing import Any

import httpx

log = logging.getLogger("pytest_hypeedit.http")

RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"
#: Words in a quota id that mean the quota is counted per day (gemini-cli googleQuotaErrors.ts).
DAILY_MARKERS = ("PerDay", "Daily")
_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ms|s)\s*$")
#: Bodies longer than this are not searched for a wait (a wait is in a small error envelope).
MAX_BODY_LOOKED_AT = 64 * 1024


def seconds(value: Any) -> float | None:
    """``value`` as a wait in seconds, or None unless it is a finite number >= 0 (bools are not numbers)."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def parse_duration(text: Any) -> float | None:
    """A protobuf JSON Duration ("34s", "0.5s") or "900ms" in seconds; None when it is not one."""
    match = _DURATION.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    value = seconds(match.group(1))
    return None if value is None else value / 1000 if match.group(2) == "ms" else value


def header_wait(headers: httpx.Headers, *, route: str = "", now: float | None = None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date); None when absent or unusable."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        value = seconds(millis)
        if value is not None:
            return value / 1000
        _ignored(route, "retry-after-ms", millis)
    text = headers.get("retry-after")
    if not text:
        return None
    value = seconds(text)
    if value is not None:
        return value
    if _is_number(text):  # nan, inf, -3: a number, but no wait
        _ignored(route, "Retry-After", text)
        return None
    return _date_wait(text, route, now)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def _date_wait(text: str, route: str, now: float | None) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        _ignored(route, "Retry-After", text)
        return None
    return max(when - (time.time() if now is None else now), 0.0)


def _ignored(route: str, name: str, value: str) -> None:
    log.info("%s: ignoring %s %r: not a finite number of seconds >= 0 or an HTTP date; the policy's own "
             "backoff applies", route or "http", name, value[:40])


def error_body(response: httpx.Response) -> Any:
    """The decoded JSON of a (read) error reply, or None."""
    try:
        content = response.content
    except httpx.ResponseNotRead:
        return None
    if not content or len(content) > MAX_BODY_LOOKED_AT:
        return None
    try:
        return json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None


def _google_details(body: Any) -> list[dict[str, Any]]:
    # Google sends the envelope alone, or (some proxies, the streaming API) in a one-element list.
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def body_wait(body: Any, *, route: str = "") -> float | None:
    """The wait an error body asks for: Google's RetryInfo ``retryDelay``, else BFL's top-level ``retry_after``."""
    for detail in _google_details(body):
        if detail.get("@type") == RETRY_INFO:
            value = parse_duration(detail.get("retryDelay"))
            if value is None:
                _ignored(route, "RetryInfo.retryDelay", str(detail.get("retryDelay")))
            return value
    if isinstance(body, dict) and "retry_after" in body:
        value = seconds(body["retry_after"])
        if value is None:
            _ignored(route, "retry_after", str(body["retry_after"]))
        return value
    return None


def daily_quota(body: Any) -> str | None:
    """The quota id of a per-day quota a Google error says is used up (``QuotaFailure``), else None."""
    for detail in _google_details(body):
        if detail.get("@type") != QUOTA_FAILURE:
            continue
        for violation in detail.get("violations") or []:
            quota = str(violation.get("quotaId") or "") if isinstance(violation, dict) else ""
            if any(marker in quota for marker in DAILY_MARKERS):
                return quota
    return None


def server_wait(response: httpx.Response, *, route: str = "") -> float | None:
    """What the server asks us to wait before the next try: a header, else the error body; None if nothing usable."""
    wait = header_wait(response.headers, route=route)
    if wait is None and response.status_code >= 400:
        wait = body_wait(error_body(response), route=route)
    return wait


def daily_quota_message(quota: str) -> str:
    return (f"the daily quota {quota} is used up: it will not clear by waiting, so nothing was retried; "
            "rerun after the quota resets (once a day), or raise the quota")
