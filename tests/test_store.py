"""The output layout on disk (a contract shared with the upstream review tool) and what resume may trust."""

from __future__ import annotations

import json

import pytest

from pytest_hypeedit.engine.records import PASS, Record
from pytest_hypeedit.engine.store import Store


@pytest.mark.parametrize("text", ["", "{torn", "[1, 2]", '{"split": "public"}'])
def test_an_unreadable_record_is_treated_as_none(tmp_path, text):
    store = Store(tmp_path)
    path = store.record_path("s", "m", "t", 1)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert store.read_record("s", "m", "t", 1) is None
