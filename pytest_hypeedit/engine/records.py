"""The record of one candidate: what produced it, what judged it, what it cost.

A record is written beside its candidate (``<NNN>.json``) and rides on the
pytest report from an xdist worker to the controller, so it holds only JSON
values.  No I/O here: the store reads and writes records, this module only
converts them.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable

from ..text import ERROR_LIMIT, REASONING_LIMIT, SHORT_LIMIT, clean_entries, clean_optional
from . import call_ledger

# The price tiers (a record's ``tier`` and ``judge_tier``: any other value read from disk becomes UNKNOWN_TIER,
# counted by ``unknown_tiers``, never believed) and the amounts of a record are the call ledger's; named here too,
# where the code reading records has always found them.
from .call_ledger import (
    BATCH as BATCH,
    FLEX as FLEX,
    MAX_CALL_USD as MAX_CALL_USD,
    STANDARD as STANDARD,
    TIERS as TIERS,
    UNKNOWN_TIER as UNKNOWN_TIER,
    implausible_amounts as implausible_amounts,
    known_tier as known_tier,
    usd as usd,
)

#: Outcomes of one candidate (docs/reference/results.md, "Outcomes of one candidate").
PASS, FAIL, REFUSED, ERROR, SKIPPED = "pass", "fail", "refused", "error", "skipped"
OUTCOMES = (PASS, FAIL, REFUSED, ERROR, SKIPPED)

#: The key under which a record travels in ``report.user_properties``.
PROPERTY_KEY = "hypeedit_record"

RECORD_SCHEMA = "hypeedit-record/1"

#: ``extra`` key of a new record made where a file on disk was no record (engine/store.py): why it was not used.
DISCARDED = "discarded_record"

#: The key of a verdict's ``extra`` that names the tier that served it (judges/gemini.py).
SERVED_TIER = "service_tier"


def now_iso() -> str:
    """The timestamp format of records and labels files: UTC, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def verdict_tier(entry: dict[str, Any]) -> str:
    """The tier a verdict entry was served at (``extra["service_tier"]``); standard when it names none (a judge
    with one tier, a verdict given before tiers were recorded), UNKNOWN_TIER when it names something else."""
    extra = entry.get("extra")
    if not isinstance(extra, dict) or SERVED_TIER not in extra:
        return STANDARD
    return known_tier(extra[SERVED_TIER])


