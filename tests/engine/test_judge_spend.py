"""What a judge's calls cost is in the candidate's record, also when the judge fails after it was paid.

A judge that gives up after asks were answered (two replies billed and then unreadable: judges/prompting.py; a
panel whose answered jurors were paid: judges/majority.py) raises a JudgeError carrying that cost.  --budget
commits it; the record must keep it too, across runs, so that ``spent`` (summed from the records) is never less
than what was bought.  The real Runner, a fake provider and a fake paid judge at the Python seam, a real ledger.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType

import pytest
from fake_models import FakeProvider

from pytest_hypeedit.analysis.metrics import MetricSettings
from pytest_hypeedit.engine.budget import Budget
from pytest_hypeedit.engine.means import Means
from pytest_hypeedit.engine.records import Record
from pytest_hypeedit.engine.runner import Runner
from pytest_hypeedit.engine.store import Store
from pytest_hypeedit.errors import JudgeError
from pytest_hypeedit.judges.base import Judge, JudgeRequest, Verdict
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.report.results import build_results
from pytest_hypeedit.tasks import Task

PRICE, ASK = 0.04, 0.003
SPEC = ModelSpec("paid", "paid", "paid-v1", PRICE, MappingProxyType({}))
TASK = Task(task_id="task-00", input_images=("001.png",), task_types=("remove",), instruction="x", width=8,
            height=8, split="mini")
KEY = ("mini", "paid", "task-00", 1)


class PngProvider(FakeProvider):
    image = "png"
    log = None


class JpegProvider(PngProvider):
    image = "jpeg"


class BilledJudge(Judge):
    """A paid judge that bills each call on receipt; the calls numbered in ``failing`` are answered, billed and
    then unreadable: a JudgeError that carries what was paid, as the real judges raise it."""

    name, routes, needs_images = "billed", ("billed-judge",), False

    def __init__(self, failing: tuple[int, ...] = ()):
        self.failing, self.calls, self.billed = failing, 0, 0.0

    def worst_case_cost(self, request: JudgeRequest) -> float:
        return 2 * ASK

    def judge(self, request: JudgeRequest) -> Verdict:
        self.calls += 1
        self.billed += ASK
        if self.calls in self.failing:
            error = JudgeError("billed-judge: the reply could not be read as a verdict, twice", retryable=True)
            error.cost = ASK
            raise error
        return Verdict(True, "looks right", self.id, cost=ASK)


def runner_of(tmp_path: Path, judge: BilledJudge, **kwargs) -> tuple[Runner, Budget]:
    """A process of its own on the shared outputs, with a ledger of its own."""
    budget = Budget(tmp_path / "ledger" / str(len(list(tmp_path.glob("ledger/*")))), None)
    kwargs.setdefault("make_provider", PngProvider)
    runner = Runner(Means(store=Store(tmp_path / "out", claims_dir=tmp_path / "claims"), make_judge=lambda: judge,
                          references=lambda task: [], budget=budget, signals=False, **kwargs))
    return runner, budget


def run(tmp_path: Path, judge: BilledJudge, **kwargs) -> tuple[Record, Budget]:
    runner, budget = runner_of(tmp_path, judge, **kwargs)
    try:
        return runner.run(TASK, SPEC, 1), budget
    finally:
        runner.close()


def on_disk(tmp_path: Path) -> Record:
    return Record.from_json((tmp_path / "out" / "mini" / "paid" / "task-00" / "001.json").read_text())


def row_of(record: Record) -> dict:
    results = build_results([record], models=[SPEC], split_names=["mini"], settings=MetricSettings(),
                            settings_json={})
    return results["rows"][0]


def test_a_judge_that_fails_after_being_billed_leaves_its_cost_in_the_record_for_good(tmp_path):
    judge = BilledJudge(failing=(1,))
    failed, budget = run(tmp_path, judge)
    assert failed.outcome == "error" and "could not be read" in failed.error
    assert budget.spent() == pytest.approx(PRICE + ASK)  # --budget committed the failed call's cost
    assert on_disk(tmp_path).spent == pytest.approx(PRICE + ASK)  # and the record keeps it
    row = row_of(failed)
    assert row["spent"] == pytest.approx(PRICE + ASK) and row["spent_breakdown"]["judge"] == pytest.approx(ASK)
    assert sum(row["spend_by_tier"]["judge"].values()) == pytest.approx(ASK)

    judged, _ = run(tmp_path, judge)  # the next run's verdict does not erase what the failed call cost
    assert judged.outcome == "pass" and judge.calls == 2
    assert judged.judge_cost == pytest.approx(ASK)  # the cost of the verdict the record holds
    assert on_disk(tmp_path).spent == pytest.approx(PRICE + judge.billed) == pytest.approx(PRICE + 2 * ASK)
    assert row_of(judged)["spent"] == pytest.approx(PRICE + 2 * ASK)


def test_what_a_failed_judge_call_cost_is_kept_by_a_process_that_read_the_record_before_it(tmp_path):
    judge = BilledJudge(failing=(1, 2))
    run(tmp_path, judge)  # bought; its verdict failed after being paid
    first, _ = runner_of(tmp_path, judge)
    plan = first.plan(TASK, SPEC, 1)  # a process reads the record (as a pool's triage does, long before its turn)
    run(tmp_path, judge)  # meanwhile another process's judge fails too, after being paid
    assert sum(c["price"] for c in on_disk(tmp_path).calls if c["kind"] == "judge_call") == pytest.approx(2 * ASK)
    first.judge_step(plan)  # the first process gives the verdict, and writes the record under the claim
    assert judge.calls == 3 and on_disk(tmp_path).outcome == "pass"
    assert on_disk(tmp_path).spent == pytest.approx(PRICE + judge.billed) == pytest.approx(PRICE + 3 * ASK)


def test_a_rejudgement_that_fails_after_being_billed_is_in_spent(tmp_path):
    judge = BilledJudge(failing=(2,))  # the verdict, then a re-judgement that fails (--judge-stability 1x2)
    record, budget = run(tmp_path, judge, stability={KEY: 2})
    assert record.outcome == "pass" and judge.calls == 2 and len(record.extra["stability"]["errors"]) == 1
    assert budget.spent() == pytest.approx(PRICE + 2 * ASK)
    stored = on_disk(tmp_path)
    assert stored.spent == pytest.approx(PRICE + judge.billed)  # the re-judgements are judge spend
    assert row_of(stored)["spent"] == pytest.approx(PRICE + 2 * ASK)

    again, _ = run(tmp_path, judge, stability={KEY: 2})  # the missing re-judgements are asked: both given now
    assert judge.calls == 4 and again.extra["stability"]["verdicts"] == ["PASS", "PASS"]
    stored = on_disk(tmp_path)
    assert stored.spent == pytest.approx(PRICE + judge.billed) == \
        pytest.approx(PRICE + 4 * ASK)
    assert row_of(stored)["spent"] == pytest.approx(PRICE + 4 * ASK)
    assert json.loads(json.dumps(row_of(stored)["judge_stability"]))["cost"] == pytest.approx(2 * ASK)


# --------------------------------------------------------------------------- a verdict given in place of another


class OtherJudge(BilledJudge):
    """Another paid judge, billed the same: its verdicts are kept beside the first judge's, by id."""

    name = "other"


