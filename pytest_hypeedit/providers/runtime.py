"""What the HTTP adapters need from the run: one ``Runtime`` per run, made by the pytest glue and passed in.

The run-wide pieces: the per-run state directory shared by all xdist workers
(rate-limiter files), the cache of prepared reference images, the route limits
(models.yaml, overridable), the retry policy, the tier and the run's batch
collectors.  The glue keeps the run's runtime in ``config.stash`` and hands it
to what it makes: the built-in adapters (``builtin_provider(spec, runtime=...)``),
the built-in judges (``JudgeOptions.runtime``) and the pool's route admissions.

An adapter or judge made without one (a unit test, a tool that builds one outside a run) gets a runtime of its
own, made with it (``Runtime()``: no route limits, the default retry policy, the standard tier, batch collectors
of its own, prepared images in a temporary folder made on first use).  It never reads another run's: this module
keeps no runtime of the process to read (tests/package/test_runtime_reads.py).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..engine.limits import RouteLimiter
from ..registry import ModelSpec, RouteLimits
from ..transport.http import RetryPolicy
from .batching import Collectors

if TYPE_CHECKING:
    import httpx


def _default_limits(spec: ModelSpec) -> RouteLimits:
    return spec.limits


@dataclass
class Runtime:
    state_dir: Path | None = None  # per run, shared by every worker of the run
    cache_dir: Path | None = None  # prepared reference images: <cache_dir>/<route>/<task_id>/
    limits: Callable[[ModelSpec], RouteLimits] = _default_limits
    policy: RetryPolicy | None = None
    tier: str = "standard"  # --tier: a model whose route has a batch tier buys through it (providers/batching.py)
    batches: Collectors = field(default_factory=Collectors)  # the run's batch collectors in this process
    #: What every HTTP client the adapters make sends through instead of the network (None: the network).  A
    #: test gives an ``httpx.MockTransport`` where a socket adds nothing; the retries, caps and key guard still
    #: apply, as they wrap it (transport/http.py ``PolicyTransport``).
    transport: httpx.BaseTransport | None = None
    _limiters: dict[tuple[str, float | None, int | None], RouteLimiter | None] = field(default_factory=dict)

    def limiter_for(self, spec: ModelSpec) -> RouteLimiter | None:
        """The route's limiter (None without a state dir); one per route and process.  A route without
        limits gets one too: it holds nothing, but passes the replies' statuses to the adaptive level."""
        if self.state_dir is None:
            return None
        limits = self.limits(spec)
        key = (spec.route, limits.rpm, limits.inflight)
        if key not in self._limiters:
            self._limiters[key] = RouteLimiter(self.state_dir / "limits", spec.route, limits.rpm, limits.inflight)
        return self._limiters[key]

    def images_dir(self) -> Path:
        if self.cache_dir is None:
            self.cache_dir = Path(tempfile.mkdtemp(prefix="hypeedit-refs-"))
        return self.cache_dir

    def downloads_dir(self) -> Path:
        """Where result files land as they arrive, before the runner moves them into the outputs."""
        if self.state_dir is not None:
            return self.state_dir / "downloads"
        return self.images_dir() / "downloads"
