"""Keep a process with many calls in flight from hoarding memory it no longer uses.

glibc's allocator gives each thread that contends for memory an arena of its
own, up to 8 per core, and an arena rarely hands freed memory back to the
system.  With 64 threads each passing multi-megabyte images through, the
process kept growing by gigabytes over a run (bench/bench_providers.py, the
real-size case: 2.2 GB, against 0.86 GB with two arenas) although it held no
more data.  Two arenas (``M_ARENA_MAX``, glibc's ``mallopt``) keep it at what
it uses; the threads mostly wait on the network, so sharing an arena costs
nothing measurable.  Elsewhere (musl, macOS, Windows) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
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
