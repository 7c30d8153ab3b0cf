"""``--judge-controls``: the judge shown candidates whose right verdict is FAIL without a person, paid once, kept
apart from the models' figures, gated on, and compared with a baseline's (a judge whose served version changed is
named with both versions).  Loopback stand-ins: a paid test judge that passes unchanged references at a known rate,
and the Gemini judge through the real google-genai client against the loopback Gemini fake."""

from __future__ import annotations

import json

import pytest
from benchdata import make_tasks, write_labels, write_split
from fake_judges import judges_conftest
from fake_models import models_conftest
from genai_fakes.fixtures import fake_gemini  # noqa: F401 - fixture
from genai_fakes.gemini import verdict_reply
from upstream_stub import upstream_stub  # noqa: F401 - fixture

from pytest_hypeedit.judges.gemini import FLASH_MODEL

NEWER = "gemini-3.6-flash"

TASKS = 8  # the judge passes the unchanged reference of task-00 and task-04: 2 of 8
CONFTEST = models_conftest(image="png") + judges_conftest("ControlJudge", unchanged_every=4)
#: What a model's row says that the controls must leave as it is.
ROW_FIGURES = ("tasks", "candidates", "judged", "errors", "pass_rate", "pass_at_4", "first_attempt_pass_rate",
               "spent", "intervals")


@pytest.fixture
def bench(pytester, monkeypatch, tmp_path):
    pytester.makeconftest(CONFTEST)
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CONTROL_JUDGE_VERSION", raising=False)
    return pytester


def run(pytester, *extra, outputs="out"):
    return pytester.runpytest("-p", "no:cacheprovider", "--model", "paid", "--tasks", "mini.json",
                              "--images-base", "images", "--repeats", "2", "--outputs", outputs,
                              "--judge", "controljudge", *extra)


def calls(pytester) -> list[str]:
    path = pytester.path / "calls.log"
    return path.read_text().splitlines() if path.exists() else []


def results(pytester, outputs="out") -> dict:
    return json.loads((pytester.path / outputs / "results.json").read_text())


def test_the_controls_report_the_judges_known_false_pass_rate_and_buy_nothing_on_a_rerun(bench):
    result = run(bench, "--judge-controls")
    controls = results(bench)["judge_controls"]["judges"]["controljudge"]
    unchanged = controls["kinds"]["unchanged"]
    assert (unchanged["wrong"], unchanged["judged"]) == (2, TASKS)
    low, high = unchanged["interval"]
    assert low < 2 / TASKS < high and unchanged["rate"] == 2 / TASKS
    assert unchanged["wrong_tasks"] == ["mini/task-00", "mini/task-04"]
    assert {kind: entry["wrong"] for kind, entry in controls["kinds"].items()} == {
        "unchanged": 2, "flat": 0, "other_task": 0, "mirrored": 0}
    assert controls["false_pass"]["wrong"] == 2 and controls["false_pass"]["judged"] == 4 * TASKS
    assert controls["versions"] == {"control-judge-v1": 4 * TASKS}
    assert len([line for line in calls(bench) if line.split()[0] != "paid"]) == 4 * TASKS
    result.stdout.fnmatch_lines([f"hypeedit: --judge-controls: {4 * TASKS} control verdicts to pay, at most $0.32*",
                                 "*judge controls*", "*unchanged*false PASS*2 of 8*25.0%*"])
    image = bench.path / "out" / unchanged["wrong_controls"][0]["image"]
    assert image.read_bytes() == (bench.path / "images" / "task-00" / "001.png").read_bytes()

    before = len(calls(bench))
    run(bench, "--judge-controls")  # every verdict is on disk, bound to its bytes: nothing is asked again
    assert len(calls(bench)) == before
    assert results(bench)["judge_controls"]["judges"]["controljudge"]["kinds"] == controls["kinds"]


def test_the_controls_leave_the_models_figures_as_they_are(bench):
    run(bench, outputs="plain")
    run(bench, "--judge-controls", outputs="with")
    plain, with_controls = results(bench, "plain"), results(bench, "with")
    assert "judge_controls" not in plain
    assert [{key: row.get(key) for key in ROW_FIGURES} for row in plain["rows"]] == \
           [{key: row.get(key) for key in ROW_FIGURES} for row in with_controls["rows"]]
    assert [row["model"] for row in with_controls["rows"]] == ["paid"]  # the control kinds are no models
    assert (plain["coverage"], plain["complete"], plain["judge_versions"]) == (
        with_controls["coverage"], with_controls["complete"], with_controls["judge_versions"])


def test_a_false_pass_gate_passes_or_fails_on_the_controls(bench):
    failed = run(bench, "--judge-controls", "--gate", "judge_false_pass<=0.05", "--junitxml", "j.xml")
    assert failed.ret == 1
    junit = (bench.path / "j.xml").read_text()
    assert 'classname="hypeedit.gates" name="judge_false_pass&lt;=0.05"' in junit
    failed.stdout.fnmatch_lines(["*FAIL gate 'judge_false_pass<=0.05' on judge controljudge (controls)*6.2%*"])
    held = run(bench, "--judge-controls", "--gate", "judge_false_pass<=0.10")
    held.stdout.fnmatch_lines(["*PASS gate 'judge_false_pass<=0.10' on judge controljudge (controls)*"])
    assert held.ret == 0


