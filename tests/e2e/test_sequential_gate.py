"""--sequential end to end: two releases of known pass rates, gates decided early, what was bought counted.

The provider counts every generation it is asked for (each is a billed call), in a file per process, so the
count holds under -n 2 too; the judge is a labels file per release (free), so the releases' pass rates are
known exactly: per task, the repeats that pass.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from benchdata import make_tasks, write_labels, write_split
from fake_models import models_conftest
from terminal_text import said

from pytest_hypeedit.glue import sequential_order

TASKS, REPEATS = 20, 10
#: Of every task's ten repeats, the baseline passes 8 and a plainly worse release 3; which repeats pass moves from
#: task to task, so no repeat number passes more often than another (repeats are exchangeable, as
#: analysis/sequential.py assumes).
GOOD, BAD = 8, 3


def passes(rate: int, task: int, repeat: int) -> bool:
    return (7 * task + 3 * repeat) % 10 < rate

#: fake_models.CountingProvider: the reference image, every call written down as one billed generation.
CONFTEST = models_conftest("CountingProvider", (
    {"name": "release", "route": "counting", "provider_model": "counting-v1", "price": 0.04},), route="counting",
    seed=0)  # the repeat's number


@pytest.fixture(scope="module")
def baseline_results(tmp_path_factory) -> dict[str, str]:
    """The baseline release's results file, run once for the module (a 200-candidate run: ~5 s each time)."""
    return {}  # filled by the first ``bench``: a run needs pytester, which is per test


@pytest.fixture
def bench(pytester, monkeypatch, tmp_path, baseline_results):
    pytester.makeconftest(CONFTEST)
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    for name, passing in (("good.json", GOOD), ("bad.json", BAD)):
        write_labels(pytester.path / name, {(f"task-{t:02d}", "release", r): passes(passing, t, r)
                                            for t in range(TASKS) for r in range(1, REPEATS + 1)})
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BILLED_DIR", str(tmp_path / "billed"))
    (tmp_path / "billed").mkdir()
    if "old.json" not in baseline_results:
        baseline = pytester.runpytest(*run_args("good.json", "base", "--results", "old.json"))
        assert json.loads((pytester.path / "old.json").read_text())["rows"][0]["pass_rate"] == pytest.approx(0.8)
        assert baseline.ret == 1  # no gate: pytest's own status (the FAILs are failed items)
        baseline_results["old.json"] = (pytester.path / "old.json").read_text()
    else:  # the same baseline (a gate reads its figures; these runs show no image of it)
        (pytester.path / "old.json").write_text(baseline_results["old.json"])
    for bill in (tmp_path / "billed").iterdir():
        bill.unlink()
    pytester.billed = tmp_path / "billed"
    return pytester


def run_args(labels: str, outputs: str, *extra: str) -> list[str]:
    return ["-p", "no:cacheprovider", "--model", "release", "--tasks", "mini.json", "--images-base", "images",
            "--repeats", str(REPEATS), "--outputs", outputs, "--judge", f"labels:{labels}", *extra]


def sequential(bench, labels: str, gate: str, *extra: str, concurrency: int = 8):
    # the run buys about --concurrency candidates past the decision (glue/pool_plugin.py)
    result = bench.runpytest(*run_args(labels, "new", "--sequential", "--concurrency", str(concurrency),
                                       "--baseline", "old.json", "--gate", gate, *extra))
    return result, json.loads((Path(bench.path) / "new" / "results.json").read_text())


def billed(bench) -> int:
    return sum(len(path.read_text().splitlines()) for path in bench.billed.iterdir())


