"""The candidate's hash is taken as is only while its file keeps the signature recorded with it
(engine/provenance.py ``candidate_digest``): the same device, inode, size, modification and change time; any
write, replacement or link in its place makes the run read the bytes again."""

from __future__ import annotations

import os

import pytest
from PIL import Image

from pytest_hypeedit.engine import provenance
from pytest_hypeedit.engine.records import Record
from pytest_hypeedit.errors import NotRegularFile
from pytest_hypeedit.files import file_signature, sha256_with_signature


@pytest.fixture
def judged(tmp_path):
    """(root, image, record): a candidate saved as an uncompressed BMP (another colour has the same size) and its
    record, with the hash and signature of its bytes."""
    root = tmp_path / "out"
    folder = root / "s" / "m" / "t"
    folder.mkdir(parents=True)
    image = folder / "001.bmp"
    Image.new("RGB", (16, 16), (200, 10, 10)).save(image, format="BMP")
    digest, signature = sha256_with_signature(image, root)
    record = Record("s", "m", "t", 1, candidate=image.name, outcome="pass", verdict="PASS", candidate_sha256=digest,
                    candidate_stat=signature)
    return root, image, record


def test_a_file_that_keeps_its_signature_is_not_read_again(judged, monkeypatch):
    root, image, record = judged

    def read(*_):
        raise AssertionError("the file was read although it kept its signature")

    monkeypatch.setattr(provenance, "sha256_with_signature", read)
    assert provenance.check(record, image, root, []) == provenance.Checked()
    assert record.verdict == "PASS"


def test_other_bytes_of_the_same_size_written_in_place_with_the_old_mtime_are_read_and_told_apart(judged):
    root, image, record = judged
    before = os.stat(image)
    Image.new("RGB", (16, 16), (10, 10, 200)).save(image, format="BMP")  # the same inode, the same size
    os.utime(image, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the old modification time
    after = os.stat(image)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    checked = provenance.check(record, image, root, [])
    assert checked.bound and record.verdict is None  # judged again: only the change time said so
    assert record.extra[provenance.CHANGED]["then"] == provenance.JUDGED_AGAIN
    assert record.candidate_stat == file_signature(after)


def test_a_link_in_its_place_is_not_taken_for_the_file_whatever_signature_the_record_claims(judged, tmp_path):
    root, image, record = judged
    outside = tmp_path / "outside.bmp"
    outside.write_bytes(image.read_bytes())
    image.unlink()
    image.symlink_to(outside)
    record.candidate_stat = file_signature(os.lstat(image))  # a doctored record naming the link's own signature
    with pytest.raises(NotRegularFile):
        provenance.check(record, image, root, [])


def test_a_record_without_a_signature_gets_the_one_its_bytes_were_read_with(judged):
    root, image, record = judged
    record.candidate_stat = None
    assert provenance.check(record, image, root, []) == provenance.Checked()  # the same bytes: nothing to write
    assert record.candidate_stat == file_signature(os.stat(image))  # written with the record when it is written