def unknown_tiers(record: Record) -> int:
    """How many of the record's tiers were not believed (not a known tier name on disk)."""
    return sum(1 for tier in (record.tier, record.judge_tier) if tier == UNKNOWN_TIER)


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
    # the release that made the candidate (engine/release.py Release.as_record: id, label, route, provider model,
    # base URL, options); a candidate is never counted for another release.  None: written by an earlier version
    release: dict[str, Any] | None = None
    seed: int | None = None
    request_id: str | None = None
    latency_s: float | None = None
    generated_at: str | None = None
    refusal: str | None = None  # the provider's reason, when refused
    resubmitted: int = 0  # jobs submitted again because their result had expired at the provider
    # judging
    verdict: str | None = None  # "PASS" or "FAIL"
    reasoning: str | None = None
    judge: str | None = None
    votes: list[dict[str, Any]] = field(default_factory=list)
    # what the verdict the record holds cost (every verdict given: entries of ``calls``).  Informational in a record
    # written now (its verdicts are entries, and spend is derived from them), and it stays: a record written before
    # verdicts were entries (no ``judge_verdicts_cost`` either) counts its verdict from it until a verdict is
    # written (call_ledger.unwritten_verdicts; record_spend.keep_verdicts_cost keeps it as an entry then), and an
    # entry does not say which verdict the record holds now (the one a reused verdict brings, verdicts.py)
    judge_cost: float = 0.0
    # the price tier that served the verdict the record holds (TIERS), as the judge's reply says; it stays: the tier
    # of an older record's verdict amounts above and of a judge call paid without a verdict (record_spend), and the
    # ``unknown_tiers`` a results row counts
    judge_tier: str = STANDARD
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
    # the bytes the verdicts and signals above were computed on: the SHA-256 (hex) of the candidate file and of
    # each reference image, in the task's order (engine/planning.py checks them before reusing a verdict: a file
    # changed on disk is judged again); None / [] in a record written before they were kept
    candidate_sha256: str | None = None
    references_sha256: list[str] = field(default_factory=list)
    # the candidate file's signature (files.file_signature: device, inode, size, mtime and ctime in ns) when its
    # SHA-256 above was computed: while the file keeps it, a run takes the hash as is (engine/provenance.py)
    candidate_stat: list[int] | None = None
    # what went wrong, when outcome is "error" or "skipped"
    error: str | None = None
    # whether this run reused a candidate / verdict from disk instead of paying
    reused_candidate: bool = False
    reused_verdict: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    # the candidate's call ledger (engine/call_ledger.py): paid calls written as entries, append-only, one each
    # ({"entry": id, "kind", "state", "price", "tier", "route", "id", "sent_at", "run", "worst"}); today the judge
    # calls paid without giving a verdict (asks answered before the judge failed, e.g. two replies that could not
    # be read, a panel's answered jurors; --judge-stability's too: ``judge_failed_cost`` in records of earlier
    # versions, converted once on read, ``from_dict``), and earlier purchases of this candidate that left no image,
    # left behind: expired jobs (paid, their images never arrived), images that went missing (the candidate bought
    # again), jobs left behind by a purchase that could not poll them (engine/purchase.py), images a full disk could
    # not keep (``resubmitted_cost`` in records of earlier versions); and every verdict judge calls gave it, over
    # every run (the one it holds, those it held before: replaced by --rejudge, a stale verdict judged again, another
    # judge's verdict, a verdict of bytes that changed or of an image that was lost) and --judge-stability's
    # re-judgements (``judge_verdicts_cost`` in records of earlier versions; a record older still counts its
    # ``judge_cost`` and ``extra["stability"]["cost"]`` until a verdict is written, call_ledger.unwritten_verdicts);
    # and every paid call, journaled before it is sent (``open_call`` until it ends; ``pending`` in records of
    # earlier versions), ended in place: billed, unbilled, or abandoned without its reply, lost (possibly paid, at
    # its worst case) with "why", "found_at" and "rebought" (a later call bought again what it was for;
    # ``possibly_paid`` in records of earlier versions); a job submitted is its entry's "job" (``job``; ``job`` in
    # records of earlier versions).  Never reset: a later verdict or purchase does not erase what they cost
    calls: list[dict[str, Any]] = field(default_factory=list)

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
    def cost(self) -> float:
        """What the candidate's own generation cost (USD): its entry of the call ledger (call_ledger.own), derived;
        the field of earlier versions is converted once on read (``from_dict``)."""
        return call_ledger.generation_cost(self)

    @property
    def tier(self) -> str:
        """The price tier that served the candidate's own generation (TIERS, else UNKNOWN_TIER), as the provider's
        reply said: its entry's, derived; STANDARD while the ledger holds none."""
        return call_ledger.generation_tier(self)

    @property
    def spent(self) -> float:
        """Everything this candidate cost: every paid or possibly paid call of its ledger (engine/call_ledger.py)."""
        return call_ledger.spent(call_ledger.calls_of(self))

    @property
    def spent_breakdown(self) -> dict[str, float]:
        """The parts of ``spent`` (USD), from its ledger: generation, judge, resubmitted, possibly_paid."""
        return call_ledger.breakdown(call_ledger.calls_of(self))

    @property
    def job(self) -> dict[str, Any] | None:
        """The job submitted to an async route for the candidate's purchase (id, polling URL, cost...), journaled
        before its first poll so that no later attempt submits it again: its generation entry's ``job``
        (call_ledger.job_of, a copy; written by record_spend.set_job), None without one."""
        return call_ledger.job_of(self)

    @property
    def open_call(self) -> dict[str, Any] | None:
        """The paid call sent (or gathering) and not ended: its entry of the call ledger, journaled before the
        request leaves (engine/journal.py), None without one; a run that finds one it did not send knows the
        call may have been paid: it moves to lost."""
        return call_ledger.open_call(self)

    @property
    def possibly_paid_calls(self) -> list[dict[str, Any]]:
        """The paid calls abandoned without their reply: the lost entries of its ledger, oldest first, bounded."""
        return call_ledger.lost_entries(self)

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
        """A record from its JSON fields, which are untrusted (a file on disk, a report from a worker): a field of
        the wrong type raises MalformedRecord naming it; the texts taken from outside are cleaned and capped."""
        if not isinstance(data, dict):
            raise MalformedRecord(f"not a JSON object but {type(data).__name__}")
        fields = {k: v for k, v in data.items() if k in _FIELD_NAMES}
        _convert_earlier(data, fields)
        check_fields(fields)
        return cls(**clean_fields(fields))

    @classmethod
    def from_json(cls, text: str) -> Record:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_checked_json(cls, text: str) -> Record:
        """A record from the ``to_json`` text of one that ``from_dict`` built, so checked and cleaned already: only
        the store's cache of what it read gives such a text (engine/store.py), never a file or a report."""
        fields = json.loads(text)
        del fields["schema"]
        return cls(**fields)


