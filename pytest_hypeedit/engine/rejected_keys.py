"""A route stops at its first authentication failure: a key the provider rejected is not tried again.

An HTTP 401 or 403 answered to a request of the API (not a signed result URL's 403, which means "expired")
says the key is wrong, revoked, or may not use the model: every later call with the same key would get the
same answer, one request per candidate.  So the first rejection is remembered for the rest of the process
(the runner's; each xdist worker learns it from its own first rejection), its item says once which variable
was rejected and what to do, and every later candidate of that scope ends at once with one short line,
nothing sent:

- 401 (the key itself is rejected), or a reply that says so whatever its status (Google's 400 INVALID_ARGUMENT with
  the reason API_KEY_INVALID: ``CallError.key_invalid``), stops the whole route: every model on it uses the same key;
- 403 (the key may not use this model) stops that model of the route only;
- a judge's rejection stops the judge.

One rejected key is one message: the first rejection's item says what the provider answered (its request id once)
and what to do; every other candidate of the scope, a call that was already in flight and came back rejected too
as well as one never sent, ends with the same one short line (``stopped``), which the terminal shows once with
how many items it ended.  Most keys are proved before anything is paid (transport/keycheck.py): this is for a
route whose provider documents no free call to check a key, and for a key revoked during the run.

Knows nothing of pytest; no I/O.
"""

from __future__ import annotations

import threading

from ..errors import CallError, JobExpired
from ..secrets import find_key

#: Replies that mean the provider rejected the key (or its use of the model).
AUTH_STATUSES = frozenset({401, 403})


def key_rejected(exc: BaseException) -> bool:
    """Whether ``exc`` is the provider's final answer that the key was rejected (not an expired signed URL's
    403, which is a JobExpired or a retryable download error)."""
    return (isinstance(exc, CallError) and not isinstance(exc, JobExpired) and not exc.retryable
            and (getattr(exc, "status", None) in AUTH_STATUSES or exc.key_invalid))


def variable_sent(variables: tuple[str, ...]) -> str:
    """The variable whose value was sent: the first one set (as ``secrets.key_for`` chooses), else all named."""
    chosen = next((name for name in variables if find_key((name,)) is not None), None)
    return chosen or " or ".join(variables) or "the route's API key variable"


class RejectedKeys:
    """The scopes (a route, a route's model, a judge) whose key was rejected in this process, with their line."""

    def __init__(self) -> None:
        self._stopped: dict[str, str] = {}
        self._lock = threading.Lock()

    def stopped(self, *scopes: str) -> str | None:
        """The line a candidate of these scopes ends with, nothing sent; None when none of them was stopped."""
        with self._lock:
            return next((self._stopped[scope] for scope in scopes if scope in self._stopped), None)

    def note(self, exc: BaseException, *, route: str, model_scope: str, variables: tuple[str, ...]) -> str:
        """Remember a rejection (``exc``) and return the note its own item's error ends with; "" when ``exc`` is
        no rejection of the key.  401 (or a key the reply calls invalid) stops ``route``, 403 ``model_scope``."""
        return self.rejection(exc, route=route, model_scope=model_scope, variables=variables)[0]

    def rejection(self, exc: BaseException, *, route: str, model_scope: str,
                variables: tuple[str, ...]) -> tuple[str, str | None]:
        """(the note ``note`` returns, the line that replaces the whole error of a rejection that came back after
        its scope was stopped already: a call in flight at the same time, whose item then says what every other
        candidate of the scope says, not the provider's reply once more); ("", None) for no rejection."""
        if not key_rejected(exc):
            return "", None
        status = getattr(exc, "status", None)
        variable = variable_sent(variables)
        whole_key = status == 401 or getattr(exc, "key_invalid", False)
        scope, what = (route, f"route {route}") if whole_key else (model_scope, model_scope)
        rejected = f"{variable} was rejected by {route} (HTTP {status})"
        with self._lock:
            earlier = self._stopped.get(scope)
            self._stopped.setdefault(scope, (
                f"{rejected} earlier in this run, so nothing more is sent on {what}; check the key "
                "(and that it may use this model), then rerun: only what is missing is done"))
        note = f"; {rejected}: check the key (and that it may use this model); nothing more is sent on {what} in this run"
        return note, earlier
