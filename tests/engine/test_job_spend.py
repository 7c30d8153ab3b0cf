"""What a submitted job cost is in its candidate's record from the moment the job is journaled, once, whatever
happens to it: polled to the end, killed while polling, resumed and failing again, or left behind by a purchase
that cannot poll it (a batch line when the run buys at standard).  A model moved to another route is another
release (engine/release.py): it buys its own candidate in its own folder, and the job stays in the first release's
record, counted there once.

The real Runner and a real --budget ledger, with fake providers at the Python seam that bill as the APIs do: a
job when it is submitted, a synchronous call when it answers.
"""

from __future__ import annotations

import io
from pathlib import Path
from types import MappingProxyType

import pytest
from PIL import Image

from pytest_hypeedit.engine.budget import Budget
from pytest_hypeedit.engine.means import Means
from pytest_hypeedit.engine.records import BATCH, STANDARD, Record
from pytest_hypeedit.engine.release import aside_folder, release_of
from pytest_hypeedit.engine.runner import Runner
from pytest_hypeedit.engine.store import Store
from pytest_hypeedit.errors import ProviderError
from pytest_hypeedit.judges.base import Judge, JudgeRequest, Verdict
from pytest_hypeedit.providers.base import Generation, GenerationRequest, Provider
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.tasks import Task

JOB_PRICE, SYNC_PRICE = 0.10, 0.04
ON_JOBS = ModelSpec("m", "jobs", "job-v1", JOB_PRICE, MappingProxyType({}))
MOVED = ModelSpec("m", "sync", "sync-v1", SYNC_PRICE, MappingProxyType({}))  # the same model on another route
TASK = Task(task_id="t0", input_images=("001.png",), task_types=("remove",), instruction="x", width=8, height=8,
            split="mini")


class Killed(BaseException):
    """The process dies here: nothing of the run after it happens."""


class Bills:
    """What the fakes charged, and what each next call does: "ok", "poll-fails", "kill" (jobs), "unbilled"."""

    def __init__(self, *script: str):
        self.script, self.billed, self.submitted = list(script), 0.0, 0

    def next(self) -> str:
        return self.script.pop(0) if self.script else "ok"


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (9, 9, 9)).save(buffer, format="PNG")
    return buffer.getvalue()


class BilledProvider(Provider):
    """A test provider whose calls are billed into ``bills`` at ``price`` each (its worst case too)."""

    price: float

    def __init__(self, spec: ModelSpec, bills: Bills):
        super().__init__(spec)
        self.bills = bills

    def worst_case_cost(self, request: GenerationRequest) -> float:
        return self.price


class JobProvider(BilledProvider):
    """Submits a job (billed on submission, journaled with its cost), then polls it; a journaled job is resumed."""

    route = "jobs"
    price = JOB_PRICE
    kind: str | None = None  # "batch": the job is a batch line

    def generate(self, request: GenerationRequest) -> Generation:
        if request.call.journal.job is None:
            self.bills.billed += JOB_PRICE
            self.bills.submitted += 1
            request.call.journal.submitted(id=f"job-{self.bills.submitted}", cost=JOB_PRICE, kind=self.kind)
        what = self.bills.next()
        if what == "kill":
            raise Killed
        if what == "poll-fails":
            raise ProviderError("the poll answered 503 until max_wait_s", retryable=True)
        return Generation(image=png(), ext="png", cost=JOB_PRICE, provider_model=self.spec.provider_model)


class BatchLines(JobProvider):
    kind = BATCH


class SyncProvider(BilledProvider):
    """Answers at once, billed when it answers; "unbilled": a 503 before any work (nothing charged)."""

    route = "sync"
    price = SYNC_PRICE
    tier = STANDARD  # an adapter that says the tier it buys at (openai, gemini)

    def generate(self, request: GenerationRequest) -> Generation:
        if self.bills.next() == "unbilled":
            raise ProviderError("503 before any work", retryable=True)
        self.bills.billed += SYNC_PRICE
        return Generation(image=png(), ext="png", cost=SYNC_PRICE, provider_model=self.spec.provider_model)


class FreeJudge(Judge):
    name, routes, needs_images = "free", (), False

    def judge(self, request: JudgeRequest) -> Verdict:
        return Verdict(True, "fine", self.id)


def run(tmp_path: Path, spec: ModelSpec, bills: Bills, provider: type[Provider] = JobProvider) -> tuple[Record, Budget]:
    """One run (a process with a ledger of its own) asking for the candidate; a kill ends it where it happens."""
    budget = Budget(tmp_path / "ledger" / str(len(list(tmp_path.glob("ledger/*")))), None)
    store = Store(tmp_path / "out", claims_dir=tmp_path / "claims", folders=folders(spec))
    runner = Runner(Means(store=store,
                          make_provider=lambda s: (provider if s.route == "jobs" else SyncProvider)(s, bills),  # type: ignore[arg-type]
                          make_judge=FreeJudge, references=lambda task: [], budget=budget, signals=False))
    try:
        runner.run(TASK, spec, 1)
    except Killed:
        pass
    return on_disk(tmp_path, spec), budget


