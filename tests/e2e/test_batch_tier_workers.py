"""``--tier batch`` under ``-n 2``: each worker keeps one provider per model (engine/means.py), so the lines its
pool gathers share its one batch collector: at most one batch per worker and linger window.  With the provider's
making unlocked, each worker's threads made 4-8 copies, each with a collector and a batch of its own: 10-15 batches
for 20 candidates, 70-80 s instead of 9-27 s.  The workers' batches wait side by side, each polled on the serial
run's schedule: the ``-n 2`` run takes no more poll rounds than the serial one plus one (counted on the server).
The first two tests assert on the same two runs (a serial one, then one under ``-n 2``), made once."""

from __future__ import annotations

import json

import pytest
from tiny_batch import (
    GATHER_LINGER_S,
    gemini_batch_route,
    openai_batch_route,
    results_row,
    set_options,
    tiny_batch_bench,
)

MODEL = "gpt-image-2"
TASKS, REPEATS = 5, 4  # the tiny split: 20 candidates
WORKERS = 2


#: A batch is done on the server this long after its creation, polled every POLL_S (no backoff): a few rounds.
READY_S, POLL_S = 2.0, 0.5


@pytest.fixture(scope="module")
def side_by_side_runs() -> dict:
    """The serial run and the ``-n 2`` run of the tiny split on gpt-image-2 both tests of the file assert on, run
    once for the module (a ``-n 2`` run starts two workers: 10-15 s of a loaded machine each time)."""
    return {}  # filled by the first ``side_by_side``: a run needs pytester, which is per test


@pytest.fixture
def side_by_side(pytester, monkeypatch, tmp_path, side_by_side_runs) -> dict:
    """What both runs left: ``serial`` (the serial run's polls of each of its batches), ``batches`` (how many it made),
    ``result`` (the ``-n 2`` run's RunResult), ``creations``, ``inputs`` (the input files it uploaded), ``billed``
    (what the fake billed it), ``spent`` (what its results count), ``events`` and ``polls_of`` (its batches')."""
    if not side_by_side_runs:
        args = tiny_batch_bench(pytester.path, MODEL, REPEATS)
        set_options(pytester.path, MODEL, batch_linger_s=GATHER_LINGER_S, batch_poll_s=POLL_S,
                    batch_poll_max_s=POLL_S)  # a loaded machine's lines still gather
        with openai_batch_route(monkeypatch, tmp_path / "cache") as fake:
            fake.ready_after = READY_S
            pytester.runpytest(*args, "--tier", "batch").assert_outcomes(passed=TASKS * REPEATS)
            batches, serial = fake.creations, dict(fake.polls_of)
            inputs, billed = len(fake.uploads("batch")), fake.billed
            fake.batches.clear()
            fake.polls_of.clear()
            fake.events.clear()
            result = pytester.runpytest(*args, "--tier", "batch", "-n", str(WORKERS), "--outputs", "out2")
        spent = json.loads((pytester.path / "out2" / "results.json").read_text())["rows"][0]["spent"]
        side_by_side_runs.update(
            serial=serial, batches=batches, result=result, creations=fake.creations,
            inputs=len(fake.uploads("batch")) - inputs, billed=fake.billed - billed, spent=spent,
            events=list(fake.events), polls_of=dict(fake.polls_of))
    return side_by_side_runs


def test_two_workers_make_at_most_one_batch_each(side_by_side):
    # Planted: Means.provider without its lock: 5 to 9 batches here (each copy of the provider its own).
    runs = side_by_side
    runs["result"].assert_outcomes(passed=TASKS * REPEATS)
    assert 1 <= runs["creations"] <= WORKERS, f"{runs['creations']} batches for {TASKS * REPEATS} candidates"
    assert runs["inputs"] == runs["creations"]
    assert runs["spent"] == pytest.approx(runs["billed"], abs=1e-5)


def test_two_workers_batches_wait_side_by_side_in_the_serial_run_s_poll_rounds(side_by_side):
    """The serial run's one batch takes N polls (its rounds); under -n 2 every batch is created before the first
    one ends (they wait together, not one after the other) and takes at most N + 1 polls: the run ends within one
    poll interval of the serial one, counted in polls, not timed.  Planted: each worker submitting only once the
    batches of the others ended (a run-wide lock held from creation to results): the second batch is created after
    the first completed, and the -n 2 run takes two batches' rounds."""
    runs = side_by_side
    assert runs["batches"] == 1
    (serial,) = runs["serial"].values()
    result, creations = runs["result"], runs["creations"]
    result.assert_outcomes(passed=TASKS * REPEATS)
    result.stdout.fnmatch_lines([f"*under -n {WORKERS} each worker gathers its own lines*at least {WORKERS} batches*"])
    assert 1 <= creations <= WORKERS
    kinds = [kind for kind, _ in runs["events"]]
    assert kinds == ["created"] * creations + ["completed"] * creations, runs["events"]
    assert max(runs["polls_of"].values()) <= serial + 1, (runs["polls_of"], serial)


GEMINI, GEMINI_KEY = "gemini-3-pro-preview", "fake-gemini-key-workers-0123456789"


def test_gemini_under_two_workers_makes_at_most_one_batch_each(pytester, monkeypatch, tmp_path):
    """The same on Gemini's Batch mode: each worker's 10 lines go inline in one batch (the serial run's 20 would
    pass the 16 inline requests and go as an input file).  Planted: Means.provider without its lock."""
    args = tiny_batch_bench(pytester.path, GEMINI, REPEATS)
    set_options(pytester.path, GEMINI, batch_linger_s=GATHER_LINGER_S)
    with gemini_batch_route(monkeypatch, tmp_path / "cache", GEMINI_KEY) as fake:
        result = pytester.runpytest(*args, "--tier", "batch", "-n", str(WORKERS))
    result.assert_outcomes(passed=TASKS * REPEATS)
    assert 1 <= fake.creations <= WORKERS, f"{fake.creations} batches for {TASKS * REPEATS} candidates"
    assert results_row(pytester.path)["spent"] == pytest.approx(fake.billed, abs=1e-6)
