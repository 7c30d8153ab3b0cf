"""The price lines a paid run starts with, and what ``--estimate`` prints (engine/estimate.py makes the figures).

    hypeedit: 500 candidates to buy for seedream-4.5 (public): at most $20.00 generation + $1.25 judge; about
              14 min at ark's limits (8 in flight)

Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..engine.estimate import Estimate, Purchase, RouteLoad, batch_window
from ..registry import STANDARD, ModelSpec

PREFIX = "hypeedit: "


def price_lines(estimate: Estimate) -> list[str]:
    """One line per model and split with something to pay for; a line for the run when there are several."""
    shown = [p for p in estimate.purchases if p.to_buy or p.to_judge]
    if not shown:
        return [PREFIX + "nothing to buy: every candidate of the run and its verdict are on disk ($0.00)"]
    if len(shown) == 1:
        return [PREFIX + _purchase(shown[0]) + "; " + _time(estimate.seconds, estimate.slowest())]
    lines = [PREFIX + _purchase(p) + "; " + _model_time(estimate, p) for p in shown]
    bought, judged = sum(p.to_buy for p in shown), sum(p.to_judge for p in shown)
    generation, judge = sum(p.generation_usd for p in shown), sum(p.judge_usd for p in shown)
    lines.append(f"{PREFIX}in all: {_counts(bought, judged)}: at most {_usd(generation, judge)}; "
                 f"{_time(estimate.seconds, estimate.slowest())}")
    return lines


def tier_lines(tier: str, models: Sequence[ModelSpec], workers: int = 1) -> list[str]:
    """``--tier batch``: one line per model saying at which tier it is bought and at what price a candidate;
    nothing at the standard tier (nothing changes there).  Under ``-n`` (``workers``), how many batches a model's
    candidates make at least: each worker gathers its own (providers/batching.py)."""
    if tier == STANDARD:
        return []
    lines = _worker_lines(tier, models, workers)
    for spec in models:
        if spec.has_tier(tier):
            window = batch_window(spec.route)
            lines.append(f"{PREFIX}tier {tier}: {spec.name} ({spec.route}) buys at the {tier} tier, "
                         f"${spec.price_at(tier):.3f} a candidate (standard ${spec.price:.3f}); results within "
                         f"{about(window.high_s)} ({window.source}), each item waits for its line of the batch")
        else:
            lines.append(f"{PREFIX}tier {tier}: {spec.name} ({spec.route}) has no {tier} tier, runs at standard")
    return lines


def _worker_lines(tier: str, models: Sequence[ModelSpec], workers: int) -> list[str]:
    if workers <= 1 or not any(spec.has_tier(tier) for spec in models):
        return []
    return [f"{PREFIX}tier {tier}: under -n {workers} each worker gathers its own lines: a model's candidates make "
            f"at least {workers} batches (one per worker and linger window, waiting side by side), not one"]


def estimate_lines(estimate: Estimate) -> list[str]:
    """``--estimate``: the price lines, each route's load, and that nothing was paid."""
    lines = price_lines(estimate)
    lines += [PREFIX + _route(load) for load in estimate.loads if load.calls]
    lines.append(PREFIX + "--estimate: nothing was paid for and no provider was called; run without --estimate "
                          "(and with --budget USD to cap it) to buy them")
    return lines


def _purchase(p: Purchase) -> str:
    return f"{_counts(p.to_buy, p.to_judge)} for {p.model} ({p.split}): at most {_usd(p.generation_usd, p.judge_usd)}"


def _counts(bought: int, judged: int) -> str:
    text = f"{bought} candidate{'s' if bought != 1 else ''} to buy"
    return text if judged == bought or not judged else f"{text} and {judged} verdict{'s' if judged != 1 else ''}"


def _usd(generation: float, judge: float) -> str:
    return f"${generation:.2f} generation + ${judge:.2f} judge"


def _model_time(estimate: Estimate, p: Purchase) -> str:
    """The model's own calls at its route's limits (routes shared with other models are slower)."""
    load = estimate.load(p.route)
    if load is None or not p.to_buy:
        return _time(0.0, None)
    own = RouteLoad(load.route, p.to_buy, load.inflight, load.rpm, load.seconds_per_call, load.stated)
    return _time(own.seconds, own)


def _time(seconds: float, load: RouteLoad | None) -> str:
    """How long, as the slowest route's load says: at its limits, or as its provider states for its tier."""
    if load is None:
        return "no paid call to wait for"
    stated = load.stated
    if stated is not None and not stated.per_call:  # a batch: its window, whatever the limits
        return f"within {about(seconds)} ({stated.source}), each item waiting for its line of the batch"
    if stated is not None:  # each call within a target latency: the run's time is a range
        least = seconds * load.least_seconds / load.seconds if load.seconds else 0.0
        return (f"about {about(least)} to {about(seconds)} at {load.route}'s limits ({load.inflight} in flight"
                f"{_rpm(load)}; {stated.source})")
    return f"about {about(seconds)} at {load.route}'s limits ({load.inflight} in flight{_rpm(load)})"


def _rpm(load: RouteLoad) -> str:
    return f", {load.rpm:g}/min" if load.rpm and load.calls * 60.0 / load.rpm >= load.seconds else ""


def _route(load: RouteLoad) -> str:
    rpm = f"{load.rpm:g}/min" if load.rpm else "no per-minute limit"
    calls = f"route {load.route}: {load.calls} call{'s' if load.calls != 1 else ''}"
    if load.stated is not None and not load.stated.per_call:
        return f"{calls} in batches: within {about(load.seconds)} ({load.stated.source})"
    if load.stated is not None:
        return (f"{calls}, {load.inflight} in flight, {rpm}, {load.stated.source}: about "
                f"{about(load.least_seconds)} to {about(load.seconds)}")
    return f"{calls}, {load.inflight} in flight, {rpm}, about {load.seconds_per_call:g} s a call: about {about(load.seconds)}"


def about(seconds: float) -> str:
    """A duration as a person says it: 40 s, 14 min, 2.5 h, 24 h."""
    if seconds < 90:
        return f"{max(1, math.ceil(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    hours = f"{seconds / 3600:.1f}"
    return f"{hours.removesuffix('.0')} h"