@pytest.mark.parametrize(("xdist", "concurrency"), [([], 32), (["-n", "2"], 8)], ids=["serial", "xdist"])
def test_a_plainly_worse_release_fails_its_gate_with_at_most_half_bought(bench, xdist, concurrency):
    # 32 in flight at once, serially: the pool, working ahead of pytest, must not buy far past the decision
    result, found = sequential(bench, "bad.json", "pass_rate>=baseline-0.02", *xdist, concurrency=concurrency)
    assert result.ret == 1
    entry = found["sequential"]
    [gate] = entry["gates"]
    assert gate["decided"] and gate["decision"] == "FAIL"
    assert entry["candidates_planned"] == TASKS * REPEATS and entry["alpha"] == 0.05
    assert entry["candidates_bought"] <= TASKS * REPEATS // 2
    if not xdist:  # the pool buys about --concurrency past the decision at most, however fast the provider
        assert entry["candidates_bought"] <= gate["after"] + concurrency + 5
    assert billed(bench) <= entry["candidates_bought"]  # no generation paid that is not counted as bought
    assert entry["saved_candidates"] == TASKS * REPEATS - entry["candidates_bought"]
    said(result, "*sequential (alpha 0.05): gate 'pass_rate>=baseline-0.02' on release (mini) decided FAIL after *"
                 " of 200 candidates*",
         "*sequential: stopped buying after * of 200 candidates: saved * candidates (about $*",
         "*FAIL gate 'pass_rate>=baseline-0.02'*decided FAIL by --sequential*", "metric gate FAILED: exit status 1")
    outcomes = result.parseoutcomes()  # every item reported (under -n too): bought ones judged, the rest skipped
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) + outcomes.get("skipped", 0) == TASKS * REPEATS
    coverage = found["coverage"]
    assert coverage["stopped"].startswith("sequential: ") and not found["complete"]
    assert [r["reason"] for r in coverage["reasons"]] in (["sequential"], ["sequential", "bought_unreported"])
    row = found["rows"][0]
    for metric in ("pass_at_10", "pass_at_4", "expected_attempts", "hype_gap", "effective_cost"):
        assert row[metric] is None and "not measured" in row["not_measured"][metric]
    # the pass rate of what was bought and judged, no other: the mean over tasks of each task's share of PASS
    # among its judged candidates, as the labels say (the buying order is random, and a gate decided early stops
    # on an unlucky draw as often as it may: a band around the release's 0.3 failed about once in a few dozen runs)
    judged = judged_on_disk(bench)
    assert judged and len(judged) <= entry["candidates_bought"]
    shares = {}
    for task, repeat in judged:
        shares.setdefault(task, []).append(passes(BAD, task, repeat))
    assert row["pass_rate"] == pytest.approx(sum(sum(s) / len(s) for s in shares.values()) / len(shares))


def judged_on_disk(bench) -> list[tuple[int, int]]:
    """(task number, repeat) of every candidate of the gated run that has a verdict on disk."""
    judged = []
    for path in (Path(bench.path) / "new" / "mini" / "release").glob("task-*/[0-9][0-9][0-9].json"):
        if json.loads(path.read_text()).get("outcome") in ("pass", "fail"):
            judged.append((int(path.parent.name.rsplit("-", 1)[1]), int(path.stem)))
    return judged


def test_skipped_items_name_the_decision(bench):
    result, found = sequential(bench, "bad.json", "pass_rate>=0.7", "-rs")
    assert result.ret == 1
    bought = found["sequential"]["candidates_bought"]
    # every item not bought is skipped, its reason the decision (pytest -rs folds identical reasons: [count])
    result.stdout.fnmatch_lines([f"SKIPPED [[]{TASKS * REPEATS - bought}[]] *not started: sequential: gate "
                                 "'pass_rate>=0.7' on release (mini) decided FAIL after * of 200 candidates*"])
    assert found["sequential"]["gates"][0]["decision"] == "FAIL"


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_equal_releases_pass_a_lenient_gate_early(bench, xdist):
    result, found = sequential(bench, "good.json", "pass_rate>=baseline-0.3", *xdist)
    assert result.ret == 0
    entry = found["sequential"]
    assert entry["gates"][0]["decision"] == "PASS"
    assert entry["candidates_bought"] < TASKS * REPEATS
    assert billed(bench) <= entry["candidates_bought"]
    said(result, "*decided PASS by --sequential*", "all gates pass: exit status 0")


