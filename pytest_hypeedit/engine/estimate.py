"""The run's price before it pays: what it will buy, the most that can cost, and about how long it takes.

Read from the disk as the runner reads it (no call, no claim), through the run's ``Survey`` (engine/survey.py:
each candidate read once for every up-front question): a candidate is bought when ``Runner.needs_call`` says
so; a verdict is paid for when its candidate is bought, or is on disk without a
verdict of this judge that can be reused (``Runner.paid_verdict_needed``); ``--judge-stability`` adds the
re-judgements its sample still lacks.  Each is priced at its worst case, the amount ``--budget`` reserves for
it before the call (``Runner.worst_case_generation``, ``Runner.worst_case_verdict``), so the figure is a
ceiling: what the providers report afterwards is at most that.

The time is a rough floor at the routes' limits: each route's calls go at most ``inflight`` at a time, each
taking a typical latency (no provider publishes one: ``GENERATION_SECONDS``, ``VERDICT_SECONDS``), and at
most ``rpm`` a minute; the routes run at once, all of them within ``--concurrency`` candidates in progress.
Retries, 429s and slow jobs make a real run longer, so it is printed as "about".

A cheaper tier is as slow as its provider says, not as the limits allow (``Stated``): a batch (``--tier batch``)
is done within the provider's stated window (OpenAI: 24 h, the only ``completion_window``; Gemini: a 24 h target,
expired after 48 h), so its time is that window, not seconds at the route's limits; a Flex verdict
(``--judge-tier flex``) takes Google's target of 1 to 15 minutes, so its route's time is a range at those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..judges.judge_tiers import FLEX_OR_STANDARD
from ..registry import BATCH, STANDARD, ModelSpec, RouteLimits
from .jobs import Key
from .records import FLEX
from .survey import Survey

if TYPE_CHECKING:
    from ..tasks import Split
    from .records import Record
    from .runner import Runner

#: A typical image edit's call, submit to image in hand, in seconds: ten to twenty at the providers of
#: models.yaml in our runs (a stated default, not a measured or published figure).
GENERATION_SECONDS = 15.0
#: A typical verdict of a thinking judge with three or four images, in seconds (a stated default).
VERDICT_SECONDS = 8.0


@dataclass(frozen=True)
class Stated:
    """How long a provider says its cheaper tier takes: a whole batch within a window (``per_call`` False), or
    each call within a target latency (``per_call`` True), from ``low_s`` to ``high_s`` seconds."""

    low_s: float
    high_s: float
    per_call: bool
    source: str  # who says so, for the line: "OpenAI's batch window"


#: The batch tier's stated windows, by route.  OpenAI: ``completion_window`` "24h", the only one
#: (platform.openai.com/docs/guides/batch; openai-python ``batch_create_params.py``).  Gemini: "the target
#: turnaround time is 24 hours, but in majority of cases, it is much quicker"; a job pending or running past 48 h
#: expires (ai.google.dev/gemini-api/docs/batch-api).
BATCH_WINDOWS = {"openai": Stated(0.0, 24 * 3600.0, False, "OpenAI's batch window"),
                 "gemini": Stated(0.0, 24 * 3600.0, False, "Gemini's batch target, often much sooner; expired after 48 h")}
#: Any other route's batch tier (a plugin's): a day, as both providers above state.
DEFAULT_BATCH_WINDOW = Stated(0.0, 24 * 3600.0, False, "a provider's batch window")
#: Gemini Flex (``--judge-tier flex``): "Minutes (1-15 min target)" a request
#: (ai.google.dev/gemini-api/docs/flex-inference).
FLEX_TARGET = Stated(60.0, 15 * 60.0, True, "Flex: 1-15 min a verdict, Google's target")


@dataclass(frozen=True)
class Purchase:
    """What one model still needs on one split, and the most it can cost."""

    model: str
    split: str
    route: str
    to_buy: int  # candidates to generate
    to_judge: int  # paid verdicts (re-judgements of --judge-stability included)
    generation_usd: float
    judge_usd: float

    @property
    def usd(self) -> float:
        return self.generation_usd + self.judge_usd


@dataclass(frozen=True)
class RouteLoad:
    """The calls one route will take, and the limits they go at."""

    route: str
    calls: int
    inflight: int  # at once: the route's limit, within --concurrency
    rpm: float | None
    seconds_per_call: float
    #: the provider's own word on its cheaper tier's time (a batch window, a Flex target), when the route's calls
    #: are bought at one: it, not the limits, says how long they take
    stated: Stated | None = None

    @property
    def seconds(self) -> float:
        """The route's time: at its limits, or the most its provider states for its tier."""
        if self.stated is not None and not self.stated.per_call:
            return self.stated.high_s if self.calls else 0.0
        per_call = self.stated.high_s if self.stated is not None else self.seconds_per_call
        return self._at_limits(per_call)

    @property
    def least_seconds(self) -> float:
        """The route's time at the low end of what its provider states (its limits' time without a statement)."""
        if self.stated is None:
            return self.seconds
        if not self.stated.per_call:
            return self.stated.low_s if self.calls else 0.0
        return self._at_limits(self.stated.low_s)

    def _at_limits(self, per_call: float) -> float:
        by_slots = self.calls * per_call / self.inflight
        by_rate = self.calls * 60.0 / self.rpm if self.rpm else 0.0
        return max(by_slots, by_rate)


