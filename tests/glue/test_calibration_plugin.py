"""``--calibrate labels:...`` end to end with pytester: the rows' calibrated keys, the design, the terminal table,
gates and the baseline on calibrated figures, and ``record.human`` with the raters' notes."""

from __future__ import annotations

import json
import random

import pytest
from benchdata import make_tasks, write_labels, write_split
from terminal_text import said

from pytest_hypeedit.sample_design import design_path, draw, write_design

TASKS, REPEATS, MODEL = 8, 4, "identity"
KEYS = [(f"task-{t:02d}", MODEL, r) for t in range(TASKS) for r in range(1, REPEATS + 1)]
rng = random.Random(5)
TRUTH = {key: rng.random() < 0.5 for key in KEYS}
JUDGE = {key: (passed if rng.random() < 0.8 else not passed) for key, passed in TRUTH.items()}

CAPTURE = """
import json
import pytest

@pytest.hookimpl(optionalhook=True, trylast=True)
def pytest_hypeedit_record(config, record):
    with open("human.jsonl", "a") as out:
        out.write(json.dumps([record.task_id, record.repeat, record.human]) + "\\n")
"""


@pytest.fixture
def bench(pytester, monkeypatch, tmp_path):
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    pytester.makeconftest(CAPTURE)
    write_labels(pytester.path / "judge.json", JUDGE)  # stands in for the automatic judge
    return pytester


def sample_panel(pytester, size=12, seed=1, design=True):
    """A design drawn as hypeedit-review draws it, and one rater's labels (the truth) of its sample, with notes."""
    folder = pytester.mkdir("panel")
    drawn = draw("mini", {MODEL: [(t, r) for t, _, r in KEYS]}, size, seed)
    if design:
        write_design(design_path(folder), drawn)
    sampled = {key: TRUTH[key] for key in sorted(drawn.sampled())}
    write_labels(folder / "ann.json", sampled, notes={key: "the edit is missing" for key, ok in sampled.items() if not ok})
    return drawn, sampled


def run(pytester, *extra):
    return pytester.runpytest("-p", "no:cacheprovider", "--model", MODEL, "--tasks", "mini.json", "--images-base",
                              "images", "--repeats", str(REPEATS), "--outputs", "out", "--judge", "labels:judge.json",
                              "--bootstrap", "200", *extra)


def row_of(pytester, name="out/results.json"):
    return json.loads((pytester.path / name).read_text())["rows"][0]


