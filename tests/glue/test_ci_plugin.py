"""Gates decide the exit status, with and without -n; statistics land in the results; junit properties."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from hype_ci_fixtures import (
    CONFTEST,
    args,
    bench,  # noqa: F401 - fixture
    results,
)
from terminal_text import said

# identity with labels (t + r) % 3 == 0 on 4 tasks x 3 repeats: 4 of 12 pass, every task once
PASS_RATE = 4 / 12


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_gates_decide_the_exit_status(bench, xdist):
    passing = bench.runpytest(*args("--gate", "pass_rate>=0.3", "--gate", "identity:pass_at_4>=80%", *xdist))
    passing.assert_outcomes(passed=4, failed=8)
    assert passing.ret == 0  # single items failed, but every gate passes
    said(passing, "PASS gate 'pass_rate>=0.3' on identity (mini): pass_rate = 33.3%, threshold >= 30.0%, margin +3.3 points",
         "all gates pass: exit status 0")
    failed = bench.runpytest(*args("--gate", "pass_rate>=0.3", "--gate", "effective_cost<=0.5", *xdist))
    assert failed.ret == 1
    said(failed, "FAIL gate 'effective_cost<=0.5' on identity (mini): effective_cost = $0.83, threshold <= $0.50, "
                 "margin -$0.33", "metric gate FAILED: exit status 1")


def test_without_gates_the_exit_status_is_pytests(bench):
    assert bench.runpytest(*args()).ret == 1


def test_an_incomplete_run_fails_every_gate_unless_allowed(bench, monkeypatch):
    monkeypatch.setenv("FLAKY", "1")
    result = bench.runpytest(*args("--gate", "pass_rate>=0.1", model="flaky"))
    result.assert_outcomes(passed=4, failed=7, errors=1)
    assert result.ret == 1
    said(result, "FAIL gate 'pass_rate>=0.1' on flaky (mini): *incomplete run (1 errors)*--allow-incomplete")
    allowed = bench.runpytest(*args("--gate", "pass_rate>=0.1", "--allow-incomplete", model="flaky"))
    assert allowed.ret == 0


def test_a_bad_gate_is_a_usage_error_naming_the_option(bench):
    result = bench.runpytest(*args("--gate", "accuracy>=0.5"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gate 'accuracy>=0.5': unknown metric 'accuracy'. Allowed metrics: pass_rate*"])
    typo = bench.runpytest(*args("--gate", "pass_rat>=0.5"))
    typo.stderr.fnmatch_lines(["*--gate 'pass_rat>=0.5': unknown metric 'pass_rat' (did you mean 'pass_rate'?). "
                               "Allowed metrics: pass_rate*"])
    no_baseline = bench.runpytest(*args("--gate", "pass_rate>=baseline"))
    no_baseline.stderr.fnmatch_lines(["*--gate refers to 'baseline' but no --baseline*"])


def test_results_carry_intervals_sensitivity_and_task_tallies(bench):
    bench.runpytest(*args("--bootstrap", "200", "--bootstrap-seed", "7"))
    [row] = results(bench)["rows"]
    assert row["pass_rate"] == pytest.approx(PASS_RATE)
    low, high = row["intervals"]["pass_rate"]
    assert low <= row["pass_rate"] <= high
    assert set(row["intervals"]) >= {"pass_rate", "pass_at_4", "effective_cost", "hype_gap"}
    assert {(g["review_seconds"], g["retry_cap"]) for g in row["sensitivity"]} >= {(20.0, 4), (60.0, 10)}
    assert sorted(t["task_id"] for t in row["task_tallies"]) == ["task-00", "task-01", "task-02", "task-03"]
    assert results(bench)["settings"]["statistics"]["bootstrap_seed"] == 7
    bench.runpytest(*args("--bootstrap", "0"))
    assert "intervals" not in results(bench)["rows"][0]


def test_baseline_comparison_and_a_gate_relative_to_it(bench):
    bench.runpytest(*args("--results", "old.json"))
    same = bench.runpytest(*args("--baseline", "old.json", "--gate", "pass_rate>=baseline-0.02"))
    assert same.ret == 0
    entry = results(bench)["rows"][0]["baseline"]["pass_rate"]
    assert entry["difference"] == 0 and entry["tasks"] == 4
    said(same, "PASS gate 'pass_rate>=baseline-0.02'*baseline 33.3% on 4 shared tasks")
    # the new release passes nothing: its pass rate falls 33 points below the baseline
    (bench.path / "r1.json").unlink()
    from benchdata import write_labels

    write_labels(bench.path / "r1.json", {(f"task-{t:02d}", "identity", r): False for t in range(4) for r in (1, 2, 3)})
    worse = bench.runpytest(*args("--baseline", "old.json", "--gate", "pass_rate>=baseline-0.02"))
    assert worse.ret == 1
    said(worse, "FAIL gate 'pass_rate>=baseline-0.02' on identity (mini): pass_rate = 0.0%, threshold >= 31.3%")


def test_session_metrics_are_junit_properties_under_xdist(bench):
    result = bench.runpytest(*args("-n", "2", "--junitxml", "junit.xml", "--gate", "pass_rate>=0.3"))
    assert result.ret == 0
    suite = ET.parse(bench.path / "junit.xml").getroot().find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert float(props["hypeedit.identity.mini.pass_rate"]) == pytest.approx(PASS_RATE)
    assert props["hypeedit.identity.mini.candidates"] == "12"
    assert float(props["hypeedit.identity.mini.pass_rate.low"]) <= PASS_RATE
    assert props["hypeedit.gates"] == "passed"
    assert props["hypeedit.gate.1"].startswith("PASS gate 'pass_rate>=0.3'")


#: The bench's models, each call a line in $CALL_LOG.
LOGGED = CONFTEST.replace("'log': None", "'log': '{task} {repeat}'")
assert LOGGED != CONFTEST


@pytest.mark.parametrize("gate, extra, message", [
    ("flux-2-max:pass_rate>=0.6", [], "*--gate 'flux-2-max:pass_rate>=0.6' names model 'flux-2-max', which this run "
                                     "does not measure (its models: flaky). Fix the name, add --model flux-2-max*"),
    ("flakey:pass_rate>=0.6", [], "*names model 'flakey'*(its models: flaky); did you mean 'flaky'? Fix the name*"),
    ("flaky@mnii:pass_rate>=0.6", [], "*names split 'mnii', which this run does not have (its splits: mini); "
                                     "did you mean 'mini'? Fix the name, or add its task file with --tasks*"),
    ("pass_at_10>=0.5", [], "*--gate 'pass_at_10>=0.5': pass_at_10 is defined on 10 images per task, and with "
                            "--repeats 3 this run would measure it on Pass@3 instead. Run --repeats 10*"),
    ("hype_gap<=0.2", [], "*hype_gap is defined on 10 images per task*"),
    ("calibrated.pass_rate>=0.5", [], "*gates on a calibrated figure, which only a run with --calibrate*"),
    ("pass_rate.low>=0.5", ["--bootstrap", "0"], "*gates on an interval bound, and --bootstrap 0 computes no interval*"),
], ids=["model", "model-typo", "split-typo", "pass-at-10", "hype-gap", "calibrated", "bound"])
@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_gate_the_run_cannot_have_is_not_accepted_before_anything_is_bought(bench, monkeypatch, gate, extra, message,
                                                                         xdist):
    """Planted: check_gates not called at configure time -> the run buys all 12 candidates (the call log has
    them) and the gate fails only after paying."""
    bench.makeconftest(LOGGED)
    calls = bench.path / "calls.log"
    monkeypatch.setenv("CALL_LOG", str(calls))
    result = bench.runpytest(*args("--gate", gate, "--gate", "pass_rate>=0.1", *extra, *xdist, model="flaky"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message + "Nothing was bought."])
    assert not calls.exists() and not (bench.path / "out").exists()


def test_a_gate_on_the_combined_row_applies_to_a_run_of_two_splits(bench):
    from benchdata import make_tasks, write_split

    write_split(bench.path, "more", make_tasks(1), bench.path / "images")
    result = bench.runpytest(*args("--tasks", "more.json", "--gate", "identity@combined:pass_rate>=0",
                                   "--allow-incomplete"))
    assert result.ret == 0, result.stderr.str()


def gate_cases(path) -> dict[str, ET.Element]:
    cases = ET.parse(path).getroot().find("testsuite").findall("testcase")
    found = [c for c in cases if c.get("classname") == "hypeedit.gates"]
    assert len(found) == len({c.get("name") for c in found})  # each gate once, under -n too
    return {c.get("name"): c for c in found}


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_junit_xml_has_one_testcase_per_gate_failing_exactly_when_it_fails(bench, xdist):
    """Planted: add_junit_gate_cases not called -> no hypeedit.gates testcase; its outcome inverted -> the passing
    run's gate testcases fail while it exits 0."""
    passing = bench.runpytest(*args("--junitxml", "passing.xml", "--gate", "pass_rate>=0.3", "--gate", "pass_at_4>=80%",
                                    *xdist))
    assert passing.ret == 0
    suite = ET.parse(bench.path / "passing.xml").getroot().find("testsuite")
    assert suite.get("failures") == "8"  # the candidates' FAIL verdicts, beside passing gates: the exit status is 0
    cases = gate_cases(bench.path / "passing.xml")
    assert sorted(cases) == ["pass_at_4>=80%", "pass_rate>=0.3"]
    assert all(case.find("failure") is None for case in cases.values())
    failed = bench.runpytest(*args("--junitxml", "failed.xml", "--gate", "pass_rate>=0.3", "--gate",
                                   "effective_cost<=0.5", *xdist))
    assert failed.ret == 1
    cases = gate_cases(bench.path / "failed.xml")
    assert cases["pass_rate>=0.3"].find("failure") is None
    failure = cases["effective_cost<=0.5"].find("failure")
    assert failure is not None and failure.get("message").startswith("FAIL gate 'effective_cost<=0.5' on identity")
    assert ET.parse(bench.path / "failed.xml").getroot().find("testsuite").get("failures") == "9"


