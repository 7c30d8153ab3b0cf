"""The signals of a candidate just bought are measured while its paid judge is asked, not before
(engine/measurer.py): the judge's request never waits for them, and they still reach the record written with
the verdict, for the bytes that verdict is of.  The real Runner, a provider at the Python seam that makes a
preview as the adapters do, a paid judge at the Python seam; the order is read from events, never from time.
"""

from __future__ import annotations

import io
import threading
from concurrent.futures import Future
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from fake_models import FakeProvider
from PIL import Image

from pytest_hypeedit.engine import signals
from pytest_hypeedit.engine.means import Means
from pytest_hypeedit.engine.measurer import Measurer, Measuring
from pytest_hypeedit.engine.records import Record
from pytest_hypeedit.engine.runner import Runner
from pytest_hypeedit.engine.store import Store
from pytest_hypeedit.judges.base import Judge, JudgeRequest, Verdict
from pytest_hypeedit.providers.base import Generation, GenerationRequest
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.tasks import Task

SPEC = ModelSpec("paid", "paid", "paid-v1", 0.04, MappingProxyType({}))
TASK = Task(task_id="task-00", input_images=("001.png",), task_types=("remove",), instruction="x", width=20,
            height=12, split="mini")
WAIT = 10.0  # the longest a step of these tests waits for another; reached only when the order is wrong


class PreviewProvider(FakeProvider):
    """Answers a PNG and the preview of it an adapter makes where it checks the image."""

    image, log = "png", None

    def generate(self, request: GenerationRequest) -> Generation:
        made = super().generate(request)
        assert isinstance(made.image, bytes)
        with Image.open(io.BytesIO(made.image)) as image:
            image.load()
            preview = signals.preview_of(image)
        return Generation(image=made.image, ext=made.ext, cost=made.cost, provider_model=made.provider_model,
                          preview=preview)


class AskedJudge(Judge):
    """A paid judge that says when it was asked."""

    name, routes, needs_images = "asked", ("asked-judge",), False

    def __init__(self) -> None:
        self.asked = threading.Event()

    def worst_case_cost(self, request: JudgeRequest) -> float:
        return 0.003

    def judge(self, request: JudgeRequest) -> Verdict:
        self.asked.set()
        return Verdict(True, "looks right", self.id, cost=0.003)


def runner_of(tmp_path: Path, judge: Judge, **kwargs: Any) -> Runner:
    return Runner(Means(store=Store(tmp_path / "out", claims_dir=tmp_path / "claims"), make_provider=PreviewProvider,
                        make_judge=lambda: judge, references=lambda task: [], **kwargs))


def on_disk(tmp_path: Path) -> Record:
    return Record.from_json((tmp_path / "out" / "mini" / "paid" / "task-00" / "001.json").read_text())


def test_the_judge_is_asked_before_the_signals_are_measured_and_the_record_has_them(tmp_path, monkeypatch):
    """Planted: the signals taken before the judge's call (``measure_signals`` at the top of
    ``judge_candidate`` for a paid call too) -> the measurement waits for a judge that is never asked, and
    the judge is asked only after it -> fails."""
    judge = AskedJudge()
    seen: dict[str, Any] = {}
    measure = signals.candidate_signals

    def measured_after_the_judge(task, candidate, references, cache=None):
        seen["judge asked first"] = judge.asked.wait(WAIT)
        seen["thread"] = threading.current_thread().name
        return measure(task, candidate, references, cache)

    monkeypatch.setattr(signals, "candidate_signals", measured_after_the_judge)
    runner = runner_of(tmp_path, judge)
    try:
        record = runner.run(TASK, SPEC, 1)
    finally:
        runner.close()
    assert seen == {"judge asked first": True, "thread": seen["thread"]}
    assert seen["thread"].startswith("hypeedit-signals")  # not the call thread: the judge did not wait
    assert record.outcome == "pass"
    assert record.signals["width"] == 20 and record.signals["size_match"] is True
    assert on_disk(tmp_path).signals == record.signals  # written with the verdict


