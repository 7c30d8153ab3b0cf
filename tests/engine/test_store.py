"""The output layout on disk (a contract shared with the upstream review tool) and what resume may trust."""

from __future__ import annotations

import json

import pytest

from pytest_hypeedit.engine.records import PASS, Record
from pytest_hypeedit.engine.store import Store


def record(**changes) -> Record:
    fields = dict(split="public", model="seedream-4.5", task_id="9c564c44-1226", repeat=10, candidate="010.webp",
                  outcome=PASS, verdict="PASS",
                  calls=[{"entry": "g", "kind": "generation", "state": "billed", "price": 0.04, "tier": "standard"}])
    return Record(**{**fields, **changes})


def test_a_record_is_filed_under_its_own_key(tmp_path):
    store = Store(tmp_path)
    path = store.write_record(record())
    assert path == tmp_path / "public" / "seedream-4.5" / "9c564c44-1226" / "010.json"
    assert store.read_record("public", "seedream-4.5", "9c564c44-1226", 10) == record()
    assert store.read_record("public", "seedream-4.5", "9c564c44-1226", 1) is None


def test_a_candidate_is_written_beside_its_record_in_the_format_returned(tmp_path):
    store = Store(tmp_path)
    path = store.write_candidate("public", "m", "t", 3, b"RIFF....WEBP", "webp")
    assert path == tmp_path / "public" / "m" / "t" / "003.webp"
    assert store.find_candidate("public", "m", "t", 3) == path
    assert store.find_candidate("public", "m", "t", 4) is None


@pytest.mark.parametrize("name", ["001.png", "001.jpg", "001.jpeg", "001.webp"])
def test_every_readable_format_is_found(tmp_path, name):
    folder = tmp_path / "s" / "m" / "t"
    folder.mkdir(parents=True)
    (folder / name).write_bytes(b"image")
    assert Store(tmp_path).find_candidate("s", "m", "t", 1) == folder / name


def test_a_zero_byte_candidate_is_not_a_result(tmp_path):
    store = Store(tmp_path)
    store.write_candidate("s", "m", "t", 1, b"", "png")
    assert store.find_candidate("s", "m", "t", 1) is None


@pytest.mark.parametrize("wrong", [dict(split="other"), dict(model="flux-2-max"), dict(task_id="another-task"),
                                   dict(repeat=9)], ids=["split", "model", "task", "repeat"])
def test_a_record_whose_key_does_not_match_its_path_is_not_used(tmp_path, wrong):
    store = Store(tmp_path)
    path = store.record_path("public", "seedream-4.5", "9c564c44-1226", 10)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record(**wrong).to_dict()))
    assert store.read_record("public", "seedream-4.5", "9c564c44-1226", 10) is None


@pytest.mark.parametrize("text", ["", "{torn", "[1, 2]", '{"split": "public"}'])
def test_an_unreadable_record_is_treated_as_none(tmp_path, text):
    store = Store(tmp_path)
    path = store.record_path("s", "m", "t", 1)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert store.read_record("s", "m", "t", 1) is None


def test_holds_answers_as_find_does_with_one_look(tmp_path):
    """``Store.has_file`` (the survey's quick look) says a candidate is there exactly when ``find`` finds it or
    finds it unusable, and never looks up a name a doctored record made up."""
    store = Store(tmp_path / "out")
    folder = store.task_dir("s", "m", "t")
    folder.mkdir(parents=True)
    (folder / "001.png").write_bytes(b"x")
    (folder / "002.png").write_bytes(b"")  # empty: not a candidate
    (folder / "003.png").symlink_to(folder / "001.png")  # a link: unusable, not bought
    (tmp_path / "out" / "s" / "m" / "elsewhere.png").write_bytes(b"x")
    cases = [(1, "001.png"), (2, "002.png"), (3, "003.png"), (4, "004.png"), (1, "001.jpg"), (1, None),
             (1, "../elsewhere.png"), (1, "001.png/../001.png"), (1, "001.PNG")]
    for repeat, named in cases:
        found = store.find("s", "m", "t", repeat, named=named)
        there = found.candidate is not None or found.unusable is not None
        assert store.has_file("s", "m", "t", repeat, named) == (there and named is not None
                                                             and named.startswith(f"{repeat:03d}.")), named


def test_a_claim_folder_removed_during_the_run_is_made_again(tmp_path):
    """The store makes each claim folder once per process; one removed since (a clean-up) is made again."""
    import shutil

    store = Store(tmp_path / "out")
    with store.claim("s", "m", "t", 1):
        pass
    shutil.rmtree(store.claims_dir)
    with store.claim("s", "m", "t", 2):
        assert (store.claims_dir / "s" / "m" / "t" / "002.lock").is_file()


@pytest.mark.parametrize("written_by", ["this version", "hand, with escapes", "an older version, a field less"])
def test_a_record_read_again_unchanged_is_the_record_first_read_cleaned(tmp_path, written_by):
    """The store keeps what it read of an unchanged file (engine/store.py ``_records``): the file's own text
    when it is the record exactly, else the record encoded again, so the second read is as clean as the first
    (a record on disk may have been written by anyone)."""
    store = Store(tmp_path)
    path = store.write_record(record(reasoning="fine"))
    if written_by != "this version":
        fields = json.loads(path.read_text())
        if written_by == "hand, with escapes":
            fields["reasoning"] = "fine\x1b]52;c;ZWNobyBwd25lZA==\x07 \x1b[31mred\x1b[0m"
        else:
            del fields["human"]
        path.write_text(json.dumps(fields))
    first = store.read_record(*record().key)
    again = store.read_record(*record().key)  # from what the store kept
    assert first is not None and again == first and again is not first
    assert "\x1b" not in again.reasoning and "\x07" not in again.reasoning
