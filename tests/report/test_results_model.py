"""The typed results model (report/results_model.py) and its contract (docs/reference/results.md) name the same
fields: every key of ``Results`` is a field of the page's top-level table and every key of ``ResultsRow`` one of
its row table, and every field those tables document is a key of the model.  A key added to the model and not to
the page (or the other way round) fails here, naming it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_hypeedit.report.results_model import Results, ResultsRow

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "results.md"
TOP_LEVEL = "The results file: top level"
ROW = "A row"


def documented(section: str, page: str | None = None) -> set[str]:
    """The fields a section's table names in its first column (``model``, ``split`` in one cell: both)."""
    text = PAGE.read_text(encoding="utf-8") if page is None else page
    names: set[str] = set()
    heading = ""
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif heading == section and line.startswith("| `"):
            names |= set(re.findall(r"`(\w+)`", line.split("|")[1]))
    return names


def keys(model: Any) -> set[str]:
    return set(model.__required_keys__) | set(model.__optional_keys__)


def disagreement(model_keys: set[str], fields: set[str]) -> dict[str, list[str]]:
    return {"in the model, not on the page": sorted(model_keys - fields),
            "on the page, not in the model": sorted(fields - model_keys)}


AGREED = {"in the model, not on the page": [], "on the page, not in the model": []}


def test_every_top_level_key_is_documented_and_every_documented_one_is_a_key():
    assert disagreement(keys(Results), documented(TOP_LEVEL)) == AGREED


def test_every_row_key_is_documented_and_every_documented_one_is_a_key():
    assert disagreement(keys(ResultsRow), documented(ROW)) == AGREED


def test_the_sections_are_read_whole():
    """The reading itself: both tables are found, a field named with another in one cell counts, and a key the
    page does not name is told apart (as a key added to the model without its row on the page would be)."""
    top, row = documented(TOP_LEVEL), documented(ROW)
    assert {"schema", "rows", "coverage", "sequential"} <= top  # sequential: the table's last row
    assert {"model", "split", "possibly_paid_held", "calibrated_baseline_note"} <= row
    assert disagreement(keys(ResultsRow) | {"undocumented_key"}, row)["in the model, not on the page"] == [
        "undocumented_key"]
    page = "## A row\n\n| field | what |\n|---|---|\n| `model`, `split` | names |\n\n## Next\n| `other` | x |\n"
    assert documented(ROW, page) == {"model", "split"}