def test_a_failed_judge_call_writes_the_signals_with_its_error(tmp_path):
    class FailingJudge(AskedJudge):
        def judge(self, request: JudgeRequest) -> Verdict:
            from pytest_hypeedit.errors import JudgeError

            raise JudgeError("asked-judge: HTTP 500 after 3 attempts", retryable=True)

    runner = runner_of(tmp_path, FailingJudge())
    try:
        record = runner.run(TASK, SPEC, 1)
    finally:
        runner.close()
    assert record.outcome == "error" and "HTTP 500" in (record.error or "")
    assert on_disk(tmp_path).signals["width"] == 20  # planted: not taken in _judge_failed -> {} on disk


def test_signals_of_other_bytes_are_not_taken(tmp_path):
    """A record another process bought again meanwhile names other bytes: what was measured for the first
    purchase is dropped and its own file measured."""
    runner = runner_of(tmp_path, AskedJudge())
    try:
        runner.run(TASK, SPEC, 1)
        plan = runner.plan(TASK, SPEC, 1)
        plan.record.signals, plan.record.reused_candidate = {}, False  # as just bought
        wrong: Future[dict[str, Any]] = Future()
        wrong.set_result({"width": 1, "height": 1})
        plan.measuring = Measuring("another-purchase", wrong)
        assert runner.verdicts.measure_signals(plan) is True
        assert plan.record.signals["width"] == 20 and plan.measuring is None
        plan.record.signals = {}
        plan.measuring = Measuring(plan.record.candidate_sha256, wrong)  # the same bytes: taken as measured
        runner.verdicts.measure_signals(plan)
        assert plan.record.signals == {"width": 1, "height": 1}
    finally:
        runner.close()


def test_past_its_backlog_a_candidate_is_measured_in_its_own_thread():
    measurer = Measurer(backlog=2)
    release = threading.Event()
    try:
        first = measurer.submit(lambda: {"n": release.wait(WAIT)})
        second = measurer.submit(lambda: {"n": 2})
        assert first is not None and second is not None and measurer.waiting == 2
        assert measurer.submit(lambda: {"n": 3}) is None  # the caller measures it at once
        release.set()
        assert first.result(WAIT) == {"n": True} and second.result(WAIT) == {"n": 2}
        assert measurer.submit(lambda: {"n": 4}) is not None  # room again
    finally:
        release.set()
        measurer.close()


def test_a_measurer_shut_down_leaves_its_waiting_candidates_to_their_files_and_no_thread_running():
    """``close`` returns only once the measurement under way has ended: a thread of a run left running after it
    can import while pytester empties ``sys.modules`` between two runs in one process (measurer.py ``close``).
    Planted: ``shutdown(wait=False)`` -> close returns while the measurement still runs."""
    measurer = Measurer()
    started, release = threading.Event(), threading.Event()

    def measuring() -> dict[str, Any]:
        started.set()
        return {"n": release.wait(WAIT)}

    running = measurer.submit(measuring)
    waiting = measurer.submit(lambda: {"n": 2})
    assert running is not None and waiting is not None and started.wait(WAIT)
    closer = threading.Thread(target=measurer.close)
    closer.start()
    try:
        assert Measuring("x", waiting).result() is None  # cancelled: measure_signals measures the file instead
        closer.join(0.2)
        assert closer.is_alive() and not running.done()  # still waiting for the measurement under way
    finally:
        release.set()
        closer.join(WAIT)
    assert not closer.is_alive() and running.result() == {"n": True}
    assert not any(thread.name.startswith("hypeedit-signals") for thread in threading.enumerate())
    assert measurer.submit(lambda: {"n": 3}) is None


@pytest.mark.parametrize("backlog", [0, 32])
def test_the_signals_are_the_same_wherever_they_are_measured(tmp_path, backlog):
    runner = runner_of(tmp_path, AskedJudge(), measurer=Measurer(backlog=backlog))
    try:
        record = runner.run(TASK, SPEC, 1)
    finally:
        runner.close()
    from_file = signals.candidate_signals(TASK, tmp_path / "out" / "mini" / "paid" / "task-00" / record.candidate,
                                          lambda task: [])
    assert record.signals == from_file and record.signals["width"] == 20
