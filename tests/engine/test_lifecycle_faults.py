"""Random sequences of faults driven through the real Runner, and the money invariants checked on what it recorded.

A seeded generator plays runs over the same outputs: each run asks for every candidate, step by step as the
pool does (plan, generate_step or unreachable, judge_step or finish), while a fake provider and a fake paid
judge (at the Python seam) fail, refuse, lose replies, bill and then fail (a verdict that cannot be read), let
jobs expire, and a store fills its disk or "kills the process" (an exception no handler catches) at any write; a
run may have a --budget cap, hold possibly paid candidates for review, judge every candidate again (--rejudge),
re-judge some of them (--judge-stability), or find the job model moved to a synchronous route (its journaled jobs
left behind).  Between runs an image may vanish.  A last run with no faults finishes everything.  Checked, in
every sequence:

- never sent without a journal entry: when a paid request reaches the fake, the record on disk holds it as
  ``pending`` with the request's id (a resumed job and a free route are the only sends without one);
- never judged before saved: when the judge is asked, the image is on disk and the record on disk names it;
- never lost after paid: after every run, what is on disk (spent, plus calls still pending) is at least what
  the fakes billed (a job counts from the write that journals it, a kill right after it included); after the
  last run, exactly that (plus, at their price, the possibly paid calls that were never billed), with nothing
  pending; the image a run was given is on disk unless a kill or a full disk came after it;
- every record write is a named step of the candidate's lifecycle (the store's writes, counted, are its trail's);
- every --budget reservation settled exactly once (at most once in a killed run), and what the ledger
  committed in a run equals what the fakes billed in it, and what the records say the run bought (their ledger entries naming the run).
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import random
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from PIL import Image

from pytest_hypeedit.engine.call_ledger import spent_in_run
from pytest_hypeedit.engine.journal import REBUY, REVIEW
from pytest_hypeedit.engine.means import Means
from pytest_hypeedit.engine.release import aside_folder, release_of
from pytest_hypeedit.engine.runner import Runner
from pytest_hypeedit.engine.store import Store
from pytest_hypeedit.errors import BudgetExceeded, JobExpired, JudgeError, ProviderError, Refusal
from pytest_hypeedit.judges.base import Judge, JudgeRequest, Verdict
from pytest_hypeedit.providers.base import Generation, GenerationRequest, Provider
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.tasks import Task

PRICE, JPRICE = 0.04, 0.01
TASKS = [Task(task_id=f"t{i}", input_images=("001.png",), task_types=("object_edit",), instruction="x", width=8,
              height=8, split="mini") for i in range(3)]
SPECS = [ModelSpec("sync-m", "fake", "sync-v1", PRICE, MappingProxyType({})),
         ModelSpec("job-m", "fake", "job-v1", PRICE, MappingProxyType({}))]
REPEATS = 2


class Killed(BaseException):
    """The process dies here: nothing of the run after it happens (no handler of the plugin catches it)."""


class World:
    """The faults of one run, what the fakes billed and saw, and the invariants broken at the seam."""

    def __init__(self, rng: random.Random, root: Path):
        self.rng, self.root = rng, root
        self.folders: dict[tuple[str, str], str] = {}  # the folder of each release that is not its model's
        self.free_judge = rng.random() < 0.25  # a judge that costs nothing: judged without a journal entry
        self.keeps_results = 0.5  # the chance that a finished job's result is still kept when it is asked again
        self.rate = 0.0  # the chance of a fault at each event of this run
        self.billed = 0.0  # every run's
        self.billed_run = 0.0
        #: the ids of journaled calls that failed unbilled: if the write that ends them is lost too (a kill, a full
        #: disk), the next run counts them as possibly paid, at their price (more than was billed, never less)
        self.unbilled_ids: set[str] = set()
        self.disk_full = False
        self.killed = False
        self.escaped = False  # a step ended with an exception (its item errors): its holds stay in the ledger
        self.broken: list[str] = []
        self.given: list[tuple[Path, str]] = []  # (the candidate's folder, sha256) of images given this run
        self.writes = 0  # records the store wrote in this run
        self.runs = 0  # runs so far (each has a run id of its own)
        self.plans: list[Any] = []  # this run's plans (their lifecycles name the steps that wrote)

    def fault(self, *kinds: str, scale: float = 1.0) -> str | None:
        """One of ``kinds`` at the run's rate (times ``scale``: a kill or a full disk ends much of a run, so they
        come rarer, letting the calls' own faults happen too), else None."""
        return self.rng.choice(kinds) if self.rng.random() < self.rate * scale else None

    def bill(self, amount: float) -> None:
        self.billed += amount
        self.billed_run += amount

    def kill(self) -> None:
        self.killed = True
        raise Killed

    def record_on_disk(self, model: str, task_id: str, repeat: int) -> dict[str, Any]:
        path = self.root / "mini" / self.folders.get(("mini", model), model) / task_id / f"{repeat:03d}.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def journaled(self, what: str, record: dict[str, Any], call_id: str | None) -> None:
        from pytest_hypeedit.engine.records import Record

        pending = (Record.from_dict(record).open_call if record else None) or {}  # its call ledger's open entry
        if call_id is None or pending.get("id") != call_id or pending.get("state") != "journaled":
            self.broken.append(f"{what} sent without its journal entry on disk (pending {pending})")


