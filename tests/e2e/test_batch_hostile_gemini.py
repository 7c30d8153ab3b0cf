"""``--tier batch`` of gemini-3-pro-preview against a hostile fake of Gemini's Batch mode (its rewriting options,
tests/support/genai_fakes/gemini_batch.py): what a batch billed is delivered, or costs only itself, and never billed
twice; the key goes nowhere the API's own paths do not.

- a responses file, and inline results inside the status reply, bigger than one image reply are delivered whole;
- a responses file named as a path or an URL is not fetched: a clear error, the key never sent elsewhere;
- a line that cannot be read costs only itself; a line's error keeps its code and message; a key two lines share
  is an error for it; a line missing from a succeeded batch is counted as billed;
- a 2xx create reply that cannot be read keeps the lines journaled: the rerun adopts the batch."""

from __future__ import annotations

import json

import pytest
from ledger_view import job
from tiny_batch import GATHER_LINGER_S, gemini_batch_route, records, results_row, set_options, tiny_batch_bench

from pytest_hypeedit.transport.bounds import MiB, inline_cap

MODEL = "gemini-3-pro-preview"
KEY = "fake-gemini-key-hostile-0123456789"
TASKS = 5


@pytest.fixture
def hostile(pytester, monkeypatch, tmp_path):
    """(fake, run(repeats, **options) -> result): the tiny split at the batch tier, one batch a run."""
    with gemini_batch_route(monkeypatch, tmp_path / "cache", KEY) as fake:

        def run(repeats: int, **options):
            args = tiny_batch_bench(pytester.path, MODEL, repeats)
            set_options(pytester.path, MODEL, batch_linger_s=GATHER_LINGER_S, **options)
            return pytester.runpytest(*args, "--tier", "batch", "--concurrency", "100")

        yield fake, run


def errors(pytester) -> list[str]:
    return [r["error"] for r in records(pytester.path) if r["outcome"] == "error"]


def test_a_responses_file_bigger_than_one_image_reply_is_delivered_whole(hostile, pytester):
    """Planted: the responses file read whole through one image reply's cap -> 25 billed, 0 delivered."""
    fake, run = hostile
    fake.image_bytes = 350_000
    # 25 lines: past the 16 inline ones, a file; of 11.7 MB, past one image reply's cap (9.1 MB) by a quarter
    run(5, max_image_mb=0.5).assert_outcomes(passed=TASKS * 5)
    (output,) = [fake.file_bytes(f["data"]) for f in fake.files.values() if f.get("generated")]
    assert len(output) > inline_cap(int(0.5 * MiB)) and fake.creations == 1
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-6)


def test_inline_results_bigger_than_one_image_reply_are_delivered_whole(hostile, pytester):
    """Planted: the status reply capped at one image reply -> every poll fails, 10 billed, 0 delivered."""
    fake, run = hostile
    fake.image_bytes = 1_000_000  # ten lines inline: about 13 MB of status reply
    run(2, max_image_mb=1).assert_outcomes(passed=TASKS * 2)
    assert not any(b["from_file"] for b in fake.batches.values()) and fake.creations == 1
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-6)


@pytest.mark.parametrize("name", ["files/../../../v1beta/models", "https://elsewhere.example/files/abc"])
def test_a_responses_file_not_named_as_a_file_is_not_fetched(hostile, pytester, name):
    """Planted: the name used unchecked -> the key sent to another path (or the line crashes)."""
    fake, run = hostile
    fake.responses_file = name
    run(2, batch_inline_max_bytes=1).assert_outcomes(errors=TASKS * 2)
    assert all("not a Files API name" in e for e in errors(pytester))
    downloads = [s for s in fake.requests if ":download" in s.path or ("models" in s.path and s.method == "GET")]
    assert not downloads  # nothing fetched with the key, anywhere
    assert fake.creations == 1


def test_a_line_that_cannot_be_read_costs_only_itself(hostile, pytester):
    """Planted: a bad line of the responses file fails the whole batch ("a bug of the plugin")."""
    fake, run = hostile
    fake.rewrite_results = lambda texts: [texts[0][: len(texts[0]) // 2], *texts[1:]]
    run(2, batch_inline_max_bytes=1).assert_outcomes(passed=TASKS * 2 - 1, errors=1)
    (error,) = errors(pytester)
    assert "not JSON" in error and "batches/" in error and "not bought again" in error
    assert fake.creations == 1


def test_a_line_error_keeps_its_code_and_message(hostile, pytester):
    """Planted: the SDK's JobError read as a dict -> "the line failed: None"."""
    fake, run = hostile
    fake.fail = 1
    run(2).assert_outcomes(passed=TASKS * 2 - 1, errors=1)
    (error,) = errors(pytester)
    assert "code 13: internal error at line" in error, error


def test_a_key_two_lines_share_is_an_error_not_the_last_one(hostile, pytester):
    """Planted: inline responses mapped by key with the last one winning."""
    fake, run = hostile
    fake.same_key = True
    run(2).assert_outcomes(passed=TASKS * 2 - 2, errors=2)  # the key named twice, and the one no line names
    assert any("all name it" in e for e in errors(pytester))


def test_a_line_missing_from_a_succeeded_batch_is_counted_as_billed(hostile, pytester):
    """Planted: a missing line of a succeeded batch taken as unbilled -> bought again, 11 billed, 10 counted."""
    fake, run = hostile
    fake.drop = 1
    run(2).assert_outcomes(passed=TASKS * 2 - 1, errors=1)
    assert fake.creations == 1  # not bought again
    assert results_row(pytester.path)["spent"] >= fake.billed - 1e-6


def test_an_unreadable_create_reply_then_a_rerun_bills_one_batch(hostile, pytester):
    """Planted: the lines forgotten when the 2xx create cannot be read -> the rerun makes a second batch."""
    fake, run = hostile
    fake.create_reply = b"<html>upstream said ok</html>"
    run(2).assert_outcomes(errors=TASKS * 2)
    assert fake.creations == 1
    assert all(job(r)["display_name"] and not job(r).get("batch_id") for r in records(pytester.path))
    fake.create_reply = None
    run(2).assert_outcomes(passed=TASKS * 2)
    assert fake.creations == 1
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-6)
    assert json.loads((pytester.path / "out" / "results.json").read_text())["rows"][0]["errors"] == 0
