"""Keep a process with many calls in flight from hoarding memory it no longer uses.

glibc's allocator gives each thread that contends for memory an arena of its
own, up to 8 per core, and an arena rarely hands freed memory back to the
system.  With 64 threads each passing multi-megabyte images through, the
process kept growing by gigabytes over a run (bench/bench_providers.py, the
real-size case: 2.2 GB, against 0.86 GB with two arenas) although it held no
more data.  Two arenas (``M_ARENA_MAX``, glibc's ``mallopt``) keep it at what
it uses; the threads mostly wait on the network, so sharing an arena costs
nothing measurable.  Elsewhere (musl, macOS, Windows) this does nothing.

And give a large block back to the system as soon as it is freed.  glibc serves a block of 128 KB or more with a
mapping of its own, given back when it is freed, but each such block freed raises that threshold to its size (up
to 32 MB), so a process that passes 2K images through (a 12.6 MB PNG, its 16.8 MB of base64 and the line around
it) soon takes them from its arenas, which keep what is freed between live blocks: a batch of 100 2K PNGs read
four lines at a time held 272 MB of freed memory in its arenas beside 190 MB in use, and the more lines, the
more (bench/bench_batch.py with 2048 px lines: 100 lines 601 MB, 500 lines 865 MB).  A fixed threshold
(``M_MMAP_THRESHOLD``, 1 MB) keeps every image-sized block on its own mapping, back to the system when freed
(the same runs: 321 MB and 460 MB).

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

#: glibc's malloc.h: ``#define M_ARENA_MAX -8``, ``#define M_MMAP_THRESHOLD -3``.
M_ARENA_MAX, M_MMAP_THRESHOLD = -8, -3
ARENAS = 2
#: Blocks of this size or more get a mapping of their own, given back when freed (a line of a 2K image is 17 MB).
MAPPED_BYTES = 1024 * 1024


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Ask glibc for at most ``arenas`` arenas; True when it took the setting."""
    return _mallopt(M_ARENA_MAX, arenas)


def map_large_blocks(size: int = MAPPED_BYTES) -> bool:
    """Ask glibc to map every block of ``size`` bytes or more on its own, whatever was freed before (the
    module's docstring); True when it took the setting."""
    return _mallopt(M_MMAP_THRESHOLD, size)


def _mallopt(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    done: int = mallopt(option, value)  # ctypes calls are untyped: restype is c_int
    return done == 1


_exit_freeze_registered = False


def skip_exit_collection() -> None:
    """At interpreter exit, leave the objects to the system instead of the collector (see the module's
    docstring); registered once per process, so runs in one process (pytester) add one handler."""
    global _exit_freeze_registered  # noqa: PLW0603 -- once per process, whatever creates the runs
    if not _exit_freeze_registered:
        atexit.register(gc.freeze)
        _exit_freeze_registered = True