def png(rng: random.Random) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), tuple(rng.randrange(256) for _ in range(3))).save(buffer, format="PNG")
    return buffer.getvalue()


class FakeProvider(Provider):
    """Bills on receipt, like a real API; ``job-m`` answers with a job first (journaled, then polled)."""

    route = "fake"

    def __init__(self, spec: ModelSpec, world: World):
        super().__init__(spec)
        self.world = world

    def worst_case_cost(self, request: GenerationRequest) -> float:
        return PRICE

    def generate(self, request: GenerationRequest) -> Generation:
        world, journal = self.world, request.call.journal
        key = (self.spec.name, request.task.task_id, request.repeat)
        if journal.job is None:
            world.journaled(f"generation of {key}", world.record_on_disk(*key), journal.call_id)
        fault = world.fault("unbilled", "unbilled", "unbilled", "key-rejected")
        if fault:
            if journal.job is None and journal.call_id:
                world.unbilled_ids.add(journal.call_id)
            if fault == "key-rejected":  # nothing more is sent on this route in this run (engine/rejected_keys.py)
                raise ProviderError("401 the key is rejected", retryable=False, status=401)
            raise ProviderError("503 before any work", retryable=True)
        if self.spec.provider_model == "job-v1":
            # a finished job resumed: its image was lost from the outputs; its result is fetched again (nothing
            # new billed), or the provider no longer keeps it and a new job is submitted (billed once)
            if journal.job is not None and journal.job.get("finished_at") and \
                    world.rng.random() >= world.keeps_results:
                raise JobExpired("a finished job's result is kept for hours, not for ever")
            if journal.job is None:
                world.bill(PRICE)
                journal.submitted(id=f"job-{world.rng.randrange(10**9)}", cost=PRICE)
            fault = world.fault("kill", "expired", "poll-failed")
            if fault == "kill":
                world.kill()
            if fault == "expired":
                raise JobExpired("its result is gone")
            if fault == "poll-failed":
                raise ProviderError("poll failed", retryable=True)
        else:
            world.bill(PRICE)
            fault = world.fault("kill", "refusal", "reply-lost", "bug")
            if fault == "kill":
                world.kill()
            if fault == "refusal":
                raise Refusal("blocked", cost=PRICE)
            if fault == "reply-lost":
                raise ProviderError("read timeout", reply_lost=True)
            if fault == "bug":
                raise ValueError("a reply of an unexpected shape")
        image = png(world.rng)
        folder = world.root / "mini" / world.folders.get(("mini", key[0]), key[0]) / key[1]
        world.given.append((folder, hashlib.sha256(image).hexdigest()))
        return Generation(image=image, ext="png", cost=PRICE, provider_model=self.spec.provider_model)


