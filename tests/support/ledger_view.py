"""What a record on disk (its JSON) says of its open call and its journaled job, both kept in its call ledger
(``calls``): read the way the plugin reads them (records.Record), so a test asserts on the disk's own text."""

from __future__ import annotations

from typing import Any

from pytest_hypeedit.engine.records import Record


def job(record: dict[str, Any]) -> dict[str, Any] | None:
    """The job journaled for the candidate's purchase (its generation entry's ``job``), None without one."""
    return Record.from_dict(record).job


def open_call(record: dict[str, Any]) -> dict[str, Any] | None:
    """The paid call journaled and not ended (journaled or gathering), None without one."""
    return Record.from_dict(record).open_call