def folders(spec: ModelSpec) -> dict[tuple[str, str], str]:
    """Each release in its own folder, as the plugin places them: the first one (ON_JOBS) in the model's."""
    return {} if spec is ON_JOBS else {("mini", spec.name): aside_folder(spec.name, release_of(spec))}


def on_disk(tmp_path: Path, spec: ModelSpec = ON_JOBS) -> Record:
    folder = folders(spec).get(("mini", spec.name), spec.name)
    return Record.from_json((tmp_path / "out" / "mini" / folder / "t0" / "001.json").read_text())


def test_a_job_is_counted_from_the_moment_it_is_journaled(tmp_path):
    bills = Bills("kill")
    killed, _ = run(tmp_path, ON_JOBS, bills)  # killed while polling: the job is journaled, and paid
    assert killed.job["id"] == "job-1" and killed.candidate is None
    assert killed.spent == pytest.approx(bills.billed) == pytest.approx(JOB_PRICE)


def test_a_job_resumed_after_a_kill_whose_poll_fails_again_stays_counted(tmp_path):
    bills = Bills("kill", "poll-fails")
    run(tmp_path, ON_JOBS, bills)
    failed, budget = run(tmp_path, ON_JOBS, bills)  # resumed (nothing new bought), and its poll fails again
    assert failed.outcome == "error" and failed.job["id"] == "job-1" and bills.submitted == 1
    assert budget.spent() == 0
    assert failed.spent == pytest.approx(bills.billed) == pytest.approx(JOB_PRICE)
    done, _ = run(tmp_path, ON_JOBS, bills)
    assert done.outcome == "pass" and bills.submitted == 1
    assert done.spent == pytest.approx(bills.billed) == pytest.approx(JOB_PRICE)


def test_a_batch_line_left_behind_by_a_purchase_at_standard_stays_counted_once(tmp_path):
    bills = Bills("poll-fails")
    first, _ = run(tmp_path, ON_JOBS, bills, BatchLines)  # a job whose polls failed: journaled, paid, no image
    assert first.spent == pytest.approx(JOB_PRICE)
    # the run buys at standard where a batch line was journaled
    bought, budget = run(tmp_path, ON_JOBS, bills, provider=SyncProvider)
    assert bought.outcome == "pass" and bills.submitted == 1
    assert budget.spent() == pytest.approx(SYNC_PRICE)  # this run bought the synchronous call only
    assert bought.spent == pytest.approx(bills.billed) == pytest.approx(JOB_PRICE + SYNC_PRICE)
    assert bought.job is None, "the job left behind is no job of this purchase"
    [left] = [entry for entry in bought.calls if entry["state"] == "left_behind"]  # an entry of its call ledger
    assert (left["id"], left["kind"], left["tier"], left["price"]) == ("job-1", "batch_line", "batch", JOB_PRICE)


def test_a_job_of_a_model_moved_to_another_route_stays_with_its_release(tmp_path):
    bills = Bills("poll-fails")
    first, _ = run(tmp_path, ON_JOBS, bills)  # a job whose polls failed: journaled, paid, no image
    bought, budget = run(tmp_path, MOVED, bills)  # another release: its own candidate, in its own folder
    assert bought.outcome == "pass" and bills.submitted == 1
    assert budget.spent() == pytest.approx(SYNC_PRICE) == pytest.approx(bought.spent)
    assert bought.job is None and [(c["state"], c["price"]) for c in bought.calls] == [("billed", SYNC_PRICE)]
    assert on_disk(tmp_path) == first  # the first release's record, its job and what it cost, untouched
    assert first.spent + bought.spent == pytest.approx(bills.billed) == pytest.approx(JOB_PRICE + SYNC_PRICE)


def test_a_synchronous_call_that_fails_unbilled_commits_nothing(tmp_path):
    bills = Bills("poll-fails", "unbilled")
    run(tmp_path, ON_JOBS, bills)
    failed, budget = run(tmp_path, MOVED, bills)  # a 503 before any work: nothing billed
    assert failed.outcome == "error" and budget.spent() == 0 and failed.spent == 0
    bought, budget = run(tmp_path, MOVED, bills)
    assert budget.spent() == pytest.approx(SYNC_PRICE) == pytest.approx(bought.spent)
    assert on_disk(tmp_path).spent + bought.spent == pytest.approx(bills.billed) == pytest.approx(JOB_PRICE + SYNC_PRICE)


# --------------------------------------------------------------------------- what this run bought


def this_run(record: Record, runner: Runner) -> float:
    """The record's part of the results' ``spent_this_run`` for the run of ``runner``."""
    from pytest_hypeedit.analysis.metrics import MetricSettings
    from pytest_hypeedit.report.results import build_results

    results = build_results([record], models=[ON_JOBS], split_names=["mini"], settings=MetricSettings(),
                            settings_json={}, run_id=runner.run_id)
    return results["rows"][0]["spent_this_run"]


class ExpiringJobs(JobProvider):
    """A journaled job's result is gone when it is polled again (resumed): the runner submits a new one."""

    def generate(self, request: GenerationRequest) -> Generation:
        from pytest_hypeedit.errors import JobExpired

        if request.call.journal.job is not None:
            raise JobExpired("Task not found")
        return super().generate(request)