class FakeJudge(Judge):
    """A paid judge (billed on receipt), or a free one (``world.free_judge``: no route, nothing billed)."""

    name, needs_images = "fake-judge", False

    def __init__(self, world: World):
        self.world = world
        self.routes = () if world.free_judge else ("fakejudge",)
        self.price = 0.0 if world.free_judge else JPRICE

    def worst_case_cost(self, request: JudgeRequest) -> float:
        return self.price

    def judge(self, request: JudgeRequest) -> Verdict:
        world = self.world
        record = world.record_on_disk(request.model, request.task.task_id, request.repeat)
        if self.routes:
            world.journaled(f"verdict of {request.model} {request.task.task_id}", record, request.call.call_id)
        # the image is on disk; for a paid judge its record on disk names it too (written with its journal entry;
        # a free judge's verdict of an image adopted from disk is written with the adoption, after it)
        if not request.candidate.is_file() or (self.routes and record.get("candidate") != request.candidate.name):
            world.broken.append(f"{request.candidate} judged before it was saved (record names "
                                f"{record.get('candidate')})")
        if world.fault("unbilled") == "unbilled":
            if self.routes and request.call.call_id:
                world.unbilled_ids.add(request.call.call_id)
            raise JudgeError("503", retryable=True)
        world.bill(self.price)
        fault = world.fault("kill", "reply-lost", "unreadable")
        if fault == "kill":
            world.kill()
        if fault == "reply-lost":
            raise JudgeError("read timeout", reply_lost=True)
        if fault == "unreadable":  # answered and billed, then no verdict: the error carries what was paid
            error = JudgeError("the reply could not be read as a verdict, twice", retryable=True)
            error.cost = self.price
            raise error
        return Verdict(world.rng.random() < 0.5, "looked", self.id, cost=self.price)


class FaultyStore(Store):
    """A store whose writes may find the disk full (for the rest of the run) or be where the process dies."""

    def __init__(self, world: World, root: Path, claims: Path, folders: dict[tuple[str, str], str] | None = None):
        super().__init__(root, claims_dir=claims, folders=folders)
        self.world = world

    def _before_write(self, what: str) -> None:
        fault = self.world.fault("kill", "full", scale=0.2)
        if fault == "kill":
            self.world.kill()
        if fault == "full":
            self.world.disk_full = True
        if self.world.disk_full:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.root / what))

    def write_candidate(self, *args: Any, **kwargs: Any) -> Path:
        self._before_write("candidate")
        return super().write_candidate(*args, **kwargs)

    def write_record(self, record: Any) -> Path:
        self._before_write("record")
        path = super().write_record(record)
        self.world.writes += 1
        return path


class Reservation:
    def __init__(self, ledger: Ledger, amount: float, what: str):
        self.ledger, self.amount, self.what, self.settled = ledger, amount, what, 0

    def commit(self, actual: float) -> None:
        self.settled += 1
        self.ledger.committed += actual

    def release(self) -> None:
        self.settled += 1


class Ledger:
    """A --budget (``cap`` None: no cap) that remembers every reservation and how often each was settled."""

    def __init__(self, cap: float | None) -> None:
        self.cap = cap
        self.held: list[Reservation] = []
        self.committed = 0.0

    def reserve(self, amount: float, what: str) -> Reservation:
        open_ = sum(r.amount for r in self.held if not r.settled)
        if self.cap is not None and self.committed + open_ + amount > self.cap + 1e-9:
            raise BudgetExceeded(f"--budget {self.cap} reached: {what} skipped")
        self.held.append(Reservation(self, amount, what))
        return self.held[-1]


def one_run(world: World, tmp_path: Path, rate: float, cap: float | None = None, possibly_paid: str = REBUY,
            store_class: type[FaultyStore] = FaultyStore, specs: list[ModelSpec] = SPECS,
            rejudge: bool = False, stability: dict[Any, int] | None = None) -> Ledger:
    """Every candidate, step by step as the pool runs them, until the run ends or the process is killed."""
    world.rate, world.billed_run, world.disk_full, world.killed, world.given = rate, 0.0, False, False, []
    world.escaped, world.writes, world.plans = False, 0, []
    world.folders = release_folders(specs)
    ledger = Ledger(cap)
    store = store_class(world, tmp_path / "out", tmp_path / "claims", world.folders)
    runner = Runner(Means(store=store, make_provider=lambda spec: FakeProvider(spec, world),
                          make_judge=lambda: FakeJudge(world), references=lambda task: [], budget=ledger,  # type: ignore[arg-type]
                          signals=False, free_bytes=lambda path: 10**12, on_possibly_paid=possibly_paid, rejudge=rejudge,
                          stability=stability or {}, run_id=f"run-{world.runs}"))
    world.runs += 1
    try:
        for task in TASKS:
            for spec in specs:
                for repeat in range(1, REPEATS + 1):
                    try:
                        steps(runner, world, task, spec, repeat)
                    except OSError as exc:  # a write the runner does not catch: the item errors (as in the pool)
                        assert exc.errno == errno.ENOSPC and world.disk_full, exc
                        world.escaped = True
    except Killed:
        pass
    return ledger


