"""Every option can be set in the ini file under its hypeedit_* key; the command line wins."""

from __future__ import annotations

import json
import re

import pytest
from benchdata import make_tasks, write_labels, write_split
from fake_models import models_conftest
from test_command_line import help_sections

from pytest_hypeedit.options import declared_options

TASKS = 3

#: The run of every test below, in the ini file instead of on the command line.
INI_RUN = """
hypeedit_models = identity
hypeedit_tasks = mini.json
hypeedit_images_base = images
hypeedit_judge = labels:r1.json
hypeedit_outputs = out
"""


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path):
    """Split 'mini' (3 tasks) and labels r1.json: task-00 passes, the others fail, for 4 repeats."""
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    label(pytester, lambda task: task == 0)
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    return pytester


def label(pytester, passed) -> None:
    write_labels(pytester.path / "r1.json",
                 {(f"task-{t:02d}", "identity", r): passed(t) for t in range(TASKS) for r in range(1, 5)})


def ini(pytester, extra: str = "", bootstrap: int = 0) -> None:
    pytester.makeini(f"[pytest]\n{INI_RUN}hypeedit_bootstrap = {bootstrap}\n{extra}")


def results(pytester) -> dict:
    return json.loads((pytester.path / "out" / "results.json").read_text())


def help_section(text: str, title: str) -> list[str]:
    """The lines of one section of pytest --help (it ends at the next unindented line)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    end = next((i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" ")), len(lines))
    return lines[start + 1:end]


def test_help_lists_an_ini_key_for_every_option_of_the_plugins_sections(pytester):
    text = pytester.runpytest("--help").stdout.str()
    flags = {flag for section in help_sections(text).values() for flag in section}  # the plugin's sections
    ini_keys = {re.match(r"\s+(\w+) \(", line)[1] for line in help_section(text, "[pytest] ")  # "ini-options" or "configuration options", by version
                if re.match(r"\s+hypeedit_\w+ \(", line)}
    declared = declared_options()
    assert flags == {option.flag for option in declared}  # no option bypasses the declaration
    assert ini_keys == {option.dest for option in declared}
    assert {"hypeedit_models", "hypeedit_repeats", "hypeedit_judge", "hypeedit_concurrency", "hypeedit_gates"} <= ini_keys


def test_a_run_set_up_entirely_in_the_ini_file(bench):
    ini(bench, "hypeedit_repeats = 2\n")
    result = bench.runpytest()
    result.assert_outcomes(passed=2, failed=4)
    row = results(bench)["rows"][0]
    assert (row["model"], row["split"], row["candidates"]) == ("identity", "mini", 6)
    assert results(bench)["settings"]["repeats"] == 2


def test_the_command_line_wins_over_the_ini_file(bench):
    ini(bench, "hypeedit_repeats = 4\nhypeedit_gates = pass_rate >= 0.9\n", bootstrap=200)
    from_ini = bench.runpytest()
    assert from_ini.ret == pytest.ExitCode.TESTS_FAILED  # 4 repeats, and the ini's gate fails (pass rate 1/3)
    assert results(bench)["settings"]["repeats"] == 4
    assert "95% intervals over tasks" in from_ini.stdout.str()
    cli = bench.runpytest("--repeats", "1", "--gate", "pass_rate>=0.3", "--bootstrap", "0")
    # the command line's gate replaces the ini's list, it is not added to it: the 0.9 gate would fail
    assert cli.ret == pytest.ExitCode.OK
    cli.stdout.fnmatch_lines(["PASS gate 'pass_rate>=0.3'*"])
    assert "gate 'pass_rate >= 0.9'" not in cli.stdout.str()
    assert "95% intervals over tasks" not in cli.stdout.str()  # --bootstrap 0 is a value, not "unset"
    assert results(bench)["settings"]["repeats"] == 1


def test_an_ini_value_reaches_every_xdist_worker(bench):
    # Workers parse the ini file themselves: a worker with the default 10 repeats would collect other items.
    ini(bench, "hypeedit_repeats = 2\n")
    result = bench.runpytest("-n", "2")
    result.assert_outcomes(passed=2, failed=4)


def pyproject(pytester, repeats: int, extra: str = "") -> None:
    pytester.makepyprojecttoml(f"""
