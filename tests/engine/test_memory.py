"""The allocator setting that keeps a process with many calls in flight from hoarding freed memory."""

import platform
import sys

from pytest_hypeedit.engine import memory


def test_glibc_takes_the_arena_limit():
    expected = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert memory.limit_malloc_arenas() is expected


def test_a_benchmark_run_limits_the_arenas_before_its_threads_start(pytester, monkeypatch, tmp_path):
    from benchdata import make_tasks, write_labels, write_split

    calls = []
    monkeypatch.setattr(memory, "limit_malloc_arenas", lambda *a: calls.append(a) or True)
    write_split(pytester.path, "mini", make_tasks(1), pytester.path / "images")
    write_labels(pytester.path / "r.json", {("task-00", "identity", 1): False})
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    pytester.runpytest("-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json", "--images-base",
                       "images", "--repeats", "1", "--judge", "labels:r.json", "--outputs", "out").assert_outcomes(failed=1)
    assert calls == [()]
    pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")  # not a benchmark run: untouched
    assert calls == [()]
