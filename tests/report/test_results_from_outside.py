"""Results files from outside (``--baseline``, ``hypeedit-leaderboard``) are read as records are: bounded in size
(checked before a byte is read) and depth, every figure a reader takes checked, and anything else one clear error
naming the file.  Before: deeply nested JSON was an INTERNALERROR, ``rows: [1]`` a traceback with no results
written, a 419 MB file took 1.31 GB of memory, and the leaderboard printed ``inf%``."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from hype_ci_fixtures import (
    args,
    bench,  # noqa: F401 - fixture
    results,
)

from pytest_hypeedit.errors import InputError
from pytest_hypeedit.report.leaderboard import main
from pytest_hypeedit.report.results_files import load_results
from pytest_hypeedit.report.tables import SCHEMA
from pytest_hypeedit.untrusted import RESULTS_BYTES

ROW = {"model": "seedream-4.5", "split": "public", "tasks": 2, "candidates": 20, "judged": 20, "errors": 0,
       "refusals": 0, "cost_per_candidate": 0.04, "spent": 0.8, "pass_rate": 0.5, "pass_at_4": 0.75,
       "pass_at_10": 1.0, "expected_attempts": 2.0, "effective_cost": 0.2, "first_attempt_pass_rate": 0.5,
       "hype_gap": 0.5, "intervals": {"pass_rate": [0.25, 0.75]}}


def results_text(**changes) -> str:
    return json.dumps({"schema": SCHEMA, "settings": {"retry_cap": 10, "review_cost": 0.28}, "rows": [ROW],
                       **changes})


#: name -> (the file's text, words the error says)
HOSTILE = {
    "deep": ('{"schema": "' + SCHEMA + '", "rows": [], "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper"),
    "row-not-object": (results_text(rows=[1]), "rows[0] is a number, not a row object"),
    "row-without-model": (results_text(rows=[{**ROW, "model": None}]), "rows[0].model is None"),
    "infinity": (results_text().replace('"pass_rate": 0.5', '"pass_rate": Infinity'), "the number inf"),
    "1e999": (results_text().replace('"pass_rate": 0.5', '"pass_rate": 1e999'), "the number inf"),
    "nan-anywhere": (results_text(note=float("nan")), "the number nan"),
    "rate-past-one": (results_text(rows=[{**ROW, "pass_rate": 1e300}]), "pass_rate is 1e+300, not a figure from 0 to 1"),
    "negative-cost": (results_text(rows=[{**ROW, "effective_cost": -1}]), "effective_cost is -1"),
    "count-not-whole": (results_text(rows=[{**ROW, "errors": 1.5}]), "errors is 1.5, not a count"),
    "count-true": (results_text(rows=[{**ROW, "errors": True}]), "errors is True, not a count"),
    "interval-not-pair": (results_text(rows=[{**ROW, "intervals": {"pass_rate": [0.1]}}]), "not [low, high]"),
    "calibration-level": (results_text(rows=[{**ROW, "calibration": {"level": 1e300}}]), "calibration.level"),
    "settings-list": (results_text(settings=[1]), "settings is a list"),
    "not-utf8": (None, "not UTF-8"),
    "schema": (results_text(schema="other/1"), "expected schema"),
}


def write(tmp_path, name: str) -> str:
    text, _ = HOSTILE[name]
    path = tmp_path / f"{name}.json"
    if text is None:
        path.write_bytes(b'{"schema": "\xff"}')
    else:
        path.write_text(text)
    return str(path)


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_results_file_is_one_error_naming_it(tmp_path, name):
    # Planted: load_results as it was (json.loads, then the schema and 'rows' list only): the deep file raises
    # RecursionError, and every row and figure case passes unchecked.
    path = write(tmp_path, name)
    with pytest.raises(InputError) as caught:
        load_results(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and HOSTILE[name][1] in message


def test_a_huge_results_file_is_not_accepted_before_it_is_read(tmp_path):
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as handle:  # sparse: 400 MB that take no room on the disk
        handle.truncate(400 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=f"larger than {RESULTS_BYTES >> 20} MiB"):
            load_results(huge)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing of it was read (it was 1.31 GB for a 419 MB file)


def test_an_honest_results_file_still_loads(tmp_path):
    path = tmp_path / "ok.json"
    path.write_text(results_text(rows=[ROW, {**ROW, "split": "private", "pass_rate": None, "intervals": None}],
                                 newer_field={"anything": [1, "x", None]}))
    assert [row["split"] for row in load_results(path)["rows"]] == ["public", "private"]


@pytest.mark.parametrize("name", ["deep", "row-not-object", "infinity", "calibration-level"])
def test_the_leaderboard_says_which_file_and_writes_nothing(tmp_path, capsys, name):
    path = write(tmp_path, name)
    out = tmp_path / "RESULTS.md"
    assert main([path, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hypeedit-leaderboard: error: {path}: not a results file") and "Traceback" not in err
    assert not out.exists() and "inf%" not in err


def test_the_leaderboard_takes_an_honest_file(tmp_path, capsys):
    path = tmp_path / "ok.json"
    path.write_text(results_text())
    assert main([str(path)]) == 0
    table = capsys.readouterr().out
    assert "50.0%" in table and "inf" not in table


@pytest.mark.parametrize("name", ["deep", "row-not-object"])
def test_a_hostile_baseline_is_a_usage_error_naming_it(bench, name):
    # Before: the deep file was an INTERNALERROR; rows: [1] a traceback at the end, with no results written.
    path = write(bench.path, name)
    result = bench.runpytest(*args("--baseline", path))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([f"*--baseline {path}: not a results file*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_runs_own_results_file_is_a_baseline_the_next_run_takes(bench):
    first = bench.runpytest(*args())
    assert first.ret == 1  # single items fail; no gate
    (bench.path / "old.json").write_text(json.dumps(results(bench)))
    again = bench.runpytest(*args("--baseline", "old.json"))
    assert again.ret == 1 and results(bench)["rows"][0]["baseline"]["pass_rate"]