#: The ids of the ledger entries a record of an earlier version's ``judge_failed_cost``, ``resubmitted_cost``,
#: ``judge_verdicts_cost``, ``cost`` and ``possibly_paid`` become: fixed, so a record converted twice (read back,
#: merged with another process's) holds them once.
EARLIER_JUDGE_CALLS = "judge_failed_cost"
EARLIER_LEFT_BEHIND = "resubmitted_cost"
EARLIER_VERDICTS = "judge_verdicts_cost"
EARLIER_GENERATION = "generation-v1"
EARLIER_LOST = "possibly_paid"
EARLIER_PENDING = "pending-v1"


def _convert_earlier(data: dict[str, Any], fields: dict[str, Any]) -> None:
    """A record of an earlier version, converted once on read: its ``judge_failed_cost`` (what judge calls paid
    without a verdict cost, summed) becomes one ledger entry of ``calls``, and its ``resubmitted_cost`` (earlier
    purchases that left no image, summed) one left-behind entry per purchase its ``extra`` names and one for the
    rest (call_ledger.earlier_left_behind), its ``judge_verdicts_cost`` and ``cost`` (with ``tier``) their entries,
    and each of its ``possibly_paid`` (calls abandoned without their reply) a lost entry (call_ledger.earlier_lost,
    ``rebought`` kept), so nothing it recorded as paid is forgotten, and none is counted twice (the entries' ids are
    fixed).  An amount of the wrong type makes the record malformed, as before; one not believable is kept as is,
    counted 0 and said (``implausible_amounts``)."""
    for name in (EARLIER_JUDGE_CALLS, EARLIER_LEFT_BEHIND, EARLIER_VERDICTS, "cost"):
        amount = data.get(name)
        if amount is not None and not _is(amount, _NUMBER):
            raise MalformedRecord(f"'{name}' must be {_kind_names(_NUMBER)}, not {_json_type(amount)}")
    found = fields.get("calls")
    calls: list[Any] = found if isinstance(found, list) else []
    ids = {str(entry.get("entry")).split(".")[0] for entry in calls if isinstance(entry, dict)}
    added: list[dict[str, Any]] = []
    failed = data.get(EARLIER_JUDGE_CALLS)
    if failed and EARLIER_JUDGE_CALLS not in ids:
        tier = data.get("judge_tier") if isinstance(data.get("judge_tier"), str) else STANDARD
        added.append({"entry": EARLIER_JUDGE_CALLS, "kind": call_ledger.JUDGE_CALL, "state": call_ledger.ANSWERED,
                      "price": failed, "tier": tier})
    left = data.get(EARLIER_LEFT_BEHIND)
    if left and EARLIER_LEFT_BEHIND not in ids:
        added += (call_ledger.earlier_left_behind(left, data.get("extra"), EARLIER_LEFT_BEHIND) if call_ledger.believable(left)
                  else [{"entry": EARLIER_LEFT_BEHIND, "kind": call_ledger.GENERATION, "state": call_ledger.LEFT_BEHIND,
                         "price": left, "tier": call_ledger.UNKNOWN_TIER}])
    verdicts = data.get(EARLIER_VERDICTS)
    if verdicts is not None and EARLIER_VERDICTS not in ids:
        added += _earlier_verdicts(data, verdicts)
    if ("cost" in data or "tier" in data) and EARLIER_GENERATION not in ids:
        added.append(_earlier_generation(data))
    abandoned = _earlier_possibly_paid(data)
    if abandoned and EARLIER_LOST not in ids:
        added += call_ledger.earlier_lost(abandoned, EARLIER_LOST)
    pending = data.get("pending")
    if pending is not None and not isinstance(pending, dict):
        raise MalformedRecord(f"'pending' must be an object, not {_json_type(pending)}")
    if pending and _pending_id(pending) not in {entry.get("entry") for entry in calls if isinstance(entry, dict)}:
        added.append(_earlier_pending(pending))
    converted = [*calls, *added]
    job = data.get("job")
    if job is not None and not any(isinstance(entry, dict) and "job" in entry for entry in converted):
        # A record on disk is untrusted: a journaled job that is not an object is kept (it may stand for a paid
        # job), as an object without an id that the adapter does not accept, with a message naming the record.
        converted = _with_earlier_job(converted, job if isinstance(job, dict) else {"malformed": job})
    if added or converted != calls:
        fields["calls"] = converted


