"""Processes a test forks, as xdist forks its workers: several of them sharing a state folder
(:func:`run_forked`), or one that takes something shared (a budget reservation, an in-flight slot) and is killed
holding it, what a crashed worker leaves behind for the others (:func:`killed_when_done`)."""

from __future__ import annotations

import contextlib
import multiprocessing
from typing import Callable, Iterator, Sequence

fork = multiprocessing.get_context("fork")


@contextlib.contextmanager
def killed_when_done(target: Callable[..., None], *args: object, bound: float) -> Iterator[None]:
    """``target(*args, ready)`` in a forked process; the block runs once it has set ``ready`` (it holds what it
    took, and then sleeps), and the process is killed (SIGKILL: nothing of it runs after) when the block ends."""
    ready = fork.Event()
    process = fork.Process(target=target, args=(*args, ready))
    process.start()
    try:
        assert ready.wait(bound), f"{getattr(target, '__name__', target)} never said it was ready"
        yield
    finally:
        process.kill()
        process.join(bound)


def run_forked(target: Callable[..., None], args: Sequence[object], copies: int, bound: float) -> list[int | None]:
    """``copies`` forked processes of ``target(*args)``, started together, each joined within ``bound`` seconds;
    their exit codes (None: still running)."""
    processes = [fork.Process(target=target, args=tuple(args)) for _ in range(copies)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(bound)
    return [process.exitcode for process in processes]