def test_a_judge_gate_without_controls_is_not_accepted_before_anything_is_bought(bench):
    result = run(bench, "--gate", "judge_false_pass<=0.05")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "add --judge-controls" in result.stderr.str()
    assert calls(bench) == []
    drift = run(bench, "--judge-controls", "--gate", "judge_drift<=0")
    assert drift.ret == pytest.ExitCode.USAGE_ERROR and "pass --baseline" in drift.stderr.str()
    assert calls(bench) == []


def test_a_judge_whose_served_version_changed_is_named_with_both_versions(bench, monkeypatch):
    run(bench, "--judge-controls")
    baseline = bench.path / "baseline.json"
    baseline.write_text((bench.path / "out" / "results.json").read_text())
    monkeypatch.setenv("CONTROL_JUDGE_VERSION", "control-judge-v2")
    result = run(bench, "--judge-controls", "--rejudge", "--baseline", str(baseline),
                 "--gate", "judge_drift<=0")
    out = " ".join(result.stdout.str().split())
    assert "WARNING: judge controljudge drifted since the baseline (served control-judge-v2; baseline " \
           "control-judge-v1)" in out
    assert "served model version control-judge-v2 now, control-judge-v1 in the baseline" in out
    assert result.ret == 1 and "FAIL gate 'judge_drift<=0' on judge controljudge (controls)" in out
    drift = results(bench)["judge_controls"]["drift"]["controljudge"]
    assert drift["drifted"] and drift["versions"] == ["control-judge-v2"]


def test_the_same_judge_against_its_own_baseline_does_not_drift(bench):
    run(bench, "--judge-controls")
    baseline = bench.path / "baseline.json"
    baseline.write_text((bench.path / "out" / "results.json").read_text())
    result = run(bench, "--judge-controls", "--baseline", str(baseline), "--gate", "judge_drift<=0")
    assert "drifted" not in result.stdout.str()
    assert result.ret == 0
    assert results(bench)["judge_controls"]["drift"]["controljudge"]["drifted"] is False


def test_the_estimate_prices_the_controls_and_pays_nothing(bench):
    result = run(bench, "--judge-controls", "--estimate")
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"*--judge-controls: {4 * TASKS} control verdicts to pay, at most $0.32*"])
    assert calls(bench) == []
    run(bench, "--judge-controls")
    again = run(bench, "--judge-controls", "--estimate")  # every control judged: nothing left to pay
    again.stdout.fnmatch_lines(["*--judge-controls: 0 control verdicts to pay, at most $0.00*"])


def test_the_budget_covers_the_control_verdicts(bench):
    run(bench, "--judge-controls", "--budget", "0.20")
    assert len([line for line in calls(bench) if line.split()[0] != "paid"]) == 20  # a cent each, then the cap
    assert [line for line in calls(bench) if line.split()[0] == "paid"] == []  # nothing left for the items
    controls = results(bench)["judge_controls"]["judges"]["controljudge"]
    assert controls["errors"] == 4 * TASKS - 20


def test_under_xdist_the_controls_are_judged_once(bench):
    pytest.importorskip("xdist")
    result = run(bench, "--judge-controls", "-n", "2")
    assert len([line for line in calls(bench) if line.split()[0] != "paid"]) == 4 * TASKS
    assert results(bench)["judge_controls"]["judges"]["controljudge"]["kinds"]["unchanged"]["wrong"] == 2
    assert result.ret == 1  # the items' FAILs, as without controls


def test_the_report_shows_the_controls_the_judge_passed_with_their_image_and_reasoning(bench):
    run(bench, "--judge-controls", "--html", "rep/report.html")
    page = (bench.path / "rep" / "report.html").read_text()
    section = page[page.index('id="hx-judge-controls"'):]
    assert "Judge controlljudge" not in section and "Judge controljudge (served: control-judge-v1 (32))" in section
    assert section.count('<li class="hx-control"><img src="data:image/jpeg;base64,') == 2  # task-00 and task-04
    assert "<b>mini/task-00</b>: the reference unchanged, judged PASS: the reference itself" in section


# --------------------------------------------------------------------------- the Gemini judge, served anew


@pytest.fixture
def gemini_bench(pytester, upstream_stub, fake_gemini):
    write_split(pytester.path, "mini", make_tasks(3), pytester.path / "images")
    fake_gemini.default = verdict_reply("FAIL", "Nothing was edited.")
    return pytester


def gemini_run(pytester, outputs, *extra):
    return pytester.runpytest("-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json",
                              "--images-base", "images", "--repeats", "1", "--outputs", outputs,
                              "--judge-controls", *extra)


