"""A run's results say what happened (issue 22): complete only when every item asked for ended with a record,
a subset or a run cut short says so (and never replaces a complete run's results), spend counts what the pool
bought ahead of the items reported, figures are finite, and the exit status is the one printed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from benchdata import make_tasks, write_labels, write_split
from fake_models import PAID, PAID_B, models_conftest
from terminal_text import said

PAID_CONFTEST = models_conftest(models=(PAID, PAID_B), key_env=("PAID_API_KEY",), log="{task} {model} {repeat}",
                                provider_model="paid-v1", seed="request")
TASKS, REPEATS = 4, 3


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path):
    pytester.makeconftest(PAID_CONFTEST)
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("PAID_API_KEY", "paid-secret-value-123")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    verdicts = {(f"task-{t:02d}", m, r): (t + r) % 2 == 0
                for t in range(TASKS) for m in ("paid", "paid-b", "identity") for r in range(1, REPEATS + 1)}
    write_labels(pytester.path / "r1.json", verdicts)
    return pytester


def args(*extra: str) -> list[str]:
    return ["--tasks", "mini.json", "--images-base", "images", "--repeats", str(REPEATS), "--outputs", "out",
            "--judge", "labels:r1.json", "-p", "no:randomly", *extra]


def read(pytester, name: str = "results.json") -> dict:
    return json.loads((pytester.path / "out" / name).read_text())


def last_lines(result, n: int = 1) -> str:
    """The run's own last lines, above pytest's own closing lines ("!! stopping after 2 failures !!",
    "= 1 failed in 0.1s =")."""
    lines: list[str] = []
    for line in result.stdout.lines:
        if not line.strip() or line.startswith(("=", "!")):
            continue
        if line.startswith("  ") and lines:  # a folded line's continuation (within 100 columns): one line again
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    return "\n".join(lines[-n:])


def test_a_full_run_is_complete_and_covers_every_planned_item(bench):
    result = bench.runpytest(*args("--model", "paid"))
    data = read(bench)
    assert data["complete"] is True
    assert data["coverage"]["planned"] == data["coverage"]["recorded"] == TASKS * REPEATS
    assert data["coverage"]["reasons"] == []
    assert data["rows"][0]["planned"] == data["rows"][0]["selected"] == TASKS * REPEATS
    assert "INCOMPLETE" not in result.stdout.str()


def test_a_k_selection_is_a_subset_and_never_replaces_a_complete_runs_results(bench):
    bench.runpytest(*args("--model", "paid"))
    complete = read(bench)
    result = bench.runpytest(*args("--model", "paid", "-k", "task-01"))
    assert read(bench) == complete  # the complete run's file is kept
    partial = read(bench, "results.partial.json")
    assert partial["complete"] is False
    assert partial["coverage"]["subset"] is True
    assert (partial["coverage"]["selected"], partial["coverage"]["deselected"]) == (REPEATS, (TASKS - 1) * REPEATS)
    assert [r["reason"] for r in partial["coverage"]["reasons"]] == ["subset"]
    assert (bench.path / "out" / "results.partial.md").exists()
    assert "results.partial.json" in result.stdout.str()
    assert "out/results.json holds a complete run's results and is kept" in result.stdout.str()
    assert "run INCOMPLETE" in last_lines(result, 1)
    assert "9 deselected" in last_lines(result, 1)
    assert result.ret != 0
    bench.runpytest(*args("--model", "paid"))  # complete again: the partial file would contradict it
    assert not (bench.path / "out" / "results.partial.json").exists()
    assert not (bench.path / "out" / "results.partial.md").exists()


def test_a_subset_of_passing_items_exits_non_zero_unless_allowed(bench):
    selection = ("-k", "r002 and (task-00 or task-02)")  # (t + r) % 2 == 0: both pass
    result = bench.runpytest(*args("--model", "paid", *selection))
    result.assert_outcomes(passed=2, deselected=10)
    assert result.ret == 1
    assert last_lines(result).startswith("run INCOMPLETE (2 of 12 planned items have a record): a subset")
    assert last_lines(result).endswith("exit status 1")
    allowed = bench.runpytest(*args("--model", "paid", *selection, "--allow-incomplete"))
    assert allowed.ret == 0
    assert last_lines(allowed).endswith("exit status 0")
    assert read(bench)["complete"] is False  # allowed, still not called complete


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def billed(tmp_path: Path) -> float:
    price = {"paid": 0.04, "paid-b": 0.10}
    return sum(price[line.split()[1]] for line in calls(tmp_path))


@pytest.mark.parametrize("stop, why, status", [(("--maxfail", "2"), "stopping after 2 failures", 1),
                                               (("-x",), "stopping after 1 failures", 1),
                                               (("--sw",), "Test failed, continuing from this test next run.", 2)])
def test_an_early_stop_counts_what_the_pool_bought_ahead(bench, tmp_path, stop, why, status):
    result = bench.runpytest(*args("--model", "paid", "--model", "paid-b", *stop))
    data = read(bench)
    coverage = data["coverage"]
    reported = sum(row["candidates"] for row in data["rows"])
    assert len(calls(tmp_path)) > reported, "the pool bought nothing ahead: the test proves nothing"
    assert sum(row["spent"] for row in data["rows"]) == pytest.approx(billed(tmp_path))
    assert sum(row["spent_this_run"] for row in data["rows"]) == pytest.approx(billed(tmp_path))  # all this run's
    assert coverage["bought_unreported"] == len(calls(tmp_path)) - reported
    assert coverage["without_record"] == 2 * TASKS * REPEATS - reported
    assert coverage["stopped"] == why
    assert data["complete"] is False and {row["model"] for row in data["rows"]} == {"paid", "paid-b"}
    reasons = [r["reason"] for r in coverage["reasons"]]
    assert reasons[:3] == ["stopped_early", "without_record", "bought_unreported"]
    assert last_lines(result).startswith("run INCOMPLETE")
    assert f"{coverage['bought_unreported']} candidates bought ahead and not reported" in last_lines(result)
    assert result.ret == status  # pytest's own: --sw ends the session as interrupted
    assert last_lines(result).endswith(f"exit status {status}")


SIGTERM_CONFTEST = """
import os, signal, time, pytest

