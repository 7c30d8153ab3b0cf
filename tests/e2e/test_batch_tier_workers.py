"""``--tier batch`` under ``-n 2``: each worker keeps one provider per model (engine/paidcall.py), so the lines its
pool gathers share its one batch collector.  With the provider's making unlocked, each worker's threads made 4-8
copies, each with a collector and a batch of its own: 10-15 batches for 20 candidates, 70-80 s instead of 9-27 s."""

from __future__ import annotations

import pytest
from tiny_batch import GATHER_LINGER_S, openai_batch_route, results_row, set_options, tiny_batch_bench

MODEL = "gpt-image-2"
TASKS, REPEATS = 5, 4  # the tiny split: 20 candidates
WORKERS = 2


@pytest.fixture
def batch_run(pytester, monkeypatch, tmp_path):
    args = tiny_batch_bench(pytester.path, MODEL, REPEATS)
    with openai_batch_route(monkeypatch, tmp_path / "cache") as fake:
        yield fake, lambda *extra: pytester.runpytest(*args, *extra)


def test_two_workers_make_at_most_one_batch_each(batch_run, pytester):
    # Planted: PaidCalls.provider without its lock: 5 to 9 batches here (each copy of the provider its own).
    fake, run = batch_run
    set_options(pytester.path, MODEL, batch_linger_s=GATHER_LINGER_S)  # a loaded machine's lines still gather
    result = run("--tier", "batch", "-n", str(WORKERS))
    result.assert_outcomes(passed=TASKS * REPEATS)
    assert 1 <= fake.creations <= WORKERS, f"{fake.creations} batches for {TASKS * REPEATS} candidates"
    assert len(fake.uploads("batch")) == fake.creations
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-5)