def _pending_id(pending: dict[str, Any]) -> str:
    """The id of the open entry a record of an earlier version's ``pending`` becomes: the one a call journaled now
    gets (``call.<request id>``), fixed by the call's own id, so a record converted twice (read back, merged with
    another process's) holds it once, and a call an earlier writer journaled since is one more; EARLIER_PENDING
    for a call without an id."""
    call_id = pending.get("id")
    return call_ledger.call_entry_id(call_id) if isinstance(call_id, str) and call_id else EARLIER_PENDING


def _earlier_pending(pending: dict[str, Any]) -> dict[str, Any]:
    """A record of an earlier version's ``pending`` (the call journaled and not ended) as its open entry
    (``_pending_id``): journaled, or gathering (a batch line), at its worst-case price."""
    state = call_ledger.GATHERING if pending.get("state") == call_ledger.GATHERING else call_ledger.JOURNALED
    entry = call_ledger.lost(pending, _pending_id(pending))  # its fields read alike: the wrong types left out
    entry.update(state=state, kind=call_ledger.BATCH_LINE if state == call_ledger.GATHERING else entry["kind"])
    if isinstance(pending.get("judge"), str):
        entry["judge"] = pending["judge"]
    return entry


def _with_earlier_job(calls: list[Any], job: dict[str, Any]) -> list[Any]:
    """A record of an earlier version's ``job`` kept in the entry of the generation it was for: the latest
    generation entry (billed; left behind when its image was lost and the job counted there), else a new one
    (``"entry": "job-v1"``, billed at $0: its price is counted where the record counted it)."""
    for index in range(len(calls) - 1, -1, -1):
        entry = calls[index]
        if isinstance(entry, dict) and entry.get("kind") in call_ledger.GENERATION_KINDS and entry.get("state") in (
                call_ledger.BILLED, call_ledger.LEFT_BEHIND):
            return [*calls[:index], {**entry, "job": job}, *calls[index + 1:]]
    return [*calls, {"entry": "job-v1", "kind": call_ledger.GENERATION, "state": call_ledger.BILLED, "price": 0.0,
                     "tier": call_ledger.STANDARD, "job": job}]


