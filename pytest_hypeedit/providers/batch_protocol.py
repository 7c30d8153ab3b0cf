"""What every batch backend needs of the adapter it buys for (openai_batch.py, gemini_batch.py): the route, the
model and the run's runtime.  Each backend's own Protocol extends ``BatchProvider`` with the calls of its API.

A module of its own, which imports nothing of the package at run time: ``Runtime`` (runtime.py) holds the run's
batch collectors (batching.py), so the shared Protocol cannot live in batching.py without a circle, even one only
the type checker follows (tests/package/test_import_cycles.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from ..registry import ModelSpec
    from .runtime import Runtime


class BatchProvider(Protocol):
    """The adapter a batch backend is given: its route and model, and the run it buys in (the runtime's folders,
    retry policy and the run's collectors)."""

    @property
    def route(self) -> str: ...
    @property
    def spec(self) -> ModelSpec: ...
    @property
    def runtime(self) -> Runtime: ...
