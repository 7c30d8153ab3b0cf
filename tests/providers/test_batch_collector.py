"""The batch collector (providers/batching.py) against an in-memory backend: lines gathered into batches split at
the backend's limits, each caller handed its own line, a resumed line polled again and never submitted, a line
journaled without its batch adopted once for all its neighbours; the tier's price in one place
(ModelSpec.price_at), the start lines per model, the live line's batches."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_hypeedit.config import parse_tier
from pytest_hypeedit.engine.journal import Journal
from pytest_hypeedit.errors import ConfigError, ProviderError
from pytest_hypeedit.providers.batching import Collector, Collectors, Line, Outcome, Status
from pytest_hypeedit.registry import ModelSpec, load_registry
from pytest_hypeedit.report.price_text import tier_lines
from pytest_hypeedit.report.progress import Progress


class Backend:
    def __init__(self, max_requests=100, max_bytes=10_000, polls_to_end=2):
        self.max_requests, self.max_bytes, self.polls_to_end = max_requests, max_bytes, polls_to_end
        self.batches: dict[str, list[str]] = {}
        self.polls: dict[str, int] = {}
        self.adopted: list[str] = []
        self.lock = threading.Lock()

    def submit(self, lines):
        with self.lock:
            batch_id = f"batch_{len(self.batches)}"
            self.batches[batch_id] = [line.key for line in lines]
        for line in lines:
            line.journal.submitted(id=line.key, kind="batch", input_file_id=f"file-{batch_id}", batch_id=batch_id)
        return batch_id

    def adopt(self, job):
        self.adopted.append(job["input_file_id"])
        return job["input_file_id"].removeprefix("file-")

    def poll(self, batch_id):
        self.polls[batch_id] = self.polls.get(batch_id, 0) + 1
        ended = self.polls[batch_id] >= self.polls_to_end
        return Status("completed" if ended else "in_progress", ended=ended, running=not ended)

    def results(self, batch_id, status):
        return {key: Outcome(batch_id, reply=f"image of {key}", billed=True) for key in self.batches.get(batch_id, [])}

    def missing_outcome(self, batch_id, status):
        return Outcome(batch_id, missing=status.state)


def collector(backend, **kwargs):
    return Collector(backend, what="test", linger=kwargs.pop("linger", 0.05), poll=0.01, poll_max=0.02,
                     max_wait=kwargs.pop("max_wait", 10.0), collectors=kwargs.pop("collectors", None))


def buy_all(coll, keys, size=10):
    outcomes, journals = {}, {}

    def buy(key):
        journals[key] = Journal()
        outcomes[key] = coll.buy(Line(key, b"x", size, journals[key]))

    threads = [threading.Thread(target=buy, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    return outcomes, journals


def test_lines_arriving_together_share_one_batch_and_each_gets_its_own_answer():
    backend = Backend()
    outcomes, journals = buy_all(collector(backend, linger=1.0), [f"k{i}" for i in range(30)])
    assert len(backend.batches) == 1
    assert {key: o.reply for key, o in outcomes.items()} == {f"k{i}": f"image of k{i}" for i in range(30)}
    assert all(j.job["batch_id"] == "batch_0" for j in journals.values())


def test_a_batch_never_holds_more_than_the_backend_allows():
    backend = Backend(max_requests=7, max_bytes=45)  # 10 bytes a line: 4 lines a batch by bytes
    outcomes, _ = buy_all(collector(backend), [f"k{i}" for i in range(20)])
    assert len(outcomes) == 20
    assert all(len(keys) <= 4 for keys in backend.batches.values())
    assert sorted(k for keys in backend.batches.values() for k in keys) == sorted(outcomes)


def test_a_resumed_line_polls_its_batch_and_submits_nothing():
    backend = Backend()
    backend.batches["batch_9"] = ["k1"]
    journal = Journal({"id": "k1", "kind": "batch", "input_file_id": "file-batch_9", "batch_id": "batch_9"})
    outcome = collector(backend).resume(Line("k1", b"", 0, journal), journal.job)
    assert outcome.reply == "image of k1"
    assert list(backend.batches) == ["batch_9"] and backend.polls["batch_9"] == 2


def test_a_line_resumed_while_its_batch_is_answered_gets_its_answer_too():
    """A run resuming a batch: its items resume their lines one after another, so one may arrive while the
    collector answers the lines already there.  It is answered as well (its batch polled again), and the lines
    being answered are not disturbed (they were read from a dict that grew under them: every line of the batch
    failed with 'dictionary changed size during iteration')."""
    backend = Backend(polls_to_end=1)
    backend.batches["batch_7"] = ["early", "late"]
    coll, results, arrived = collector(backend), {}, threading.Event()

    def resume(key):
        journal = Journal({"id": key, "kind": "batch", "input_file_id": "file-batch_7", "batch_id": "batch_7"})
        results[key] = coll.resume(Line(key, b"", 0, journal), journal.job)

    class Answers(dict):
        def get(self, key, default=None):  # while the early line is being answered, the late one arrives
            if not arrived.is_set():
                threading.Thread(target=resume, args=("late",)).start()
                holding = lambda: any("late" in w.lines for w in coll._watched.values())  # noqa: E731
                while not holding() and not arrived.wait(0.01):
                    pass
                arrived.set()
            return super().get(key, default)

    plain_results = backend.results
    backend.results = lambda batch_id, status: Answers(plain_results(batch_id, status))
    early = threading.Thread(target=resume, args=("early",))
    early.start()
    early.join(20)
    deadline = time.monotonic() + 20
    while "late" not in results and time.monotonic() < deadline:
        time.sleep(0.01)
    assert {key: outcome.reply for key, outcome in results.items()} == {"early": "image of early",
                                                                        "late": "image of late"}


def test_lines_journaled_without_their_batch_are_adopted_once_for_all():
    backend = Backend()
    backend.batches["batch_5"] = ["a", "b", "c"]
    coll, results = collector(backend), {}

    def resume(key):
        journal = Journal({"id": key, "kind": "batch", "input_file_id": "file-batch_5"}, save=lambda job: None)
        results[key] = coll.resume(Line(key, b"", 0, journal), journal.job)
        assert journal.job["batch_id"] == "batch_5"  # journaled as soon as it is known

    threads = [threading.Thread(target=resume, args=(key,)) for key in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert backend.adopted == ["file-batch_5"]
    assert {k: o.reply for k, o in results.items()} == {k: f"image of {k}" for k in "abc"}


def test_a_submit_that_fails_fails_every_line_of_its_group():
    backend = Backend()
    backend.submit = lambda lines: (_ for _ in ()).throw(ProviderError("no", retryable=True))
    coll = collector(backend)
    with pytest.raises(ProviderError, match="no"):
        coll.buy(Line("k", b"x", 1, Journal()))


def test_a_line_that_waits_too_long_is_a_retryable_error_and_stays_journaled():
    backend = Backend(polls_to_end=10_000)
    journal = Journal()
    with pytest.raises(ProviderError, match="stays journaled") as caught:
        collector(backend, max_wait=0.3).buy(Line("k", b"x", 1, journal))
    assert caught.value.retryable and journal.job["batch_id"] == "batch_0"


def test_price_at_is_the_batch_price_only_where_the_model_has_one():
    registry = load_registry()
    gpt, seedream = registry.get("gpt-image-2"), registry.get("seedream-4.5")
    assert gpt.price_at("batch") == pytest.approx(gpt.price / 2)
    assert gpt.tier_factor("batch") == pytest.approx(0.5) and gpt.price_at("standard") == gpt.price
    assert registry.get("gemini-3-pro-preview").price_at("batch") == pytest.approx(0.067)
    assert seedream.price_at("batch") == seedream.price and not seedream.has_tier("batch")


def test_the_tier_option_takes_standard_or_batch():
    assert parse_tier(None) == "standard" and parse_tier("Batch") == "batch"
    with pytest.raises(ConfigError, match="--tier flex"):
        parse_tier("flex")


def test_a_batch_run_says_per_model_at_which_tier_it_buys():
    registry = load_registry()
    lines = tier_lines("batch", [registry.get("gpt-image-2"), registry.get("seedream-4.5")])
    assert lines[0].startswith("hypeedit: tier batch: gpt-image-2 (openai) buys at the batch tier, $0.095")
    assert lines[1] == "hypeedit: tier batch: seedream-4.5 (ark) has no batch tier, runs at standard"
    assert tier_lines("standard", [registry.get("gpt-image-2")]) == []
    assert tier_lines("batch", [registry.get("gpt-image-2")], workers=2)[0] == (
        "hypeedit: tier batch: under -n 2 each worker gathers its own lines: a model's candidates make at least 2 "
        "batches (one per worker and linger window, waiting side by side), not one")
    assert len(tier_lines("batch", [registry.get("seedream-4.5")], workers=2)) == 1  # nothing is batched
    assert len(tier_lines("batch", [registry.get("gpt-image-2")], workers=1)) == 1


def test_the_live_line_shows_batches_by_state_and_their_candidates():
    statuses = [{"done": 3, "batches": {"submitted": [1, 40], "running": [2, 80], "done": [1, 10]}},
                {"done": 0, "batches": {"running": [1, 5], "done": [0, 0], "bogus": ["x", 1]}}]
    line = Progress(started=0.0, total=100).line(statuses, now=1.0)
    assert "batches 1 submitted (40), 3 running (85), 1 done (10)" in line
    assert "batches" not in Progress(started=0.0, total=100).line([{"done": 1}], now=1.0)


def test_a_collector_counts_its_batches_for_the_live_line_of_its_run():
    run, other = Collectors(), Collectors()
    # one batch of both lines, sent when it is full (its second line arrived), never on the clock: with the 0.05 s
    # linger, beside six busy loops the second line came later and made a second batch
    coll = collector(Backend(max_requests=2), collectors=run, linger=60.0)
    collector(Backend(), collectors=other).done.append(7)  # another run's batch: not this run's
    buy_all(coll, ["a", "b"])
    assert coll.snapshot() == [("done", 2)]
    assert run.tally() == {"submitted": [0, 0], "running": [0, 0], "done": [1, 2]}
    coll.stop()
    assert run.tally() == {}  # a stopped collector is no longer counted
    assert other.tally()["done"] == [1, 7]


def test_a_model_without_a_batch_price_is_validated():
    with pytest.raises(ConfigError, match="batch_price"):
        from pytest_hypeedit.registry import build_registry

        build_registry([("m.yaml", {"models": {"x": {"route": "identity", "price": 1, "batch_price": -1}}})])
    assert ModelSpec("x", "identity", "x", 1.0).price_at("batch") == 1.0


def test_a_stopped_collector_releases_every_waiting_caller_with_a_retryable_error():
    backend = Backend(polls_to_end=10_000)
    coll, errors = collector(backend), []

    def buy():
        try:
            coll.buy(Line("k", b"x", 1, Journal()))
        except ProviderError as exc:
            errors.append(exc)

    thread = threading.Thread(target=buy)
    thread.start()
    while not backend.batches:
        threading.Event().wait(0.01)
    coll.stop()
    thread.join(5)
    assert not thread.is_alive() and errors[0].retryable and "resumes it" in str(errors[0])


def test_a_new_run_in_the_process_does_not_count_the_batches_an_earlier_run_left(pytester, tmp_path):
    """pytester runs many runs in one process: a collector an earlier run left (still holding a finished batch)
    belongs to that run's runtime, not the next run's, and the next run's live line does not count it.
    Planted: the runtimes sharing one set of collectors (a module-level default): the new run counts 3 done."""
    from benchdata import make_tasks, write_labels, write_split

    from pytest_hypeedit.glue.stash import RUNTIME_KEY
    from pytest_hypeedit.providers import runtime

    earlier = runtime.Runtime()  # an earlier run's
    left = collector(Backend(), collectors=earlier.batches)
    left.done.append(3)  # an earlier run's batch of 3 candidates, ended
    assert earlier.batches.tally()["done"][1] >= 3
    write_split(pytester.path, "mini", make_tasks(1), pytester.path / "images")
    write_labels(pytester.path / "r.json", {("task-00", "identity", 1): True})
    runs = []

    class Witness:
        @pytest.hookimpl(trylast=True)
        def pytest_sessionfinish(self, session):
            runs.append(session.config.stash[RUNTIME_KEY])  # the runtime this run's glue made and passed in

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
        pytester.runpytest("-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json", "--images-base",
                           "images", "--repeats", "1", "--judge", "labels:r.json", "--outputs", "out",
                           plugins=[Witness()]).assert_outcomes(passed=1)
    [run] = runs
    assert run is not earlier and run.state_dir is not None
    assert run.batches.tally() == {}  # the identity run batched nothing, and the earlier run's collector is not its
    left.stop()


@pytest.mark.parametrize("model", ["gpt-image-2", "gemini-3-pro-preview"])
def test_an_adapter_the_plugin_makes_is_given_the_run_runtime_and_its_collector_is_the_run_s(model):
    """The runtime is passed in (the plugin's make-provider hook hands the run's to ``builtin_provider``), and the
    model's batch collector is among that run's collectors, not the process's.  Planted: ``builtin_provider``
    ignoring ``runtime`` (the adapter made its own): the adapter's runtime is another, and so are its
    collectors."""
    from pytest_hypeedit.providers import builtin_provider, runtime

    run = runtime.Runtime(tier="batch")
    provider = builtin_provider(load_registry().get(model), runtime=run)
    try:
        assert provider.runtime is run
        assert provider.tier == "batch"
        coll, _ = provider.batcher()
        assert coll.collectors is run.batches
        coll.done.append(4)
        assert run.batches.tally()["done"] == [1, 4]
    finally:
        provider.close()
    assert run.batches.tally() == {}  # closing the adapter stops its collector


def test_a_full_queue_is_not_slept_on_whatever_its_linger():
    """The collector's thread looks at the queue, lets go of the lock, then waits: a line that fills the queue in
    between notifies nobody, so the wait itself must see a full queue (planted: _sleep without the check -> it
    slept out the 60 s linger; beside busy loops the live-line test above saw its batch unsent)."""
    coll = collector(Backend(max_requests=2), linger=60.0)
    with coll._lock:
        coll._queue = [(coll.clock(), Line(key, b"x", 10, Journal())) for key in ("a", "b")]
        assert coll._sleep() <= 0.01
        coll._queue = coll._queue[:1]
        assert coll._sleep() > 50  # one line of two: it lingers
        coll._queue = []
