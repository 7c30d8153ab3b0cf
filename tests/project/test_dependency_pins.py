"""The google-genai floor: the judge asks for thinking level MEDIUM, which google-genai has only from
1.56.0 (1.51 and 1.55 have LOW and HIGH only, and warn "MEDIUM is not a valid ThinkingLevel" before
sending the string anyway; googleapis/python-genai CHANGELOG 1.56.0, "Add minimal and medium thinking
levels", and types.py at v1.55.0 / v1.56.0)."""

import re
import warnings
from pathlib import Path

from pytest_hypeedit.judges.gemini import THINKING_LEVEL

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def floor_of(package: str) -> tuple[int, ...]:
    match = re.search(rf'"{re.escape(package)}>=([0-9.]+)"', PYPROJECT.read_text())
    assert match, f"{package} has no >= floor in {PYPROJECT}"
    return tuple(int(part) for part in match[1].split("."))


def test_google_genai_floor_has_the_judges_thinking_level():
    assert THINKING_LEVEL == "MEDIUM"  # if the judge's level changes, revisit the floor below
    assert floor_of("google-genai") >= (1, 56)


def test_the_installed_google_genai_takes_the_judges_thinking_level_without_a_warning():
    from google.genai import types

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = types.ThinkingConfig(thinking_level=THINKING_LEVEL)
    assert config.thinking_level == types.ThinkingLevel.MEDIUM