def test_a_2_repeat_run_names_pass_at_2_for_what_it_is_everywhere(bench):
    """Planted: metric_labels giving Pass@10 whatever the repeats -> the terminal, results.md and the HTML report
    title the column Pass@10 again."""
    result = bench.runpytest(*args("--html", "rep/report.html", "--junitxml", "junit.xml", repeats=2))
    header = next(line for line in result.outlines if line.startswith("Model ") and "Pass rate" in line)
    assert re.search(r"Pass@4\s+Pass@2\s+Attempts\s+\$/success\s+Hype gap@2$", header), header
    said(result, "Pass@2: tasks with a PASS among their 2 images; Hype gap@2: Pass@2 - first-attempt pass rate.*")
    [row] = results(bench)["rows"]
    assert row["repeats"] == 2 and row["metric_labels"] == {"pass_at_10": "Pass@2", "hype_gap": "Hype gap@2"}
    assert "pass_at_10" in row and "hype_gap" in row  # the keys stay, for readers of older files
    markdown = (bench.path / "out" / "results.md").read_text()
    assert "| Pass@2 |" in markdown and "| Hype gap@2 |" in markdown and "| Pass@10 |" not in markdown
    html = (bench.path / "rep" / "report.html").read_text()
    assert "<th>Pass@2</th>" in html and "<th>Pass@10</th>" not in html
    suite = ET.parse(bench.path / "junit.xml").getroot().find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["hypeedit.identity.mini.pass_at_10.label"] == "Pass@2"
    assert props["hypeedit.identity.mini.repeats"] == "2"
