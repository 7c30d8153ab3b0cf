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
