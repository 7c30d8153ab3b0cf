"""``--tier batch`` of gpt-image-2 end to end (pytester) against the fake OpenAI Files + Batch APIs
(tests/providers_fakes/openai_batch.py): every candidate delivered, billed at the batch tier only, the results'
spend what the fake billed, each reference uploaded once; a run stopped while its batch is pending resumes the
batch on the next run and submits nothing again; an expired batch keeps what it returned and buys the rest again
(OpenAI bills completed requests only); without --tier nothing changes."""

from __future__ import annotations

import json
import signal

import pytest
from ledger_view import job
from tiny_batch import (
    GATHER_LINGER_S,
    PENDING_WAIT_S,
    openai_batch_route,
    records,
    results_row,
    set_options,
    signal_when,
    stop_while_gathering,
    tiny_batch_bench,
)

from pytest_hypeedit.engine.records import Record

REPEATS = 2
TASKS = 5
REFERENCES = 6  # the last task has two
MODEL = "gpt-image-2"


@pytest.fixture
def batch_run(pytester, monkeypatch, tmp_path):
    """(fake, run(*extra) -> result): the tiny split on gpt-image-2 at the batch tier, quick lingers and polls."""
    args = tiny_batch_bench(pytester.path, MODEL, REPEATS)
    with openai_batch_route(monkeypatch, tmp_path / "cache") as fake:
        yield fake, lambda *extra: pytester.runpytest(*args, *extra)


def test_a_batch_run_delivers_every_candidate_at_the_batch_price(batch_run, pytester):
    fake, run = batch_run
    set_options(pytester.path, MODEL, batch_linger_s=GATHER_LINGER_S)  # one batch even on a loaded machine
    result = run("--tier", "batch")
    result.assert_outcomes(passed=TASKS * REPEATS)
    assert not any(s.path == "/v1/images/edits" for s in fake.requests)  # nothing bought at the standard tier
    assert fake.creations == 1  # the ten candidates waited together for one batch
    assert len(fake.uploads("vision")) == REFERENCES  # each reference once, for both repeats
    assert len(fake.uploads("batch")) == 1
    row = results_row(pytester.path)
    assert (row["candidates"], row["errors"]) == (TASKS * REPEATS, 0)
    assert row["spent"] == pytest.approx(fake.billed, abs=1e-5)
    assert fake.billed > 0
    assert sum(Record.from_dict(r).cost for r in records(pytester.path)) == pytest.approx(fake.billed, abs=1e-5)
    assert all(r["extra"]["batch_id"] for r in records(pytester.path))
    again = run("--tier", "batch")  # everything is on disk: nothing is bought or uploaded again
    again.assert_outcomes(passed=TASKS * REPEATS)
    assert (fake.creations, len(fake.uploads("vision"))) == (1, REFERENCES)


def test_a_run_stopped_while_its_batch_is_pending_resumes_it_and_submits_nothing_again(batch_run, pytester):
    fake, run = batch_run
    fake.hold = True
    set_options(pytester.path, MODEL, batch_max_wait_s=PENDING_WAIT_S)
    first = run("--tier", "batch")
    first.assert_outcomes(errors=TASKS * REPEATS)  # each still waits for its batch: an error, journaled
    created, inputs = fake.creations, len(fake.uploads("batch"))
    assert created >= 1
    journaled = [job(r) for r in records(pytester.path)]
    assert len(journaled) == TASKS * REPEATS
    assert all(job["batch_id"] and job["input_file_id"] for job in journaled)
    fake.hold = False
    set_options(pytester.path, MODEL, batch_max_wait_s=60.0)
    second = run("--tier", "batch")
    second.assert_outcomes(passed=TASKS * REPEATS)
    assert fake.creations == created  # the pending batches were polled again, never submitted again
    assert len(fake.uploads("batch")) == inputs and len(fake.uploads("vision")) == REFERENCES
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-5)


def test_lines_left_pending_by_a_batch_run_are_not_taken_for_a_standard_purchase(batch_run, pytester, tmp_path):
    """A run at standard after a batch run left its lines journaled: the standard adapter does not poll them, so
    each candidate is a purchase of this run (journaled before it is sent, reserved in --budget), not a resumed job."""
    fake, run = batch_run
    fake.hold = True
    set_options(pytester.path, MODEL, batch_max_wait_s=2.0)
    run("--tier", "batch").assert_outcomes(errors=TASKS * REPEATS)  # each line still waits: journaled

    standard = run("--budget", "100")
    standard.assert_outcomes(passed=TASKS * REPEATS)
    assert sum(s.path == "/v1/images/edits" for s in fake.requests) == TASKS * REPEATS
    row = results_row(pytester.path)
    assert not any((job(r) or {}).get("resumed") for r in records(pytester.path))
    ledger = max((tmp_path / "cache").rglob("budget.json"), key=lambda path: path.stat().st_mtime)  # this run's
    assert json.loads(ledger.read_text())["spent"] / 1e6 == pytest.approx(row["spent_this_run"])  # each in --budget
    # the lines left pending were submitted in a batch, which may still bill them: what the batch run counted of
    # them stays in spent (as earlier purchases that left no image), beside what this run bought (its own entry)
    assert all(job(r) is None and [(c["kind"], c["state"], c["tier"]) for c in r["calls"]] == [
        ("batch_line", "left_behind", "batch"), ("generation", "billed", "standard")]
        for r in records(pytester.path))
    assert row["spent_this_run"] > 0 and row["spent_breakdown"]["resubmitted"] > 0
    assert row["spent"] == pytest.approx(row["spent_this_run"] + row["spent_breakdown"]["resubmitted"])


