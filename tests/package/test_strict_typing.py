"""Strict typing covers every module of the package but glue/'s (issue 35): pyproject's strict override names
them, and a module added later must join it.  mypy only reads the list, so a module left out of it is checked
with the default flags and nobody notices."""

from __future__ import annotations

from pathlib import Path

import pytest
from package_graph import modules

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
#: The per-module flags ``mypy --strict`` turns on (the global ones are set in [tool.mypy]).
STRICT_FLAGS = ("disallow_any_generics", "disallow_subclassing_any", "disallow_untyped_calls",
                "disallow_untyped_defs", "disallow_incomplete_defs", "check_untyped_defs",
                "disallow_untyped_decorators", "warn_return_any", "no_implicit_reexport", "strict_equality",
                "extra_checks")
NOT_YET = "pytest_hypeedit.glue"


def strict_override() -> dict:
    overrides = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]["overrides"]
    found = [o for o in overrides if o.get("disallow_untyped_defs")]
    assert len(found) == 1, "expected one strict override in [tool.mypy]"
    return found[0]


def covered(module: str, patterns: list[str]) -> bool:
    """mypy's matching: ``a.*`` takes ``a`` and everything below it; a plain name, that module only."""
    return any(module == p.removesuffix(".*") or (p.endswith(".*") and module.startswith(p[:-1]))
               for p in patterns)


def test_every_module_but_glue_is_in_the_strict_override():
    patterns = strict_override()["module"]
    left_out = [name for name in modules() if not covered(name, patterns) and not covered(name, [NOT_YET + ".*"])]
    assert not left_out, f"add to the strict override in pyproject.toml: {left_out}"


def test_the_override_sets_every_flag_strict_does():
    override = strict_override()
    assert [flag for flag in STRICT_FLAGS if override.get(flag) is not True] == []
