"""Keep a process with many calls in flight from hoarding memory it no longer uses.

glibc's allocator gives each thread that contends for memory an arena of its
own, up to 8 per core, and an arena rarely hands freed memory back to the
system.  With 64 threads each passing multi-megabyte images through, the
process kept growing by gigabytes over a run (bench/bench_providers.py, the
real-size case: 2.2 GB, against 0.86 GB with two arenas) although it held no
more data.  Two arenas (``M_ARENA_MAX``, glibc's ``mallopt``) keep it at what
it uses; the threads mostly wait on the network, so sharing an arena costs
nothing measurable.  Elsewhere (musl, macOS, Windows) this does nothing.

And keep a large run's exit from walking its objects: when the interpreter
exits, its cyclic garbage collector passes over every object still alive,
several times while the modules are torn down.  After 7,000 candidates (their
test reports, items, records and jobs: some 440,000 objects) those passes took
about 3 s, a tenth of a replay from disk, to free memory the system takes back
anyway.  ``gc.freeze()`` at exit (an ``atexit`` handler, which runs before that
teardown) puts every object out of the collector's reach; the process ends as
soon as its files are written and closed.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import gc
import sys

#: glibc's malloc.h: ``#define M_ARENA_MAX -8``.
M_ARENA_MAX = -8
ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Ask glibc for at most ``arenas`` arenas; True when it took the setting."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    done: int = mallopt(M_ARENA_MAX, arenas)  # ctypes calls are untyped: restype is c_int
    return done == 1


_exit_freeze_registered = False


def skip_exit_collection() -> None:
    """At interpreter exit, leave the objects to the system instead of the collector (see the module's
    docstring); registered once per process, so runs in one process (pytester) add one handler."""
    global _exit_freeze_registered  # noqa: PLW0603 -- once per process, whatever creates the runs
    if not _exit_freeze_registered:
        atexit.register(gc.freeze)
        _exit_freeze_registered = True