def test_equal_releases_are_not_failed_early_by_a_strict_gate(bench):
    result, found = sequential(bench, "good.json", "pass_rate>=baseline")
    assert result.ret == 0
    [gate] = found["sequential"]["gates"]
    assert gate["decision"] != "FAIL"
    # on the threshold: decided PASS only once forced (every pass seen, the rest of the drawn order FAILs), or
    # never; either way the run is complete, or stopped by that decision
    assert found["complete"] or (found["sequential"]["stopped"] and gate["decision"] == "PASS")
    said(result, "all gates pass: exit status 0")


def test_a_gate_that_cannot_be_decided_early_keeps_the_run_buying_in_full(bench):
    result, found = sequential(bench, "bad.json", "pass_rate>=0.7", "--gate", "pass_at_4>=0.5")
    entry = found["sequential"]
    assert not entry["stopped"] and entry["candidates_bought"] == TASKS * REPEATS and found["complete"]
    assert [g["decided"] for g in entry["gates"]] == [True, False]
    assert "only pass_rate gates are decided early" in entry["gates"][1]["not_decidable"]
    assert found["rows"][0]["pass_at_4"] is not None  # a full run measures every metric
    said(result, "*sequential: gate 'pass_at_4>=0.5' cannot be decided early (pass_at_4 needs every repeat of a "
                 "task*): the run buys every candidate and judges it as without --sequential",
         "*FAIL gate 'pass_rate>=0.7'*decided FAIL by --sequential after *")
    assert result.ret == 1


def test_sequential_needs_a_gate_and_a_sensible_alpha(bench):
    alone = bench.runpytest(*run_args("bad.json", "new", "--sequential"))
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    alone.stderr.fnmatch_lines(["*--sequential decides gates early: give at least one --gate*"])
    wrong = bench.runpytest(*run_args("bad.json", "new", "--sequential", "--gate", "pass_rate>=0.5",
                                      "--gate-alpha", "1.5"))
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR
    wrong.stderr.fnmatch_lines(["*--gate-alpha 1.5: *between 0 and 1*"])


def test_calls_in_flight_at_the_decision_finish_and_are_saved_whatever_the_grace(bench, monkeypatch):
    """A decision is no emergency: unlike Ctrl-C, it gives the calls already sent no deadline."""
    monkeypatch.setenv("HYPEEDIT_STOP_GRACE_S", "0")
    monkeypatch.setenv("SLOW", "0.3")
    result, found = sequential(bench, "bad.json", "pass_rate>=0.7", "-rs")
    assert result.ret == 1 and found["sequential"]["gates"][0]["decision"] == "FAIL"
    assert "left in flight" not in result.stdout.str()
    assert billed(bench) <= found["sequential"]["candidates_bought"]



@pytest.mark.parametrize(("labels", "gate", "decision", "status"), [
    ("bad.json", "pass_rate>=0.7", "FAIL", 1), ("good.json", "pass_rate>=baseline-0.3", "PASS", 0)])
def test_a_rerun_of_a_decided_run_ends_with_its_table_and_the_same_decision(bench, labels, gate, decision, status):
    """The rerun finds every candidate it needs on disk and decides at once; the pool, whose grace a decision
    lifts, shut down with join(inf) and crashed at session end (OverflowError): no table, no gates, exit 1."""
    first, found = sequential(bench, labels, gate)
    again, refound = sequential(bench, labels, gate)
    assert first.ret == again.ret == status
    [before], [after] = found["sequential"]["gates"], refound["sequential"]["gates"]
    assert before["decision"] == after["decision"] == decision and before["after"] == after["after"]
    said(again, "*HYPE-EDIT-1 results*", f"*decided {decision} by --sequential*",
         f"*exit status {status}*")
    assert "OverflowError" not in again.stdout.str() + again.stderr.str()
    [drawn], [kept] = found["sequential"]["orders"], refound["sequential"]["orders"]
    assert drawn["drawn"] and not kept["drawn"] and drawn["file"] == kept["file"]  # the rerun read the order back