def test_a_recorded_sample_calibrates_every_row_and_leads_the_table(bench):
    drawn, sampled = sample_panel(bench)
    result = run(bench, "--calibrate", "labels:panel")
    row = row_of(bench)
    for key in ("calibrated", "human_sample"):
        assert set(row[key]) == {"pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "effective_cost",
                                 "first_attempt_pass_rate", "hype_gap"}
        assert all({"value", "low", "high"} <= set(v) for v in row[key].values())
    # 4 human PASS and 8 FAIL: too few for the judge's error, so only the (prediction-powered) pass rate is
    # calibrated; the others are withheld with the reason, never borrowed from another model
    assert row["calibrated"]["pass_rate"]["level"] == 0.95 and row["calibrated"]["pass_rate"]["target"] == "population"
    assert all(row["calibrated"][k]["value"] is None and "8 human PASS" in row["calibrated"][k]["reason"]
               for k in ("pass_at_4", "effective_cost"))
    calibration = row["calibration"]
    assert calibration["design"] == "recorded" and calibration["n_human"] == 12
    assert "12 of 32 judged candidates labelled (37.5%)" in calibration["note"]
    assert "sample-design.json" in calibration["note"]
    assert row["judge_error"]["n_human"] == 12 and row["judge_error"]["pooled"] in (True, False)
    # PPI by hand: the judge's pass rate plus the sample's mean error, each label weighed by 32/12
    judge_rate = sum(JUDGE.values()) / 32
    correction = sum(TRUTH[k] - JUDGE[k] for k in sampled) / 12
    assert row["calibrated"]["pass_rate"]["value"] == pytest.approx(judge_rate + correction)
    assert row["pass_rate"] == pytest.approx(judge_rate)  # today's key is still the judge's own
    this_run = row["calibrated_this_run"]["pass_rate"]
    assert this_run["target"] == "this_run" and this_run["value"] == pytest.approx(judge_rate + correction)
    figures = [f"{100 * row['calibrated']['pass_rate']['value']:.1f}%", "n/a"]
    judge_figures = [f"{100 * row[k]:.1f}%" for k in ("pass_rate", "pass_at_4")]
    said(result,  # the details first, the results table last (the terminal ends with it); prose is folded
        "*calibrated with a human sample (--calibrate)*",
        "identity (mini): judge sensitivity * from * human PASS, specificity * from * human FAIL*",
        "  ! needs at least 8 human PASS and 8 human FAIL labels of this model's own*",
        "  ! only 12 human labels (fewer than 30)*",
        "  calibrated (95% intervals for the population of tasks): pass_rate *",  # every metric's with -v
        "  this run, all human (what a full review of these candidates would give): pass_rate *%*",
        "Model Split Figures Pass rate",  # the table's cells, each run of spaces read as one
        f"identity mini calibrated {figures[0]} {figures[1]} ",
        f" judge {judge_figures[0]} {judge_figures[1]} ",
    )
    humans = [json.loads(line) for line in (bench.path / "human.jsonl").read_text().splitlines()]
    labelled = {(t, r): h for t, r, h in humans if h is not None}
    assert len(humans) == 32 and len(labelled) == 12
    failed = next(k for k, ok in sampled.items() if not ok)
    assert labelled[(failed[0], failed[2])] == {"verdict": "FAIL", "votes": [
        {"rater": "ann", "verdict": "FAIL", "note": "the edit is missing"}]}


def test_labels_without_a_design_are_taken_as_a_simple_random_sample_and_say_so(bench):
    sample_panel(bench, design=False)
    run(bench, "--calibrate", "labels:panel/ann.json")
    calibration = row_of(bench)["calibration"]
    assert calibration["design"] == "assumed-srs"
    assert "no sampling design recorded: the labels are taken as a simple random sample" in calibration["note"]


def test_labels_outside_the_recorded_sample_are_left_out(bench):
    drawn, sampled = sample_panel(bench, size=8)
    extra = next(k for k in KEYS if k not in sampled)
    write_labels(bench.path / "panel" / "ann.json", {**sampled, extra: TRUTH[extra]})
    run(bench, "--calibrate", "labels:panel")
    calibration = row_of(bench)["calibration"]
    assert calibration["n_human"] == 8 and "1 labels of candidates the design did not draw left out" in calibration["note"]


def test_gates_and_the_baseline_read_the_calibrated_figures(bench):
    sample_panel(bench)
    run(bench, "--calibrate", "labels:panel", "--results", "old.json")
    value = row_of(bench, "old.json")["calibrated"]["pass_rate"]["value"]
    result = run(bench, "--calibrate", "labels:panel", "--baseline", "old.json",
                 "--gate", f"calibrated.pass_rate>={value - 0.01:.4f}", "--gate", "calibrated.pass_rate>=baseline-0.01")
    assert result.ret == 0
    comparison = row_of(bench)["calibrated_baseline"]["pass_rate"]
    assert comparison["difference"] == pytest.approx(0) and comparison["tasks"] == TASKS
    # the same candidates and labels twice: every task moved by 0, so a zero-width interval, which is none
    assert comparison["low"] is None and comparison["high"] is None and "same amount" in comparison["degenerate"]
    said(result, "calibrated vs baseline: pass_rate * difference 0.0% (no interval: every shared task changed by "
                 "the same amount)",  # details, then gates last
         "PASS gate 'calibrated.pass_rate>=baseline-0.01' on identity (mini): calibrated.pass_rate = *baseline * on 8 "
         "shared tasks")
    failing = run(bench, "--calibrate", "labels:panel", "--gate", f"calibrated.pass_rate.low>={value + 0.3:.4f}")
    assert failing.ret == 1
    without = run(bench, "--gate", "calibrated.pass_rate>=0.1")  # not accepted before anything is bought
    assert without.ret == pytest.ExitCode.USAGE_ERROR
    without.stderr.fnmatch_lines(["*--gate 'calibrated.pass_rate>=0.1' gates on a calibrated figure, which only a "
                                  "run with --calibrate labels:PATH has*"])


