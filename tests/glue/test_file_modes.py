"""The files a run writes have the mode the user's umask gives a new file, as any tool's (files.py new_temporary):
written through ``tempfile.mkstemp`` they were all 0600 whatever the umask (19 of 21 report files), unreadable to
the team or the web server a report is shared with."""

from __future__ import annotations

import os

import pytest
from hype_ci_fixtures import (
    args,
    bench,  # noqa: F401 - fixture
)


@pytest.fixture
def shared_umask():
    old = os.umask(0o022)
    yield 0o644
    os.umask(old)


def test_every_file_a_run_writes_follows_the_umask(bench, shared_umask):
    # Planted: atomic_write_bytes on tempfile.mkstemp again: every record, results and report file is 0600.
    bench.runpytest(*args("--html", "report.html"))
    written = [p for p in (bench.path / "out").rglob("*") if p.is_file() and not p.is_symlink()]
    written.append(bench.path / "report.html")
    assert len(written) > 10
    modes = {str(p.relative_to(bench.path)): oct(p.stat().st_mode & 0o777) for p in written}
    assert {path: mode for path, mode in modes.items() if mode != oct(shared_umask)} == {}


def test_a_file_moved_across_filesystems_follows_the_umask_too(tmp_path, monkeypatch, shared_umask):
    # store.move_into_place copies beside the target when a rename cannot cross filesystems (a download folder on
    # another disk).  Planted: its copy on tempfile.mkstemp again -> the candidate is 0600.
    from pytest_hypeedit.engine import store

    source, dest = tmp_path / "download.png", tmp_path / "out" / "001.png"
    source.write_bytes(b"image bytes")
    rename = os.replace

    def across(src, dst):
        if os.fspath(src) == os.fspath(source):
            raise OSError(18, "Invalid cross-device link")  # EXDEV, as from another filesystem
        rename(src, dst)

    monkeypatch.setattr(store.os, "replace", across)
    store.move_into_place(source, dest)
    assert dest.read_bytes() == b"image bytes" and not source.exists()
    assert dest.stat().st_mode & 0o777 == shared_umask
    assert [p.name for p in dest.parent.iterdir()] == ["001.png"]  # no temporary file left beside it
