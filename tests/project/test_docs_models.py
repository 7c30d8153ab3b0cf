"""The manual's model table (docs/how-to/models.md) says what models.yaml and retirements.yaml say: every
built-in model with its route, provider id, price, shutdown date and the key its route needs."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_hypeedit import retirements
from pytest_hypeedit.registry import load_registry
from pytest_hypeedit.secrets import KEY_ENV

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "models.md"


def table_rows() -> dict[str, list[str]]:
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = lines.index("| model | route | provider model id | USD / candidate | shutdown | notes | key |")
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0]] = cells
    return rows


def test_every_builtin_model_is_in_the_table_as_models_yaml_has_it():
    rows, models = table_rows(), load_registry().models
    assert set(rows) == set(models)
    for name, spec in models.items():
        _, route, provider_model, price, shutdown, notes, key = rows[name]
        assert (route, float(price)) == (spec.route, spec.price), name
        if spec.route != "identity":
            assert provider_model == spec.provider_model, name
            assert all(f"`{variable}`" in key for variable in KEY_ENV[spec.route]), name
        entry = retirements.lookup(spec.route, spec.provider_model)
        expected = str(entry.shutdown) if entry and entry.shutdown else ""
        assert shutdown.strip("*") == expected, name
        assert ("stand-in" in notes) == bool(spec.note and "stand-in" in spec.note), name


def test_the_retired_ids_the_page_names_are_the_tables():
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("**Retired models.**"):text.index("- A run that must call")]
    successors = {name for entry in retirements.load_table().values() for name in entry.successors}
    table = {model for _, model in retirements.load_table()}
    assert set(re.findall(r"`([a-z0-9.\-]+)`", section)) - (successors - table) == table