def _earlier_possibly_paid(data: dict[str, Any]) -> list[Any]:
    """A record of an earlier version's ``possibly_paid`` (a list of objects: else the record is malformed, naming
    it, as it was when the field was one of the record's)."""
    entries = data.get(EARLIER_LOST)
    if entries is None:
        return []
    if not _is(entries, (list,)):
        raise MalformedRecord(f"'{EARLIER_LOST}' must be a list, not {_json_type(entries)}")
    _check_items(entries, (dict,), EARLIER_LOST)
    return list(entries)


def _earlier_generation(data: dict[str, Any]) -> dict[str, Any]:
    """A record of an earlier version's ``cost`` and ``tier`` (its own generation: what the purchase it holds cost,
    at the tier that served it) as the ledger entry of that generation, billed: a batch line at tier batch, else a
    generation; with the record's route and request id.  Written even at $0 (it says the tier).  A tier that is no
    tier is kept as UNKNOWN_TIER, counted by ``unknown_tiers``; an amount not believable as is, counted 0 and said
    (``implausible_amounts``)."""
    tier = known_tier(data.get("tier", STANDARD))
    entry = {"entry": EARLIER_GENERATION, "kind": call_ledger.BATCH_LINE if tier == BATCH else call_ledger.GENERATION,
             "state": call_ledger.BILLED, "price": data.get("cost") or 0.0, "tier": tier}
    for name, field_name in (("route", "route"), ("id", "request_id")):
        if isinstance(data.get(field_name), str):
            entry[name] = data[field_name]
    return entry


def _earlier_verdicts(data: dict[str, Any], amount: float) -> list[dict[str, Any]]:
    """A record of an earlier version's ``judge_verdicts_cost`` (every verdict it was given, re-judgements included)
    as ledger entries at its verdict's tier: the re-judgements (``extra["stability"]["cost"]``, at most all of it)
    and the verdicts, the latter written even at $0 (it says the verdicts are entries, so ``judge_cost`` is no longer
    counted for them, call_ledger.unwritten_verdicts)."""
    tier = data.get("judge_tier") if isinstance(data.get("judge_tier"), str) else STANDARD
    extra = data.get("extra")
    believed = call_ledger.usd(amount)
    rejudged = min(call_ledger.rejudgements_cost(extra.get("stability") if isinstance(extra, dict) else None), believed)
    verdicts = {"entry": EARLIER_VERDICTS, "kind": call_ledger.VERDICT, "state": call_ledger.BILLED, "tier": tier,
                "price": round(believed - rejudged, 6) if call_ledger.believable(amount) else amount}
    return [verdicts] + ([{"entry": f"{EARLIER_VERDICTS}.rejudged", "kind": call_ledger.REJUDGEMENT,
                           "state": call_ledger.BILLED, "price": round(rejudged, 6), "tier": tier}] if rejudged else [])


#: Record's fields by name (a record read keeps only these).
_FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(Record))


class MalformedRecord(ValueError):
    """A record whose fields are not of their types: treated as absent (engine/store.py), never a crash."""


_TEXT, _NUMBER, _INT, _BOOL = (str,), (int, float), (int,), (bool,)
_SCALARS = (str, int, float, bool)
#: The type of every field a record may hold (None is allowed where the default is None).  A field not listed
#: (one added later, e.g. a content hash) is not checked here: list it when it is added.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "split": _TEXT, "model": _TEXT, "task_id": _TEXT, "repeat": _INT, "task_types": (list,),
    "outcome": _TEXT, "candidate": _TEXT, "route": _TEXT, "provider_model": _TEXT, "release": (dict,),
    "seed": _SCALARS,
    "request_id": _TEXT, "latency_s": _NUMBER, "generated_at": _TEXT, "refusal": _TEXT,
    "resubmitted": _INT,
    "verdict": _TEXT, "reasoning": _TEXT, "judge": _TEXT, "votes": (list,),
    "judge_cost": _NUMBER, "judged_at": _TEXT, "calls": (list,),
    "judgements": (dict,),
    "human": (dict,), "signals": (dict,),
    "error": _TEXT, "reused_candidate": _BOOL, "reused_verdict": _BOOL, "extra": (dict,),
    "candidate_sha256": _TEXT, "references_sha256": (list,), "candidate_stat": (list,),
    # a tier is read by name first (check_fields): a wrong one is counted as unknown, never a lost paid record
    "judge_tier": _TEXT,
}
#: The exact types of each field's JSON values (json.loads makes no subclass): a record read is checked with one
#: set lookup per field, ``_is`` only for a value of another type (a subclass from a plugin; else an error).
_JSON_TYPES: dict[str, frozenset[type]] = {
    name: frozenset(kinds) - ({bool} if bool not in kinds and kinds != _SCALARS else set())
    for name, kinds in _FIELD_TYPES.items()}
