"""``--agreement labels:...`` end to end with pytester: figures in the results JSON and the terminal."""

from __future__ import annotations

import json

import pytest
from benchdata import make_tasks, write_labels, write_split

CANDIDATES = [(t, r) for t in range(4) for r in (1, 2)]  # 4 tasks x 2 repeats of model "identity"
RATERS = {  # who says PASS: (task, repeat) -> bool
    "r1": lambda t, r: t == 0 or (t == 1 and r == 1),
    "r2": lambda t, r: t in (0, 1),
    "r3": lambda t, r: t == 0 or (t == 2 and r == 1),
}


def labels_file(path, passed):
    return write_labels(path, {(f"task-{t:02d}", "identity", r): passed(t, r) for t, r in CANDIDATES})


@pytest.fixture
def bench(pytester, monkeypatch, tmp_path):
    write_split(pytester.path, "mini", make_tasks(4), pytester.path / "images")  # types: remove, change, remove, change
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    labels_file(pytester.path / "judge.json", lambda t, r: t in (0, 1))  # stands in for the automatic judge
    panel = pytester.mkdir("panel")
    for name, passed in RATERS.items():
        labels_file(panel / f"{name}.json", passed)
    return pytester


def run(pytester, *extra):
    return pytester.runpytest("--model", "identity", "--tasks", "mini.json", "--images-base", "images",
                              "--repeats", "2", "--outputs", "out", "--judge", "labels:judge.json", *extra)


def test_agreement_with_a_three_rater_panel_by_hand(bench):
    result = run(bench, "--agreement", "labels:panel/r1.json,panel/r2.json,panel/r3.json")
    report = json.loads((bench.path / "out" / "results.json").read_text())["agreement"]
    # Majority: (0,1) PPP, (0,2) PPP, (1,1) PPF -> PASS; (1,2) FPF, (2,1) FFP, (2,2), (3,1), (3,2) -> FAIL.
    # The judge passes tasks 0 and 1: both PASS 3, judge PASS/panel FAIL 1 (task 1 r2), both FAIL 4.
    overall = report["by_task_type"]["all"]
    assert overall["confusion"] == {"both_pass": 3, "false_pass": 1, "false_fail": 0, "both_fail": 4}
    # p_o = 7/8; judge PASS 4/8, panel PASS 3/8: p_e = .5*.375 + .5*.625 = .5; kappa = (.875 - .5)/.5 = .75
    assert overall["agreement"] == pytest.approx(0.875) and overall["kappa"] == pytest.approx(0.75)
    assert overall["false_fail_rate"] == 0 and overall["false_pass_rate"] == pytest.approx(1 / 5)
    # "change" = tasks 1, 3: PASS/PASS 1, PASS/FAIL 1, FAIL/FAIL 2: p_o = .75, p_e = .5*.25 + .5*.75 = .5, kappa .5
    change = report["by_task_type"]["change"]
    assert change["kappa"] == pytest.approx(0.5) and change["false_pass_rate"] == pytest.approx(1 / 3)
    assert report["by_task_type"]["remove"]["agreement"] == 1.0
    # Between raters, 8 units of 3 votes, PASS counts 3,3,2,1,1,0,0,0:
    # alpha: o_PF = 2*1/2 + 1*2/2 + 1*2/2 = 3, n_P = 10, n_F = 14, n = 24: 1 - 23*3/140 = 71/140
    # Fleiss: P_e = (10/24)^2 + (14/24)^2 = 74/144; mean P_i = (5*1 + 3*(1/3))/8 = .75; (108-74)/(144-74) = 34/70
    between = report["between_raters"]
    assert between["krippendorff_alpha"] == pytest.approx(71 / 140)
    assert between["fleiss_kappa"] == pytest.approx(34 / 70) and between["fleiss_units"] == 8
    assert report["panel"]["rater_counts"]["r2"] == {"labelled": 8, "PASS": 4, "FAIL": 4}
    assert report["compared"] == 8 and report["even_votes"] == 0
    result.stdout.fnmatch_lines(["*judge vs human panel (--agreement)*", "all * 8 * 87.5% * 0.75 *",
                                 "*Krippendorff's alpha 0.51 over 8 candidates; Fleiss' kappa 0.49*"])


def test_a_folder_of_two_raters_warns_about_even_votes(bench):
    (bench.path / "panel" / "r3.json").unlink()
    result = run(bench, "--agreement", "labels:panel")
    report = json.loads((bench.path / "out" / "results.json").read_text())["agreement"]
    assert report["panel"]["raters"] == 2 and report["even_votes"] == 8
    # r1 and r2 disagree on (1,2) only: a tie, counted as FAIL
    assert any("task-01 model identity repeat 002: 2 votes, 1 PASS (a tie" in w for w in report["warnings"])
    result.stdout.fnmatch_lines(["warning: task task-00 model identity repeat 001: 2 votes*"])


def test_a_bad_agreement_option_is_a_usage_error_before_the_run(bench):
    result = run(bench, "--agreement", "panel/r1.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agreement 'panel/r1.json': expected labels:PATH*"])
    result = run(bench, "--agreement", "labels:panel/missing.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*missing.json: cannot read labels file*"])
    assert not (bench.path / "out" / "results.json").exists()