def release_folders(specs: list[ModelSpec]) -> dict[tuple[str, str], str]:
    """Each release in its own folder, as the plugin places them (engine/release.py): a model moved to another
    route buys its own candidates beside the first release's."""
    return {("mini", spec.name): aside_folder(spec.name, release_of(spec)) for spec in specs if spec not in SPECS}


def steps(runner: Runner, world: World, task: Task, spec: ModelSpec, repeat: int) -> None:
    plan = runner.plan(task, spec, repeat)
    world.plans.append(plan)
    if plan.needs_generation and world.fault("unreachable", scale=0.3):
        runner.unreachable(plan, "nothing answers on fake")
        return
    if plan.needs_generation:
        runner.generate_step(plan)
    runner.judge_step(plan) if plan.needs_verdict else runner.finish(plan)


def on_disk(root: Path) -> tuple[float, float, int]:
    """(spent by every record, what calls still pending may cost, how many are pending).  A job submitted is in
    its record's spent from the write that journals it: no allowance is made for jobs."""
    from pytest_hypeedit.engine.records import Record

    records = [Record.from_json(path.read_text()) for path in root.rglob("[0-9][0-9][0-9].json")]
    pending = [r.open_call for r in records if r.open_call]
    return sum(r.spent for r in records), sum(float(p.get("price") or 0) for p in pending), len(pending)


def possibly_paid_unbilled(root: Path, ids: set[str]) -> float:
    """What the records count as possibly paid for calls the fakes never billed (their ids)."""
    from pytest_hypeedit.engine.records import Record, usd

    records = [Record.from_json(path.read_text()) for path in root.rglob("[0-9][0-9][0-9].json")]
    return sum(usd(entry.get("price")) for record in records for entry in record.possibly_paid_calls
               if entry.get("id") in ids)


