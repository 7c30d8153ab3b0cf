"""The store reads a record's file once while it stays the same, and again as soon as it changes in any way."""

from __future__ import annotations

import json
import os

from pytest_hypeedit.engine import store as store_module
from pytest_hypeedit.engine.records import Record
from pytest_hypeedit.engine.store import Store


def _write(store: Store, **fields) -> None:
    store.write_record(Record("mini", "m", "task-0", 1, **fields))


def _count_opens(monkeypatch) -> list[str]:
    opened: list[str] = []
    real = store_module.open_regular

    def counting(path, root):
        opened.append(str(path))
        return real(path, root)

    monkeypatch.setattr(store_module, "open_regular", counting)
    return opened


def test_a_record_asked_for_again_is_not_read_again_and_each_caller_gets_its_own(tmp_path, monkeypatch):
    store = Store(tmp_path / "out")
    _write(store, verdict="PASS")
    opened = _count_opens(monkeypatch)
    first = store.read_record("mini", "m", "task-0", 1)
    second = store.read_record("mini", "m", "task-0", 1)
    assert len(opened) == 1
    assert first is not second and first.verdict == second.verdict == "PASS"
    first.judgements["j"] = {"verdict": "FAIL"}
    assert "j" not in store.read_record("mini", "m", "task-0", 1).judgements


def test_a_record_changed_on_disk_is_read_again(tmp_path, monkeypatch):
    store = Store(tmp_path / "out")
    _write(store, verdict="PASS")
    assert store.read_record("mini", "m", "task-0", 1).verdict == "PASS"
    path = store.record_path("mini", "m", "task-0", 1)
    data = json.loads(path.read_text())
    data["verdict"] = "FAIL"  # same length as PASS: a write in place of the same size
    with open(path, "r+", encoding="utf-8") as handle:  # in place: the same inode
        handle.write(json.dumps(data, indent=2, sort_keys=True))
    os.utime(path, ns=(1, 1))  # even with its modification time put back, its change time moved
    assert store.read_record("mini", "m", "task-0", 1).verdict == "FAIL"
    _write(store, verdict="PASS", reasoning="written by another process")  # a rename over it: a new inode
    assert store.read_record("mini", "m", "task-0", 1).reasoning == "written by another process"


def test_a_record_swapped_for_a_link_after_it_was_read_is_unusable(tmp_path):
    store = Store(tmp_path / "out")
    _write(store, verdict="PASS")
    assert store.read_record("mini", "m", "task-0", 1) is not None
    path = store.record_path("mini", "m", "task-0", 1)
    elsewhere = tmp_path / "elsewhere.json"
    os.replace(path, elsewhere)
    path.symlink_to(elsewhere)
    record, why = store.load_record("mini", "m", "task-0", 1)
    assert record is None and "symbolic link" in why


def test_a_record_asked_for_again_is_the_record_its_file_gives(tmp_path):
    """What is kept of a record (its checked, cleaned JSON) gives the same record as checking the file again: the
    texts cleaned, an informative number kept as text, a job that is no object kept as one."""
    store = Store(tmp_path / "out")
    path = store.record_path("mini", "m", "task-0", 1)
    path.parent.mkdir(parents=True)
    hostile = {"split": "mini", "model": "m", "task_id": "task-0", "repeat": 1, "verdict": "PASS",
               "reasoning": "fine\x1b[31m\n::error::forged", "request_id": 12345, "job": "not an object",
               "cost": 0.04, "judgements": {"j": {"verdict": "FAIL", "votes": [{"note": "a\x07b"}]}},
               "extra": {"nested": [1, 2.5, None, True]}, "tier": "no such tier"}
    path.write_text(json.dumps(hostile))
    first = store.read_record("mini", "m", "task-0", 1)
    again = store.read_record("mini", "m", "task-0", 1)
    assert vars(again) == vars(first) == vars(Record.from_dict(json.loads(path.read_text())))
    assert "\x1b" not in again.reasoning and again.request_id == "12345" and again.job == {"malformed": "not an object"}