def test_the_gemini_judge_served_by_a_newer_model_since_the_baseline_is_named_with_both(gemini_bench, fake_gemini):
    gemini_run(gemini_bench, "monday")
    asked = len(fake_gemini.requests)
    assert asked == 3 + 4 * 3  # the items' verdicts and the controls'
    old = json.loads((gemini_bench.path / "monday" / "results.json").read_text())["judge_controls"]
    assert old["judges"]["gemini-3-flash"]["versions"] == {FLASH_MODEL: 12}
    fake_gemini.answered_by[FLASH_MODEL] = NEWER  # Google serves the id with another model, without an error
    result = gemini_run(gemini_bench, "tuesday", "--baseline", "monday/results.json", "--gate", "judge_drift<=0")
    out = " ".join(result.stdout.str().split())
    assert (f"WARNING: judge gemini-3-flash drifted since the baseline (served {NEWER}; baseline {FLASH_MODEL}): "
            f"served model version {NEWER} now, {FLASH_MODEL} in the baseline") in out
    assert result.ret == 1 and "FAIL gate 'judge_drift<=0' on judge gemini-3-flash (controls)" in out


def test_with_sequential_a_judge_gate_is_checked_on_the_controls_not_decided_early(bench):
    result = run(bench, "--judge-controls", "--sequential", "--gate", "pass_rate>=0.01",
                 "--gate", "judge_false_pass<=0.10")
    out = " ".join(result.stdout.str().split())
    assert "gate 'judge_false_pass<=0.10' cannot be decided early (a figure of the judge's controls" in out
    assert "PASS gate 'judge_false_pass<=0.10' on judge controljudge (controls)" in out


def test_with_human_labels_the_candidates_people_passed_are_positive_controls(bench):
    run(bench)  # the candidates, then a rater passes every first repeat and fails every second
    write_labels(bench.path / "labels.json", {(f"task-{i:02d}", "paid", repeat): repeat == 1
                                              for i in range(TASKS) for repeat in (1, 2)})
    not_accepted = run(bench, "--judge-controls", "--gate", "judge_false_fail<=0.5")
    assert not_accepted.ret == pytest.ExitCode.USAGE_ERROR and "--agreement labels:PATH" in not_accepted.stderr.str()
    for labels in ("--agreement", "--calibrate"):  # the estimate prices the positives too: 4 negatives + 1 per task
        estimate = run(bench, "--judge-controls", labels, "labels:labels.json", "--estimate")
        estimate.stdout.fnmatch_lines([f"*--judge-controls: {5 * TASKS} control verdicts to pay*"])
    result = run(bench, "--judge-controls", "--agreement", "labels:labels.json", "--gate", "judge_false_fail<=0.5",
                 "--html", "rep/report.html")
    controls = results(bench)["judge_controls"]["judges"]["controljudge"]
    positive = controls["kinds"]["human_pass"]
    assert (positive["right"], positive["wrong"], positive["judged"]) == ("PASS", 3, TASKS)  # tasks 0, 3 and 6
    assert positive["wrong_tasks"] == ["mini/task-00", "mini/task-03", "mini/task-06"]
    assert controls["false_fail"]["wrong"] == 3 and controls["false_pass"]["judged"] == 4 * TASKS
    image = bench.path / "out" / positive["wrong_controls"][0]["image"]
    assert image.read_bytes() == next((bench.path / "out" / "mini" / "paid" / "task-00").glob("001.*")).read_bytes()
    out = " ".join(result.stdout.str().split())
    assert "human_pass false FAIL 3 of 8 37.5%" in out
    assert "PASS gate 'judge_false_fail<=0.5' on judge controljudge (controls)" in out and result.ret == 0
    page = (bench.path / "rep" / "report.html").read_text()
    assert "<b>mini/task-03</b>: a candidate people passed, judged FAIL: a candidate people passed" in page
    assert "3 false FAIL of 8" in page and "2 false PASS of 8" in page


def test_a_candidate_people_passed_is_a_positive_control_whichever_release_made_it(bench):
    """The run of a release bought aside looks each human PASS up in the folder of the release it is of: the
    model folder for the first release's (its labels are renamed for this run, glue/human_labels.py
    ``for_this_run``), the aside folder for this release's; no task loses its positive control."""
    run(bench)
    run(bench, "--release", "b")  # the second release, bought aside in mini/paid@<id>
    split_dir = bench.path / "out" / "mini"
    aside = next(p.name for p in split_dir.iterdir() if p.name.startswith("paid@"))
    first = {(f"task-{i:02d}", "paid", 1): True for i in range(TASKS // 2)}
    second = {(f"task-{i:02d}", aside, 2): True for i in range(TASKS // 2, TASKS)}
    write_labels(bench.path / "labels.json", first | second)
    for i in range(TASKS // 2, TASKS):  # the second release's PASSes are found in its folder only
        (split_dir / "paid" / f"task-{i:02d}" / "002.png").unlink()
    run(bench, "--release", "b", "--judge-controls", "--agreement", "labels:labels.json")
    positive = results(bench)["judge_controls"]["judges"]["controljudge"]["kinds"]["human_pass"]
    assert positive["judged"] == TASKS
    for task, source in (("task-00", split_dir / "paid" / "task-00" / "001.png"),
                         ("task-04", split_dir / aside / "task-04" / "002.png")):
        control = bench.path / "out" / "_judge_controls" / "mini" / "human_pass" / task / "000.png"
        assert control.read_bytes() == source.read_bytes(), task