def test_record_human_comes_from_the_agreement_panel_too(bench):
    _, sampled = sample_panel(bench)
    run(bench, "--agreement", "labels:panel")
    humans = [json.loads(line) for line in (bench.path / "human.jsonl").read_text().splitlines()]
    assert sum(1 for _, _, h in humans if h) == len(sampled)
    assert "calibrated" not in row_of(bench)  # agreement alone does not change the figures


def test_a_labels_judge_s_own_panel_fills_record_human(bench):
    run(bench)
    humans = [json.loads(line) for line in (bench.path / "human.jsonl").read_text().splitlines()]
    assert all(h and h["votes"][0]["rater"] == "judge" for _, _, h in humans)


def test_a_bad_calibrate_option_is_a_usage_error_before_the_run(bench):
    result = run(bench, "--calibrate", "panel")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--calibrate 'panel': expected labels:PATH*"])
    bench.mkdir("broken")
    (bench.path / "broken" / "sample-design.json").write_text("{}")
    write_labels(bench.path / "broken" / "ann.json", {KEYS[0]: True})
    result = run(bench, "--calibrate", "labels:broken")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*sample-design.json: not a sampling design*"])


def test_results_md_carries_the_calibrated_figures_with_their_intervals(bench):
    sample_panel(bench)
    run(bench, "--calibrate", "labels:panel")
    row = row_of(bench)
    markdown = (bench.path / "out" / "results.md").read_text()
    entry = row["calibrated"]["pass_rate"]
    assert "Calibrated with a human sample (95% intervals for the population of tasks" in markdown
    assert (f"| identity | {100 * entry['value']:.1f}% ({100 * entry['low']:.1f}% – {100 * entry['high']:.1f}%) "
            "| n/a |") in markdown
    assert "- identity: needs at least 8 human PASS and 8 human FAIL labels" in markdown


BOOM = """
import pytest_hypeedit.analysis.calibration as calibration

original = calibration.calibrate

def pytest_configure(config):
    def boom(*args, **kwargs):
        raise OverflowError("planted: (34, 'Numerical result out of range')")
    calibration.calibrate = boom

def pytest_unconfigure(config):
    calibration.calibrate = original
"""


def test_a_calibration_that_fails_never_aborts_the_run_and_names_the_problem(bench):
    sample_panel(bench)
    bench.makeconftest(CAPTURE + BOOM)
    result = run(bench, "--calibrate", "labels:panel")
    assert result.ret == 1  # the run's own outcome (the judge failed 17 candidates), not an internal error
    row = row_of(bench)  # the results were written
    assert "calibrated" not in row and row["pass_rate"] is not None
    (problem,) = row["calibration"]["problems"]
    assert problem.startswith("calibration failed (OverflowError: planted")
    result.stdout.fnmatch_lines(["  ! calibration failed (OverflowError: planted*", "*HYPE-EDIT-1 results*"])
    assert "Traceback" not in result.stdout.str()
    assert (bench.path / "out" / "results.md").is_file()


def test_a_model_without_labels_of_its_own_gets_no_calibrated_figures_and_says_why(bench):
    drawn, sampled = sample_panel(bench, size=8)
    outside = next(k for k in KEYS if k not in sampled)  # a label, but of a candidate the design did not draw
    write_labels(bench.path / "panel" / "ann.json", {outside: TRUTH[outside]})
    result = run(bench, "--calibrate", "labels:panel")
    row = row_of(bench)
    assert "calibrated" not in row and row["calibration"]["n_human"] == 0
    assert row["calibration"]["problems"] == ["no human label of this model's own: no calibrated figures (another "
                                              "model's judge error is not borrowed: it differs by model); label "
                                              "some of its candidates"]
    result.stdout.fnmatch_lines(["  ! no human label of this model's own: no calibrated figures*"])