#: Text fields that only inform (a plugin's provider may give its request id or model as a number): a number
#: there is kept as text, never a reason to throw away the record and its paid verdict.
_INFORMATIVE = {"route", "provider_model", "request_id", "generated_at", "judged_at", "refusal", "error",
                "reasoning"}
#: The pixel signals the analysis compares (engine/signals.py's SIGNAL_KEYS, named again here so that reading a
#: record needs no numpy): numbers or true/false; other keys are not checked.
_SIGNALS = {"width", "height", "size_match", "aspect_match", "unchanged", "ssim", "delta_e"}
#: The fields of one verdict (a ``judgements`` entry), as verdicts._verdict_entry writes them.
_VERDICT_TYPES: dict[str, tuple[type, ...]] = {
    "verdict": _TEXT, "reasoning": _TEXT, "judge": _TEXT, "votes": (list,), "cost": _NUMBER,
    "judged_at": _TEXT, "extra": (dict,),
}
#: Fields that may be null: those whose default is None, and the amounts (``usd`` counts a null as 0, and a
#: plugin's provider may have reported no cost: such a record's paid verdict is kept, not thrown away).
_NULLABLE = {f.name for f in dataclasses.fields(Record) if f.default is None} | {
    "judge_cost"}


def check_fields(fields: dict[str, Any]) -> None:
    """Raise MalformedRecord for the first field (or verdict entry, vote, signal) not of its type."""
    missing = [name for name in ("split", "model", "task_id", "repeat") if name not in fields]
    if missing:
        raise MalformedRecord(f"no {', '.join(repr(name) for name in missing)}: not a record")
    if "judge_tier" in fields:
        fields["judge_tier"] = known_tier(fields["judge_tier"])
    for name, value in list(fields.items()):
        if name in _INFORMATIVE and type(value) in (int, float):  # exact: true/false is no number
            fields[name] = value = str(value)
        allowed = _JSON_TYPES.get(name)
        if allowed is None or (value is None and name in _NULLABLE) or type(value) in allowed:
            continue  # the common case, by the value's exact type (what json.loads gives)
        if not _is(value, _FIELD_TYPES[name]):
            raise MalformedRecord(f"{name!r} must be {_kind_names(_FIELD_TYPES[name])}, not {_json_type(value)}")
    _check_items(fields.get("task_types", []), _TEXT, "task_types")
    _check_items(fields.get("references_sha256") or [], _TEXT, "references_sha256")
    for name in ("votes", "calls"):
        _check_items(fields.get(name, []), (dict,), name)
    for index, entry in enumerate(fields.get("calls") or []):
        wrong = call_ledger.problem(entry)
        if wrong is not None:
            raise MalformedRecord(f"calls[{index}]: {wrong}")
    if fields.get("outcome") is not None and fields["outcome"] not in OUTCOMES:
        raise MalformedRecord(f"'outcome' must be one of {', '.join(OUTCOMES)}, not {fields['outcome']!r:.40}")
    for judge, entry in (fields.get("judgements") or {}).items():
        _check_verdict_entry(entry, f"judgements[{judge!r:.40}]")
    for key, value in (fields.get("signals") or {}).items():
        if key in _SIGNALS and value is not None and not _is(value, _SCALARS):
            raise MalformedRecord(f"signals[{key!r:.40}] must be a number, text or true/false, not {_json_type(value)}")
    human = fields.get("human")
    if human is not None:
        if not _is(human.get("votes", []), (list,)):
            raise MalformedRecord("'human.votes' must be a list")
        _check_items(human.get("votes", []), (dict,), "human.votes")


