"""One provider per model and one judge per process (engine/means.py ``Means.provider``): the pool's threads
ask for them at once, and each copy of a provider is a client, a limiter view and a batch collector of its own (on
the batch tier, a batch of its own: 10-15 batches for 20 candidates under -n 2 while its making was unlocked)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from pytest_hypeedit.engine.means import Means
from pytest_hypeedit.engine.store import Store
from pytest_hypeedit.judges.base import Judge, Verdict
from pytest_hypeedit.registry import ModelSpec

THREADS = 16


class SlowMaking:
    """A factory that takes a while (a real one reads models.yaml, builds a client): the window where a second
    thread that asks makes a second copy.  Counts what it made."""

    def __init__(self) -> None:
        self.made: list[object] = []
        self.lock = threading.Lock()

    def __call__(self, *_args: object) -> object:
        time.sleep(0.02)
        made = object()
        with self.lock:
            self.made.append(made)
        return made


class FreeJudge(Judge):
    name = "free"
    routes = ()

    def judge(self, request):  # pragma: no cover - never asked here
        return Verdict(True, "free", "free")


def paid_calls(tmp_path, make_provider, make_judge=FreeJudge) -> Means:
    return Means(store=Store(tmp_path / "out", claims_dir=tmp_path / "claims"), make_provider=make_provider,
                 make_judge=make_judge, references=lambda task: [])


def ask_at_once(fn):
    """``fn()`` from THREADS threads released together; what each got."""
    start = threading.Barrier(THREADS)

    def ask(_):
        start.wait()
        return fn()

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(ask, range(THREADS)))


def test_threads_that_ask_for_a_provider_at_once_share_one(tmp_path):
    # Planted: Means.provider without its lock made one provider per asking thread (16 here).
    making = SlowMaking()
    calls = paid_calls(tmp_path, making)
    spec = ModelSpec(name="m", route="openai", provider_model="m", price=0.1)
    got = ask_at_once(lambda: calls.provider(spec))
    assert len(making.made) == 1 and all(provider is making.made[0] for provider in got)
    other = ModelSpec(name="n", route="openai", provider_model="n", price=0.1)
    assert calls.provider(other) is not got[0] and len(making.made) == 2  # one per model, not one for all


def test_threads_that_ask_for_the_judge_at_once_share_one(tmp_path):
    making = SlowMaking()
    calls = paid_calls(tmp_path, lambda spec: None, make_judge=making)
    got = ask_at_once(lambda: calls.judge)
    assert len(making.made) == 1 and all(judge is making.made[0] for judge in got)


def test_a_provider_whose_making_failed_is_made_again_next_time(tmp_path):
    attempts = []

    def make(spec):
        attempts.append(spec)
        if len(attempts) == 1:
            raise RuntimeError("models.yaml unreadable")
        return object()

    calls = paid_calls(tmp_path, make)
    spec = ModelSpec(name="m", route="openai", provider_model="m", price=0.1)
    try:
        calls.provider(spec)
    except RuntimeError:
        pass
    assert calls.provider(spec) is calls.provider(spec) and len(attempts) == 2