[tool.pytest.ini_options]
hypeedit_models = ["identity"]
hypeedit_tasks = ["mini.json"]
hypeedit_images_base = "images"
hypeedit_judge = "labels:r1.json"
hypeedit_outputs = "out"
hypeedit_repeats = "{repeats}"
hypeedit_bootstrap = 0
hypeedit_gates = ["pass_rate <= 0.5", "pass_at_4 <= 0.5"]
{extra}""")


def test_pyproject_toml_with_lists_and_a_flag(bench):
    label(bench, lambda task: False)
    pyproject(bench, repeats=1)
    complete = bench.runpytest()
    assert complete.ret == pytest.ExitCode.OK  # every verdict is FAIL: both gates pass
    complete.stdout.fnmatch_lines(["PASS gate 'pass_rate <= 0.5'*", "PASS gate 'pass_at_4 <= 0.5'*", "all gates pass*"])
    pyproject(bench, repeats=5)  # nobody labelled repeat 5: an incomplete run, whose gates fail...
    assert bench.runpytest().ret == pytest.ExitCode.TESTS_FAILED
    pyproject(bench, repeats=5, extra="hypeedit_allow_incomplete = true")
    assert bench.runpytest().ret == pytest.ExitCode.OK  # ...unless the ini file allows it


def test_a_value_that_is_not_a_number_names_the_ini_key_and_file(bench):
    ini(bench, "hypeedit_repeats = three\n")
    result = bench.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tox.ini: hypeedit_repeats = 'three': invalid int value for --repeats N*"])


@pytest.mark.parametrize("key, flag, value", [
    ("hypeedit_repeats", "--repeats", "0"),
    ("hypeedit_rate_limits", "--rate-limit", "ark=fast"),
    ("hypeedit_concurrency", "--concurrency", "lots"),
    ("hypeedit_gates", "--gate", "pass_rate >> 2"),
])
def test_a_bad_ini_value_gets_the_command_lines_message_and_its_origin(bench, key, flag, value):
    ini(bench)
    on_the_command_line = bench.runpytest(flag, value)
    assert on_the_command_line.ret == pytest.ExitCode.USAGE_ERROR
    message = next(line for line in on_the_command_line.stderr.lines if line.startswith("ERROR:"))
    assert "came from" not in message
    ini(bench, f"{key} = {value}\n")
    from_the_ini = bench.runpytest()
    assert from_the_ini.ret == pytest.ExitCode.USAGE_ERROR
    line = next(line for line in from_the_ini.stderr.lines if line.startswith("ERROR:"))
    assert line.startswith(f"{message} ({flag} came from {key} in {bench.path / 'tox.ini'}; ")


def test_without_a_model_the_plugin_stays_out_of_the_way(bench):
    # The ini file sets up a benchmark, but -o hypeedit_models= (empty) runs the project's own tests.
    ini(bench)
    bench.makepyfile(test_unit="def test_one():\n    assert True\n")
    plain = bench.runpytest("-o", "hypeedit_models=", "test_unit.py")
    plain.assert_outcomes(passed=1)
    assert not (bench.path / "out").exists()
    assert "hypeedit::" in bench.runpytest("--collect-only", "-q").stdout.str()


LOGGING_CONFTEST = models_conftest(route="logging", models=({"name": "paid", "route": "logging", "provider_model": "p", "price": 0.5},))


def test_test_discovery_with_a_model_in_the_ini_file_buys_nothing(bench, monkeypatch, tmp_path):
    # An IDE runs `pytest --collect-only` again and again: with hypeedit_models in the ini file that
    # must list the benchmark's items and never call a model.
    bench.makeconftest(LOGGING_CONFTEST)
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "calls.log"))
    bench.makeini(f"[pytest]\n{INI_RUN.replace('identity', 'paid')}hypeedit_repeats = 2\n")
    listed = bench.runpytest("--collect-only", "-q")
    assert listed.stdout.str().count("hypeedit::mini::") == TASKS * 2
    assert not (tmp_path / "calls.log").exists()
    assert not (bench.path / "out").exists()


@pytest.mark.skipif(pytest.version_tuple < (9, 2), reason="pytest's native [tool.pytest] table with typed values")
def test_the_native_toml_table_takes_numbers_as_numbers(bench):
    bench.makepyprojecttoml("""
[tool.pytest]
hypeedit_models = ["identity"]
hypeedit_tasks = ["mini.json"]
hypeedit_images_base = "images"
hypeedit_judge = "labels:r1.json"
hypeedit_outputs = "out"
hypeedit_repeats = 2
hypeedit_review_seconds = 40.5
hypeedit_bootstrap = 0
""")
    bench.runpytest().assert_outcomes(passed=2, failed=4)
    assert results(bench)["settings"]["repeats"] == 2
    assert results(bench)["settings"]["review_seconds"] == 40.5


def test_this_projects_own_ini_file_sets_no_benchmark_option():
    # `pytest tests` must never turn into a benchmark run: no hypeedit_* key in the project's own ini file.
    from pathlib import Path

    text = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert not re.findall(r"^\s*hypeedit_\w+\s*=", text, re.M)
