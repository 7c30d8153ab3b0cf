"""The plugin end to end with pytester: items, resume, errors, xdist, metrics in the results JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchdata import make_tasks, write_labels, write_split
from fake_models import PAID, PAID_B, models_conftest

PAID_CONFTEST = models_conftest(models=(PAID, PAID_B), key_env=("PAID_API_KEY",), log="{task} {model} {repeat}",
                                provider_model="paid-v1", seed="request")


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path):
    """A 4-task split 'mini' with images, the paid provider conftest, and a call log."""
    pytester.makeconftest(PAID_CONFTEST)
    write_split(pytester.path, "mini", make_tasks(4), pytester.path / "images")
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("PAID_API_KEY", "paid-secret-value-123")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    return pytester


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def all_labels(path: Path, tasks: int, models: list[str], repeats: int, passed) -> Path:
    verdicts = {
        (f"task-{t:02d}", model, r): passed(t, model, r)
        for t in range(tasks)
        for model in models
        for r in range(1, repeats + 1)
    }
    return write_labels(path, verdicts)


def base_args(*extra: str, repeats: int = 3) -> list[str]:
    return ["--tasks", "mini.json", "--images-base", "images", "--repeats", str(repeats), "--outputs", "out", *extra]


def results(pytester) -> dict:
    return json.loads((pytester.path / "out" / "results.json").read_text())


def test_items_have_readable_ids_and_task_type_markers(bench):
    result = bench.runpytest(*base_args("--model", "identity", "--collect-only", "-q", "--strict-markers", "-m", "remove"))
    result.stdout.fnmatch_lines(["hypeedit::mini::task-00[[]identity-r001]", "hypeedit::mini::task-02[[]identity-r003]"])
    assert "task-01" not in result.stdout.str()  # task 1 is a "change" task
    assert result.ret == 0


def test_pass_and_fail_follow_the_labels_and_failure_message_is_the_reasoning(bench):
    all_labels(bench.path / "r1.json", 4, ["identity"], 2, lambda t, m, r: t == 0)
    # --tb=short: pytest's own section per item shows each message (by default the terminal groups them by task)
    result = bench.runpytest(*base_args("--model", "identity", "--judge", "labels:r1.json", "--tb=short", repeats=2))
    result.assert_outcomes(passed=2, failed=6)
    result.stdout.fnmatch_lines(["*task-01 identity r001: FAIL (labels[[]1 rater]): human panel: 0 PASS / 1 FAIL*"])
    assert "Traceback" not in result.stdout.str()


def test_serial_and_xdist_runs_write_identical_results(bench, tmp_path):
    all_labels(bench.path / "r1.json", 4, ["paid", "identity"], 3, lambda t, m, r: (t + r) % 2 == 0)
    args = base_args("--model", "paid", "--model", "identity", "--judge", "labels:r1.json")
    bench.runpytest(*args, "--results", "serial.json")
    serial = json.loads((bench.path / "serial.json").read_text())
    for path in (bench.path / "out").iterdir():  # start the second run from scratch
        if path.is_dir():
            import shutil

            shutil.rmtree(path)
    result = bench.runpytest(*args, "-n", "2", "--results", "xdist.json")
    assert "2 workers" in result.stdout.str()
    xdist = json.loads((bench.path / "xdist.json").read_text())
    for results_ in (serial, xdist):  # when each run bought its candidates: seconds apart, by design
        assert results_["serving"].pop("bought")
    assert serial == xdist
    assert {(r["model"], r["split"]) for r in serial["rows"]} == {("paid", "mini"), ("identity", "mini")}


def test_rerun_reuses_candidates_and_verdicts_and_needs_no_key(bench, tmp_path, monkeypatch):
    all_labels(bench.path / "r1.json", 4, ["paid"], 3, lambda t, m, r: r == 2)
    args = base_args("--model", "paid", "--judge", "labels:r1.json")
    bench.runpytest(*args).assert_outcomes(passed=4, failed=8)
    assert len(calls(tmp_path)) == 12
    first = results(bench)
    monkeypatch.delenv("PAID_API_KEY")
    again = bench.runpytest(*args)
    again.assert_outcomes(passed=4, failed=8)
    assert len(calls(tmp_path)) == 12  # nothing paid twice
    second = results(bench)
    assert second["rows"][0]["spent"] == first["rows"][0]["spent"] == pytest.approx(12 * 0.04)
    assert second["rows"][0]["spent_this_run"] == 0


def test_missing_key_is_a_usage_error_before_any_call(bench, tmp_path, monkeypatch):
    monkeypatch.delenv("PAID_API_KEY")
    all_labels(bench.path / "r1.json", 4, ["paid"], 3, lambda t, m, r: True)
    result = bench.runpytest(*base_args("--model", "paid", "--judge", "labels:r1.json"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*route paid needs an API key: set PAID_API_KEY*"])
    assert calls(tmp_path) == []


def test_refusal_counts_as_fail_and_is_not_paid_again(bench, tmp_path, monkeypatch):
    monkeypatch.setenv("PAID_BEHAVIOUR", "refuse")
    all_labels(bench.path / "r1.json", 4, ["paid"], 2, lambda t, m, r: True)
    args = base_args("--model", "paid", "--judge", "labels:r1.json", repeats=2)
    result = bench.runpytest(*args)
    result.assert_outcomes(passed=4, failed=4)
    result.stdout.fnmatch_lines(["REFUSED x4, e.g. task-0? paid r001: refused: moderation_blocked"])
    row = results(bench)["rows"][0]
    assert (row["refusals"], row["judged"], row["pass_rate"]) == (4, 8, 0.5)
    bench.runpytest(*args)
    assert len(calls(tmp_path)) == 8


def test_provider_error_is_an_error_not_a_failure_and_is_retried_next_run(bench, tmp_path, monkeypatch):
    monkeypatch.setenv("PAID_BEHAVIOUR", "error")
    all_labels(bench.path / "r1.json", 4, ["paid"], 2, lambda t, m, r: True)
    args = base_args("--model", "paid", "--judge", "labels:r1.json", repeats=2)
    result = bench.runpytest(*args)
    result.assert_outcomes(passed=4, errors=4)
    row = results(bench)["rows"][0]
    assert (row["errors"], row["judged"], row["pass_rate"], results(bench)["complete"]) == (4, 4, 1.0, False)
    assert "INCOMPLETE" in result.stdout.str()
    monkeypatch.setenv("PAID_BEHAVIOUR", "")
    bench.runpytest(*args).assert_outcomes(passed=8)
    assert len(calls(tmp_path)) == 12  # 8 first time, then only the 4 that errored
    assert results(bench)["complete"] is True


def test_unlabelled_candidate_is_an_error_naming_task_model_and_repeat(bench):
    all_labels(bench.path / "r1.json", 3, ["identity"], 1, lambda t, m, r: True)  # task-03 unlabelled
    result = bench.runpytest(*base_args("--model", "identity", "--judge", "labels:r1.json", repeats=1))
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["ERROR task-03 identity r001: judge labels[[]1 rater]: no rater labelled this candidate in*"])


def test_majority_of_three_raters_decides(bench):
    # three raters never tie (tests/test_labels_panel.py has the ties of even panels)
    verdicts = [lambda t, m, r: True, lambda t, m, r: t % 2 == 0, lambda t, m, r: False]
    for i, rule in enumerate(verdicts):
        all_labels(bench.path / f"rater{i}.json", 4, ["identity"], 1, rule)
    spec = "labels:rater0.json,rater1.json,rater2.json"
    result = bench.runpytest(*base_args("--model", "identity", "--judge", spec, "--tb=short", repeats=1))
    # tasks 0 and 2: 2 PASS / 1 FAIL -> PASS; tasks 1 and 3: 1 PASS / 2 FAIL -> FAIL
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*task-01 identity r001: FAIL (labels[[]3 raters]): human panel: 1 PASS / 2 FAIL"])
    assert "a tie counts as FAIL" not in result.stdout.str()
    assert results(bench)["rows"][0]["pass_rate"] == 0.5


def test_two_splits_give_hand_computed_rows_and_a_pooled_combined_row(bench):
    write_split(bench.path, "second", make_tasks(2, prefix="other"), bench.path / "images")
    verdicts = {}
    # mini: task-00 passes 3/3, task-01 1/3 (repeat 1), task-02 0/3, task-03 2/3 (repeats 2, 3)
    wins = {"task-00": {1, 2, 3}, "task-01": {1}, "task-02": set(), "task-03": {2, 3}, "other-00": {3}, "other-01": set()}
    for task_id, passing in wins.items():
        for r in (1, 2, 3):
            verdicts[(task_id, "identity", r)] = r in passing
    write_labels(bench.path / "r1.json", verdicts)
    args = ["--tasks", "mini.json", "--tasks", "second.json", "--images-base", "images", "--repeats", "3"]
    bench.runpytest(*args, "--outputs", "out", "--model", "identity", "--judge", "labels:r1.json")
    rows = {r["split"]: r for r in results(bench)["rows"]}
    assert set(rows) == {"mini", "second", "combined"}
    mini, combined = rows["mini"], rows["combined"]
    # p = 1, 1/3, 0, 2/3 -> mean 0.5; first attempts: task-00, task-01 -> 0.5; pass@10: 3/4
    assert mini["pass_rate"] == pytest.approx(0.5)
    assert mini["first_attempt_pass_rate"] == pytest.approx(0.5)
    assert mini["pass_at_10"] == pytest.approx(0.75)
    assert mini["hype_gap"] == pytest.approx(0.25)
    s = [1.0, 1 - (2 / 3) ** 4, 0.0, 1 - (1 / 3) ** 4]
    assert mini["pass_at_4"] == pytest.approx(sum(s) / 4)
    # combined pools the 6 tasks: p = 1, 1/3, 0, 2/3, 1/3, 0 -> mean 7/18
    assert combined["pass_rate"] == pytest.approx(7 / 18)
    assert combined["tasks"] == 6 and combined["candidates"] == 18
    assert rows["second"]["pass_at_10"] == pytest.approx(0.5)
    md = (bench.path / "out" / "results.md").read_text()
    assert "## Combined" in md and "| identity | 38.9% |" in md


def test_unknown_model_lists_the_known_ones(bench):
    result = bench.runpytest(*base_args("--model", "nope"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--model nope: unknown model. Known models: *identity*seedream-4.5*"])


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda p: p.joinpath("mini.json").write_text("{not json"), "*mini.json: not a JSON task file*"),
        (
            lambda p: p.joinpath("mini.json").write_text(json.dumps([{**make_tasks(1)[0], "task_id": "../../x"}])),
            "*mini.json: task #1: task_id '../../x' is not a plain name*",
        ),
        (
            lambda p: p.joinpath("mini.json").write_text(json.dumps([{**make_tasks(1)[0], "input_images": ["/etc/passwd"]}])),
            "*task task-00: input image '/etc/passwd' is not a plain image file name*",
        ),
        (lambda p: p.joinpath("images/task-02/001.png").unlink(),
         "*reference image '001.png' of task task-02 (split mini) is missing: looked for images/task-02/001.png.*"),
        (
            lambda p: p.joinpath("images/task-01/001.png").write_bytes(p.joinpath("images/task-01/001.png").read_bytes()[:60]),
            "*images/task-01/001.png: reference image of task task-01 (split mini) cannot be decoded*",
        ),
    ],
    ids=["not-json", "hostile-task-id", "hostile-image-name", "missing-image", "truncated-image"],
)
def test_bad_input_is_one_clear_error_line(bench, mutate, expected):
    all_labels(bench.path / "r1.json", 4, ["identity"], 3, lambda t, m, r: True)  # the judge is built first
    mutate(bench.path)
    result = bench.runpytest(*base_args("--model", "identity", "--judge", "labels:r1.json"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_labels_file_with_an_unknown_model_is_one_clear_error(bench):
    write_labels(bench.path / "r1.json", {("task-00", "mystery-model", 1): True})
    result = bench.runpytest(*base_args("--model", "identity", "--judge", "labels:r1.json"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*r1.json: models[[]'M01'] = 'mystery-model' is not a known model*"])
    assert "Traceback" not in result.stderr.str()


def test_plain_test_runs_collect_no_benchmark_items(bench):
    bench.makepyfile(test_plain="def test_ok():\n    assert True\n")
    result = bench.runpytest()
    result.assert_outcomes(passed=1)
    assert "hypeedit::" not in result.stdout.str() and "HYPE-EDIT-1 results" not in result.stdout.str()


def test_default_judge_without_its_key_is_a_usage_error_before_any_call(bench, tmp_path, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    result = bench.runpytest(*base_args("--model", "paid"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*judge gemini-3-flash needs an API key: set GOOGLE_API_KEY or GEMINI_API_KEY*"])
    assert calls(tmp_path) == [] and not (bench.path / "out").exists()
