"""The generation step: buy one candidate once, or resume the job an earlier attempt journaled.

    budget (the call's worst case reserved) -> pending call written (journaled) -> provider call
        -> the image and its record written at once (saved) | a refusal written | the error written

Every step is one of the candidate's lifecycle (engine/lifecycle.py), whose docstring gives the order's
crash-safety argument: the request is journaled before it leaves, a submitted job is written before its first
poll, and the paid image is on disk (or its cost kept) before anything else happens to it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import BudgetExceeded, CallError, DiskFull, HypeEditError, JobExpired, ProviderError, Refusal
from ..files import regular_signature, sha256_bytes, sha256_with_signature
from ..providers.base import Generation, GenerationRequest, seed_for
from ..registry import ModelSpec
from ..secrets import KEY_ENV, redact
from ..tasks import Task
from ..text import ERROR_LIMIT, clean_text
from ..transport.slots import CallSlots
from . import room
from .call_context import GenerationContext
from .journal import COUNTED_IN, GATHERING, GENERATE, RESUBMITTED_COST, Journal, counted, new_call_id
from .lifecycle import CallReservation, Lifecycle, Step
from .planning import Plan, skip
from .record_spend import leave_generation_behind, set_generation, set_job, update_job
from .records import BATCH, ERROR, REFUSED, SKIPPED, Record, now_iso, usd

if TYPE_CHECKING:
    from .means import Means
    from .paidcall import PaidCalls
    from .planning import Planning
    from .verdicts import Verdicts


class Purchase:
    """Buying a candidate: reserve, journal, call, save (or record why not).  Its calls go through the paid-call
    seam (``PaidCalls``); the verdict it holds --budget for before buying is the verdicts' (``Verdicts``)."""

    def __init__(self, means: Means, calls: PaidCalls, planning: Planning, verdicts: Verdicts) -> None:
        self.means, self.calls, self.planning, self.verdicts = means, calls, planning, verdicts

    def buy(self, plan: Plan) -> None:
        """Generate the candidate, with --budget reserved for its verdict first: a candidate the budget could not
        also judge is not bought (it would be paid for and left unjudged)."""
        plan.needs_generation = plan.needs_verdict = False
        stopped = self._key_stopped(plan.spec)
        if stopped:  # nothing sent: the same key would be rejected again (engine/rejected_keys.py)
            plan.life.move(Step.STOP)
            plan.record.outcome, plan.record.error = ERROR, stopped
            return
        full, held = self.calls.reserve_room(plan.spec)
        if full:  # as a budget stop: not bought, nothing written (there is no room to write it)
            plan.life.move(Step.NO_ROOM)
            plan.record.outcome, plan.record.error = SKIPPED, full
            return
        try:
            self._buy_with_room(plan)
        finally:
            self.calls.release_room(held)

    def _buy_with_room(self, plan: Plan) -> None:
        try:
            plan.verdict_reservation = self.verdicts.reserve_verdict(plan)
        except BudgetExceeded as exc:
            skip(plan.life, plan.record, str(exc))
            return
        except HypeEditError:  # e.g. a reference that cannot be read: the generation says so, the verdict reserves
            plan.verdict_reservation = None
        plan.candidate = self._generate(plan)
        self.planning.note_strays(plan.record, self.means.store.find(*plan.record.key, named=plan.record.candidate).strays)
        plan.needs_verdict = plan.candidate is not None  # not bought: its verdict's reservation is released at the end

    def _generate(self, plan: Plan) -> Path | None:
        """Buy the candidate (or resume its journaled job); an expired job is submitted once more."""
        record, spec = plan.record, plan.spec
        for attempt in (1, 2):
            try:
                return self._generate_once(plan)
            except JobExpired as exc:
                job = record.job or {}
                # a batch line was not run (its batch never made, expired, cancelled or failed): not "expired"
                ended = "not run" if job.get("kind") == BATCH else "expired"
                expired = f"{spec.name} {'batch line' if ended == 'not run' else 'job'} {job.get('id')} {ended}: " \
                    f"{redact(str(exc))}"
                record.resubmitted += 1
                set_job(record, None)
                if attempt == 2:
                    self._failed(plan, JobExpired(f"{expired}; submitted again, {ended} again"))
                    return None
                record.extra["expired_jobs"] = [*record.extra.get("expired_jobs", []), expired]
                self.calls.write(plan.life, Step.WRITE_EXPIRED, record)
        return None

    def _generate_once(self, plan: Plan) -> Path | None:
        task, spec, repeat, record, life = plan.task, plan.spec, plan.repeat, plan.record, plan.life
        reserved: CallReservation | None = None
        request: GenerationRequest | None = None

        def worst() -> float:  # what the call may have cost, asked only when a job's own figure is missing
            return self._worst_case(spec, request)

        journal = self._journal(plan, worst)

        try:
            request = self.generation_request(task, spec, repeat, journal, plan.slots)
            provider = self.means.provider(spec)
            price = 0.0  # a resumed job was paid for when it was submitted
            if not journal.resumed:
                # the worst case (the size requested, the references), not the list price: the budget is a cap
                price = provider.worst_case_cost(request)
                reserved = life.reserve(self.means.budget, lambda: price, f"{spec.name} {task.task_id} r{repeat:03d}")
                self._journal_generation(life, record, spec, price, request)
            life.move(Step.SEND if price > 0 else Step.SEND_UNJOURNALED, reserved)
            started = time.monotonic()
            generation = self.calls.call(lambda: provider.generate(request), record, f"{spec.name} via {spec.route}",
                                    ProviderError)
        except BudgetExceeded as exc:
            skip(life, record, str(exc))
            return None
        except Refusal as exc:
            self.calls.end_call(record)
            if reserved is not None:
                reserved.settle(exc.cost or 0.0)
            self._refused(plan, exc, self._new_cost(record, journal.resumed, exc.cost or 0.0),
                          None if journal.resumed else self.means.run_id)
            return None
        except JobExpired:
            self.calls.end_call(record)
            self._expired_job_paid(record, self._job_cost(record, worst), reserved)
            raise
        except (CallError, HypeEditError) as exc:
            self._generation_failed(plan, exc, reserved, worst)
            return None
        self.calls.end_call(record)
        life.move(Step.REPLY)
        if reserved is not None:
            reserved.settle(generation.cost)
        return self._keep_generation(plan, generation, journal.resumed, time.monotonic() - started)

    def _generation_failed(self, plan: Plan, exc: HypeEditError, reserved: CallReservation | None,
                           worst: Callable[[], float]) -> None:
        """A job that was submitted is paid for even when its polls failed: it stays in the record (journaled)
        and counted (``cost``, a resumed one too), and the next attempt resumes it.  A call whose reply was lost
        may be paid: its worst case is committed, never released."""
        record, spec = plan.record, plan.spec
        lost = self.calls.end_call(record, exc)
        if reserved is not None:
            reserved.settle(float(lost.get("price") or 0) if lost else self._job_cost(record, worst))
        if record.job:
            self._job_generation(record, self._job_cost(record, worst))
        rejected, said = self.means.rejected_keys.rejection(exc, route=spec.route, model_scope=self._model_scope(spec),
                                                  variables=self._provider_key_variables(spec))
        if said:  # in flight when the key was rejected: the one line of the scope, not the reply once more
            self._failed(plan, ProviderError(said, retryable=False), note=self.calls.lost_note(lost), lost=lost is not None)
            return
        self._failed(plan, exc, note=self.calls.lost_note(lost) + rejected, lost=lost is not None)

    def _keep_generation(self, plan: Plan, generation: Generation, resumed: bool, latency: float) -> Path | None:
        """What the provider answered, saved before anything else happens to it."""
        record = plan.record
        cost = self._new_cost(record, resumed, generation.cost)
        if resumed and record.job:
            update_job(record, resumed=True)  # paid for by an earlier attempt, not by this run
        record.references_sha256 = self.planning.reference_hashes(plan.task)  # what the verdict will be of, with the image
        try:
            path = self._save_generation(plan, generation, latency, cost, None if resumed else self.means.run_id)
        except DiskFull as exc:
            self._failed(plan, exc)
            return None
        if generation.preview is not None:  # from the copy the adapter made: no second decode
            self.verdicts.measure_beside(plan, generation.preview)
        return path

    @staticmethod
    def _model_scope(spec: ModelSpec) -> str:
        return f"{spec.route} model {spec.provider_model}"

    def _provider_key_variables(self, spec: ModelSpec) -> tuple[str, ...]:
        return tuple(getattr(self.means.provider(spec), "key_env", ()) or KEY_ENV.get(spec.route, ()))

    def _key_stopped(self, spec: ModelSpec) -> str | None:
        """Why this candidate is not bought: its route's (or model's) key was rejected, or the paid judge's was
        (a candidate bought now would be paid for and left unjudged); None when nothing stops it."""
        stopped = self.means.rejected_keys.stopped(spec.route, self._model_scope(spec))
        if stopped:
            return stopped
        judge = self.means.judge
        if judge.routes and (stopped := self.means.rejected_keys.stopped(*judge.routes)):
            return f"judge {judge.id}: {stopped}"
        return None

    def _journal_generation(self, life: Lifecycle, record: Record, spec: ModelSpec, price: float,
                            request: GenerationRequest) -> None:
        """The generation's request, journaled before it leaves, at its worst-case price; a free route (price 0)
        has nothing to lose.  A job left behind (``_leave_behind``) goes out of the record in the same write.  A
        batch line is journaled as gathering (journal.GATHERING): it leaves only with its batch, once journaled
        with the batch's input, so until then a kill or a stop costs nothing and counts nothing."""
        if price > 0:
            state = GATHERING if self._tier_of(spec) == BATCH else None
            self.calls.journal_call(record, GENERATE, route=spec.route, price=price,
                                    call_id=request.call.journal.call_id, life=life, state=state)

    def _journal(self, plan: Plan, worst: Callable[[], float]) -> Journal:
        """The candidate's journal: a job an adapter submits is written into the record before its first poll,
        counted from then on (``cost``: it was paid when it was submitted; ``worst()`` when the job names no
        cost), and no longer once forgotten (the provider says it failed: nothing billed)."""
        record, spec = plan.record, plan.spec

        def save(job: dict[str, Any] | None) -> None:
            # kept in the purchase's entry, which the job moves to billed: what the submit's reply said, resumable,
            # not lost
            set_job(record, job)
            # a job this call submitted is this run's purchase, counted from now (a resumed one stays its run's)
            self._job_generation(record, self._job_cost(record, worst), self.means.run_id if job else None)
            if job is not None:
                record.route, record.provider_model = spec.route, spec.provider_model
            self.calls.write(plan.life, Step.WRITE_JOB, record)

        # A job journaled on another route (the model was pointed elsewhere with --models-file since) cannot be
        # polled by this route's adapter, nor a batch line by an adapter that buys at standard now (--tier): it is
        # left behind, and this purchase is a new one (journaled, reserved in --budget, its own cost).
        job = record.job if record.job and record.job.get("route") in (None, spec.route) else None
        if job and job.get("kind") == BATCH and self._tier_of(spec) not in (None, BATCH):
            job = None
        if record.job and job is None:
            self._leave_behind(record, spec)
        source = self.means.store.record_path(record.split, record.model, record.task_id, record.repeat)
        return Journal(job, save, route=spec.route, call_id=new_call_id(), source=str(source))

    def _leave_behind(self, record: Record, spec: ModelSpec) -> None:
        """A journaled job this purchase cannot poll was paid for when it was submitted: what the record counts of
        it (its ``cost``; a job journaled by a run killed before it counted it, its own figure, else the list price;
        nothing for a lost image's job, counted already) becomes a left-behind entry of the record's call ledger (an
        earlier purchase that left no image: a ``batch`` job a batch line at tier batch, with its route and id), and
        the job leaves ``job``, so that nothing of this purchase (a failed call's cost, a finished stamp, an image
        adopted later) is taken for it.  Written by the purchase's next write (write_journaled, on a paid route),
        with whatever it leaves on the disk consistent."""
        job = record.job or {}
        moved = usd(record.cost) or self._job_cost(record, lambda: spec.price)  # a record is untrusted
        leave_generation_behind(record, moved, tier=BATCH if job.get("kind") == BATCH else record.tier,
                                route=job.get("route"), id=job.get("id"))  # an earlier run's purchase
        set_job(record, None)

    @staticmethod
    def _job_generation(record: Record, cost: float, run: str | None = None) -> float:
        """The journaled job's price (``cost``: 0 once it is forgotten, the provider says it failed unbilled) as
        the candidate's own generation entry, at the job's tier (a ``batch`` job is a batch line); what it counts.
        Only an entry there is set to $0: a job forgotten before it counted adds no entry."""
        job = record.job or {}
        tier = BATCH if job.get("kind") == BATCH else record.tier
        return set_generation(record, cost, tier=tier, route=job.get("route"), id=job.get("id"), run=run,
                              always=False)

    def _tier_of(self, spec: ModelSpec) -> str | None:
        """The tier the model's adapter buys at (openai, gemini: ``tier``); None when it does not say, or cannot be
        made (the purchase then says why)."""
        try:
            tier = getattr(self.means.provider(spec), "tier", None)
        except HypeEditError:
            return None
        return tier if isinstance(tier, str) else None

    @staticmethod
    def _new_cost(record: Record, resumed: bool, cost: float) -> float:
        """What this attempt's answer adds to the record: ``cost``, unless it is the result of a job whose image was
        lost, fetched again: that job's cost is in the record's call ledger already (engine/planning.py)."""
        return 0.0 if resumed and counted(record.job) else cost

    @staticmethod
    def _job_cost(record: Record, unknown: Callable[[], float]) -> float:
        """What a submitted job cost: the provider's figure journaled at submission, else ``unknown()`` (the
        call's worst case: what it may have cost); 0 when no job was submitted, or when the job's cost is counted
        already (its image was lost: a left-behind entry of the record's call ledger)."""
        job = record.job
        if not job or counted(job):
            return 0.0
        cost = job.get("cost")
        return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else unknown()

    def generation_request(self, task: Task, spec: ModelSpec, repeat: int, journal: Journal | None = None,
                           slots: CallSlots = ()) -> GenerationRequest:
        """The request that buys this candidate: the same for the call, its --budget reservation and the run's price."""
        # paid bytes land in the candidate's own folder of the outputs, never in the cache (a full cache loses none)
        return GenerationRequest(task, repeat, seed_for(task.task_id, repeat), tuple(self.means.references(task)), spec,
                                 call=GenerationContext(journal=journal or Journal(), slots=slots,
                                 landing=self.means.store.task_dir(task.split, spec.name, task.task_id)))

    def worst_case_generation(self, task: Task, spec: ModelSpec, repeat: int) -> float:
        """The most buying this candidate can cost: what --budget reserves for it (the run's price, engine/estimate.py)."""
        return self.means.provider(spec).worst_case_cost(self.generation_request(task, spec, repeat))

    def _worst_case(self, spec: ModelSpec, request: GenerationRequest | None) -> float:
        """The most ``request`` can cost; the list price when it cannot be said (e.g. its references failed)."""
        if request is None:
            return spec.price
        try:
            return self.means.provider(spec).worst_case_cost(request)
        except HypeEditError:
            return spec.price

    def _expired_job_paid(self, record: Record, cost: float, reserved: CallReservation | None) -> None:
        """A job whose result expired at the provider was paid for all the same: a left-behind entry of the
        record's call ledger, in ``spent``, apart from the generation that replaces it."""
        if reserved is not None:
            reserved.settle(cost)
        job = record.job or {}
        # the candidate's own generation is the next submission's
        leave_generation_behind(record, cost, tier=BATCH if job.get("kind") == BATCH else record.tier,
                                route=job.get("route"), id=job.get("id"), run=None if reserved is None else self.means.run_id)

    def _save_generation(self, plan: Plan, gen: Generation, latency: float, cost: float, run: str | None) -> Path:
        """The paid image and its record (``cost``: what it adds, ``_new_cost``), written at once; DiskFull when the
        disk has no room: an image that could not be written is counted as paid and lost (a left-behind entry of the
        record's call ledger, at the tier that served it);
        one written before its record failed stays on disk, and the next run adopts it without paying."""
        record, spec = plan.record, plan.spec
        plan.life.check(Step.WRITE_SAVED)  # an image is only written once paid for
        try:
            path = self.means.store.write_candidate(record.split, record.model, record.task_id, record.repeat, gen.image,
                                              gen.ext)
        except OSError as exc:
            if not room.no_room(exc):
                raise
            # a journaled job counted there: its result fetched again adds nothing more
            leave_generation_behind(record, cost, tier=gen.tier, route=spec.route, id=gen.request_id, run=run)
            update_job(record, **{COUNTED_IN: RESUBMITTED_COST})
            if isinstance(gen.image, Path):
                gen.image.unlink(missing_ok=True)
            raise DiskFull(self.calls.stop_for_disk(exc)) from exc
        record.candidate, record.route, record.provider_model = path.name, spec.route, gen.provider_model
        record.seed, record.request_id = gen.seed, gen.request_id
        set_generation(record, cost, tier=gen.tier, route=spec.route, id=gen.request_id, run=run)
        record.latency_s, record.generated_at, record.outcome, record.error = round(latency, 3), now_iso(), None, None
        record.reused_candidate = False
        record.extra.update(gen.extra)
        update_job(record, finished_at=now_iso())
        record.verdict = record.reasoning = record.judge = None
        record.judgements, record.signals = {}, {}
        # hashed from the bytes in memory (a downloaded file: from disk, once), with the file's signature
        if isinstance(gen.image, Path):
            record.candidate_sha256, record.candidate_stat = sha256_with_signature(path, self.means.store.root)
        else:
            record.candidate_sha256, record.candidate_stat = sha256_bytes(gen.image), regular_signature(path)
        try:
            self.calls.write(plan.life, Step.WRITE_SAVED, record)  # the paid image is safe before the judge is asked
        except OSError as exc:
            if not room.no_room(exc):
                raise
            raise DiskFull(self.calls.stop_for_disk(exc) + f"; the image is kept at {path}, and the next run adopts it "
                           "without paying") from exc
        return path

    def _refused(self, plan: Plan, exc: Refusal, cost: float, run: str | None) -> None:
        record, spec = plan.record, plan.spec
        record.outcome, record.refusal, record.route = REFUSED, redact(exc.reason), spec.route
        record.request_id, record.generated_at = exc.request_id, now_iso()
        record.provider_model, record.error = spec.provider_model, None
        # a refused batch line was billed at the batch tier, not the standard one
        set_generation(record, cost, tier=record.tier if exc.tier is None else exc.tier, route=spec.route,
                       id=exc.request_id, run=run)
        self.calls.write(plan.life, Step.WRITE_REFUSED, record)

    def _failed(self, plan: Plan, exc: Exception, note: str = "", lost: bool = False) -> None:
        # the error names model and route already; the item adds task and repeat
        # any exception of a plugin's provider: its text is cleaned and capped where it is stored (text.py)
        record = plan.record
        record.outcome, record.route = ERROR, plan.spec.route
        record.error = clean_text(redact(str(exc)) + note, ERROR_LIMIT)
        try:  # visible in the outputs; the next run retries it
            self.calls.write(plan.life, Step.WRITE_LOST if lost else Step.WRITE_FAILED, record)
        except OSError as write_error:
            if not room.no_room(write_error):
                raise
            self.calls.stop_for_disk(write_error)  # the item still says what happened; the disk had no room for it
