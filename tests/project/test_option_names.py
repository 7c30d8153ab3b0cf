"""Every option a message (or a help text, or a docstring) of the plugin names exists.

A message that tells the user to run ``pytest --hypeedit`` sends them to an error of pytest's own.  Every
``--option`` in a string of the package's source must be one that pytest's parser takes (with this plugin,
pytest-html and pytest-xdist loaded, aliases such as ``--junitxml`` included), or that
``hypeedit-leaderboard --help`` or ``hypeedit-review --help`` lists.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_hypeedit

PACKAGE = Path(pytest_hypeedit.__file__).resolve().parent
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def named_options() -> dict[str, list[str]]:
    """--option -> where the package's strings name it (file:line)."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for option in OPTION.findall(node.value):
                    found.setdefault(option, []).append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def pytest_options(config: pytest.Config) -> set[str]:
    """Every long option pytest's parser takes in this process (the plugins of this venv are loaded)."""
    parser = config._parser  # no public list of options with their aliases: --help shows one name each
    return {name for group in [*parser._groups, parser._anonymous] for option in group.options
            for name in option.names() if name.startswith("--")}


@functools.lru_cache(maxsize=1)
def tool_options() -> frozenset[str]:
    bin_dir = Path(sys.executable).parent
    helps = [[str(bin_dir / "hypeedit-leaderboard"), "--help"], [str(bin_dir / "hypeedit-review"), "--help"]]
    known: set[str] = set()
    for command in helps:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=PACKAGE.parent.parent)
        assert done.returncode == 0, done.stderr
        known |= set(OPTION.findall(done.stdout))
    return frozenset(known)


def test_every_option_a_message_names_exists(pytestconfig):
    named, known = named_options(), pytest_options(pytestconfig) | tool_options()
    # pytest's own, the plugins', and the two tools' options were all read
    assert {"--model", "--tasks", "--images-base", "--html", "--dist", "--lf", "--junitxml", "--port",
            "--with-published"} <= known
    unknown = {option: where for option, where in named.items() if option not in known}
    assert unknown == {}


def test_the_check_sees_an_option_that_does_not_exist(pytestconfig):
    assert "--hypeedit" not in pytest_options(pytestconfig) | tool_options()  # the option old messages named
    assert OPTION.findall("a results JSON written by pytest --hypeedit; or --judge-base-url URL") == [
        "--hypeedit", "--judge-base-url"]
