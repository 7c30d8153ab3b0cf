"""A process that takes something shared (a budget reservation, an in-flight slot) and is killed holding it: what
a crashed xdist worker leaves behind for the others."""

from __future__ import annotations

import contextlib
import multiprocessing
from typing import Callable, Iterator

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