def images_on_disk(folder: Path) -> set[str]:
    return {hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.png")} if folder.is_dir() else set()


def sample(rng: random.Random) -> dict[Any, int]:
    """--judge-stability in half the runs: some candidates re-judged once or twice more."""
    if rng.random() < 0.5:
        return {}
    keys = [("mini", spec.name, task.task_id, repeat) for task in TASKS for spec in SPECS for repeat in range(1, REPEATS + 1)]
    return {key: rng.randint(1, 2) for key in keys if rng.random() < 0.4}


def check_run(world: World, ledger: Ledger, root: Path, seed: int, run: int) -> None:
    where = f"seed {seed}, run {run}"
    assert not world.broken, f"{where}: {world.broken}"
    named = sum(1 for plan in world.plans for step in plan.life.trail if step.value.startswith("write_"))
    assert world.writes == named, f"{where}: {world.writes} records written, {named} of them by a lifecycle step"
    spent, pending, _ = on_disk(root)
    assert spent + pending >= world.billed - 1e-9, f"{where}: {world.billed} billed, {spent} + {pending} on disk"
    settled = [r.settled for r in ledger.held]
    if world.killed or world.escaped:
        assert all(n <= 1 for n in settled), f"{where}: a reservation settled twice: {settled}"
    else:
        assert settled == [1] * len(settled), f"{where}: reservations settled {settled} times"
        assert ledger.committed == pytest.approx(world.billed_run), f"{where}: the ledger committed " \
            f"{ledger.committed}, the fakes billed {world.billed_run}"
        # what each record says this run bought for it (spent_this_run's source) is what the run paid, exactly
        said = sum(spent_in_run(plan.record, f"run-{world.runs - 1}") for plan in world.plans)
        assert said == pytest.approx(world.billed_run), f"{where}: the records say this run bought {said}, " \
            f"the fakes billed {world.billed_run}"
    if ledger.cap is not None:
        assert ledger.committed <= ledger.cap + 1e-9, f"{where}: {ledger.committed} spent past --budget {ledger.cap}"
    if not world.killed and not world.disk_full:
        for folder, sha in world.given:
            assert sha in images_on_disk(folder), f"{where}: an image paid for in {folder} is not on disk"


@pytest.mark.parametrize("seed", range(30))  # about 0.7 s each
def test_random_faults_never_pay_twice_unjournaled_nor_lose_what_was_paid(tmp_path, seed):
    rng = random.Random(seed)
    world = World(rng, tmp_path / "out")
    releases = [SPECS]
    for run in range(rng.randint(2, 5)):
        specs = MOVED if rng.random() < 0.25 else SPECS
        releases += [specs] if specs not in releases else []
        ledger = one_run(world, tmp_path, rate=rng.choice((0.1, 0.25, 0.5)), cap=rng.choice((None, None, 0.2)),
                         possibly_paid=rng.choice((REBUY, REBUY, REVIEW)), rejudge=rng.random() < 0.2,
                         specs=specs, stability=sample(rng))
        check_run(world, ledger, tmp_path / "out", seed, run)
        for image in list((tmp_path / "out").rglob("*.png")):
            if rng.random() < 0.1:
                image.unlink()  # lost between runs (a cache restored without it): bought again, both paid
    for specs in releases:  # each release's pending calls are settled by a run of that release, in its folder
        ledger = one_run(world, tmp_path, rate=0.0, specs=specs)
        check_run(world, ledger, tmp_path / "out", seed, -1)
    spent, pending, count = on_disk(tmp_path / "out")
    assert count == 0, f"seed {seed}: {count} calls still pending after a run without faults"
    # what the fakes billed is on disk, exactly: more only by the calls that failed unbilled after their journal
    # entry and whose end was never written (possibly paid: the next run counts them at their price)
    unbilled = possibly_paid_unbilled(tmp_path / "out", world.unbilled_ids)
    assert spent == pytest.approx(world.billed + unbilled, abs=1e-9), f"seed {seed}: {spent} on disk, " \
        f"{world.billed} billed, {unbilled} possibly paid and never billed"
    records = list((tmp_path / "out").rglob("[0-9][0-9][0-9].json"))
    assert len(records) == len(TASKS) * len({release_of(spec).id for specs in releases for spec in specs}) * REPEATS
    outcomes = {json.loads(p.read_text())["outcome"] for p in records}
    assert outcomes <= {"pass", "fail", "refused"}, f"seed {seed}: a run without faults left {outcomes}"


class KilledAfterAnImage(FaultyStore):
    """The process dies at the first record write after an image was written: the image is on disk, unnamed."""

    written = False

    def write_candidate(self, *args: Any, **kwargs: Any) -> Path:
        self.written = True
        return super().write_candidate(*args, **kwargs)

    def write_record(self, record: Any) -> Path:
        if self.written:
            self.world.kill()
        return super().write_record(record)


#: job-m pointed at another route, where it is bought synchronously: another release, in its own folder (the job
#: journaled on "fake" stays with the first release's record)
MOVED = [SPECS[0], ModelSpec("job-m", "fake-sync", "sync-v1", PRICE, MappingProxyType({}))]


@pytest.mark.parametrize("moved", [False, True], ids=["fetched-again", "bought-on-another-route"])
def test_a_lost_image_bought_again_and_adopted_after_a_kill_is_paid_for_once(tmp_path, moved):
    world = World(random.Random(0), tmp_path / "out")
    world.keeps_results = 1.0
    one_run(world, tmp_path, rate=0.0)  # every candidate bought and judged
    next((tmp_path / "out" / "mini" / "job-m" / "t0").glob("001.png")).unlink()  # lost from the outputs
    # its job's result fetched again (nothing new billed), or a new image bought on the other route; then a kill
    # between the image's write and its record's
    one_run(world, tmp_path, rate=0.0, store_class=KilledAfterAnImage, specs=MOVED if moved else SPECS)
    assert world.killed
    one_run(world, tmp_path, rate=0.0, specs=MOVED if moved else SPECS)  # the image is adopted, and judged
    spent, _, pending = on_disk(tmp_path / "out")
    assert pending == 0 and spent == pytest.approx(world.billed), f"{spent} on disk, {world.billed} billed"