class PromptedJudge(BilledJudge):
    """A paid judge whose verdicts given under another prompt are stale (as judges/prompting.py says)."""

    def __init__(self, prompt: str, failing: tuple[int, ...] = ()):
        super().__init__(failing)
        self.prompt = prompt

    def judge(self, request: JudgeRequest) -> Verdict:
        verdict = super().judge(request)
        verdict.extra = {"prompt": self.prompt}
        return verdict

    def stale_reason(self, entry: dict) -> str | None:
        return None if (entry.get("extra") or {}).get("prompt") == self.prompt else "given under another prompt"


def test_a_verdict_given_again_with_rejudge_keeps_what_the_first_one_cost(tmp_path):
    judge = BilledJudge()
    run(tmp_path, judge)
    again, _ = run(tmp_path, judge, rejudge=True)  # --rejudge: the judge is asked (and paid) once more
    assert judge.calls == 2 and again.judge_cost == pytest.approx(ASK)  # the cost of the verdict it holds
    assert on_disk(tmp_path).spent == pytest.approx(PRICE + judge.billed) == pytest.approx(PRICE + 2 * ASK)
    assert row_of(on_disk(tmp_path))["spent_breakdown"]["judge"] == pytest.approx(2 * ASK)


def test_a_stale_verdict_judged_again_keeps_what_it_cost(tmp_path):
    first = PromptedJudge("v1")
    run(tmp_path, first)
    second = PromptedJudge("v2")
    judged, _ = run(tmp_path, second)
    assert second.calls == 1 and judged.judgements["billed"]["replaced"]["reason"] == "given under another prompt"
    assert on_disk(tmp_path).spent == pytest.approx(PRICE + first.billed + second.billed) == \
        pytest.approx(PRICE + 2 * ASK)
    assert row_of(judged)["rejudged_stale"] == 1


def test_a_verdict_of_another_judge_keeps_the_first_judges_cost_and_a_reused_one_adds_nothing(tmp_path):
    first, other = BilledJudge(), OtherJudge()
    run(tmp_path, first)
    judged, _ = run(tmp_path, other)
    assert set(judged.judgements) == {"billed", "other"} and judged.judge == "other"
    assert on_disk(tmp_path).spent == pytest.approx(PRICE + 2 * ASK)  # both verdicts were paid for
    back, _ = run(tmp_path, first)  # the first judge's verdict is on disk: reused, not asked nor paid again
    assert back.reused_verdict and first.calls == 1
    assert on_disk(tmp_path).spent == pytest.approx(PRICE + first.billed + other.billed) == \
        pytest.approx(PRICE + 2 * ASK)