def test_labels_without_a_design_drawn_mostly_from_judge_fails_are_flagged(bench):
    folder = bench.mkdir("panel")
    fails = {key: TRUTH[key] for key, passed in JUDGE.items() if not passed}
    one_pass = next(key for key, passed in JUDGE.items() if passed)
    write_labels(folder / "ann.json", {**fails, one_pass: TRUTH[one_pass]})
    run(bench, "--calibrate", "labels:panel/ann.json")
    problems = row_of(bench)["calibration"]["problems"]
    judge_pass = sum(JUDGE.values())
    assert any(p.startswith(f"the labels are not a simple random sample: 1 of {judge_pass} judge PASS but "
                            f"{32 - judge_pass} of {32 - judge_pass} judge FAIL were labelled") for p in problems)
    # a design-free sample labelled alike on both sides is not flagged
    write_labels(folder / "ann.json", {key: TRUTH[key] for key in KEYS[::2]})
    run(bench, "--calibrate", "labels:panel/ann.json")
    assert not any("not a simple random sample" in p for p in row_of(bench)["calibration"]["problems"])


def test_a_design_stratified_by_the_judge_s_verdict_weighs_each_label_by_its_stratum(bench):
    # The judge's FAILs labelled at a higher rate than its PASSes, as the design's verdict strata record: the
    # prediction-powered pass rate weighs each label by its own stratum's inclusion probability.
    from pytest_hypeedit.sample_design import Design, Stratum

    folder = bench.mkdir("panel")
    positions = {verdict: [(t, r) for t, _, r in KEYS if JUDGE[(t, MODEL, r)] == (verdict == "PASS")]
                 for verdict in ("PASS", "FAIL")}
    drawn = {"PASS": positions["PASS"][::4], "FAIL": positions["FAIL"][::2]}
    strata = tuple(Stratum(MODEL, "mini", tuple(positions[v]), tuple(drawn[v]), v) for v in ("PASS", "FAIL"))
    write_design(design_path(folder), Design("mini", 1, 12, strata))
    labelled = {(t, MODEL, r): TRUTH[(t, MODEL, r)] for v in drawn for t, r in drawn[v]}
    write_labels(folder / "ann.json", labelled)
    run(bench, "--calibrate", "labels:panel")
    row = row_of(bench)
    assert row["calibration"]["stratified_by_verdict"] is True
    assert "stratified by the judge's verdict" in row["calibration"]["note"]
    n = len(KEYS)
    correction = sum((TRUTH[(t, MODEL, r)] - JUDGE[(t, MODEL, r)]) * len(positions[v]) / len(drawn[v])
                     for v in drawn for t, r in drawn[v]) / n
    expected = sum(JUDGE.values()) / n + correction  # every task has 4 candidates: a plain mean
    assert row["calibrated"]["pass_rate"]["value"] == pytest.approx(min(1.0, max(0.0, expected)))
    unweighted = sum(JUDGE.values()) / n + sum(TRUTH[k] - JUDGE[k] for k in labelled) / len(labelled)
    assert abs(expected - unweighted) > 0.01  # the weights matter here: the test could tell them apart


def test_a_design_stratum_with_an_unknown_verdict_is_not_accepted_by_name(tmp_path):
    from pytest_hypeedit.errors import InputError
    from pytest_hypeedit.sample_design import read_design

    path = tmp_path / "sample-design.json"
    path.write_text(json.dumps({"schema": "hypeedit-sample-design/1", "split": "mini", "seed": 1, "requested": 1,
                                "strata": [{"model": MODEL, "split": "mini", "verdict": "MAYBE",
                                            "population": [["task-00", 1]], "sample": [["task-00", 1]]}]}))
    with pytest.raises(InputError, match=r"strata\[0\]\.verdict must be \"PASS\" or \"FAIL\".*got 'MAYBE'"):
        read_design(path)
