"""What the HTTP stack needs of the run's limits, as two small interfaces (the engine's ``RouteLimiter`` and
``InFlightSlot`` in engine/limits.py are what a run passes in).

A call the pool runs carries the in-flight slots it took (``CallSlots``) down to each of its requests
(``RequestOptions.slots``, transport/requestopts.py); the policy transport asks the route's ``Limiter`` for one
request's turn, telling it the call's slots, so a request of a call that took the route's slot takes no second one.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol


class CallSlot(Protocol):
    """One in-flight slot a call took: it knows whose it is (the limiter it came from) and whether it is live."""

    def covers(self, owner: object) -> bool:
        """Whether a request to ``owner``'s route needs no slot of its own: this slot is ``owner``'s and live."""
        ...  # pragma: no cover


#: The slots one call took (a verdict of a panel takes one per judge route).
CallSlots = tuple[CallSlot, ...]


class Limiter(Protocol):
    """A route's limits on requests (per minute, in flight), shared by every process of a run."""

    def slot(self, *, rpm: bool = True, taken: CallSlots = ()) -> AbstractContextManager[None]:
        """One HTTP request's turn: a request-per-minute token (``rpm=False``: a download from storage), and an
        in-flight slot unless ``taken`` (the slots of the call the request is part of) covers this route."""
        ...  # pragma: no cover