def _check_verdict_entry(entry: Any, where: str) -> None:
    if not isinstance(entry, dict):
        raise MalformedRecord(f"{where} must be an object, not {_json_type(entry)}")
    for name, kinds in _VERDICT_TYPES.items():
        value = entry.get(name)
        if value is not None and type(value) not in kinds and not _is(value, kinds):
            raise MalformedRecord(f"{where}.{name} must be {_kind_names(kinds)}, not {_json_type(value)}")
    if entry.get("verdict") not in ("PASS", "FAIL"):
        raise MalformedRecord(f"{where} needs a 'verdict', PASS or FAIL, not {entry.get('verdict')!r:.40}")
    _check_items(entry.get("votes") or [], (dict,), f"{where}.votes")


def _check_items(values: list[Any], kinds: tuple[type, ...], where: str) -> None:
    for value in values:
        if type(value) not in kinds and not _is(value, kinds):  # exact type first (bool is never in kinds here)
            raise MalformedRecord(f"every item of {where!r} must be {_kind_names(kinds)}, not {_json_type(value)}")


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    """JSON's types: a bool is not a number (Python's bool is an int)."""
    if isinstance(value, bool):
        return bool in kinds or kinds == _SCALARS
    return isinstance(value, kinds)


def _kind_names(kinds: tuple[type, ...]) -> str:
    names = {str: "text", int: "a whole number", float: "a number", bool: "true or false", list: "a list",
             dict: "an object"}
    return " or ".join(dict.fromkeys(names[kind] for kind in kinds))


def _json_type(value: Any) -> str:
    return {bool: "true/false", int: "a number", float: "a number", str: "text", list: "a list",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


#: The text fields taken from outside (a provider's reply, a judge's reply, a rater) and their caps (text.py);
#: a request id is a provider's header, one line.
_OUTSIDE_TEXTS = {"reasoning": REASONING_LIMIT, "error": ERROR_LIMIT, "refusal": ERROR_LIMIT,
                  "request_id": SHORT_LIMIT}


def clean_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """The record's outside texts (reasoning, error, refusal, votes' notes and reasoning, earlier verdicts' and
    the human panel's) cleaned of control characters and CI commands and capped (text.py): a record read back
    may have been written by anyone."""
    fields = _cleaned(fields, _OUTSIDE_TEXTS)
    if fields.get("judgements"):
        # every key a reused verdict is applied from (verdicts._apply_verdict), the judge's id by default its key
        fields["judgements"] = {judge: {"judge": judge, "reasoning": None, "votes": [], "judged_at": None,
                                        **_cleaned(entry, {"reasoning": REASONING_LIMIT})}
                                for judge, entry in fields["judgements"].items()}
    if fields.get("human"):
        fields["human"] = _cleaned(fields["human"], {})
    return fields


def _cleaned(entry: dict[str, Any], limits: dict[str, int]) -> dict[str, Any]:
    entry = dict(entry)
    for name, limit in limits.items():
        if name in entry:
            entry[name] = clean_optional(entry[name], limit)
    if "votes" in entry:
        entry["votes"] = clean_entries(entry["votes"])
    return entry


def record_to_property(record: Record) -> tuple[str, str]:
    """The ``user_properties`` entry that carries a record to the controller.

    JSON-encoded so that a run fails the same way with and without ``-n``:
    execnet cannot serialise a Path, and the report is copied whole.
    """
    return (PROPERTY_KEY, record.to_json())


def records_from_properties(user_properties: Iterable[tuple[str, Any]]) -> list[Record]:
    return [Record.from_json(value) for key, value in user_properties if key == PROPERTY_KEY]


def cleaned_copy(record: Record) -> Record:
    """A record of this process as ``from_json`` would give it back from its property: its outside texts
    cleaned (``clean_fields``), its own fields' dict; without encoding and parsing it again."""
    return Record(**clean_fields(dict(vars(record))))