@dataclass(frozen=True)
class Estimate:
    purchases: tuple[Purchase, ...]
    loads: tuple[RouteLoad, ...]
    concurrency: int

    @property
    def usd(self) -> float:
        return sum(p.usd for p in self.purchases)

    @property
    def paid(self) -> bool:
        """Whether anything in the plan costs money (a run with nothing to pay for prints no price)."""
        return self.usd > 0

    @property
    def seconds(self) -> float:
        """The routes at once, all of them within --concurrency candidates in progress (a batch waits for its
        window, not in a slot)."""
        slowest = max((load.seconds for load in self.loads), default=0.0)
        work = sum(load.calls * (load.stated.high_s if load.stated is not None and load.stated.per_call
                                 else load.seconds_per_call)
                   for load in self.loads if load.stated is None or load.stated.per_call)
        return max(slowest, work / self.concurrency)

    def slowest(self) -> RouteLoad | None:
        busy = [load for load in self.loads if load.calls]
        return max(busy, key=lambda load: load.seconds) if busy else None

    def load(self, route: str) -> RouteLoad | None:
        return next((load for load in self.loads if load.route == route), None)


def route_load(route: str, calls: int, limits: RouteLimits, concurrency: int, seconds_per_call: float,
               stated: Stated | None = None) -> RouteLoad:
    inflight = min(limits.inflight or concurrency, concurrency)
    return RouteLoad(route, calls, max(1, inflight), limits.rpm, seconds_per_call, stated)


def batch_window(route: str) -> Stated:
    """The stated window of ``route``'s batch tier."""
    return BATCH_WINDOWS.get(route, DEFAULT_BATCH_WINDOW)


def plan_purchases(runner: Runner, spec: ModelSpec, split: Split, repeats: int, selected: set[Key] | None = None,
                   disk: Survey | None = None) -> Purchase:
    """One model's plan on one split (its candidates in ``selected``, the run's items, when given), read from the
    disk (``disk``, else a survey of its own), priced at the worst cases --budget reserves.  A task's price is asked
    once: it depends on its references and size, not on the repeat."""
    disk = disk if disk is not None else Survey(runner.planning)
    to_buy = to_judge = 0
    generation = judge = 0.0
    for task in split.tasks:
        buy = judge_count = 0
        for repeat in range(1, repeats + 1):
            key = (split.name, spec.name, task.task_id, repeat)
            if selected is not None and key not in selected:
                continue
            bought = disk.needs_call(key)
            buy += bought
            judge_count += verdicts_needed(runner, key, bought, disk)
        if buy:
            generation += buy * runner.worst_case_generation(task, spec, 1)
        if judge_count and runner.judge.routes:
            judge += judge_count * runner.worst_case_verdict(task, spec, 1)
        to_buy, to_judge = to_buy + buy, to_judge + (judge_count if runner.judge.routes else 0)
    return Purchase(spec.name, split.name, spec.route, to_buy, to_judge, generation, judge)


def verdicts_needed(runner: Runner, key: Key, bought: bool, disk: Survey) -> int:
    """Paid verdicts for one candidate: its own (when it is bought, or on disk without a verdict of this judge
    that can be reused), and the re-judgements --judge-stability still lacks for it.  A refusal has none."""
    from .runner import refused

    record = None if bought else disk.record(key)
    if record is not None and refused(record):
        return 0
    own = 1 if record is None else int(runner.paid_verdict_needed(record))
    return own + rejudgements_missing(runner, key, None if own else record)


def rejudgements_missing(runner: Runner, key: Key, judged: Record | None) -> int:
    """--judge-stability's re-judgements of a candidate that its record (``judged``: None when it is still to
    be judged) does not keep yet."""
    wanted = runner.stability.get(key) or 0
    if not wanted or judged is None:
        return wanted
    from .stability import kept

    entry = kept(judged, runner.judge.id)
    return max(0, wanted - len(entry["verdicts"])) if entry else wanted


def estimate(runner: Runner, models: Iterable[ModelSpec], splits: Iterable[Split], repeats: int,
             limits_for: Callable[[ModelSpec], RouteLimits], concurrency: int, selected: set[Key] | None = None,
             disk: Survey | None = None, tier: str = STANDARD, judge_tier: str = STANDARD) -> Estimate:
    """The whole run's plan (its candidates in ``selected`` when given): a Purchase per model and split, and each route's load (the judge's routes
    included, each verdict going through every one of them: a panel asks each juror).  ``disk``: the run's survey
    of the disk when the up-front checks made one (else one of its own).  ``tier`` (--tier) and ``judge_tier``
    (--judge-tier): a model bought on its batch tier takes its provider's batch window, a Flex judge its target."""
    disk = disk if disk is not None else Survey(runner.planning)
    purchases = tuple(plan_purchases(runner, spec, split, repeats, selected, disk) for split in splits for spec in models)
    calls: dict[str, int] = {}
    specs: dict[str, ModelSpec] = {}
    for spec in models:
        specs.setdefault(spec.route, spec)
        calls[spec.route] = calls.get(spec.route, 0) + sum(p.to_buy for p in purchases if p.model == spec.name)
    loads = [route_load(route, count, limits_for(specs[route]), concurrency, GENERATION_SECONDS,
                        batch_window(route) if tier == BATCH and specs[route].has_tier(BATCH) else None)
             for route, count in calls.items()]
    verdicts = sum(p.to_judge for p in purchases)
    flex = FLEX_TARGET if judge_tier in (FLEX, FLEX_OR_STANDARD) else None
    for route in runner.judge.routes:
        judge_spec = ModelSpec(name=f"judge-{route}", route=route, provider_model=route, price=0.0)
        loads.append(route_load(route, verdicts, limits_for(judge_spec), concurrency, VERDICT_SECONDS, flex))
    return Estimate(purchases, tuple(loads), concurrency)
