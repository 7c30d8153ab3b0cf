"""Every key a run needs, proved with a free call before anything is paid for.

A wrong key used to be found by paying: each candidate's paid call came back rejected, and with a wrong judge key
every generation was bought before the first verdict failed.  So each adapter and judge names the free request
its provider documents for reading the key's account or a model (``key_probe``: ``KeyProbe``; the table is in
docs/reference/keys.md), and ``prove_keys`` sends them all at once, each request once, before the first paid call
(glue/startup.py, on the controller: once per run, before any xdist worker exists, and not for ``--estimate``).

What a reply means (``KeyCheck.verdict``):

- ``rejected``: HTTP 401 or 403, or a reply whose body says the key is invalid whatever its status (Google answers
  a wrong key with 400 ``INVALID_ARGUMENT`` and the reason ``API_KEY_INVALID``: httperrors.key_invalid_reason).
  The run stops with one usage error per variable, naming it, who uses it and what to do; nothing was paid for.
- ``accepted``: a 2xx reply.
- ``unsure``: anything else (a 404 for a model id the call does not know, a 429, a 5xx) and a network failure or
  timeout of the check itself.  The check cannot tell, so it warns and the run goes on: a check must never keep
  a run from starting, and the run's own calls still stop at the first rejection of a key (engine/rejected_keys.py)
  or when the route cannot be reached (engine/routes.py), before paying for more.

Each check has a short timeout (``CHECK_TIMEOUT_S`` per read and ``CHECK_DEADLINE_S`` per attempt) and is tried
twice at most, the checks run concurrently: a run waits at most about half a minute for a provider that does not
answer.
Keys go only to their provider's origin (the probe's ``hosts``, checked by the one HTTP policy: keyhosts.py), and
every message is redacted.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import httpx

from ..secrets import redact
from .http import RetryPolicy, make_http_client
from .httperrors import error_details, key_invalid_reason, request_id_of, url_without_query
from .keyhosts import KeyHosts

#: Seconds per read of a key check, and per attempt whole: a free GET answers in well under a second.
CHECK_TIMEOUT_S = 10.0
CHECK_DEADLINE_S = 15.0
#: One retry, soon, for a dropped connection or a 5xx; a server that asks to wait longer than 5 s is not waited for.
CHECK_POLICY = RetryPolicy(max_attempts=2, base_delay=0.5, max_delay=1.0, max_retry_after=5.0)
#: Replies that say the key was rejected (or may not be used here).
REJECTED_STATUSES = frozenset({401, 403})

ACCEPTED, REJECTED, UNSURE = "accepted", "rejected", "unsure"


@dataclass(frozen=True)
class KeyProbe:
    """The free request that proves a key: who needs it, the variable it came from, and the request."""

    user: str  # who needs the key, as messages name it: "route gemini", "judge gemini-3-flash"
    route: str  # the route (or judge route) whose policy and key hosts apply
    variable: str  # the environment variable whose value is sent
    method: str
    url: str
    headers: Mapping[str, str] = field(repr=False)  # the key's header(s)
    secret: str = field(repr=False)  # the key, redacted from every message
    hosts: KeyHosts | None = None  # where the key may go: the route's API origin
    body: Any = None  # a JSON body (Runware's task array)
    doc: str = ""  # the provider's documentation of the call

    @property
    def shown(self) -> str:
        return f"{self.method} {url_without_query(self.url)}"


@dataclass(frozen=True)
class KeyCheck:
    probe: KeyProbe
    verdict: str  # ACCEPTED, REFUSED or UNSURE
    detail: str = ""  # what the provider answered (redacted), or why the check could not tell


def prove_keys(probes: Iterable[KeyProbe], *, transport: httpx.BaseTransport | None = None) -> list[KeyCheck]:
    """Each probe's verdict, in order; the same request (variable, method, URL) is sent once.  ``transport``
    replaces the network (tests)."""
    probes = list(probes)
    unique = list({(p.variable, p.method, p.url): p for p in probes}.values())
    if not unique:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(unique)), thread_name_prefix="hypeedit-keycheck") as pool:
        done = {(found.probe.variable, found.probe.method, found.probe.url): found
                for found in pool.map(lambda probe: check(probe, transport=transport), unique)}
    answers = [done[(p.variable, p.method, p.url)] for p in probes]
    return [KeyCheck(p, found.verdict, found.detail) for p, found in zip(probes, answers)]


def check(probe: KeyProbe, *, transport: httpx.BaseTransport | None = None) -> KeyCheck:
    """One probe sent under the HTTP policy with the check's short timeout and one retry."""
    client = make_http_client(f"{probe.route} key check", secrets=(probe.secret,), timeout=CHECK_TIMEOUT_S,
                              policy=CHECK_POLICY, transport=transport, deadline_s=CHECK_DEADLINE_S,
                              key_hosts=probe.hosts)
    try:
        with client:
            response = client.request(probe.method, probe.url, headers=dict(probe.headers),
                                      **({"json": probe.body} if probe.body is not None else {}))
    except httpx.HTTPError as exc:
        detail = f"{type(exc).__name__} on {probe.shown}: {exc or 'no detail'}"
        return KeyCheck(probe, UNSURE, redact(detail, (probe.secret,)))
    return KeyCheck(probe, *read_reply(response, probe))


def read_reply(response: httpx.Response, probe: KeyProbe) -> tuple[str, str]:
    """(verdict, detail) of a check's reply."""
    code, message = error_details(response)
    code = _google_status(response) or code  # Google's "INVALID_ARGUMENT" says more than its numeric code
    reason = key_invalid_reason(response)
    detail = f"HTTP {response.status_code}" + (f" {code}" if code else "") + (f": {message[:300]}" if message else "")
    if reason and reason not in detail:
        detail += f" ({reason})"
    request_id = request_id_of(response)
    if request_id and request_id not in detail:
        detail += f" (request id {request_id})"
    detail = redact(detail, (probe.secret,))
    if response.status_code in REJECTED_STATUSES or reason:
        return REJECTED, detail
    if response.is_success:
        return ACCEPTED, ""
    return UNSURE, detail


def _google_status(response: httpx.Response) -> str | None:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return None
    status = error.get("status") if isinstance(error, dict) else None
    return status if isinstance(status, str) else None


def rejections(checks: Iterable[KeyCheck]) -> list[str]:
    """One message per rejected variable: what answered, who needs the key, and what to do."""
    by_variable: dict[str, list[KeyCheck]] = {}
    for found in checks:
        if found.verdict == REJECTED:
            by_variable.setdefault(found.probe.variable, []).append(found)
    return [_rejection(variable, found) for variable, found in by_variable.items()]


def _rejection(variable: str, found: list[KeyCheck]) -> str:
    first = found[0]
    users = " and ".join(dict.fromkeys(f.probe.user for f in found))
    return (f"{variable} was rejected ({first.detail}) when checked with the free call {first.probe.shown}; it is "
            f"the key of {users}: set a valid key in {variable} (or leave out what needs it: --model, --judge), "
            "then rerun")


def warnings_of(checks: Iterable[KeyCheck]) -> list[str]:
    """One line per check that could not tell (the run goes on)."""
    lines = []
    for found in checks:
        if found.verdict == UNSURE:
            lines.append(f"{found.probe.variable} of {found.probe.user} could not be checked before paying "
                         f"({found.detail}); the run goes on, and {found.probe.user} stops at its first rejection")
    return list(dict.fromkeys(lines))
