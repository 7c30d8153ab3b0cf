"""``--tier batch`` of gpt-image-2 against a hostile fake of OpenAI's Files + Batch APIs (its rewriting options,
tests/support/providers_fakes/openai_batch.py): what a batch billed is delivered, or costs only itself, and never
billed twice.

- a batch's output file bigger than one image reply, each line within it, is delivered whole (streamed line by line);
- a line holding a raw U+2028 (valid JSON) is read; a line that cannot be read fails its own candidate only, which
  is not bought again (an output-file line was billed);
- a 2xx create reply that cannot be read keeps the lines journaled: the rerun adopts the batch, never makes a second;
- the adoption finds the batch past 100 pages of ``GET /batches``."""

from __future__ import annotations

import json

import pytest
from ledger_view import job
from providers_fakes.openai_batch import FakeOpenAIBatch
from tiny_batch import GATHER_LINGER_S, openai_batch_route, records, results_row, set_options, tiny_batch_bench

from pytest_hypeedit.transport.bounds import MiB, inline_cap

MODEL = "gpt-image-2"
TASKS = 5


@pytest.fixture
def hostile(pytester, monkeypatch, tmp_path):
    """(fake, run(repeats, *extra) -> result): the tiny split on gpt-image-2 at the batch tier, one batch a run."""
    with openai_batch_route(monkeypatch, tmp_path / "cache") as fake:

        def run(repeats: int, *extra: str, **options):
            args = tiny_batch_bench(pytester.path, MODEL, repeats)
            set_options(pytester.path, MODEL, batch_linger_s=GATHER_LINGER_S, **options)
            return pytester.runpytest(*args, "--tier", "batch", "--concurrency", "100", *extra)

        yield fake, run


def output_files(fake: FakeOpenAIBatch) -> list[bytes]:
    return [fake.file_bytes(f["data"]) for f in fake.files.values() if f["filename"] == "output_file_id.jsonl"]


def test_a_batch_bigger_than_one_image_reply_is_delivered_whole(hostile, pytester):
    """Planted: the output file read as one reply (the image cap) -> 25 billed, 0 delivered."""
    fake, run = hostile
    fake.image_bytes = 350_000  # each line about 470 KB of base64
    # one line's cap: 0.5 MB x 4/3 + 8 MB = 9.1 MB; 25 lines make a file of 11.7 MB, past it by a quarter
    result = run(5, max_image_mb=0.5)
    result.assert_outcomes(passed=TASKS * 5)
    assert fake.creations == 1, [b["request_counts"] for b in fake.batches.values()]
    (data,) = output_files(fake)
    assert len(data) > inline_cap(int(0.5 * MiB))
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-5)


def test_a_line_holding_a_raw_line_separator_is_read(hostile, pytester):
    """Planted: the file split with str.splitlines() -> every line of the batch lost."""
    fake, run = hostile

    def separator(kind, texts):  # JSON allows U+2028 raw inside a string
        return [texts[0].replace('"request_id": "req_b', '"request_id": "req_\u2028b', 1), *texts[1:]]

    fake.rewrite_results = separator
    run(2).assert_outcomes(passed=TASKS * 2)
    assert "\u2028".encode() in output_files(fake)[0]
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-5)


def test_a_line_that_cannot_be_read_costs_only_itself_and_is_not_bought_again(hostile, pytester):
    """Planted: one bad line fails the whole batch -> 10 billed, 0 delivered, every run."""
    fake, run = hostile
    cut = []

    def cut_one(kind, texts):
        cut.append(json.loads(texts[0])["custom_id"])
        return [texts[0][: len(texts[0]) // 2], *texts[1:]]  # cut short: not JSON, its custom_id still readable

    fake.rewrite_results = cut_one
    run(2).assert_outcomes(passed=TASKS * 2 - 1, errors=1)
    (bad,) = [r for r in records(pytester.path) if r["outcome"] == "error"]
    batch_id = next(iter(fake.batches))
    assert batch_id in bad["error"] and cut[0] in bad["error"] and "openai" in bad["error"]
    assert "not JSON" in bad["error"] and "not bought again" in bad["error"]
    billed = fake.billed
    fake.rewrite_results = None
    run(2).assert_outcomes(passed=TASKS * 2 - 1, errors=1)  # billed: it stays an error, never bought again
    assert fake.creations == 1 and fake.billed == billed


def test_a_line_named_twice_is_an_error_for_both_not_the_last_one_read(hostile, pytester):
    """Planted: results mapped by custom_id with the last line winning."""
    fake, run = hostile

    def twice(kind, texts):
        first = json.loads(texts[0])
        second = json.loads(texts[1])
        second["custom_id"] = first["custom_id"]
        return [texts[0], json.dumps(second), *texts[2:]]

    fake.rewrite_results = twice
    run(2).assert_outcomes(passed=TASKS * 2 - 2, errors=2)  # the twice-named one, and the one no line names
    errors = [r["error"] for r in records(pytester.path) if r["outcome"] == "error"]
    assert any("all name it" in e for e in errors) and fake.creations == 1


def test_an_unreadable_create_reply_then_a_rerun_bills_one_batch(hostile, pytester):
    """Planted: the lines forgotten when the 2xx create cannot be read -> the rerun makes a second batch."""
    fake, run = hostile
    fake.create_reply = b"<html>upstream said ok</html>"
    run(2).assert_outcomes(errors=TASKS * 2)
    assert fake.creations == 1
    assert all(job(r)["input_file_id"] and not job(r).get("batch_id") for r in records(pytester.path))
    fake.create_reply = None
    run(2).assert_outcomes(passed=TASKS * 2)
    assert fake.creations == 1 and len(fake.uploads("batch")) == 1
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-5)


def test_the_adoption_finds_the_batch_past_a_hundred_pages(hostile, pytester):
    """Planted: the listing stops after 100 pages and creates a new batch from the same input file."""
    fake, run = hostile
    fake.create_reply = b"{\"id\": 7}"
    run(1).assert_outcomes(errors=TASKS)
    fake.create_reply = None
    # newer than ours, listed first, one a page: ours is on page 103, two past a listing cut at 100 pages (each
    # page is a request of the run's: 150 of them took 50 more requests than the claim needs)
    fake.add_batches(102)
    fake.page_size = 1
    run(1).assert_outcomes(passed=TASKS)
    assert len(fake.made) == 1 and fake.list_pages > 100
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-5)
