"""The run's own context of one call, which a request carries to its adapter or judge as ``request.call``.

The public request types (``GenerationRequest``, ``JudgeRequest``) say what to make or judge; how the run keeps
the call safe (where a job is journaled, where a download lands, which in-flight slots the pool took for it) is
the engine's, in one field: an adapter or a judge passes it on and relies on none of its contents, and a library
user leaves it at its default (an empty context: nothing journaled, the run's downloads folder, each request
takes its own slot).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..transport.slots import CallSlots
from .journal import Journal


@dataclass(frozen=True)
class GenerationContext:
    """The run's context of one candidate's generation."""

    #: Where a route that answers with a job (submit, then poll) records it before the first poll, and finds the
    #: job of an earlier attempt to resume instead of submitting again (engine/journal.py).
    journal: Journal = field(default_factory=Journal)
    #: The folder a result file is downloaded into: the candidate's own folder in the outputs (set by the runner),
    #: so paid bytes land on the outputs' filesystem and the move into place is a rename; a full cache cannot lose
    #: them.  None (a library user, a unit test): the run's downloads folder.
    landing: Path | None = None
    #: The in-flight slot the pool took for this call (engine/limits.py): the adapter passes it to every HTTP
    #: request of the call (``HttpProvider.call(..., request=request)``), which then takes no second one, from
    #: whatever thread it is sent.  Empty for a library user: each request takes its own.
    slots: CallSlots = field(default=(), repr=False)


@dataclass(frozen=True)
class JudgeContext:
    """The run's context of one verdict."""

    #: The id of this verdict's paid request, journaled before it is sent (engine/journal.py); a judge sends it
    #: where its API takes a client-chosen id.  None for a free judge.
    call_id: str | None = None
    #: The in-flight slots the pool took for this verdict (one per judge route, engine/limits.py): a request sent
    #: for it takes no second one, from whatever thread (a panel's jurors ask from helper threads).  Empty for a
    #: library user: each request takes its own.
    slots: CallSlots = field(default=(), repr=False)
