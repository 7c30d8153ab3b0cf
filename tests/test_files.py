"""files.atomic_write_bytes: a write lands whole under its name or not at all, in a folder made when missing."""

import os

import pytest

from pytest_hypeedit import files


def test_a_write_into_a_missing_folder_makes_it(tmp_path):
    dest = tmp_path / "out" / "public" / "model" / "001.json"
    files.atomic_write_bytes(dest, b"{}")
    assert dest.read_bytes() == b"{}"
    assert os.listdir(dest.parent) == ["001.json"]  # no temporary file left beside it


def test_a_write_replaces_the_file_whole(tmp_path):
    dest = tmp_path / "001.json"
    dest.write_bytes(b"old")
    files.atomic_write_bytes(dest, b"new")
    assert dest.read_bytes() == b"new" and os.listdir(tmp_path) == ["001.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    dest = tmp_path / "001.json"
    dest.write_bytes(b"old")

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        files.atomic_write_bytes(dest, b"new")
    assert dest.read_bytes() == b"old" and os.listdir(tmp_path) == ["001.json"]


@pytest.fixture
def umask():
    """Set the process's umask for the test; the old one back after."""
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_a_write_has_the_mode_the_users_umask_gives(tmp_path, umask, mask, mode):
    # Planted: the temporary file made by tempfile.mkstemp again: 0600 whatever the umask (19 of 21 report files).
    umask(mask)
    dest = tmp_path / "results.json"
    files.atomic_write_bytes(dest, b"{}")
    files.atomic_write_bytes(dest, b"{}", durable=True)  # a file replaced gets the same
    assert os.stat(dest).st_mode & 0o777 == mode


def test_temporary_files_never_open_an_existing_file_or_a_link(tmp_path, monkeypatch):
    names = iter(["aaaa", "aaaa", "bbbb"])
    monkeypatch.setattr(files.secrets, "token_hex", lambda n: next(names))
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    os.symlink(target, tmp_path / ".x.aaaa.part")
    fd, path = files.new_temporary(tmp_path, ".x.")  # the link's name is taken: another name
    os.close(fd)
    assert path == str(tmp_path / ".x.bbbb.part") and target.read_bytes() == b"keep"
