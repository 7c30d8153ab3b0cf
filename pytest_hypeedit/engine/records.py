"""The record of one candidate: what produced it, what judged it, what it cost.

A record is written beside its candidate (``<NNN>.json``) and rides on the
pytest report from an xdist worker to the controller, so it holds only JSON
values.  No I/O here: the store reads and writes records, this module only
converts them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

#: Outcomes of one candidate (design.md, "Outcomes of one candidate").
PASS, FAIL, REFUSED, ERROR, SKIPPED = "pass", "fail", "refused", "error", "skipped"
OUTCOMES = (PASS, FAIL, REFUSED, ERROR, SKIPPED)

#: The key under which a record travels in ``report.user_properties``.
PROPERTY_KEY = "hypeedit_record"

RECORD_SCHEMA = "hypeedit-record/1"


def now_iso() -> str:
    """The timestamp format of records and labels files: UTC, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


#: The most one candidate's amount may be (USD): no image or verdict of any provider costs near it, and a sum of
#: believable amounts stays finite (1e308 + 1e308 is infinity, which strict JSON refuses).
MAX_CALL_USD = 10_000.0


def usd(value: Any) -> float:
    """A record's amount as a number: a record read from disk is untrusted, and a made-up amount (not a finite,
    non-negative number up to MAX_CALL_USD) counts as 0; ``implausible_amounts`` counts them, to say so."""
    return float(value) if _believable(value) else 0.0


def _believable(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and 0 <= value <= MAX_CALL_USD)


def implausible_amounts(record: Record) -> int:
    """How many of the record's amounts were not believed (counted as 0 by ``usd``): a number that is negative,
    not finite or above MAX_CALL_USD, or not a number at all where an amount is expected."""
    amounts = [record.cost, record.judge_cost, record.resubmitted_cost]
    amounts += [entry.get("price", 0) for entry in record.possibly_paid_calls]
    return sum(1 for value in amounts if value is not None and not _believable(value))


@dataclass
class Record:
    """Everything known about one candidate (task x model x repeat of a split)."""

    split: str
    model: str
    task_id: str
    repeat: int
    task_types: list[str] = field(default_factory=list)
    outcome: str | None = None  # one of OUTCOMES, or None while not yet judged
    # generation
    candidate: str | None = None  # file name beside the record, e.g. "001.png"
    route: str | None = None
    provider_model: str | None = None
    seed: int | None = None
    request_id: str | None = None
    cost: float = 0.0  # generation spend in USD for this candidate
    latency_s: float | None = None
    generated_at: str | None = None
    refusal: str | None = None  # the provider's reason, when refused
    # a job submitted to an async route (id, polling URL, cost...), journaled before its first poll
    # so that no later attempt submits it again (engine/journal.py)
    job: dict[str, Any] | None = None
    resubmitted: int = 0  # jobs submitted again because their result had expired at the provider
    resubmitted_cost: float = 0.0  # USD those expired jobs cost (paid, and their images never arrived)
    # the paid call (a generation or a judge call) sent and still waiting for its reply, written before the
    # request leaves: {"call": "generate"|"judge", "route", "id", "sent_at", "price", ...} (engine/journal.py);
    # a run that finds one it did not send knows the call may have been paid
    pending: dict[str, Any] | None = None
    # every paid call abandoned without its reply (possibly paid), oldest first: the pending entry plus
    # "why", "found_at" and "rebought" (whether a later call bought the candidate again)
    possibly_paid: list[dict[str, Any]] = field(default_factory=list)
    # judging
    verdict: str | None = None  # "PASS" or "FAIL"
    reasoning: str | None = None
    judge: str | None = None
    votes: list[dict[str, Any]] = field(default_factory=list)
    judge_cost: float = 0.0
    judged_at: str | None = None
    # every verdict ever paid for on this candidate, by judge id, so switching
    # judges never throws a paid verdict away
    judgements: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the human panel's labels of this candidate, when the run was given some (--judge labels:...,
    # --agreement, a calibration sample): {"verdict": "PASS"|"FAIL"|None (a tie), "votes": [{"rater", "verdict",
    # "note"}]}; filled on the controller from the labels files, shown in the report, never a verdict of its own
    human: dict[str, Any] | None = None
    # signals computed from pixels beside the verdict, never used as one (analysis of what failed):
    # {"width", "height", "size_match", "aspect_match", "unchanged", "ssim", "delta_e"}
    signals: dict[str, Any] = field(default_factory=dict)
    # what went wrong, when outcome is "error" or "skipped"
    error: str | None = None
    # whether this run reused a candidate / verdict from disk instead of paying
    reused_candidate: bool = False
    reused_verdict: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.split, self.model, self.task_id, self.repeat)

    @property
    def judged(self) -> bool:
        """Counts in the metrics: a verdict, or a refusal (which counts as FAIL)."""
        return self.outcome in (PASS, FAIL, REFUSED)

    @property
    def passed(self) -> bool:
        return self.outcome == PASS

    @property
    def spent(self) -> float:
        """Everything this candidate cost: generation, judge, expired jobs bought again, possibly paid calls."""
        return sum(self.spent_breakdown.values())

    @property
    def spent_breakdown(self) -> dict[str, float]:
        """The parts of ``spent`` (USD); a record from disk is untrusted, so a part that is not a finite,
        non-negative number counts as 0."""
        return {"generation": usd(self.cost), "judge": usd(self.judge_cost),
                "resubmitted": usd(self.resubmitted_cost),
                "possibly_paid": sum(usd(entry.get("price")) for entry in self.possibly_paid_calls)}

    @property
    def possibly_paid_calls(self) -> list[dict[str, Any]]:
        """The ``possibly_paid`` entries that are entries (a doctored record may hold anything)."""
        entries = self.possibly_paid if isinstance(self.possibly_paid, list) else []
        return [entry for entry in entries if isinstance(entry, dict)]

    def to_dict(self) -> dict[str, Any]:
        """The record's fields as a dict for JSON (values shared, not copied: it is serialised, never kept).
        Not ``dataclasses.asdict``: its deep copy is most of the per-item cost of a 7,000-candidate replay."""
        data = dict(vars(self))
        data["schema"] = RECORD_SCHEMA
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        names = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in data.items() if k in names}
        if fields.get("job") is not None and not isinstance(fields["job"], dict):
            # A record on disk is untrusted: a journaled job that is not an object is kept (it may stand for a
            # paid job), as an object without an id that the adapter refuses with a message naming the record.
            fields["job"] = {"malformed": fields["job"]}
        return cls(**fields)

    @classmethod
    def from_json(cls, text: str) -> Record:
        return cls.from_dict(json.loads(text))


def record_to_property(record: Record) -> tuple[str, str]:
    """The ``user_properties`` entry that carries a record to the controller.

    JSON-encoded so that a run fails the same way with and without ``-n``:
    execnet cannot serialise a Path, and the report is copied whole.
    """
    return (PROPERTY_KEY, record.to_json())


def records_from_properties(user_properties) -> list[Record]:
    return [Record.from_json(value) for key, value in user_properties if key == PROPERTY_KEY]