def test_a_verdict_of_bytes_that_changed_keeps_what_it_cost_when_they_are_judged_again(tmp_path):
    judge = BilledJudge()
    run(tmp_path, judge)
    image = tmp_path / "out" / "mini" / "paid" / "task-00" / "001.png"
    from PIL import Image

    Image.new("RGB", (8, 8), (1, 2, 3)).save(image)  # other bytes, still an image: judged again (provenance.py)
    judged, _ = run(tmp_path, judge)
    assert judge.calls == 2 and judged.outcome == "pass"
    assert on_disk(tmp_path).spent == pytest.approx(PRICE + 2 * ASK)


def test_rejudgements_of_another_judge_keep_what_they_cost(tmp_path):
    first, other = BilledJudge(), OtherJudge()
    run(tmp_path, first, stability={KEY: 2})  # a verdict and two re-judgements by the first judge
    judged, _ = run(tmp_path, other, stability={KEY: 2})  # the other judge's verdict, and two re-judgements of it
    assert judged.extra["stability"]["judge"] == "other" and first.calls == other.calls == 3
    stored = on_disk(tmp_path)
    assert row_of(stored)["spent"] == pytest.approx(PRICE + first.billed + other.billed) == \
        pytest.approx(PRICE + 6 * ASK)


def test_rejudgements_of_a_lost_image_keep_what_they_cost_when_its_new_file_is_re_judged(tmp_path):
    judge = BilledJudge()
    run(tmp_path, judge, stability={KEY: 2})
    (tmp_path / "out" / "mini" / "paid" / "task-00" / "001.png").unlink()  # lost: bought again, as 001.jpg
    again, _ = run(tmp_path, judge, stability={KEY: 2}, make_provider=JpegProvider)
    assert again.candidate == "001.jpg" and again.extra["stability"]["candidate"] == "001.jpg"
    assert judge.calls == 6 and again.extra["stability"]["verdicts"] == ["PASS", "PASS"]
    assert row_of(on_disk(tmp_path))["spent"] == pytest.approx(2 * PRICE + judge.billed) == \
        pytest.approx(2 * PRICE + 6 * ASK)


# --------------------------------------------------------------------------- re-judgements in the lifecycle


class CountingStore(Store):
    """Counts the records it wrote."""

    writes = 0

    def write_record(self, record):
        path = super().write_record(record)
        self.writes += 1
        return path


def test_rejudgements_are_steps_of_the_candidates_lifecycle_and_every_write_is_one(tmp_path):
    from pytest_hypeedit.engine.lifecycle import Step

    judge = BilledJudge(failing=(3,))  # the verdict, a re-judgement, then one billed and unreadable
    runner, budget = runner_of(tmp_path, judge, stability={KEY: 3})
    runner.store = store = CountingStore(tmp_path / "out", claims_dir=tmp_path / "claims")
    plan = runner.plan(TASK, SPEC, 1)
    runner.generate_step(plan)
    runner.judge_step(plan)
    trail = plan.life.trail
    written = [step.value for step in trail if step.value.startswith("write_")]
    assert store.writes == len(written), f"{store.writes} record writes, of them named steps: {written}"
    assert sorted(hold.settled for hold in plan.life.reservations) == pytest.approx([ASK, ASK, ASK, PRICE])  # each once
    assert trail[-1] is Step.SETTLE, "the handling ends once, after its re-judgements"
    assert trail.count(Step.WRITE_REJUDGE_JOURNALED) == trail.count(Step.ASK_AGAIN) == 2
    assert (trail.count(Step.WRITE_REJUDGED), trail.count(Step.WRITE_REJUDGE_FAILED)) == (1, 1)
    assert budget.spent() == pytest.approx(PRICE + judge.billed) == pytest.approx(on_disk(tmp_path).spent)


def test_rejudgements_another_process_gave_meanwhile_are_not_asked_again(tmp_path):
    judge = BilledJudge()
    run(tmp_path, judge)  # bought and judged
    first, _ = runner_of(tmp_path, judge, stability={KEY: 2})
    plan = first.plan(TASK, SPEC, 1)  # read at triage: nothing to buy, two re-judgements to ask
    run(tmp_path, judge, stability={KEY: 2})  # meanwhile another process asks them
    assert judge.calls == 3
    first.finish(plan)
    assert judge.calls == 3 and plan.record.extra["stability"]["verdicts"] == ["PASS", "PASS"]
    assert on_disk(tmp_path).spent == pytest.approx(PRICE + judge.billed)
