"""Submitted jobs are journaled: a kill, a failed poll or an expired result never makes a run pay twice.

Real runs of the plugin (pytester in process, or a subprocess that is killed) against the loopback fakes of
BFL and fal, whose ledgers count the jobs each candidate submitted.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from benchdata import make_tasks, write_labels, write_run_folder
from fake_models import fast_retries_conftest
from ledger_view import job
from providers_fakes.bfl import FakeBfl
from providers_fakes.chaos import Chaos
from providers_fakes.fal import FakeFal

from pytest_hypeedit.engine.records import Record

MODELS = ("flux-2-max", "qwen-image-edit-2511")
FAST_RETRIES = fast_retries_conftest(max_attempts=3)
FAST_POLLS = """
models:
  flux-2-max: {options: {poll_s: 0.01, poll_max_s: 0.05, max_wait_s: %(wait)s}}
  qwen-image-edit-2511: {options: {poll_s: 0.01, poll_max_s: 0.05, max_wait_s: %(wait)s}}
routes:
  bfl: {rpm: 100000, inflight: 24}
  fal: {rpm: 100000, inflight: 24}
"""


def prepare(folder: Path, tasks: int, repeats: int, *, max_wait: float) -> list[str]:
    """Task file, images, labels, a fast-retry conftest and fast polls; the pytest arguments of a run."""
    task_list = make_tasks(tasks)
    return write_run_folder(folder, conftest=FAST_RETRIES, models_file=FAST_POLLS % {"wait": max_wait}, tasks=task_list,
                            labels={(t["task_id"], model, r): r % 2 == 1 for t in task_list for model in MODELS
                                    for r in range(1, repeats + 1)}, repeats=repeats)


def records(folder: Path) -> list[dict]:
    return [json.loads(path.read_text()) for path in (folder / "out").rglob("[0-9][0-9][0-9].json")]


def rows(folder: Path) -> dict[str, dict]:
    results = json.loads((folder / "out" / "results.json").read_text())
    return {row["model"]: row for row in results["rows"]}


@pytest.fixture
def fakes(monkeypatch, tmp_path):
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    with FakeBfl(pending_polls=2) as bfl, FakeFal(queued_polls=2) as fal:
        for fake in (bfl, fal):
            monkeypatch.setenv(fake.env, fake.base)
            monkeypatch.setenv(fake.key_env, fake.key)
        yield bfl, fal


# --------------------------------------------------------------------------- in-process runs


def test_a_job_whose_polls_failed_is_resumed_by_the_next_run(pytester, fakes):
    bfl, _ = fakes
    args = prepare(pytester.path, tasks=1, repeats=2, max_wait=0.3) + ["--model", "flux-2-max"]
    bfl.inject("malformed", path="get_result", count=10_000)
    first = pytester.runpytest(*args)
    first.assert_outcomes(errors=2)
    assert all(r["outcome"] == "error" and job(r)["id"].startswith("bfl-task-") for r in records(pytester.path))
    assert "stays journaled" in records(pytester.path)[0]["error"]
    assert rows(pytester.path)["flux-2-max"]["spent"] == pytest.approx(0.2)  # paid, though no image yet

    bfl.faults.clear()
    (pytester.path / "fast.yaml").write_text(FAST_POLLS % {"wait": 30})  # patient now: a loaded machine polls slowly
    second = pytester.runpytest(*args)
    second.assert_outcomes(passed=1, failed=1)
    assert list(bfl.ledger.submitted.values()) == [1, 1]  # resumed, not submitted again
    assert all(job(r)["resumed"] for r in records(pytester.path))
    row = rows(pytester.path)["flux-2-max"]
    assert row["spent"] == pytest.approx(0.2) and row["spent_this_run"] == 0  # paid by the first run


def test_an_expired_job_is_submitted_again_and_counted(pytester, fakes):
    bfl, _ = fakes
    args = prepare(pytester.path, tasks=1, repeats=2, max_wait=0.3) + ["--model", "flux-2-max"]
    bfl.inject("malformed", path="get_result", count=10_000)
    pytester.runpytest(*args).assert_outcomes(errors=2)
    bfl.faults.clear()
    bfl.forget_all()  # BFL keeps results 10 minutes: then "Task not found"
    (pytester.path / "fast.yaml").write_text(FAST_POLLS % {"wait": 30})

    second = pytester.runpytest(*args)
    second.assert_outcomes(passed=1, failed=1)
    assert rows(pytester.path)["flux-2-max"]["resubmitted"] == 2
    second.stdout.fnmatch_lines(["*resubmitted 2 (expired, or not run by their*"])
    assert list(bfl.ledger.submitted.values()) == [2, 2] and not bfl.ledger.paid_twice()
    for record in records(pytester.path):
        assert record["resubmitted"] == 1 and "Task not found" in record["extra"]["expired_jobs"][0]
        assert not job(record).get("resumed")  # the second job was paid for in this run
        assert Record.from_dict(record).cost == 0.10  # each job at its own cost: the expired one's, an entry of the call ledger
        assert [(c["kind"], c["state"], c["price"]) for c in record["calls"]] == [("generation", "left_behind", 0.10),
                                                                                 ("generation", "billed", 0.10)]
    row = rows(pytester.path)["flux-2-max"]  # four jobs were paid for: the expired two count too
    assert row["spent"] == pytest.approx(0.4) and row["spent_this_run"] == pytest.approx(0.2)
    assert row["spent_breakdown"] == {"generation": 0.2, "judge": 0, "resubmitted": 0.2, "possibly_paid": 0}


def billed(bfl: FakeBfl) -> float:
    """What the fake BFL charged for every job submitted to it (1 credit = $0.01)."""
    return round(sum(bfl.charged) * 0.01, 6)


def lose_images(folder: Path) -> None:
    """The candidates vanish from the outputs (a cache restored without them); their records stay."""
    for image in (folder / "out").rglob("[0-9][0-9][0-9].*g"):
        image.unlink()


@pytest.mark.parametrize("model, price", [("flux-2-max", 0.10), ("qwen-image-edit-2511", 0.03)])
def test_a_lost_image_whose_job_is_still_kept_is_fetched_again_and_paid_for_once(pytester, fakes, model, price):
    fake = fakes[MODELS.index(model)]
    args = prepare(pytester.path, tasks=1, repeats=2, max_wait=30) + ["--model", model]
    pytester.runpytest(*args).assert_outcomes(passed=1, failed=1)
    lose_images(pytester.path)

    again = pytester.runpytest(*args)
    again.assert_outcomes(passed=1, failed=1)
    assert list(fake.ledger.submitted.values()) == [1, 1]  # the finished jobs' results fetched again: no new job
    assert model != "flux-2-max" or billed(fake) == pytest.approx(2 * price)  # what BFL charged
    spent = [Record.from_dict(r).spent for r in records(pytester.path)]
    assert sum(spent) == pytest.approx(2 * price), spent  # each job counted once
    row = rows(pytester.path)[model]
    assert row["spent"] == pytest.approx(2 * price) and row["spent_this_run"] == 0  # nothing new was bought


def test_a_lost_image_whose_job_expired_is_bought_once_more_and_each_job_counted_once(pytester, fakes):
    bfl, _ = fakes
    args = prepare(pytester.path, tasks=1, repeats=2, max_wait=30) + ["--model", "flux-2-max"]
    pytester.runpytest(*args).assert_outcomes(passed=1, failed=1)
    lose_images(pytester.path)
    bfl.forget_all()  # BFL keeps results 10 minutes: then "Task not found"

    again = pytester.runpytest(*args)
    again.assert_outcomes(passed=1, failed=1)
    assert list(bfl.ledger.submitted.values()) == [2, 2]
    for record in records(pytester.path):  # the first job's cost stays where the lost image put it
        assert Record.from_dict(record).cost == 0.10 and [c["price"] for c in record["calls"] if c["state"] == "left_behind"] == [0.10]
    row = rows(pytester.path)["flux-2-max"]
    assert row["spent"] == pytest.approx(billed(bfl)) == pytest.approx(0.4)
    assert row["spent_breakdown"] == {"generation": 0.2, "judge": 0, "resubmitted": 0.2, "possibly_paid": 0}
    assert row["spent_this_run"] == pytest.approx(0.2)


def test_a_job_journaled_on_another_route_stays_with_its_release(pytester, fakes):
    """A model moved to another route is another release (engine/release.py): it buys its own candidates in its
    own folder; the BFL jobs, paid for when submitted, stay in the first release's records, never polled through
    fal's adapter and never counted in the new release's row."""
    bfl, fal = fakes
    args = prepare(pytester.path, tasks=1, repeats=2, max_wait=0.3) + ["--model", "flux-2-max"]
    bfl.inject("malformed", path="get_result", count=10_000)
    pytester.runpytest(*args).assert_outcomes(errors=2)
    before = {r["repeat"]: r for r in records(pytester.path)}
    (pytester.path / "moved.yaml").write_text(
        "models:\n  flux-2-max: {route: fal, provider_model: fal-ai/qwen-image-edit-2511,"
        " options: {poll_s: 0.01, max_wait_s: 5}}\n")
    # the labels judge judges a release with its own labels only: label the new release's folder, named by --estimate
    estimate = pytester.runpytest(*args, "--models-file", "moved.yaml", "--estimate")
    aside = re.search(r"candidates in mini/(flux-2-max@[0-9a-f]{12})", estimate.stdout.str())
    assert aside is not None, estimate.stdout.str()
    write_labels(pytester.path / "r1.json", {(t, m, r): r % 2 == 1 for t in ("task-00",)
                                             for m in (*MODELS, aside.group(1)) for r in (1, 2)})
    moved = pytester.runpytest(*args, "--models-file", "moved.yaml")
    moved.assert_outcomes(passed=1, failed=1)  # fal's adapter never polls a BFL task
    assert sum(fal.ledger.submitted.values()) == 2
    by_route: dict[str, list[dict]] = {}
    for record in records(pytester.path):
        by_route.setdefault(record["release"]["route"], []).append(record)
    assert all(job(r)["route"] == "fal" and not r["extra"].get("left_behind_jobs") for r in by_route["fal"])
    assert {r["repeat"]: r for r in by_route["bfl"]} == before  # the first release's records, untouched
    row = rows(pytester.path)["flux-2-max"]
    assert row["release"]["route"] == "fal"
    assert row["spent"] == pytest.approx(2 * 0.10)  # fal: the model's price; the BFL jobs are the other release's
    assert row["spent_this_run"] == pytest.approx(0.2)


# --------------------------------------------------------------------------- killed runs (subprocess)


def launch(folder: Path, args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", *args], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, text=True)


def polling_now(folder: Path) -> list[dict]:
    """Records of candidates whose job is journaled and not finished (no image yet)."""
    found = []
    for path in (folder / "out").rglob("[0-9][0-9][0-9].json"):
        try:
            record = json.loads(path.read_text())
        except ValueError:
            continue
        if job(record) and not record.get("candidate"):
            found.append(record)
    return found


def latest_request_is_a_poll(*fakes) -> bool:
    latest = max((seen for fake in fakes for seen in fake.seen()), key=lambda seen: seen.at, default=None)
    return latest is not None and ("get_result" in latest.path or latest.path.endswith("/status"))


def kill_when(process: subprocess.Popen, ready, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.01)
    assert process.poll() is None, "the run ended before it could be killed:\n" + process.communicate()[0][-3000:]
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def test_a_run_killed_while_polling_is_finished_by_the_rerun_without_paying_twice(pytester, fakes):
    bfl, _ = fakes
    folder = pytester.path  # the rerun runs in this process (pytester's folder): it is sent no signal
    args = prepare(folder, tasks=2, repeats=2, max_wait=60) + ["--model", "flux-2-max"]
    env = {**os.environ}
    bfl.pending_polls = 10 ** 6  # every job stays Pending: the run is killed while polling
    process = launch(folder, args + ["-n", "2"], env)  # two workers, each with its jobs in flight
    # killed once every job is journaled and polled: no submission is between the provider's answer and
    # the journal then (that moment no client can protect)
    kill_when(process, lambda: len(polling_now(folder)) >= 4)
    journaled = polling_now(folder)
    assert len(journaled) >= 2 and sum(bfl.ledger.submitted.values()) == len(journaled)

    bfl.pending_polls = 1
    rerun = pytester.runpytest_inprocess("-q", *args)
    assert rerun.ret in (0, 1), rerun.stdout.str()[-2000:]  # 1: the labels fail half the candidates
    assert sorted(bfl.ledger.submitted.values()) == [1] * 4  # every candidate's job submitted exactly once
    done = {(r["task_id"], r["repeat"]): r for r in records(folder)}
    assert len(done) == 4 and all(r["outcome"] in ("pass", "fail") for r in done.values())
    for record in journaled:  # the jobs the kill interrupted were resumed, not bought again
        finished = job(done[(record["task_id"], record["repeat"])])
        assert finished["id"] == job(record)["id"] and finished["resumed"] is True


BFL_FAULTS = [
    ("429 on a submit", "status", {"status": 429, "retry_after": "0.01", "path": "/v1/flux"}),
    ("503 on a poll", "status", {"status": 503, "path": "get_result"}),
    ("malformed poll", "malformed", {"path": "get_result"}),
    ("500 on a submit", "status", {"status": 500, "path": "/v1/flux"}),
    ("refusal", "refusal", {}),
    ("job Failed", "failed", {}),
    ("truncated image", "truncated", {}),
    ("Task not found", "lost", {"path": "get_result"}),
    ("expired result URL", "expired", {}),
    ("malformed submit", "malformed", {"path": "/v1/flux"}),
    ("job Error", "failed", {"body": "Error"}),
]
FAL_FAULTS = [
    ("429 on a status poll", "status", {"status": 429, "retry_after": "0.01", "path": "/status$"}),
    ("503 on a submit", "status", {"status": 503, "path": "edit-2511$"}),
    ("malformed status", "malformed", {"path": "/status$"}),
    ("500 on a result", "status", {"status": 500, "path": "requests/[^/]+$"}),
    ("refusal", "refusal", {}),
    ("request failed", "failed", {}),
    ("truncated image", "truncated", {}),
    ("request not found", "lost", {"path": "/status$"}),
    ("expired image URL", "expired", {}),
    ("malformed result", "malformed", {"path": "requests/[^/]+$"}),
]


def test_soak_faults_a_kill_and_reruns_pay_for_no_job_twice(pytester, fakes):
    bfl, fal = fakes
    folder = pytester.path  # the reruns run in this process (pytester's folder): they are sent no signal
    # One candidate at a time (see below), in every run: the faults then come in the order the plan lists them.
    args = prepare(folder, tasks=2, repeats=4, max_wait=5) + ["--model", MODELS[0], "--model", MODELS[1],
                                                              "--concurrency", "1"]
    env = {**os.environ}
    bfl.chaos, fal.chaos = Chaos(BFL_FAULTS, every=3), Chaos(FAL_FAULTS, every=3)
    # One candidate at a time in the run that is killed: killed while a job is polled, its latest request is
    # then a poll, and the job it polls was journaled before that first poll.  (A kill between a provider's
    # accepting a job and its reply reaching us loses the id: no client can avoid that, so the test does not
    # kill there; with several candidates in flight some submit could always be at that point.)
    process = launch(folder, args, env)
    kill_when(process, lambda: sum(bfl.ledger.submitted.values()) + sum(fal.ledger.submitted.values()) >= 6
              and latest_request_is_a_poll(bfl, fal))
    outputs = []
    for run in range(4):
        if run == 1:  # faults in the killed run and the first rerun; then the reruns must converge
            bfl.chaos.stop()
            fal.chaos.stop()
        outputs.append(pytester.runpytest_inprocess("-q", *args).stdout.str())
        if "run complete" in outputs[-1]:
            break
    assert "run complete" in outputs[-1], outputs[-1][-3000:]

    for fake, plan in ((bfl, BFL_FAULTS), (fal, FAL_FAULTS)):
        assert set(fake.chaos.taken()) == {label for label, _, _ in plan}, "a fault kind never happened"
        assert not fake.ledger.paid_twice(), "a job was submitted again without having failed or expired"
        assert len(fake.ledger.submitted) == 8
    final = rows(folder)
    assert all(final[model]["errors"] == 0 and final[model]["judged"] == 8 for model in MODELS)
    assert all(final[model]["refusals"] >= 1 for model in MODELS)
    resubmitted = sum(final[model]["resubmitted"] for model in MODELS)
    expired = sum(bfl.ledger.expired.values()) + sum(fal.ledger.expired.values())
    assert 1 <= resubmitted <= expired  # an expiry seen by a killed run is met again (and counted) by the rerun
