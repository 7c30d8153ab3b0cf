"""A route stops at its first authentication failure: a key the provider refused is not tried again.

An HTTP 401 or 403 answered to a request of the API (not a signed result URL's 403, which means "expired")
says the key is wrong, revoked, or may not use the model: every later call with the same key would get the
same answer, one request per candidate.  So the first refusal is remembered for the rest of the process
(the runner's; each xdist worker learns it from its own first refusal), its item says once which variable
was refused and what to do, and every later candidate of that scope ends at once with one short line,
nothing sent:

- 401 (the key itself is refused) stops the whole route: every model on it uses the same key;
- 403 (the key may not use this model) stops that model of the route only;
- a judge's refusal stops the judge.

Knows nothing of pytest; no I/O.
"""

from __future__ import annotations

import threading

from ..errors import CallError, JobExpired
from ..secrets import find_key

#: Replies that mean the provider refused the key (or its use of the model).
AUTH_STATUSES = frozenset({401, 403})


def key_refused(exc: BaseException) -> bool:
    """Whether ``exc`` is the provider's final answer that the key was refused (not an expired signed URL's
    403, which is a JobExpired or a retryable download error)."""
    return (isinstance(exc, CallError) and not isinstance(exc, JobExpired) and not exc.retryable
            and getattr(exc, "status", None) in AUTH_STATUSES)


def variable_sent(variables: tuple[str, ...]) -> str:
    """The variable whose value was sent: the first one set (as ``secrets.key_for`` chooses), else all named."""
    chosen = next((name for name in variables if find_key((name,)) is not None), None)
    return chosen or " or ".join(variables) or "the route's API key variable"


class RefusedKeys:
    """The scopes (a route, a route's model, a judge) whose key was refused in this process, with their line."""

    def __init__(self) -> None:
        self._stopped: dict[str, str] = {}
        self._lock = threading.Lock()

    def stopped(self, *scopes: str) -> str | None:
        """The line a candidate of these scopes ends with, nothing sent; None when none of them was stopped."""
        with self._lock:
            return next((self._stopped[scope] for scope in scopes if scope in self._stopped), None)

    def note(self, exc: BaseException, *, route: str, model_scope: str, variables: tuple[str, ...]) -> str:
        """Remember a refusal (``exc``) and return the note its own item's error ends with; "" when ``exc`` is
        no refusal of the key.  401 stops ``route``, 403 ``model_scope``."""
        if not key_refused(exc):
            return ""
        status = getattr(exc, "status", None)
        variable = variable_sent(variables)
        scope, what = (route, f"route {route}") if status == 401 else (model_scope, model_scope)
        refused = f"{variable} was refused by {route} (HTTP {status})"
        with self._lock:
            self._stopped.setdefault(scope, (
                f"not sent: {refused} earlier in this run, so nothing more is sent on {what}; check the key "
                "(and that it may use this model), then rerun: only what is missing is done"))
        return f"; {refused}: check the key (and that it may use this model); nothing more is sent on {what} in this run"
