"""Every read of pytest-xdist's internals, in one place, behind a version check.

The pool works ahead of pytest (engine/pool.py) only if it knows which items this worker will run next, and
xdist says so nowhere public.  Two internals are read:

- a worker's queue of dealt items (``WorkerInteractor.torun``, and ``nextitem_index``, the item it runs
  next): a ``TestQueue`` with a ``lock()`` from 3.7, a stdlib ``queue.Queue`` (read under its ``mutex``)
  in 3.6;
- the controller's ``LoadScheduling`` (``collection``, ``node2collection``, ``node2pending``, ``pending``,
  ``_check_nodes_have_same_collection``), subclassed to deal every item at once under ``--dist load``.

The versions below are the ones the test suite was run with (pyproject pins the same range).  Outside them,
or when an attribute is missing, the fallback is xdist's own behaviour: the worker's pool works on each item
as pytest reaches it (correct, with fewer calls in flight), and ``--dist load`` keeps xdist's scheduler; the
run says so once (``unsupported``).
"""

from __future__ import annotations

import queue
from typing import Any, Callable

import pytest

#: [first, last) pytest-xdist versions the reads below were tested with.
TESTED = ((3, 6), (3, 9))


def xdist_version() -> tuple[int, ...] | None:
    try:
        import xdist
    except ImportError:
        return None
    parts = []
    for part in str(getattr(xdist, "__version__", "")).split(".")[:2]:
        if not part.isdigit():
            return None
        parts.append(int(part))
    return tuple(parts)


def supported() -> bool:
    version = xdist_version()
    return version is not None and TESTED[0] <= version < TESTED[1]


def unsupported() -> str | None:
    """One line saying the pool cannot work ahead under this xdist, or None when it can."""
    if supported():
        return None
    version = ".".join(map(str, xdist_version() or ())) or "unknown"
    low, high = (".".join(map(str, v)) for v in TESTED)
    return (f"hypeedit: pytest-xdist {version} is not one this plugin was tested with (>={low},<{high}): each "
            f"worker buys its candidates one at a time, as pytest reaches them (fewer calls in flight, same "
            f"results); install a tested pytest-xdist for the configured concurrency")


# --------------------------------------------------------------------------- a worker's queue


def worker_queue(config: pytest.Config) -> Callable[[], list[int]] | None:
    """A function listing the indices of the items this worker was dealt and has not started (the next one
    first); None under an xdist this was not tested with, or outside a worker."""
    interactor = next((p for p in config.pluginmanager.get_plugins()
                       if type(p).__name__ == "WorkerInteractor" and hasattr(p, "torun")), None)
    if interactor is None or not supported():
        return None

    def dealt() -> list[int]:
        try:
            waiting = [i for i in _queued(interactor.torun) if isinstance(i, int) and not isinstance(i, bool)]
        except Exception:  # pragma: no cover - xdist changed within the range: the pool works item by item
            return []
        upcoming = getattr(interactor, "nextitem_index", None)
        return ([upcoming] if isinstance(upcoming, int) else []) + waiting

    return dealt


def _queued(torun: Any) -> list[Any]:
    """What a worker's queue holds, without taking anything from it.  Read afresh each time: under
    ``--dist worksteal`` xdist 3.6 replaces the queue object when work is stolen."""
    if hasattr(torun, "lock"):  # 3.7 and later: TestQueue
        with torun.lock() as items:
            return list(items)
    if isinstance(torun, queue.Queue):  # 3.6: the stdlib queue of execnet's thread model
        with torun.mutex:
            return list(torun.queue)
    return []


# --------------------------------------------------------------------------- the controller's scheduler


def deal_all_scheduler(config: pytest.Config, log: Any) -> Any:
    """The scheduler of a benchmark run under ``-n --dist load``: every item dealt at once, round robin, so each
    worker's pool can work ahead on its whole share (xdist's own hands a worker a few items at a time, which
    starves the pool at the end of the run).  None (xdist's own scheduler) under an untested xdist."""
    if not supported():
        return None
    from xdist.scheduler import LoadScheduling

    class DealAllScheduling(LoadScheduling):  # type: ignore[misc]  # xdist ships no types
        collection: list[str] | None  # LoadScheduling's (untyped): the node ids, once every worker collected

        def schedule(self) -> None:
            assert self.collection_is_completed
            if self.collection is not None:  # a worker was replaced: xdist's own rules deal its items
                for node in self.nodes:
                    self.check_schedule(node)
                return
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            self.collection = next(iter(self.node2collection.values()))
            nodes = sorted(self.nodes, key=lambda node: _natural(node.gateway.id))
            shares: dict[Any, list[int]] = {node: [] for node in nodes}
            for index in range(len(self.collection)):
                shares[nodes[index % len(nodes)]].append(index)  # round robin: every worker gets every route
            self.pending[:] = []
            for node, indices in shares.items():
                if indices:
                    self.node2pending[node].extend(indices)
                    node.send_runtest_some(indices)
            for node in self.nodes:
                node.shutdown()

    return DealAllScheduling(config, log)


def _natural(name: str) -> tuple[str, int, str]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (name.rstrip("0123456789"), int(digits) if digits else -1, name)
