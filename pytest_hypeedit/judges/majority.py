"""``--judge a,b,c``: several jurors, the majority decides; each vote is recorded.

A tie counts as FAIL (the benchmark is conservative on doubt) and the
reasoning says so.  Jurors are asked at the same time, so a panel costs the
latency of its slowest juror, not the sum.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Sequence

from ..errors import ConfigError, HypeEditError, JudgeError
from ..secrets import redact
from .base import Judge, JudgeRequest, Verdict


class MajorityJudge(Judge):
    name = "majority"
    #: Standard only: a record holds one judge_tier, which could not stand for jurors served at different tiers.
    tiers = ("standard",)

    def __init__(self, jurors: Sequence[Judge]):
        if len(jurors) < 2:
            raise ConfigError("a majority needs at least two jurors, e.g. --judge gemini-3-flash,openai:gpt-4.1")
        ids = [juror.id for juror in jurors]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"--judge {','.join(ids)}: the same juror twice would count its vote twice")
        self.jurors = list(jurors)
        # Instance attributes shadow the class defaults: the panel needs what its jurors need.
        self.key_env = tuple(dict.fromkeys(v for juror in jurors for v in juror.key_env))
        self.needs_images = any(juror.needs_images for juror in jurors)
        self.reuse_verdicts = all(juror.reuse_verdicts for juror in jurors)
        self.routes = tuple(dict.fromkeys(route for juror in jurors for route in juror.routes))
        self._pool = ThreadPoolExecutor(max_workers=len(jurors), thread_name_prefix="juror")

    @property
    def id(self) -> str:
        return ",".join(juror.id for juror in self.jurors)

    def prepare(self) -> None:
        for juror in self.jurors:
            juror.prepare()

    def stale_reason(self, entry: dict[str, Any]) -> str | None:
        """Stale when some juror's own verdict in it is (each juror's ``extra`` is kept under its id)."""
        extra = found if isinstance(found := entry.get("extra"), dict) else {}
        kept = jurors if isinstance(jurors := extra.get("jurors"), dict) else {}
        for juror in self.jurors:
            reason = juror.stale_reason({"extra": kept.get(juror.id) or {}})
            if reason:
                return f"juror {juror.id}: {reason}"
        return None

    def worst_case_cost(self, request: JudgeRequest) -> float:
        return sum(juror.worst_case_cost(request) for juror in self.jurors)  # every juror is asked

    def judge(self, request: JudgeRequest) -> Verdict:
        futures = [self._pool.submit(juror.judge, request) for juror in self.jurors]
        outcomes = [_outcome(future) for future in futures]
        failed = [(juror, exc) for juror, exc in zip(self.jurors, outcomes) if isinstance(exc, Exception)]
        if failed:
            # No partial verdict: a missing vote could flip the majority, so deciding
            # without it would record a verdict the panel never gave.  As an error the
            # candidate is left out of the metrics and the next run asks the panel again.
            error = JudgeError(
                redact("; ".join(f"juror {juror.id}: {exc}" for juror, exc in failed)),
                retryable=all(getattr(exc, "retryable", True) for _, exc in failed),
                reply_lost=any(getattr(exc, "reply_lost", False) for _, exc in failed),  # a juror may be paid
            )
            # what the panel was paid all the same: the verdicts given, and the failed jurors' answered asks
            error.cost = sum(o.cost if isinstance(o, Verdict) else getattr(o, "cost", 0.0) or 0.0 for o in outcomes)
            raise error
        return self._combine([o for o in outcomes if isinstance(o, Verdict)])  # all of them: none failed

    def _combine(self, verdicts: list[Verdict]) -> Verdict:
        passes, total = sum(v.passed for v in verdicts), len(verdicts)
        tie = passes * 2 == total
        summary = f"majority of {total} jurors: {passes} PASS / {total - passes} FAIL"
        if tie:
            summary += " (a tie counts as FAIL)"
        details = " | ".join(f"{juror.id}: {v.label}: {v.reasoning}" for juror, v in zip(self.jurors, verdicts))
        votes = [_vote(juror, v) for juror, v in zip(self.jurors, verdicts)]
        extra = {"tie": tie, "jurors": {juror.id: v.extra for juror, v in zip(self.jurors, verdicts)}}
        return Verdict(passed=passes * 2 > total, reasoning=f"{summary}. {details}", judge=self.id, votes=votes,
                       cost=sum(v.cost for v in verdicts), extra=extra)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        for juror in self.jurors:
            juror.close()


def _outcome(future: Future[Verdict]) -> Verdict | Exception:
    try:
        return future.result()
    except HypeEditError as exc:
        return exc


def _vote(juror: Judge, verdict: Verdict) -> dict[str, Any]:
    vote: dict[str, Any] = {"judge": juror.id, "verdict": verdict.label, "reasoning": verdict.reasoning}
    if verdict.votes:  # a juror that is itself a panel (human raters) keeps its own votes
        vote["votes"] = verdict.votes
    if verdict.cost:
        vote["cost"] = verdict.cost
    return vote
