"""Files anyone may have written are validated by type and read with bounds (pytest_hypeedit/untrusted.py).

A record of the wrong shape is one warning naming its file and is treated as absent (the candidate on disk is
adopted, never bought again, and judged anew); never an INTERNALERROR, a traceback or an error on every item.  Task,
labels and models files of the wrong shape are a usage error naming the file and the key.  Nesting and alias
expansion are bounded: a YAML alias bomb and JSON nested 100,000 deep are not accepted within seconds, by name.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from benchdata import make_tasks, write_labels, write_split
from fake_models import models_conftest
from terminal_text import said

from pytest_hypeedit.engine.records import MalformedRecord, Record
from pytest_hypeedit.untrusted import (
    MAX_DEPTH,
    UntrustedInput,
    load_json_file,
    load_yaml_file,
)

TASKS, REPEATS = 2, 2

CONFTEST = models_conftest(models=({"name": "paid", "route": "paid", "provider_model": "p-1", "price": 0.01},))

#: Bombs: nine levels of nine aliases (9**9 values once expanded) in 580 bytes.
ALIAS_BOMB = "".join(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
                     for prev, name in zip([None, *"abcdefgh"], "abcdefghi"))
DEEP_JSON = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path):
    pytester.makeconftest(CONFTEST)
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    write_labels(pytester.path / "r1.json", {(f"task-{t:02d}", "paid", r): True
                                             for t in range(TASKS) for r in range(1, REPEATS + 1)})
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    pytester.calls = tmp_path / "calls.log"
    pytester.cache = tmp_path / "cache"
    return pytester


@pytest.fixture(scope="module")
def first_run_copy(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("first-run")


def first_run(bench, saved: Path) -> None:
    """The run every record case starts from: every candidate bought, judged and written.  It is made once per
    module, in the first case that asks, and its outputs, call log and cache are copied into each later case's
    folders (18 cases each bought the same four candidates again, a third of the module's runs).  What the caches
    keep is keyed by absolute path (checked-images.json, the signals' small references): the copies miss and
    the next run decodes them again, as it would after a fresh first run."""
    parts = ((bench.path / "out", saved / "out"), (bench.calls, saved / "calls.log"), (bench.cache, saved / "cache"))
    if not (saved / "complete").exists():
        run(bench).assert_outcomes(passed=TASKS * REPEATS)
        assert len(calls(bench)) == TASKS * REPEATS
        for made, kept in parts:
            (shutil.copytree if made.is_dir() else shutil.copy2)(made, kept)
        (saved / "complete").touch()
        return
    for made, kept in parts:
        (shutil.copytree if kept.is_dir() else shutil.copy2)(kept, made)


def run(bench, *extra):
    return bench.runpytest("-p", "no:cacheprovider", "--model", "paid", "--tasks", "mini.json", "--images-base",
                           "images", "--repeats", str(REPEATS), "--outputs", "out", "--judge", "labels:r1.json",
                           *extra)


def calls(bench) -> list[str]:
    return bench.calls.read_text().splitlines() if bench.calls.exists() else []


RECORD = Path("out/mini/paid/task-00/001.json")

MALFORMED = {
    "judgements is a list": lambda d: {**d, "judgements": []},
    "signals is text": lambda d: {**d, "signals": "x"},
    "extra is a list": lambda d: {**d, "extra": []},
    "votes is text": lambda d: {**d, "votes": "x"},
    "repeat is text": lambda d: {**d, "repeat": "1"},
    "a verdict entry is text": lambda d: {**d, "judgements": {"gemini-3-flash": "PASS"}},
    "a verdict entry's votes are text": lambda d: {**d, "judgements": {"j": {"verdict": "PASS", "votes": "x"}}},
    "a signal is a list": lambda d: {**d, "signals": {"ssim": [1, 2]}},
    "cost is text": lambda d: {**d, "cost": "0.01"},
    "outcome is made up": lambda d: {**d, "outcome": "maybe"},
    "possibly_paid holds text": lambda d: {**d, "possibly_paid": ["x"]},
    "human is a list": lambda d: {**d, "human": []},
    "no task_id": lambda d: {k: v for k, v in d.items() if k != "task_id"},
}


@pytest.mark.parametrize("how", sorted(MALFORMED))
def test_a_malformed_record_is_reported_by_name_and_treated_as_absent(bench, first_run_copy, how):
    first_run(bench, first_run_copy)
    path = bench.path / RECORD
    path.write_text(json.dumps(MALFORMED[how](json.loads(path.read_text()))))
    result = run(bench)
    result.assert_outcomes(passed=TASKS * REPEATS)  # no crash, no ERROR: the candidate on disk is adopted
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text
    assert len(calls(bench)) == TASKS * REPEATS  # nothing bought again
    [warning] = [line for line in result.stdout.lines if "not a valid record" in line]
    assert str(RECORD) in warning
    Record.from_dict(json.loads(path.read_text()))  # rewritten as a valid record
    rerun = run(bench)
    assert "not a valid record" not in rerun.stdout.str()  # said once, for the run that found it


def test_a_malformed_record_is_reported_under_xdist_too(bench, first_run_copy):
    first_run(bench, first_run_copy)
    path = bench.path / RECORD
    path.write_text(json.dumps({**json.loads(path.read_text()), "judgements": []}))
    result = run(bench, "-n", "2")
    result.assert_outcomes(passed=TASKS * REPEATS)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert len(calls(bench)) == TASKS * REPEATS
    assert result.stdout.str().count("not a valid record") == 1
    said(result, f"*hypeedit: warning: *{RECORD}: not a valid record ('judgements' must be an object, not a list)*")


@pytest.mark.parametrize("content", [DEEP_JSON, '{"reasoning": "' + "x" * (2 << 20) + '"}', "[1, 2]", "{bad"],
                         ids=["nested 100,000 deep", "over 1 MiB", "a list", "not JSON"])
def test_a_record_past_the_bounds_is_reported_by_name_and_treated_as_absent(bench, first_run_copy, content):
    first_run(bench, first_run_copy)
    (bench.path / RECORD).write_text(content)
    started = time.monotonic()
    result = run(bench)
    assert time.monotonic() - started < 30
    result.assert_outcomes(passed=TASKS * REPEATS)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert len(calls(bench)) == TASKS * REPEATS
    [warning] = [line for line in result.stdout.lines if "not a valid record" in line]
    assert str(RECORD) in warning


def test_every_field_of_a_record_has_its_type_listed():
    """A field added to Record is listed in records._FIELD_TYPES too, so a doctored record cannot put any value
    in it (unlisted, it would be read unchecked)."""
    import dataclasses

    from pytest_hypeedit.engine import records

    assert {field.name for field in dataclasses.fields(Record)} == set(records._FIELD_TYPES)


def test_the_validator_names_the_field_and_accepts_unknown_scalar_fields():
    base = {"split": "s", "model": "m", "task_id": "t", "repeat": 1}
    with pytest.raises(MalformedRecord, match="'signals' must be an object, not text"):
        Record.from_dict({**base, "signals": "x"})
    with pytest.raises(MalformedRecord, match="'repeat' must be a whole number, not true/false"):
        Record.from_dict({**base, "repeat": True})
    with pytest.raises(MalformedRecord, match=r"judgements\['j'\] must be an object"):
        Record.from_dict({**base, "judgements": {"j": []}})
    # a field this version does not know is dropped (a field added later is listed in _FIELD_TYPES when added)
    assert Record.from_dict({**base, "candidate_sha256": "ab" * 32, "later": {"x": 1}}).key == ("s", "m", "t", 1)
    from pytest_hypeedit.engine import records, signals

    assert records._SIGNALS == set(signals.SIGNAL_KEYS)  # the pixel signals checked are the ones computed
    Record.from_dict({**base, "signals": {"ssim": 0.9, "later": {"sha256": "ab"}}})  # a later key: not checked
    # what only informs is kept as text when a plugin's provider gave a number; a null amount counts 0
    record = Record.from_dict({**base, "request_id": 123, "seed": "s-1", "cost": None, "judge_cost": None})
    assert (record.request_id, record.seed, record.spent) == ("123", "s-1", 0.0)


# --------------------------------------------------------------------------- the loaders


def test_a_yaml_alias_bomb_is_not_accepted_within_a_second(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB)
    assert len(ALIAS_BOMB) < 600
    started = time.monotonic()
    with pytest.raises(UntrustedInput, match="aliases"):
        load_yaml_file(path, 1 << 20)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("loader, text", [(load_json_file, DEEP_JSON),
                                          (load_yaml_file, "a: " + "[" * 100_000 + "]" * 100_000),
                                          (load_json_file, "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))],
                         ids=["json 100,000 deep", "yaml 100,000 deep", f"json {MAX_DEPTH + 1} deep"])
def test_deep_nesting_is_not_accepted_with_a_clear_message(tmp_path, loader, text):
    path = tmp_path / "deep"
    path.write_text(text)
    with pytest.raises(UntrustedInput, match=f"nested deeper than {MAX_DEPTH} levels"):
        loader(path, 1 << 20)


def test_depth_up_to_the_bound_and_honest_anchors_are_read(tmp_path):
    path = tmp_path / "ok.json"
    path.write_text("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    assert load_json_file(path, 1 << 20) is not None
    path = tmp_path / "ok.yaml"
    path.write_text("base: &base {rpm: 10}\nmodels:\n  a: {<<: *base, route: x}\n  b: {<<: *base, route: y}\n")
    assert load_yaml_file(path, 1 << 20)["models"]["b"] == {"rpm": 10, "route": "y"}


def test_a_file_over_its_size_bound_is_not_accepted_before_it_is_read_whole(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (2 << 20) + b"[]")
    with pytest.raises(UntrustedInput, match="larger than 1 MiB"):
        load_json_file(path, 1 << 20)


# --------------------------------------------------------------------------- task, labels and models files


def usage_error(result) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text and "RecursionError" not in text, text
    [line] = [line for line in result.stderr.lines if line.startswith("ERROR: ")]
    return line


def test_a_models_file_alias_bomb_is_a_usage_error_within_seconds(bench):
    (bench.path / "mine.yaml").write_text(ALIAS_BOMB.replace("a: &a", "models: {}\na: &a"))
    started = time.monotonic()
    line = usage_error(run(bench, "--models-file", "mine.yaml"))
    assert time.monotonic() - started < 10
    assert "mine.yaml" in line and "aliases" in line


@pytest.mark.parametrize("text, key", [("models: {x: {route: r, price: 1, note: [1]}}", "'note' must be text"),
                                       ("models: {x: {route: r, price: 1, provider_model: {a: 1}}}", "'provider_model'"),
                                       ("routes: [1, 2]", "'routes:' must be a mapping"),
                                       ("routes: {fal: [1]}", "routes.fal must be a mapping"),
                                       ("models: " + "[" * 100 + "]" * 100, "nested deeper than 64")])
def test_a_models_file_of_the_wrong_types_is_a_usage_error_naming_file_and_key(bench, text, key):
    (bench.path / "mine.yaml").write_text(text)
    line = usage_error(run(bench, "--models-file", "mine.yaml"))
    assert "mine.yaml" in line and key in line, line


def test_a_deeply_nested_task_file_is_a_usage_error_naming_it(bench):
    (bench.path / "deep.json").write_text(DEEP_JSON)
    line = usage_error(bench.runpytest("-p", "no:cacheprovider", "--model", "paid", "--tasks", "deep.json",
                                       "--judge", "labels:r1.json"))
    assert "deep.json" in line and "nested deeper than 64 levels" in line, line


def test_a_deeply_nested_labels_file_is_a_usage_error_naming_it(bench):
    (bench.path / "r1.json").write_text('{"schema_version": 2, "judgements": ' + DEEP_JSON + "}")
    line = usage_error(run(bench))
    assert "r1.json" in line and "nested deeper than 64 levels" in line, line
