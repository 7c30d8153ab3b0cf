"""The README and the manual (docs/) stay true to the code.

- the README stays short, and every link in it points at a file of the repository;
- the option reference (docs/reference/options.md) has one Markdown table per section of ``pytest --help``, in
  the same order: every option the plugin registers is a row of its section's table with its ini key, and every
  option or ini key a table names is registered (a new option: add a row to its section's table);
- every environment variable the package reads is in docs/reference/environment.md, and nothing more;
- the two commands' options are those of their ``--help`` (docs/reference/commands.md);
- every outcome and every field of a real results file is in docs/reference/results.md.

mkdocs build --strict (CI, .ci/run) checks the manual's own links and anchors.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest

import pytest_hypeedit
from pytest_hypeedit.engine.records import OUTCOMES
from pytest_hypeedit.options import GROUPS
from pytest_hypeedit.providers import BUILTIN_ROUTES
from pytest_hypeedit.secrets import KEY_ENV
from pytest_hypeedit.tasks import SPLITS_DIR, is_url, load_manifest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PACKAGE = Path(pytest_hypeedit.__file__).resolve().parent
README_MAX_LINES = 300


def tables(markdown: str) -> dict[str, list[list[str]]]:
    """heading -> the rows (cells) of the Markdown tables under it, header and rule left out."""
    found: dict[str, list[list[str]]] = {}
    heading, in_table = "", False
    for line in markdown.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            continue
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if not in_table:  # the header; the rule follows it
            in_table = True
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        found.setdefault(heading, []).append(cells)
    return found


# --------------------------------------------------------------------------- the README


def test_the_readme_is_the_short_way_in():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES
    headings = [line for line in lines if line.startswith("## ")]
    for needed in ("## Install", "## Quickstart", "## A first run, under a budget", "## A CI gate",
                   "## The leaderboard", "## Development"):
        assert needed in headings, needed


def test_every_link_of_the_readme_points_at_a_file():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if not is_url(link)]
    assert len(local) > 20  # the README is mostly links into the manual
    assert [link for link in local if not (REPO / link).is_file()] == []


def test_the_readme_development_section_is_what_ci_runs():
    """.ci/run runs the README's install and test commands: the same lines, in the same order."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Development\n"):]
    commands = [line.split("#")[0].strip() for line in re.findall(r"```bash\n(.*?)```", section, re.S)[0].splitlines()]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    ci_lines = [line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    positions = []
    for command in commands:
        program = command.split(" --site-dir")[0]
        found = [i for i, line in enumerate(ci_lines) if line == command or line.startswith(program + " ")]
        assert found, f".ci/run does not run {command!r}"
        positions.append(found[0])
    assert positions == sorted(positions)


# --------------------------------------------------------------------------- options and ini keys


def registered(config: pytest.Config) -> dict[str, tuple[str, str]]:
    """Every long option of the plugin's sections as pytest's parser holds it: flag -> (section title, dest)."""
    titles = dict(GROUPS)
    parser = config._parser  # no public list of a group's options
    return {name: (titles[group.name], option.dest) for group in parser._groups if group.name in titles
            for option in group.options for name in option.names() if name.startswith("--")}


def reference_rows() -> dict[str, list[list[str]]]:
    return tables((DOCS / "reference" / "options.md").read_text(encoding="utf-8"))


def test_the_option_reference_has_a_table_per_section_of_help_in_order():
    sections = [heading for heading, rows in reference_rows().items() if rows and heading != "In the ini file"]
    expected = [title.split(": ", 1)[1] for _, title in GROUPS]
    assert [heading.lower() for heading in sections] == [title.lower() for title in expected]


def test_every_registered_option_is_documented_in_its_section_and_nothing_else(pytestconfig):
    ours = registered(pytestconfig)
    assert {"--model", "--budget", "--judge", "--gate", "--html-views"} <= set(ours)
    titles = {title.split(": ", 1)[1].lower(): title for _, title in GROUPS}
    documented: dict[str, tuple[str, set[str]]] = {}
    for heading, rows in reference_rows().items():
        if heading.lower() not in titles:
            continue
        for cells in rows:
            keys = set(re.findall(r"`(hypeedit_\w+)`", cells[1]))
            for flag in re.findall(r"`(--[a-z][a-z0-9-]*)", cells[0]):
                documented[flag] = (titles[heading.lower()], keys)
    missing = sorted(set(ours) - set(documented))
    assert missing == [], f"add a row for {missing} to docs/reference/options.md, in its section's table"
    assert sorted(set(documented) - set(ours)) == []  # documented, but not an option of the plugin
    for flag, (title, dest) in ours.items():
        assert documented[flag][0] == title, f"{flag} belongs in the table of {title!r}"
        assert dest in documented[flag][1], f"{flag}: its ini key {dest} is not in its row"


def test_every_ini_key_is_documented_and_nothing_else(pytestconfig):
    keys = {name for name in pytestconfig._parser._inidict if name.startswith("hypeedit_")}
    documented = {key for rows in reference_rows().values() for cells in rows[:] if len(cells) > 1
                  for key in re.findall(r"`(hypeedit_\w+)`", cells[1])}
    assert keys and keys == documented


# --------------------------------------------------------------------------- environment variables


def source_variables() -> tuple[set[str], set[str]]:
    """The HYPEEDIT_ variables the package's source names literally, and the patterns it builds names from
    (``f"HYPEEDIT_{...}_BASE_URL"``), as regular expressions."""
    text = "\n".join(path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py"))
    literal = set(re.findall(r"\bHYPEEDIT_[A-Z0-9]+(?:_[A-Z0-9]+)*\b", text))
    patterns = {re.escape(prefix) + "[A-Z0-9_]+" + re.escape(suffix)
                for prefix, suffix in re.findall(r"f\"(HYPEEDIT_)\{[^}]*\}(_[A-Z_]+)\"", text)}
    return literal, patterns


def documented_variables() -> set[str]:
    page = tables((DOCS / "reference" / "environment.md").read_text(encoding="utf-8"))
    return {name for rows in page.values() for cells in rows for cell in cells
            for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cell) if "_" in name}


def test_every_variable_the_package_reads_is_documented():
    literal, patterns = source_variables()
    assert {"HYPEEDIT_CACHE_DIR", "HYPEEDIT_STOP_GRACE_S"} <= literal and len(patterns) == 2  # base URLs, splits
    documented = documented_variables()
    providers = {getattr(import_route(route), "provider", None) or route for route in BUILTIN_ROUTES} - {"identity"}
    instances = {f"HYPEEDIT_{provider.upper()}_BASE_URL" for provider in providers}
    instances |= {source.url_variable for source in map(load_manifest, SPLITS_DIR.glob("*.yaml"))
                  if source.url_variable}
    assert all(any(re.fullmatch(p, name) for p in patterns) for name in instances)
    keys = {name for names in KEY_ENV.values() for name in names}
    missing = sorted((literal | instances | keys) - documented)
    assert missing == [], f"add {missing} to docs/reference/environment.md"


def test_every_documented_variable_is_read_by_the_package():
    literal, patterns = source_variables()
    keys = {name for names in KEY_ENV.values() for name in names}
    unknown = sorted(name for name in documented_variables() - literal - keys
                     if not any(re.fullmatch(pattern, name) for pattern in patterns))
    assert unknown == []


def import_route(route: str):
    import importlib

    module, _, name = BUILTIN_ROUTES[route].partition(":")
    return getattr(importlib.import_module(module), name)


# --------------------------------------------------------------------------- the commands


@functools.lru_cache(maxsize=1)
def commands_help() -> dict[str, set[str]]:
    import subprocess
    import sys

    found = {}
    for command, module in (("hypeedit-leaderboard", "pytest_hypeedit.report.leaderboard"),
                            ("hypeedit-review", "pytest_hypeedit.review")):
        done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120,
                              cwd=REPO)
        assert done.returncode == 0, done.stderr
        # the option lines ("  --port PORT", "  -o OUTPUT, --output OUTPUT"), not options their help names
        found[command] = set(re.findall(r"^  (?:-\w(?: \S+)?, )?(--[a-z][a-z0-9-]*)", done.stdout, re.M)) - {"--help"}
    return found


