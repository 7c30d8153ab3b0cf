"""The one small interface every provider adapter implements.

An adapter knows its provider's wire format and nothing of pytest: it gets a
``GenerationRequest`` and returns a ``Generation`` (the image bytes and what
they cost), or raises ``Refusal`` (the model answered without a usable image)
or ``ProviderError`` (the call failed after its retries).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..engine.call_context import GenerationContext
from ..registry import ModelSpec
from ..tasks import Task

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.preview import Preview
    from ..transport.keycheck import KeyProbe


@dataclass(frozen=True)
class GenerationRequest:
    task: Task
    repeat: int  # 1-based
    seed: int  # per task x repeat, the same for every model
    references: tuple[Path, ...]  # the task's reference images as downloaded, in task order
    spec: ModelSpec
    #: The run's own context of this call (engine/call_context.py: where a job is journaled, where a download
    #: lands, the in-flight slots the pool took): an adapter passes it on (``HttpProvider.call(...,
    #: request=request)``) and relies on none of its contents.  A library user leaves the default (empty).
    call: GenerationContext = field(default_factory=GenerationContext, compare=False, repr=False)


@dataclass
class Generation:
    image: bytes | Path  # a download is written straight to a file
    ext: str  # "png", "webp", "jpg": the format the provider returned
    cost: float  # USD actually spent on this candidate
    provider_model: str
    seed: int | None = None  # the seed the provider used, when it takes one
    request_id: str | None = None
    tier: str = "standard"  # the price tier that served the call: "standard", "batch" (providers/batching.py)
    extra: dict[str, Any] = field(default_factory=dict)
    #: A small copy made while the image was decoded to check it (engine/preview.py ``Preview``), so the pixel
    #: signals need no second decode; None when the adapter made none.  Never written anywhere.
    preview: Preview | None = field(default=None, compare=False, repr=False)


class Provider:
    """Base class of adapters.  Subclasses set ``route`` and implement ``generate``."""

    route: ClassVar[str] = ""
    #: Environment variables that hold this route's key; any one of them will do.
    key_env: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec: ModelSpec):
        self.spec = spec

    def generate(self, request: GenerationRequest) -> Generation:
        raise NotImplementedError

    def worst_case_cost(self, request: GenerationRequest) -> float:
        """The most this one call can be charged, in USD: ``--budget`` reserves it before the call starts, so a
        call the remaining budget cannot cover never starts.  The model's list price, unless the adapter knows its
        provider charges more for this request (the size requested, per-reference fees, tokens at their max)."""
        return self.spec.price

    def key_probe(self) -> KeyProbe | None:
        """The free request its provider documents that proves this route's key (transport/keycheck.py), sent once
        before anything is paid; None where the provider documents none (the first refusal then stops the route)."""
        return None

    def close(self) -> None:
        """Release clients and connections; called once at the end of a worker's session."""


def seed_for(task_id: str, repeat: int) -> int:
    """A stable per-repeat seed: repeat r of a task gets the same seed for every model and run."""
    digest = hashlib.sha256(f"{task_id}:{repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % 2_147_483_647


def sniff_image_ext(data: bytes) -> str | None:
    """The file extension for image bytes, from their magic number (None when unknown)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None