def test_a_stop_file_written_by_hand_does_not_end_a_run_as_decided(bench):
    """A stop file that reads as a decision, written while the run is undecided (pass_rate 80% against a gate at
    79% needs most of the plan): the run stops, as at any stop, but incomplete, never decided (it exited 0)."""
    bench.makeconftest(CONFTEST + FORGER)
    result, found = sequential(bench, "good.json", "pass_rate>=0.79")
    entry = found["sequential"]
    assert not entry["stopped"] and not entry["gates"][0]["decided"]
    assert entry["candidates_bought"] < TASKS * REPEATS  # the stop did stop the buying
    reasons = [r["reason"] for r in found["coverage"]["reasons"]]
    assert "sequential" not in reasons and "stopped_early" in reasons and not found["complete"]
    assert not found["coverage"]["stopped"].startswith("sequential: ")
    assert "this run did not make" in found["coverage"]["stopped"]
    assert result.ret == 1
    said(result, "*FAIL gate 'pass_rate>=0.79'*incomplete run*")


#: A conftest hook that writes the run's stop file as a decision would, after the 20th record.
FORGER = """

SEEN = []


def pytest_hypeedit_record(config, record):
    from pytest_hypeedit.glue.stash import RUNTIME_KEY

    SEEN.append(record.key)
    if len(SEEN) == 20:
        (config.stash[RUNTIME_KEY].state_dir / "stop").write_text(
            "sequential: gate 'pass_rate>=0.79' on release (mini) decided PASS after 3 of 200 candidates")
"""


def test_sequential_with_no_gate_it_can_decide_is_not_accepted_before_anything_is_paid(bench):
    not_accepted = bench.runpytest(*run_args("bad.json", "new", "--sequential", "--gate", "pass_at_4>=0.5",
                                             "--gate", "pass_rate.low>=0.5"))
    assert not_accepted.ret == pytest.ExitCode.USAGE_ERROR
    not_accepted.stderr.fnmatch_lines(["*--sequential: no gate of this run can be decided early ('pass_at_4>=0.5': "
                                       "pass_at_4 needs every repeat*'pass_rate.low>=0.5': an interval bound*drop --sequential*"])
    assert billed(bench) == 0 and not (Path(bench.path) / "new").exists()  # nothing bought, no order drawn


def test_alpha_is_split_over_the_runs_early_decisions_and_shown(bench):
    result, found = sequential(bench, "bad.json", "pass_rate>=0.7", "--gate", "pass_rate>=0.05")
    entry = found["sequential"]
    assert entry["alpha"] == 0.05 and entry["alpha_per_gate"] == pytest.approx(0.025)
    said(result, "*sequential: --gate-alpha 0.05 for the run, split over its 2 early decisions: alpha 0.025 each*",
         "*sequential (alpha 0.025): gate 'pass_rate>=0.7'*", "*decided FAIL by --sequential after * of 200 "
         "candidates (alpha 0.025 of the run's 0.05)*")


SIX, SIX_REPEATS, FRESH_RUNS = 6, 10, 10


