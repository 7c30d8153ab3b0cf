"""Strict typing covers the whole package (issue 35): pyproject's [tool.mypy] sets ``strict = true``, and no
override turns one of strict's checks off for a module, where nobody would notice it."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
#: The flags ``mypy --strict`` turns on that an override could turn off for some modules.
STRICT_FLAGS = ("warn_unused_configs", "disallow_any_generics", "disallow_subclassing_any", "disallow_untyped_calls",
                "disallow_untyped_defs", "disallow_incomplete_defs", "check_untyped_defs",
                "disallow_untyped_decorators", "warn_redundant_casts", "warn_unused_ignores", "warn_return_any",
                "no_implicit_reexport", "strict_equality", "extra_checks")


def mypy_config() -> dict:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]


def test_the_package_is_checked_strictly():
    config = mypy_config()
    assert config.get("strict") is True and config.get("files") == ["pytest_hypeedit"]


def test_no_override_turns_a_strict_check_off():
    weakened = [(override.get("module"), flag) for override in mypy_config().get("overrides", [])
                for flag in STRICT_FLAGS if override.get(flag) is False]
    assert weakened == [], f"an override turns strict checks off: {weakened}"