class LostReplies(SyncProvider):
    """Billed, and the reply never arrives (a read timeout): possibly paid."""

    def generate(self, request: GenerationRequest) -> Generation:
        if self.bills.next() == "lost":
            self.bills.billed += SYNC_PRICE
            raise ProviderError("read timeout", reply_lost=True)
        return super().generate(request)


def runner_for(tmp_path: Path, bills: Bills, provider: type[Provider]) -> Runner:
    budget = Budget(tmp_path / "ledger" / str(len(list(tmp_path.glob("ledger/*")))), None)
    return Runner(Means(store=Store(tmp_path / "out", claims_dir=tmp_path / "claims"),
                        make_provider=lambda s: provider(s, bills),  # type: ignore[call-arg]
                        make_judge=FreeJudge, references=lambda task: [], budget=budget, signals=False))


def test_spent_this_run_counts_an_expired_job_this_run_submitted_and_not_one_an_earlier_run_did(tmp_path):
    bills = Bills("poll-fails")
    first = runner_for(tmp_path, bills, ExpiringJobs)
    failed = first.run(TASK, ON_JOBS, 1)
    assert this_run(failed, first) == pytest.approx(bills.billed) == pytest.approx(JOB_PRICE)
    second = runner_for(tmp_path, bills, ExpiringJobs)  # the job expired meanwhile: submitted once more
    bought = second.run(TASK, ON_JOBS, 1)
    assert bought.outcome == "pass" and bought.resubmitted == 1 and bills.submitted == 2
    assert this_run(bought, second) == pytest.approx(JOB_PRICE)  # the new job; the expired one was the first's
    assert bought.spent == pytest.approx(bills.billed)
    assert this_run(bought, first) == pytest.approx(JOB_PRICE)  # what the first run bought, said by the record


def test_spent_this_run_counts_a_possibly_paid_call_at_its_worst_case(tmp_path):
    bills = Bills("lost")
    runner = runner_for(tmp_path, bills, LostReplies)
    lost = runner.run(TASK, MOVED, 1)
    assert lost.outcome == "error" and lost.possibly_paid_calls
    assert this_run(lost, runner) == pytest.approx(lost.spent) == pytest.approx(SYNC_PRICE)
    again = runner_for(tmp_path, bills, LostReplies)
    bought = again.run(TASK, MOVED, 1)  # bought again (--possibly-paid rebuy)
    assert this_run(bought, again) == pytest.approx(SYNC_PRICE) and bought.spent == pytest.approx(2 * SYNC_PRICE)


class FailingJobs(JobProvider):
    """Journals a job the provider then says failed: forgotten, and not billed (the next run submits anew)."""

    def generate(self, request: GenerationRequest) -> Generation:
        request.call.journal.submitted(id="job-failed", cost=JOB_PRICE)
        request.call.journal.forget()
        raise ProviderError("the job failed at the provider", retryable=True)


def test_a_job_the_provider_says_failed_is_neither_spent_nor_bought_by_the_run(tmp_path):
    runner = runner_for(tmp_path, Bills(), FailingJobs)
    failed = runner.run(TASK, ON_JOBS, 1)
    assert failed.outcome == "error" and failed.job is None
    assert failed.spent == 0 and this_run(failed, runner) == 0 and on_disk(tmp_path).spent == 0


def test_a_job_left_polling_by_a_stopped_run_is_what_that_run_bought(tmp_path):
    bills = Bills("kill")
    runner = runner_for(tmp_path, bills, JobProvider)
    with pytest.raises(Killed):  # the run ends while its job is polled (killed, or left in flight by a stop)
        runner.run(TASK, ON_JOBS, 1)
    from pytest_hypeedit.engine.call_ledger import spent_in_run

    assert spent_in_run(on_disk(tmp_path), runner.run_id) == pytest.approx(bills.billed) == pytest.approx(JOB_PRICE)


def test_a_batch_line_whose_image_a_full_disk_could_not_keep_is_left_behind_at_the_batch_tier(tmp_path, monkeypatch):
    """Planted: the full disk's cost written as a generation at the record's tier (standard): caught."""
    import errno
    import os

    class BatchTierLines(BatchLines):
        def generate(self, request: GenerationRequest) -> Generation:
            generation = super().generate(request)
            return Generation(image=generation.image, ext="png", cost=JOB_PRICE, tier=BATCH,
                              provider_model=self.spec.provider_model)

    def no_room(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Store, "write_candidate", no_room)
    bills = Bills()
    lost, _ = run(tmp_path, ON_JOBS, bills, BatchTierLines)  # billed, its image not kept: its record says so
    assert lost.candidate is None and "disk full" in (lost.error or "")
    assert [(c["kind"], c["state"], c["tier"], c["price"]) for c in lost.calls] == [
        ("batch_line", "left_behind", "batch", JOB_PRICE)]
    assert lost.spent == pytest.approx(bills.billed) == pytest.approx(JOB_PRICE)  # counted once
    assert lost.spent_breakdown["resubmitted"] == pytest.approx(JOB_PRICE)