def test_an_expired_batch_keeps_what_it_returned_and_buys_the_rest_again(batch_run, pytester):
    fake, run = batch_run
    fake.end_as, fake.end_first, fake.partial = "expired", 1, 4  # the first batch expires after four lines
    set_options(pytester.path, MODEL, batch_linger_s=GATHER_LINGER_S)  # the first batch holds all ten lines
    result = run("--tier", "batch")
    result.assert_outcomes(passed=TASKS * REPEATS)
    first, *later = (fake.batches[key] for key in sorted(fake.batches))
    assert (first["status"], first["request_counts"]["completed"]) == ("expired", 4)
    # the six unbilled lines, and only they, were bought again in a later batch
    assert sum(batch["request_counts"]["total"] for batch in later) == TASKS * REPEATS - 4
    row = results_row(pytester.path)
    assert row["spent"] == pytest.approx(fake.billed, abs=1e-5)  # nothing paid twice, nothing left out


def test_a_refused_line_is_a_refusal_as_on_the_standard_tier(batch_run, pytester):
    fake, run = batch_run
    fake.inject("refusal")
    result = run("--tier", "batch")
    result.assert_outcomes(passed=TASKS * REPEATS - 1, failed=1)
    assert results_row(pytester.path)["refusals"] == 1
    assert {Record.from_dict(r).tier for r in records(pytester.path)} == {"batch"}  # the refused line too: filed under its tier
    created = fake.creations  # one batch, or more when the lines arrived further apart than the linger
    assert created >= 1
    again = run("--tier", "batch")  # a refusal is the model's answer: not bought again
    again.assert_outcomes(passed=TASKS * REPEATS - 1, failed=1)
    assert fake.creations == created


def test_without_tier_nothing_is_batched(batch_run, pytester):
    fake, run = batch_run
    result = run()
    result.assert_outcomes(passed=TASKS * REPEATS)
    assert fake.creations == 0 and not fake.files
    assert sum(s.path == "/v1/images/edits" for s in fake.requests) == TASKS * REPEATS


def test_the_estimate_states_the_batch_price_and_the_tier_of_each_model(batch_run, pytester):
    fake, run = batch_run
    standard, batch = run("--estimate"), run("--estimate", "--tier", "batch")
    line = "hypeedit: tier batch: gpt-image-2 (openai) buys at the batch tier, $0.095 a candidate*"
    batch.stdout.fnmatch_lines([line])
    assert "tier batch" not in standard.stdout.str()

    def most(result) -> float:
        text = next(s for s in result.stdout.lines if "candidates to buy for gpt-image-2" in s)
        return float(text.split("at most $")[1].split(" ")[0])

    assert most(batch) == pytest.approx(most(standard) / 2, abs=0.01)
    assert not fake.requests  # an estimate calls nothing


def test_a_run_killed_after_its_batch_was_created_submits_nothing_again(batch_run, pytester):
    """The pytest process is killed (SIGKILL, nothing of it runs after) while its batch is pending at the
    provider; the rerun polls that batch and creates nothing."""
    fake, run = batch_run
    fake.hold = True
    signal_when(pytester.path, MODEL, REPEATS, names_its_batch, "every candidate's record names its batch before the kill",
                signal.SIGKILL)
    assert names_its_batch(records(pytester.path)), "every candidate's record names its batch after the kill"
    created, inputs = fake.creations, len(fake.uploads("batch"))
    assert created >= 1
    fake.hold = False
    rerun = run("--tier", "batch")
    rerun.assert_outcomes(passed=TASKS * REPEATS)
    assert (fake.creations, len(fake.uploads("batch"))) == (created, inputs)
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-5)


def names_its_batch(found: list[dict]) -> bool:
    """Every candidate's record names its batch (the batch was created and the create reply read)."""
    return len(found) == TASKS * REPEATS and all((job(r) or {}).get("batch_id") for r in found)


def test_under_xdist_each_reference_is_still_uploaded_once_per_run(batch_run, pytester):
    fake, run = batch_run
    result = run("--tier", "batch", "-n", "2")
    result.assert_outcomes(passed=TASKS * REPEATS)
    assert len(fake.uploads("vision")) == REFERENCES  # the workers share the run's uploads (batch_uploads.py)
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-5)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_a_run_stopped_while_its_lines_gather_costs_nothing_and_counts_nothing(batch_run, pytester, signum):
    """Killed (SIGKILL) or stopped (SIGTERM) while its lines still gather in the collector, nothing sent to the
    provider: no line is a paid call.  The stopped run counts nothing spent and nothing bought ahead, and the
    rerun's spend is what the fake billed (it was $2.45 for $0.96 billed: every gathering line possibly paid)."""
    fake, run = batch_run
    out = stop_while_gathering(pytester.path, MODEL, REPEATS, TASKS * REPEATS, signum)
    assert (fake.creations, len(fake.uploads("batch"))) == (0, 0)  # nothing was sent for the lines
    if signum == signal.SIGTERM:
        row = results_row(pytester.path)
        assert (row["spent"], row["spent_this_run"], row["possibly_paid"]) == (0, 0, 0), out[-3000:]
        assert not row.get("bought_unreported"), out[-3000:]
    set_options(pytester.path, MODEL, batch_linger_s=GATHER_LINGER_S)
    rerun = run("--tier", "batch")
    rerun.assert_outcomes(passed=TASKS * REPEATS)
    row = results_row(pytester.path)
    assert fake.billed > 0 and row["spent"] == pytest.approx(fake.billed, abs=1e-5)
    assert row["possibly_paid"] == 0
    assert not any(Record.from_dict(r).possibly_paid_calls for r in records(pytester.path))

