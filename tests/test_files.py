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

    def refuse(*args):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        files.atomic_write_bytes(dest, b"new")
    assert dest.read_bytes() == b"old" and os.listdir(tmp_path) == ["001.json"]