def test_runs_on_fresh_outputs_decide_as_the_full_run_even_with_the_failing_tasks_bought_first(bench, monkeypatch):
    """The issue's check.  Six tasks x ten repeats, three always failing: the full run's pass rate is 50% and
    ``pass_rate>=0.5`` passes.  The failing tasks are the three a first outputs folder's order buys first (learned
    with --collect-only, as a task file could happen to line up with any order fixed in advance); ten runs on
    fresh folders, each drawing its own order, must decide as the full run in at least nine.  With the order of
    before (one seed for every run) every run bought them first and decided FAIL after 8 of 60 candidates."""
    draws = random.Random(33)  # the seeds the runs draw, fixed so the test is the same each time
    monkeypatch.setattr(sequential_order, "new_seed", lambda: f"{draws.getrandbits(128):032x}")
    write_split(bench.path, "six", make_tasks(SIX, prefix="six"), bench.path / "images")
    every = {(f"six-{t:02d}", "release", r): True for t in range(SIX) for r in range(1, SIX_REPEATS + 1)}
    write_labels(bench.path / "six-labels.json", every)

    def args(outputs: str, *extra: str) -> list[str]:
        return ["-p", "no:cacheprovider", "--model", "release", "--tasks", "six.json", "--images-base", "images",
                "--repeats", str(SIX_REPEATS), "--outputs", outputs, "--judge", "labels:six-labels.json",
                "--gate", "pass_rate>=0.5", *extra]

    probe = bench.runpytest(*args("probe", "--sequential", "--collect-only", "-q"))
    bought_first = list(dict.fromkeys(re.findall(r"(six-\d\d)", probe.stdout.str())))[:SIX // 2]
    assert len(bought_first) == SIX // 2
    write_labels(bench.path / "six-labels.json", {key: key[0] not in bought_first for key in every})
    full = bench.runpytest(*args("full"))
    assert full.ret == 0  # 30 of 60: on the threshold, and >= holds there
    decisions, bought, seeds = [], [], set()
    for run in range(FRESH_RUNS):
        result = bench.runpytest(*args(f"fresh-{run}", "--sequential"))
        found = json.loads((Path(bench.path) / f"fresh-{run}" / "results.json").read_text())
        decisions.append(result.ret)
        bought.append(found["sequential"]["candidates_bought"])
        seeds.add(json.loads(Path(found["sequential"]["orders"][0]["file"]).read_text())["seed"])
    assert len(seeds) == FRESH_RUNS  # each folder drew its own order
    assert decisions.count(0) >= 0.9 * FRESH_RUNS, (decisions, bought)  # the error here is 1.8% (simulated)
    assert min(bought) < SIX * SIX_REPEATS  # some runs did stop early: the decisions are the test's, not the full run's


def test_a_corrupt_order_file_is_said_and_a_new_order_drawn(bench):
    _, found = sequential(bench, "bad.json", "pass_rate>=0.7")
    [order] = found["sequential"]["orders"]
    Path(order["file"]).write_text('{"format": 1, "seed": "half a fi')
    result, refound = sequential(bench, "bad.json", "pass_rate>=0.7")
    said(result, f"hypeedit: WARNING: --sequential: {order['file']} is not this run's buying order (not JSON): a new "
                 "one was drawn at random")
    assert refound["sequential"]["orders"][0]["drawn"] and refound["sequential"]["gates"][0]["decision"] == "FAIL"
    assert json.loads(Path(order["file"]).read_text())["format"] == 1  # the fresh draw is kept whole


def test_a_baseline_on_fewer_tasks_is_decided_as_the_full_runs_gate_decides_it(bench):
    """The full run's gate sets the row's pass rate on ALL its tasks against the baseline's on the shared ones.
    Here the baseline has ten of the twenty tasks, at 90%; the release passes those ten always and the other ten
    twice in ten (60% on all): the full gate 60% >= 90% - 2 points FAILs.  Paired on the shared tasks alone, the
    early test decided another figure (100% there) and PASSed."""
    write_labels(bench.path / "split.json", {(f"task-{t:02d}", "release", r): t < 10 or r <= 2
                                             for t in range(TASKS) for r in range(1, REPEATS + 1)})
    old = json.loads((bench.path / "old.json").read_text())
    [row] = old["rows"]
    row["task_tallies"] = [dict(tally, passes=9, judged=10) for tally in row["task_tallies"]
                           if int(tally["task_id"][-2:]) < 10]
    (bench.path / "old.json").write_text(json.dumps(old))
    result, found = sequential(bench, "split.json", "pass_rate>=baseline-0.02")
    assert found["sequential"]["gates"][0]["decision"] == "FAIL"
    assert result.ret == 1
    said(result, "*FAIL gate 'pass_rate>=baseline-0.02'*baseline 90.0% on * shared tasks*decided FAIL by --sequential*")
