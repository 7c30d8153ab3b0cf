"""pytest's command line with the plugin: --help's sections, environment variables and commands; test paths
given with --model are not accepted, with what to run instead."""

from __future__ import annotations

import re

import pytest

from pytest_hypeedit.options import GROUP_OF, GROUPS, declared_options
from pytest_hypeedit.secrets import KEY_ENV


def help_sections(text: str) -> dict[str, list[str]]:
    """title -> the long options of each section of the plugin in pytest --help, in the order shown."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            current = line.rstrip(":") if line.startswith("HYPE-EDIT-1 benchmark:") else None
            if current:
                sections[current] = []
        elif current and (match := re.match(r"  (--[\w-]+)", line)):
            sections[current].append(match[1])
    return sections


def test_help_shows_the_options_in_five_sections(pytester):
    text = pytester.runpytest("--help").stdout.str()
    sections = help_sections(text)
    titles = [title for _, title in GROUPS]
    assert [title for title in sections if sections[title]] == titles  # in this order, none empty
    where = {flag: title for title, flags in sections.items() for flag in flags}
    assert {flag: where[flag].split(": ", 1)[1] for flag in ("--model", "--budget", "--judge", "--gate",
                                                              "--html-views")} == {
        "--model": "run (what to run, where it goes)", "--budget": "models and money",
        "--judge": "judges and human labels", "--gate": "statistics and CI gates", "--html-views": "reports"}
    assert set(where) == {option.flag for option in declared_options()}  # every option, each once


def test_every_option_has_its_section():
    """A new option gets a line in options.GROUP_OF (else it lands in the first section, unnoticed)."""
    missing = [option.flag for option in declared_options() if option.flag not in GROUP_OF]
    assert missing == [], f"add {missing} to GROUP_OF in pytest_hypeedit/options.py"
    assert set(GROUP_OF.values()) <= {name for name, _ in GROUPS}


def test_help_ends_with_the_environment_variables_and_the_two_commands(pytester):
    text = pytester.runpytest("--help").stdout.str()
    tail = text[text.index("HYPE-EDIT-1 benchmark: environment variables"):]
    for variable in ["HYPEEDIT_<PROVIDER>_BASE_URL", "HYPEEDIT_JUDGE_API_KEY", "HYPEEDIT_JUDGE_SCRIPT_URL",
                     "HYPEEDIT_PUBLIC_SPLIT_URL", "HYPEEDIT_CACHE_DIR", "HYPEEDIT_STOP_GRACE_S",
                     *(name for names in KEY_ENV.values() for name in names)]:
        assert variable in tail, variable
    assert re.search(r"^  hypeedit-leaderboard ", tail, re.M) and re.search(r"^  hypeedit-review ", tail, re.M)


def test_help_of_a_plain_run_is_unchanged_by_the_epilogue(pytester):
    """Only --help prints it: a run of the project's own tests does not."""
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "environment variables" not in result.stdout.str()


@pytest.mark.parametrize("paths", [["tests"], ["tests/test_model.py"], ["tests/test_model.py::test_a", "."]])
def test_test_paths_with_model_are_not_accepted_with_what_to_run_instead(pytester, paths):
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_model.py").write_text("def test_a():\n    pass\n")
    result = pytester.runpytest(*paths, "--model", "identity", "--tasks", "example", "--judge", "labels:example")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    given = " ".join(paths)
    result.stderr.fnmatch_lines([
        f"ERROR: test paths given with --model: {given}: a benchmark run collects only the benchmark's items, "
        f"so these tests would not run. Run your own tests in a pytest run of their own, without --model "
        f"(pytest {given}), and the benchmark without test paths (pytest --model identity ...)*"])
    assert not (pytester.path / "hypeedit-outputs").exists()


def test_the_ini_files_testpaths_are_not_test_paths_given(pytester):
    """testpaths is what pytest collects when no path is given: a benchmark run in such a project runs."""
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_model.py").write_text("def test_a():\n    pass\n")
    result = pytester.runpytest("--model", "identity", "--tasks", "example", "--judge", "labels:example",
                                "--repeats", "1")
    result.assert_outcomes(failed=5)


def test_the_same_with_xdist_workers(pytester):
    """Under -n, with testpaths in the ini file, the run goes as without workers."""
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    pytester.mkdir("tests")
    result = pytester.runpytest("--model", "identity", "--tasks", "example", "--judge", "labels:example",
                                "--repeats", "1", "-n", "2")
    result.assert_outcomes(failed=5)