def test_the_commands_reference_lists_each_commands_options():
    page = tables((DOCS / "reference" / "commands.md").read_text(encoding="utf-8"))
    for command, options in commands_help().items():
        documented = {flag for cells in page[command] for flag in re.findall(r"`(--[a-z][a-z0-9-]*)", cells[0])}
        assert documented == options, command


# --------------------------------------------------------------------------- results and outcomes


def test_every_outcome_is_documented():
    page = tables((DOCS / "reference" / "results.md").read_text(encoding="utf-8"))["Outcomes of one candidate"]
    named = {re.match(r"\*\*(\w+)\*\*", cells[0])[1].lower() for cells in page}
    assert named == set(OUTCOMES)


def test_every_field_of_a_real_results_file_is_documented(pytester):
    pytester.runpytest("--model", "identity", "--tasks", "example", "--judge", "labels:example", "--repeats", "2",
                       "-p", "no:cacheprovider")
    results = json.loads((pytester.path / "hypeedit-outputs" / "results.json").read_text())
    page = (DOCS / "reference" / "results.md").read_text(encoding="utf-8")
    fields = set(re.findall(r"`(\w+)`", page))
    keys = set(results) | set(results["settings"]) | {key for row in results["rows"] for key in row}
    assert sorted(keys - fields) == []
