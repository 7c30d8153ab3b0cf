"""The allocator setting that keeps a process with many calls in flight from hoarding freed memory."""

import ctypes
import ctypes.util
import platform
import sys

import pytest

from pytest_hypeedit.engine import memory


def test_glibc_takes_the_arena_limit():
    expected = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert memory.limit_malloc_arenas() is expected


class MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (malloc.h, glibc 2.33 on)."""

    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]


def test_a_large_block_is_mapped_on_its_own_after_a_larger_one_was_freed():
    """Planted: map_large_blocks a no-op -> glibc's threshold rose to the 20 MB block freed, and the 8 MB block comes
    from an arena (kept there when freed), not from a mapping of its own (given back)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6") if sys.platform.startswith("linux") else None
    if libc is None or not hasattr(libc, "mallinfo2"):
        assert memory.map_large_blocks() is (platform.libc_ver()[0] == "glibc")
        return
    libc.mallinfo2.restype = MallInfo2
    assert memory.map_large_blocks() is True
    freed = bytes(20 * 1024 * 1024)  # a mapped block freed: glibc's own threshold would rise to its size
    del freed
    mapped = libc.mallinfo2().hblkhd
    block = bytearray(8 * 1024 * 1024)
    assert libc.mallinfo2().hblkhd - mapped >= len(block)


def test_a_benchmark_run_limits_the_arenas_before_its_threads_start(pytester, monkeypatch, tmp_path):
    from benchdata import make_tasks, write_labels, write_split

    calls = []
    monkeypatch.setattr(memory, "limit_malloc_arenas", lambda *a: calls.append(a) or True)
    monkeypatch.setattr(memory, "map_large_blocks", lambda *a: calls.append(("mapped",)) or True)
    write_split(pytester.path, "mini", make_tasks(1), pytester.path / "images")
    write_labels(pytester.path / "r.json", {("task-00", "identity", 1): False})
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    pytester.runpytest("-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json", "--images-base",
                       "images", "--repeats", "1", "--judge", "labels:r.json", "--outputs", "out").assert_outcomes(failed=1)
    assert calls == [(), ("mapped",)]
    pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")  # not a benchmark run: untouched
    assert calls == [(), ("mapped",)]


EXIT_PROBE = """
import atexit, gc, pathlib

# registered before the plugin's configure, so run after its handlers (atexit runs the last registered first)
atexit.register(lambda: pathlib.Path("frozen-at-exit").write_text(str(gc.get_freeze_count())))
"""


def test_a_benchmark_run_leaves_its_objects_to_the_system_at_exit(pytester, tmp_path):
    from benchdata import make_tasks, write_labels, write_split

    pytester.makeconftest(EXIT_PROBE)
    write_split(pytester.path, "mini", make_tasks(1), pytester.path / "images")
    write_labels(pytester.path / "r.json", {("task-00", "identity", 1): True})
    env = {"HYPEEDIT_CACHE_DIR": str(tmp_path / "cache")}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json", "--images-base", "images",
            "--repeats", "1", "--judge", "labels:r.json", "--outputs", "out").assert_outcomes(passed=1)
        assert int((pytester.path / "frozen-at-exit").read_text()) > 0  # the exit's collections skip them all
        pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:cacheprovider")  # not a benchmark run
        assert int((pytester.path / "frozen-at-exit").read_text()) == 0


def test_the_exit_handler_is_registered_once_per_process():
    import atexit

    memory.skip_exit_collection()
    before = atexit._ncallbacks()
    memory.skip_exit_collection()
    memory.skip_exit_collection()
    assert atexit._ncallbacks() == before
