"""``--tier batch`` of gemini-3-pro-preview end to end (pytester) against the fake Gemini Batch mode and Files
API (tests/genai_fakes/gemini_batch.py, spoken through google-genai): every candidate delivered, billed at the
batch tier only, the results' spend what the fake billed, each reference uploaded once; a run stopped while its
batch is pending resumes it and creates nothing again; a refused line is a refusal; an expired job (no results,
nothing billed) is bought again."""

from __future__ import annotations

import signal

import pytest
from ledger_view import job
from tiny_batch import (
    GATHER_LINGER_S,
    PENDING_WAIT_S,
    gemini_batch_route,
    records,
    results_row,
    set_options,
    stop_while_gathering,
    tiny_batch_bench,
)

from pytest_hypeedit.engine.records import Record

REPEATS, TASKS, REFERENCES = 2, 5, 6
MODEL = "gemini-3-pro-preview"
KEY = "fake-gemini-key-batch-0123456789"


@pytest.fixture
def batch_run(pytester, monkeypatch, tmp_path):
    args = tiny_batch_bench(pytester.path, MODEL, REPEATS)
    with gemini_batch_route(monkeypatch, tmp_path / "cache", KEY) as fake:
        yield fake, lambda *extra: pytester.runpytest(*args, *extra)


def test_a_batch_run_delivers_every_candidate_at_the_batch_price(batch_run, pytester):
    fake, run = batch_run
    set_options(pytester.path, MODEL, batch_linger_s=GATHER_LINGER_S)  # one batch even on a loaded machine
    result = run("--tier", "batch")
    result.assert_outcomes(passed=TASKS * REPEATS)
    assert not any(":generateContent" in s.path for s in fake.requests)  # nothing at the standard tier
    assert fake.creations == 1
    assert fake.uploads() == REFERENCES
    row = results_row(pytester.path)
    assert (row["candidates"], row["errors"]) == (TASKS * REPEATS, 0)
    assert row["spent"] == pytest.approx(fake.billed, abs=1e-6) and fake.billed == pytest.approx(0.067 * 10)
    assert all(r["extra"]["batch_id"].startswith("batches/") for r in records(pytester.path))


def test_a_run_stopped_while_its_batch_is_pending_resumes_it(batch_run, pytester):
    fake, run = batch_run
    fake.hold = True
    set_options(pytester.path, MODEL, batch_max_wait_s=PENDING_WAIT_S)
    run("--tier", "batch").assert_outcomes(errors=TASKS * REPEATS)
    created, uploaded = fake.creations, fake.uploads()
    assert all(job(r)["batch_id"] for r in records(pytester.path))
    fake.hold = False
    set_options(pytester.path, MODEL, batch_max_wait_s=60.0)
    result = run("--tier", "batch")
    assert result.parseoutcomes().get("passed") == TASKS * REPEATS, {r.get("error") for r in records(pytester.path)}
    assert (fake.creations, fake.uploads()) == (created, uploaded)  # polled again, nothing submitted again
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-6)


def test_a_refused_line_is_a_refusal(batch_run, pytester):
    fake, run = batch_run
    fake.refuse = 1
    run("--tier", "batch").assert_outcomes(passed=TASKS * REPEATS - 1, failed=1)
    assert results_row(pytester.path)["refusals"] == 1
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-6)


def test_an_expired_job_is_bought_again(batch_run, pytester):
    fake, run = batch_run
    fake.end_as = "EXPIRED"
    first = run("--tier", "batch")
    # the job expired with no results, nothing billed: bought again at once, and that job expired too
    first.assert_outcomes(errors=TASKS * REPEATS)
    assert fake.billed == 0 and results_row(pytester.path)["spent"] == 0
    # said as what happened: each batch line was not run (its job expired), not "expired" of a batch line
    assert all("not run again" in r["error"] and "JOB_STATE_EXPIRED" in r["error"] for r in records(pytester.path))
    fake.end_as = None
    run("--tier", "batch").assert_outcomes(passed=TASKS * REPEATS)
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-6)


def test_requests_past_the_inline_limit_go_in_one_uploaded_input_file(batch_run, pytester):
    fake, run = batch_run
    set_options(pytester.path, MODEL, batch_inline_max_bytes=1)  # every batch is past it
    run("--tier", "batch").assert_outcomes(passed=TASKS * REPEATS)
    created = [b for b in fake.batches.values() if b["from_file"]]
    assert len(created) == fake.creations >= 1
    assert fake.uploads("jsonl") == fake.creations and fake.uploads() == REFERENCES + fake.creations
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-6)
    jobs = [job(r) for r in records(pytester.path)]
    assert all(job["input_file_id"].startswith("files/") and job["batch_id"] for job in jobs)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_a_run_stopped_while_its_lines_gather_costs_nothing_and_counts_nothing(batch_run, pytester, signum):
    """Killed or stopped while its lines gather (nothing sent to Gemini): no line is a paid call; the stopped run
    counts nothing, and the rerun's spend is what the fake billed (planted: the gathering state dropped, caught)."""
    fake, run = batch_run
    out = stop_while_gathering(pytester.path, MODEL, REPEATS, TASKS * REPEATS, signum)
    assert fake.creations == 0 and fake.billed == 0  # nothing was sent for the lines
    if signum == signal.SIGTERM:
        row = results_row(pytester.path)
        assert (row["spent"], row["spent_this_run"], row["possibly_paid"]) == (0, 0, 0), out[-3000:]
        assert not row.get("bought_unreported"), out[-3000:]
    set_options(pytester.path, MODEL, batch_linger_s=GATHER_LINGER_S)
    result = run("--tier", "batch")
    assert result.parseoutcomes().get("passed") == TASKS * REPEATS, {r.get("error") for r in records(pytester.path)}
    row = results_row(pytester.path)
    assert fake.billed > 0 and row["spent"] == pytest.approx(fake.billed, abs=1e-6)
    assert row["possibly_paid"] == 0
    assert not any(Record.from_dict(r).possibly_paid_calls for r in records(pytester.path))