def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the process a CI runner would signal: the controller
        with open(os.environ["CONTROLLER_PID"], "w") as out:
            out.write(str(os.getpid()))

@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_hypeedit_make_provider(config, spec):
    provider = FakeModel(spec) if spec.route == "paid" else None
    if provider is not None:
        generate = provider.generate

        def slow_then_signal(request):
            generation = generate(request)
            time.sleep(0.2)  # calls stay in flight while pytest reports the first items
            with open(os.environ["CALL_LOG"]) as log:
                count = len(log.readlines())
            if count >= int(os.environ["SIGNAL_AFTER"]):
                try:
                    os.close(os.open(os.environ["CONTROLLER_PID"] + ".sent", os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    return generation
                with open(os.environ["CONTROLLER_PID"]) as pid:
                    os.kill(int(pid.read()), signal.SIGTERM)
            return generation

        provider.generate = slow_then_signal
    return provider
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_sigterm_every_model_keeps_its_row_and_spent_covers_what_was_billed(bench, tmp_path, monkeypatch, workers):
    bench.makeconftest(PAID_CONFTEST + SIGTERM_CONFTEST)
    monkeypatch.setenv("CONTROLLER_PID", str(tmp_path / "controller.pid"))
    monkeypatch.setenv("SIGNAL_AFTER", "6")
    monkeypatch.setenv("HYPEEDIT_STOP_GRACE_S", "20")
    result = bench.runpytest_subprocess(*args("--model", "paid", "--model", "paid-b", "--concurrency", "4",
                                              "--gate", "pass_rate>=0", *workers), timeout=180)
    assert (tmp_path / "controller.pid.sent").exists()
    text = (bench.path / "out" / "results.json").read_text()
    data = json.loads(text, parse_constant=lambda name: pytest.fail(f"not strict JSON: {name}"))
    assert data["complete"] is False
    assert {row["model"] for row in data["rows"]} == {"paid", "paid-b"}
    assert sum(row["spent"] for row in data["rows"]) >= billed(tmp_path) - 1e-9 > 0
    assert data["coverage"]["reasons"][0] == {"reason": "interrupted", "count": None, "detail": "interrupted (SIGTERM)"}
    assert result.ret == pytest.ExitCode.INTERRUPTED
    last = last_lines(result)
    assert last.startswith("run INCOMPLETE") and "interrupted (SIGTERM)" in last, last
    assert last.endswith("exit status 2")
    gates = [line for line in result.stdout.lines if line.startswith("metric gate FAILED")]
    assert gates and gates[0].startswith("metric gate FAILED: exit status 2"), gates  # the status returned


def test_budget_zero_measures_nothing_exits_non_zero_and_condenses_skips_under_an_ini_ra(bench, tmp_path):
    bench.makeini("[pytest]\naddopts = -ra\n")
    result = bench.runpytest(*args("--model", "paid", "--budget", "0"))
    result.assert_outcomes(skipped=TASKS * REPEATS)
    assert calls(tmp_path) == []
    assert result.ret == 1
    out = result.stdout.str()
    assert "SKIPPED [" not in out  # not a line per item (pytest folds none: each reason names its item)
    skips = [line for line in result.stdout.lines if line.startswith("skipped: ")]
    assert len(skips) == 1 and skips[0].startswith(f"skipped: {TASKS * REPEATS} items (paid {TASKS * REPEATS}): "
                                                   "--budget 0 USD reached"), skips
    last = last_lines(result)
    assert "nothing was measured" in last and f"{TASKS * REPEATS} skipped by --budget" in last, last
    assert last.endswith("exit status 1")
    assert read(bench)["coverage"]["reasons"][0]["reason"] == "nothing_measured"


def test_skips_asked_for_on_the_command_line_stay_one_line_each(bench):
    result = bench.runpytest(*args("--model", "paid", "--budget", "0", "-rs"))
    assert result.stdout.str().count("SKIPPED [1]") == TASKS * REPEATS


DISK_FULL_CONFTEST = """
import errno, os

_real_replace = os.replace

def _full_for_results(src, dst, *args, **kwargs):
    # the disk fills up at the end of the run: the results files cannot be written, the records could
    if os.path.basename(str(dst)).startswith("results"):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
    return _real_replace(src, dst, *args, **kwargs)

def pytest_sessionstart(session):
    os.replace = _full_for_results

def pytest_unconfigure(config):
    os.replace = _real_replace
"""


def test_a_full_disk_at_the_end_still_prints_the_table_and_names_the_folder(bench, tmp_path):
    bench.makeconftest(PAID_CONFTEST + DISK_FULL_CONFTEST)
    verdicts = {(f"task-{t:02d}", "paid", r): True for t in range(TASKS) for r in range(1, REPEATS + 1)}
    write_labels(bench.path / "all-pass.json", verdicts)
    result = bench.runpytest(*args("--model", "paid", "--judge", "labels:all-pass.json"))
    result.assert_outcomes(passed=TASKS * REPEATS)
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert "HYPE-EDIT-1 results" in out and any(line.startswith("paid ") for line in result.stdout.lines)
    failed = [line for line in result.stdout.lines if "could not write the results" in line]
    assert len(failed) == 1, failed
    assert failed[0].startswith("hypeedit: could not write the results into out (No space left on device)")
    assert last_lines(result, 1).startswith(failed[0])  # the one line, folded within 100 columns
    assert not (bench.path / "out" / "results.json").exists()
    assert result.ret == 1
    assert len(calls(tmp_path)) == TASKS * REPEATS  # the records were written: a rerun buys nothing


def test_absurd_amounts_in_records_on_disk_keep_spent_finite_and_are_named(bench):
    bench.runpytest(*args("--model", "paid"))
    folder = bench.path / "out" / "mini" / "paid"
    doctored = {"task-00/001.json": "1e308", "task-00/002.json": "1e308", "task-01/001.json": "NaN",
                "task-01/002.json": "-5", "task-02/001.json": "Infinity"}
    for name, amount in doctored.items():
        path = folder / name
        text = path.read_text()
        path.write_text(text.replace('"price": 0.04', f'"price": {amount}'))  # the generation's ledger entry
        assert amount in path.read_text()
    result = bench.runpytest(*args("--model", "paid"))
    text = (bench.path / "out" / "results.json").read_text()
    data = json.loads(text, parse_constant=lambda name: pytest.fail(f"not strict JSON: {name}"))
    row = data["rows"][0]
    assert math.isfinite(row["spent"]) and row["spent"] == pytest.approx((TASKS * REPEATS - 5) * 0.04)
    assert row["implausible_amounts"] == 5
    assert "warning: 5 amounts in records on disk not believed" in result.stdout.str()
    md = (bench.path / "out" / "results.md").read_text()
    assert "inf" not in md.lower() and "nan" not in md.lower()


def test_the_live_line_counts_what_the_controller_saw_reported():
    from pytest_hypeedit.report.progress import Progress

    # two pools that each finished an item the other also ran (worksteal took it back from one of them)
    statuses = [{"done": 28, "spent": 1.0}, {"done": 28, "spent": 1.0}]
    assert Progress(started=0.0, total=50).line(statuses, 10.0).startswith("hypeedit 56/50 done")  # the sum
    assert Progress(started=0.0, total=50).line(statuses, 10.0, reported=47).startswith("hypeedit 47/50 done")
    assert "$inf" not in Progress(started=0.0, total=50).line([{"done": 1, "spent": math.inf}], 1.0)


SLOW_B = """
import time
_generate = FakeModel.generate

def _slow_b(self, request):
    if request.spec.name == "paid-b":
        time.sleep(0.3)
    return _generate(self, request)

FakeModel.generate = _slow_b
"""


def test_under_worksteal_the_live_line_never_reads_more_done_than_planned(bench):
    bench.makeconftest(PAID_CONFTEST + SLOW_B)
    result = bench.runpytest(*args("--model", "paid", "--model", "paid-b", "-n", "2", "--dist", "worksteal"))
    shown = [line for line in result.stdout.lines if line.startswith("hypeedit ") and " done" in line]
    assert shown, result.stdout.str()
    for line in shown:
        done, total = line.split()[1].split("/")
        assert int(done) <= int(total), line
    assert shown[-1].startswith(f"hypeedit {2 * TASKS * REPEATS}/{2 * TASKS * REPEATS} done")


def test_lf_after_a_complete_run_covers_the_failures_only_and_keeps_the_complete_results(bench):
    first = bench.runpytest(*args("--model", "paid"))
    complete = read(bench)
    failed = first.parseoutcomes()["failed"]
    result = bench.runpytest(*args("--model", "paid", "--lf"))
    result.assert_outcomes(failed=failed, deselected=TASKS * REPEATS - failed)
    assert read(bench) == complete
    partial = read(bench, "results.partial.json")
    assert (partial["complete"], partial["coverage"]["selected"], partial["rows"][0]["pass_rate"]) == (False, failed, 0.0)
    assert partial["coverage"]["reasons"][0]["reason"] == "subset"


def test_a_gate_on_a_subset_says_what_it_left_out_and_fails(bench):
    result = bench.runpytest(*args("--model", "paid", "-k", "task-00 or task-01", "--gate", "pass_rate>=0.1"))
    said(result, "pass_rate*incomplete run*", f"a subset: 6 of {TASKS * REPEATS} items selected (6 deselected")
    assert any(line.startswith("metric gate FAILED: exit status 1") for line in result.stdout.lines)
    assert result.ret == 1
    allowed = bench.runpytest(*args("--model", "paid", "-k", "task-00 or task-01", "--gate", "pass_rate>=0.1",
                                    "--allow-incomplete"))
    assert any(line.startswith("all gates pass: exit status 0") for line in allowed.stdout.lines)
    assert allowed.ret == 0


def test_under_xdist_the_controller_knows_the_selection_from_the_workers(bench):
    result = bench.runpytest(*args("--model", "paid", "-k", "task-01", "-n", "2"))
    data = read(bench)
    assert (data["coverage"]["selected"], data["coverage"]["deselected"]) == (REPEATS, (TASKS - 1) * REPEATS)
    assert [r["reason"] for r in data["coverage"]["reasons"]] == ["subset"]
    assert data["rows"][0]["without_record"] == 0
    assert result.ret == 1


def test_junit_xml_and_results_md_say_what_a_subset_covered(bench):
    import xml.etree.ElementTree as ET

    bench.runpytest(*args("--model", "paid", "-k", "task-01", "--junitxml", "junit.xml"))
    properties = {p.get("name"): p.get("value") for p in ET.parse(bench.path / "junit.xml").iter("property")}
    assert properties["hypeedit.complete"] == "false"
    assert (properties["hypeedit.coverage.planned"], properties["hypeedit.coverage.selected"],
            properties["hypeedit.coverage.recorded"]) == (str(TASKS * REPEATS), str(REPEATS), str(REPEATS))
    assert "| paid (release paid-v1) (incomplete) |" in (bench.path / "out" / "results.md").read_text()


FULL_WHILE_BUYING = """
import errno, os
_generate = FakeModel.generate

def _full(self, request):
    if request.repeat == 2:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "out/mini")
    return _generate(self, request)

FakeModel.generate = _full
"""


def test_errors_that_are_a_full_disk_are_named_as_such(bench):
    bench.makeconftest(PAID_CONFTEST + FULL_WHILE_BUYING)
    result = bench.runpytest(*args("--model", "paid"))
    data = read(bench)
    row = data["rows"][0]
    # the first write that finds no room is an error, and the buying stops (engine/room.py): the items not bought
    # after it are skipped for the full disk, never counted as skipped by --budget
    assert data["complete"] is False and row["disk_full"] >= 1
    assert row["disk_full"] == row["errors"] + row["disk_full_skipped"] and row["skipped"] == row["disk_full_skipped"]
    assert "skipped" not in [r["reason"] for r in data["coverage"]["reasons"]]
    assert "disk_full" in [r["reason"] for r in data["coverage"]["reasons"]]
    assert f"{row['disk_full']} items ended by a full disk (No space left on device" in last_lines(result)
