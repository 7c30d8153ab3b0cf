"""The call ledger of one candidate: its paid calls as entries, the states an entry may move through, and every
figure of what the candidate cost, derived here and nowhere else.

(Not the ``--budget`` ledger of a run, engine/budget.py, which holds the run's reservations: this one is per
candidate, read from its record.)

An entry (``Call``) is one paid call made for the candidate: its ``kind`` (KINDS: a generation, a batch line, a
verdict, a re-judgement, a judge call that gave no verdict...), route, tier, run, when it was sent, its request id,
its ``state`` and its ``price`` in USD: as billed (the provider's figure, its usage priced at its tier), or its
worst case (``worst``) when the bill cannot be known (a reply lost).  The states and the moves between them::

    journaled -> sent | gathering | not_sent | lost | unbilled   written into the record before the call may leave
    gathering -> sent | not_sent                   a batch line in its collector: nothing sent yet
    sent      -> answered | billed | lost | left_behind | expired_unbilled | unbilled
    answered  -> billed | left_behind              answered (paid) and its result not usable, or kept
    billed    -> left_behind                       its image lost or its job left behind: bought again
    lost, left_behind, expired_unbilled, not_sent, unbilled  final

A call's end where nothing was written between its sending and its end (a synchronous reply; a job journaled
and billed at once) moves its entry through sent in one write (``end``).  ``unbilled``: it ended without a bill
of its own (an error reply; or its answer found on disk, counted by that answer's entry), at $0.

``move`` does not accept any other move (LifecycleError, a bug of the plugin).  The invariant (``check``): an entry's
price counts in ``spent`` exactly when its state is one of COUNTED (answered, billed, left behind: paid; lost:
possibly paid, at its worst case), and a worst-case price is only ever an open or lost call's, never one billed.

The crash-safety rules of the money path (engine/lifecycle.py) are rules about these entries:

- **An entry before the call.**  A paid call's entry is written into the record (journaled, ``journaled``: its id
  ``call.<request id>``) before the call may leave, and its outcome (billed, unbilled, lost...) is written after,
  in that same entry (``end``): one entry per call, never a second for its outcome.  An entry journaled by a run that ended
  before its outcome was written may have been sent: it counts as lost (possibly paid, at its worst case), and is
  never sent again blindly.
- **Gathering is not sent.**  A batch line is journaled as gathering: it leaves only with its batch, after it is
  journaled with the batch's input, so an entry still gathering when its run ended was never sent, and moves to
  not_sent: it costs nothing and counts nothing (engine/journal.py GATHERING).
- **Nothing paid is forgotten.**  An entry's price counts from the write that says it was billed, answered, lost
  or left behind, and no later write takes it back: a lost image, an expired job or a job left behind moves its
  entry to left_behind (still counted, and the candidate counted as bought again), never out of the ledger.  The
  one amount set again is the candidate's own generation's while its purchase goes on: a journaled job counts at
  its submitted price, then at its bill when its image or refusal arrives, or $0 when the provider says the job
  failed unbilled (engine/record_spend.py ``set_generation``).

Where the entries come from: the record's ``calls``, entries written as entries (``new_entry``: the candidate's
own generation, one entry per purchase, billed, written when its job is journaled or its image or refusal arrives
and updated in place while that purchase goes on (``own``: the record's ``cost`` and ``tier`` are derived from it);
every verdict and re-judgement, the judge calls paid without a verdict; a purchase that left no image (a lost
image, an expired job, a job left behind, an image a full disk could not keep) moves its generation's entry to
left behind, or appends one; each written by the step that ends or abandons it, engine/record_spend.py; a call
abandoned without its reply (its journaled entry, engine/journal.py ``abandon``) moved to lost in place, at
its worst case, marked ``rebought`` when a later call buys again what it was for (``bought_again``,
the ``--possibly-paid`` review); a job an async route submitted, the ``job`` of its generation's entry
(``job_of``); two processes' ledgers merged entry by entry, ``merged``); ``calls_of``'s
reading of the record's other money fields (``judge_cost`` with ``extra["stability"]["cost"]`` for a record whose
verdicts are not entries yet, ``unwritten_verdicts``), as every version of the plugin wrote them; the call
journaled and not ended (``open_call``: not in ``spent``, counted by the run that sent it only, ``open_price``,
until it ends or is abandoned); a record of an earlier version's ``pending`` and ``job`` (records.py), ``cost`` and ``tier`` (its
generation), ``judge_failed_cost``, ``resubmitted_cost`` (itemized by ``extra["left_behind_jobs"]`` and
``extra["lost_candidates"]``, ``earlier_left_behind``), ``judge_verdicts_cost`` and ``possibly_paid``
(``earlier_lost``) are converted once on read into ``calls`` entries (records.py).  So a record of any version
is read with nothing it recorded as paid forgotten, or counted twice.  Everything read is untrusted: a made-up
amount counts as 0 and is counted (``implausible_amounts``), a tier that is no tier counts under UNKNOWN_TIER, a
kind or state that is none is counted at its price (an unknown state as lost), and the entries read are bounded
(MAX_CALLS).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Iterable, Protocol

from ..errors import LifecycleError
from ..finite import finite_number


class RecordView(Protocol):
    """What the ledger reads of a candidate's record (records.Record): its money fields, each untrusted (read from
    disk, so typed Any here).  A view of its own, so the ledger needs nothing from records.py, which builds on it."""

    @property
    def judge_cost(self) -> Any: ...
    @property
    def judge_tier(self) -> Any: ...
    @property
    def extra(self) -> Any: ...
    @property
    def calls(self) -> Any: ...


#: The price tiers a call can be served at (docs/reference/providers.md section 11): ``standard`` (the list price),
#: ``flex`` (Gemini's synchronous sheddable tier) and ``batch`` (a provider's batch mode); any other value read from
#: a record is UNKNOWN_TIER, counted and shown under that name, never believed.
STANDARD, FLEX, BATCH = "standard", "flex", "batch"
TIERS = (STANDARD, FLEX, BATCH)
UNKNOWN_TIER = "unknown"

#: What a paid call was for.
GENERATION, BATCH_LINE, VERDICT, REJUDGEMENT, JUDGE_CALL = "generation", "batch_line", "verdict", "rejudgement", \
    "judge_call"
KINDS = (GENERATION, BATCH_LINE, VERDICT, REJUDGEMENT, JUDGE_CALL)
#: The kind of an entry read from a record whose kind is none of KINDS: counted at its price, never dropped.
UNKNOWN_KIND = "unknown"
#: The kinds of each part of ``spent_breakdown``: the candidate's image, and its judging.
GENERATION_KINDS = frozenset({GENERATION, BATCH_LINE})
JUDGE_KINDS = frozenset({VERDICT, REJUDGEMENT, JUDGE_CALL})

#: The states of an entry (module docstring).
JOURNALED, GATHERING, SENT, ANSWERED, BILLED = "journaled", "gathering", "sent", "answered", "billed"
LOST, LEFT_BEHIND, EXPIRED_UNBILLED, NOT_SENT = "lost", "left_behind", "expired_unbilled", "not_sent"
#: (WIP) ended without a bill of its own: an error reply, or a call whose answer another entry holds (on disk).
UNBILLED = "unbilled"
STATES = (JOURNALED, GATHERING, SENT, ANSWERED, BILLED, LOST, LEFT_BEHIND, EXPIRED_UNBILLED, NOT_SENT, UNBILLED)
#: The states of a call not ended: journaled (it may have left), gathering (a batch line: it has not).
OPEN = frozenset({JOURNALED, GATHERING, SENT})
#: The protocol: state -> the states it may move to.
MOVES: dict[str, frozenset[str]] = {
    JOURNALED: frozenset({SENT, GATHERING, NOT_SENT, LOST, UNBILLED}),  # lost: its run ended after journaling it
    GATHERING: frozenset({SENT, NOT_SENT}),
    SENT: frozenset({ANSWERED, BILLED, LOST, LEFT_BEHIND, EXPIRED_UNBILLED, UNBILLED}),
    ANSWERED: frozenset({BILLED, LEFT_BEHIND}),
    BILLED: frozenset({LEFT_BEHIND}),
    LOST: frozenset(), LEFT_BEHIND: frozenset(), EXPIRED_UNBILLED: frozenset(), NOT_SENT: frozenset(),
    UNBILLED: frozenset(),
}
#: The states whose price is in ``spent``: paid (answered, billed, left behind) or possibly paid (lost).
PAID_STATES = frozenset({ANSWERED, BILLED, LEFT_BEHIND})
COUNTED = PAID_STATES | {LOST}

#: The most one call's amount may be (USD): no image or verdict of any provider costs near it, and a sum of
#: believable amounts stays finite (1e308 + 1e308 is infinity, which strict JSON does not accept).
MAX_CALL_USD = 10_000.0
#: The most entries read from one record's ledger: more is no record a run wrote (a candidate is bought again after
#: a call whose reply was lost, judged again a few times at most); the rest are counted as implausible, never a
#: crash.
MAX_CALLS = 1_000


def usd(value: Any) -> float:
    """An amount read as a number: a record read from disk is untrusted, and a made-up amount (not a finite,
    non-negative number up to MAX_CALL_USD) counts as 0; ``implausible_amounts`` counts them, to say so."""
    return float(value) if believable(value) else 0.0


def believable(value: Any) -> bool:
    return finite_number(value) and 0 <= value <= MAX_CALL_USD


def known_tier(value: Any) -> str:
    """A tier read from outside (a record on disk, a verdict entry): one of TIERS, else UNKNOWN_TIER."""
    return value if isinstance(value, str) and value in TIERS else UNKNOWN_TIER


@dataclass(frozen=True)
class Call:
    """One paid call of a candidate (module docstring)."""

    kind: str
    state: str
    price: float  # USD, as billed, or its worst case when ``worst``
    tier: str = STANDARD
    worst: bool = False  # the price is the call's worst case: its bill is not known
    route: str | None = None
    id: str | None = None  # the request id the provider may know it by
    sent_at: str | None = None
    run: str | None = None
    rebought: bool = False  # (lost) a later call bought again what it was for


def new_entry(kind: str, state: str, price: float, *, tier: str = STANDARD, route: str | None = None,
              id: str | None = None, run: str | None = None, entry: str | None = None) -> dict[str, Any]:
    """A paid call's entry as the record's ``calls`` keep it (JSON), with an id of its own (``entry``: two processes'
    ledgers of one candidate are merged by it, engine/planning.py; given, for what two processes may write alike)
    and the time it was written."""
    call = Call(kind, state, round(price, 6), tier, route=route, id=id, run=run,
                sent_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    check(call)
    return {"entry": entry or uuid.uuid4().hex[:16], **{name: value for name, value in vars(call).items()
                                               if value is not None and value is not False}}


#: The text fields of a ``calls`` entry, and its others: how a record's entry is checked on read (``problem``).
_ENTRY_TEXTS = ("entry", "kind", "state", "tier", "route", "id", "sent_at", "run", "why", "found_at", "judge")


def problem(entry: Any) -> str | None:
    """Why a ``calls`` entry read from a record is not one (a field of the wrong type), else None.  A kind, state or
    amount that is of its type but not believable is no problem here: it is counted (``implausible_amounts``)."""
    if not isinstance(entry, dict):
        return "must be an object"
    for name in _ENTRY_TEXTS:
        if entry.get(name) is not None and not isinstance(entry[name], str):
            return f"{name} must be text"
    price = entry.get("price")
    if price is not None and (isinstance(price, bool) or not isinstance(price, (int, float))):
        return "price must be a number"
    for name in ("worst", "rebought"):
        if entry.get(name) is not None and not isinstance(entry[name], bool):
            return f"{name} must be true or false"
    return None


def merged(on_disk: Any, ours: Any) -> list[dict[str, Any]]:
    """Two ledgers of one candidate (the record on disk, another process's; ours): every entry of either, once (by
    its ``entry`` id), the disk's first.  Append-only: merging never drops an entry.  An entry both hold is the one
    further along its moves (``later``): ours when it moved on from the disk's (the candidate's own generation,
    updated while its purchase goes on), the disk's when another process moved it on meanwhile."""
    kept = [entry for entry in (on_disk if isinstance(on_disk, list) else []) if isinstance(entry, dict)]
    mine = [entry for entry in (ours if isinstance(ours, list) else []) if isinstance(entry, dict)]
    by_id = {entry.get("entry"): entry for entry in mine if entry.get("entry") is not None}
    seen = {entry.get("entry") for entry in kept}
    return [later(entry, by_id[entry.get("entry")]) if entry.get("entry") in by_id else entry for entry in kept] + [
        entry for entry in mine if entry.get("entry") not in seen]


def later(theirs: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """Of two copies of one entry, the one further along the moves: ours unless the disk's state can be reached
    from ours (and is not ours): a copy never moves an entry back, and never drops it.  Of two copies in one state,
    the one that says a later call bought again what it was for (``rebought``, which only ever turns true: a lost
    call another process bought again since keeps that meaning whoever merges)."""
    state, their_state = str(ours.get("state")), str(theirs.get("state"))
    if their_state == state:
        return theirs if theirs.get("rebought") is True and ours.get("rebought") is not True else ours
    return theirs if their_state in _reachable(state) else ours


def _reachable(state: str) -> frozenset[str]:
    """Every state an entry in ``state`` may reach by one move or more (MOVES)."""
    found: set[str] = set()
    todo = list(MOVES.get(state, ()))
    while todo:
        step = todo.pop()
        if step not in found:
            found.add(step)
            todo += MOVES.get(step, ())
    return frozenset(found)


def move(state: str, to: str, what: str) -> str:
    """``to``, when an entry in ``state`` may move there; else LifecycleError naming ``what``."""
    if to not in MOVES.get(state, frozenset()):
        raise LifecycleError(f"{what}: its paid call cannot move from {state} to {to} (only to "
                             f"{', '.join(sorted(MOVES.get(state, ()))) or 'nothing: final'}); a bug of the plugin's "
                             "money path, please report it")
    return to


def end(state: str, to: str, what: str) -> str:
    """``move``, for the end of a call: its entry goes from journaled (or gathering: a batch line, sent with its
    batch) to its end through sent, where nothing was written between its sending and its end (a synchronous
    call's reply; a job's journaling, billed at once)."""
    if state in (JOURNALED, GATHERING) and to not in MOVES[state]:
        state = move(state, SENT, what)
    return move(state, to, what)


def check(call: Call) -> None:
    """The ledger's invariant for one entry (LifecycleError when broken): a known kind and state, a believable
    price, and a worst-case price only for a call whose bill is not known (open or lost)."""
    if call.kind not in KINDS or call.state not in STATES:
        raise LifecycleError(f"a paid call of kind {call.kind!r} in state {call.state!r}: not a ledger entry")
    if not believable(call.price):
        raise LifecycleError(f"a paid call priced {call.price!r}: not an amount")
    if call.worst and call.state not in (JOURNALED, GATHERING, SENT, LOST):
        raise LifecycleError(f"a {call.state} call priced at its worst case: a billed call has its bill")


# --------------------------------------------------------------------------- the record's entries


def calls_of(record: RecordView) -> list[Call]:
    """The record's ledger: one entry per paid call (or sum of calls of one kind) its money fields hold."""
    calls = [_native(entry) for entry in _entries(record)]
    # the candidate's own generation stands even at $0 (a free route, nothing bought yet): it says its tier; a
    # record whose ledger holds none has one at $0, at the standard tier
    generation = [] if any(own(call) for call in calls) else [Call(GENERATION, BILLED, 0.0)]
    verdict, rejudged = unwritten_verdicts(record)
    judge_tier = known_tier(record.judge_tier)
    sums = [Call(VERDICT, BILLED, verdict, judge_tier), Call(REJUDGEMENT, BILLED, rejudged, judge_tier)]
    # the verdict stands even at $0 (a free judge): it says which tier judged; the re-judgements only when they
    # cost something
    return generation + sums[:1] + [call for call in sums[1:] if call.price] + calls


def own(call: Call) -> bool:
    """Whether ``call`` is the candidate's own generation: the purchase the record holds (its image, its refusal,
    its job in flight), billed; an earlier purchase that left no image is left behind."""
    return call.kind in GENERATION_KINDS and call.state == BILLED


def generation_cost(record: RecordView) -> float:
    """What the candidate's own generation cost (USD): the record's ``cost``, derived."""
    return sum(call.price for call in calls_of(record) if own(call))


def generation_tier(record: RecordView) -> str:
    """The tier that served the candidate's own generation (its latest): the record's ``tier``, derived; STANDARD
    when the ledger holds none."""
    tiers = [call.tier for call in calls_of(record) if own(call)]
    return tiers[-1] if tiers else STANDARD


def _entries(record: RecordView) -> list[dict[str, Any]]:
    """The record's ``calls`` that are entries, at most MAX_CALLS of them."""
    entries = record.calls if isinstance(record.calls, list) else []
    return [entry for entry in entries[:MAX_CALLS] if isinstance(entry, dict)]


def _native(entry: dict[str, Any]) -> Call:
    """A ``calls`` entry read from a record (untrusted): an amount not believed counts 0, a tier that is none is
    UNKNOWN_TIER, a kind that is none UNKNOWN_KIND, and a state that is none counts as lost (possibly paid at its
    price): whatever it says, a paid call is never dropped."""
    state = str(entry["state"]) if entry.get("state") in STATES else LOST
    kind = str(entry["kind"]) if entry.get("kind") in KINDS else UNKNOWN_KIND
    return Call(kind, state, usd(entry.get("price")), known_tier(entry.get("tier", STANDARD)),
                worst=entry.get("worst") is True or state != entry.get("state"), route=_text(entry.get("route")),
                id=_text(entry.get("id")), sent_at=_text(entry.get("sent_at")), run=_text(entry.get("run")),
                rebought=entry.get("rebought") is True)


def earlier_left_behind(amount: float, extra: Any, entry_id: str) -> list[dict[str, Any]]:
    """A record of an earlier version's ``resubmitted_cost`` (``amount``, believed) as ``calls`` entries, left
    behind: one per purchase its ``extra`` names (``left_behind_jobs``: a ``batch`` job is a batch line at tier batch;
    ``lost_candidates``), and what is left of the sum (expired jobs, images a full disk could not keep) as one.
    Never more in all than ``amount``, whatever ``extra`` holds (a record is untrusted): each item is capped by what
    is left of it.  Their ids are ``entry_id`` and ``entry_id.N``, fixed, so a record converted twice holds them
    once (records.py)."""
    items = []
    for job in _listed(extra, "left_behind_jobs"):
        batch = job.get("kind") == BATCH
        items.append(Call(BATCH_LINE if batch else GENERATION, LEFT_BEHIND, usd(job.get("cost")),
                          BATCH if batch else UNKNOWN_TIER, route=_text(job.get("route")), id=_text(job.get("id"))))
    items += [Call(GENERATION, LEFT_BEHIND, usd(lost.get("cost")), UNKNOWN_TIER)
              for lost in _listed(extra, "lost_candidates")]
    left, calls = amount, []
    for item in items:
        price = min(item.price, left)
        left = max(0.0, left - price)
        calls.append(replace(item, price=round(price, 6)))
    calls.append(Call(GENERATION, LEFT_BEHIND, round(left, 6), UNKNOWN_TIER))
    return [{"entry": entry_id if number == len(calls) else f"{entry_id}.{number}",
             **{name: value for name, value in vars(call).items() if value is not None and value is not False}}
            for number, call in enumerate(calls, 1) if call.price]


def _listed(extra: Any, key: str) -> list[dict[str, Any]]:
    """The entries of a list of a record's ``extra`` that are entries, at most MAX_CALLS of them."""
    entries = extra.get(key) if isinstance(extra, dict) else None
    return [entry for entry in entries[:MAX_CALLS] if isinstance(entry, dict)] if isinstance(entries, list) else []


#: What a lost call was for, as the journal of paid calls names it (engine/journal.py: GENERATE, JUDGE, REJUDGE),
#: and its kind in the ledger: a generation, a verdict, a re-judgement.
_LOST_KINDS = {"generate": GENERATION, "judge": VERDICT, "rejudge": REJUDGEMENT}
CALL_OF_KIND = {GENERATION: "generate", BATCH_LINE: "generate", VERDICT: "judge", REJUDGEMENT: "rejudge"}


def lost(entry: dict[str, Any], entry_id: str) -> dict[str, Any]:
    """A call abandoned without its reply as its ``calls`` entry, in state lost (possibly paid, at its worst case):
    from the journal's pending entry (``entry``: ``call``, ``route``, ``id``, ``sent_at``, ``price``, ``run``, plus
    ``why`` and ``found_at``, journal.abandon), or from a ``possibly_paid`` entry of a record of an earlier version
    (``rebought`` too, records.py), with the id ``entry_id``.  Both are untrusted (read from disk): a field of the
    wrong type is left out, a price that is no number is kept as one not believed (NaN: counted 0, and said,
    ``implausible_amounts``), one not believable as is."""
    price = entry.get("price")
    if price is None:
        price = 0.0
    elif isinstance(price, bool) or not isinstance(price, (int, float)):
        price = float("nan")
    call: dict[str, Any] = {
        "entry": entry_id, "kind": _LOST_KINDS.get(str(entry.get("call")), GENERATION), "state": LOST,
        "price": price, "tier": known_tier(entry.get("tier", STANDARD)), "worst": True}
    for name in ("route", "id", "sent_at", "run", "why", "found_at"):
        if isinstance(entry.get(name), str):
            call[name] = entry[name]
    if entry.get("rebought") is True:
        call["rebought"] = True
    return call


def call_entry_id(call_id: Any) -> str:
    """The id of a journaled call's entry: fixed by the call's own id (``call.<id>``) where it has one, so two
    processes that moved the same call (abandoned it, say) hold it once, merged; else one of its own."""
    return f"call.{call_id}" if isinstance(call_id, str) and call_id else f"call.{uuid.uuid4().hex[:16]}"


def journaled(call: str, *, route: str, price: float, call_id: str | None, run: str | None,
              state: str | None = None, **fields: Any) -> dict[str, Any]:
    """The entry of a paid call about to be sent (``call``: GENERATE, JUDGE or REJUDGE in the journal's words),
    journaled (or gathering: a batch line), at its worst-case price: what it is for, how the provider may know it,
    and the most it can cost."""
    kind = _LOST_KINDS.get(call, GENERATION)
    if state == GATHERING:
        kind = BATCH_LINE
    entry: dict[str, Any] = {
        "entry": call_entry_id(call_id), "kind": kind, "state": state or JOURNALED, "price": round(float(price), 6),
        "tier": BATCH if state == GATHERING else STANDARD, "worst": True, "route": route,
        "sent_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    if call_id:
        entry["id"] = call_id
    if run:
        entry["run"] = run
    entry.update({name: value for name, value in fields.items() if value is not None})
    return entry


def open_index(record: RecordView) -> int | None:
    """Where the record's open call (journaled, gathering or sent: not ended) is in its ledger, the latest; None
    without one."""
    entries = record.calls if isinstance(record.calls, list) else []
    found = [index for index, entry in enumerate(entries[:MAX_CALLS])
             if isinstance(entry, dict) and entry.get("state") in OPEN]
    return found[-1] if found else None


def open_call(record: RecordView) -> dict[str, Any] | None:
    """The record's open call's entry (``open_index``), None without one."""
    index = open_index(record)
    return None if index is None else dict(record.calls[index])


def replaced(record: RecordView, index: int, **fields: Any) -> list[dict[str, Any]]:
    """The record's ledger with its entry at ``index`` a new copy holding ``fields`` (an entry read may be shared);
    a field given None is left out."""
    entry = {**record.calls[index], **fields}
    entry = {name: value for name, value in entry.items() if value is not None}
    return [*record.calls[:index], entry, *record.calls[index + 1:]]


def earlier_lost(entries: Any, entry_id: str) -> list[dict[str, Any]]:
    """A record of an earlier version's ``possibly_paid`` (every call abandoned without its reply, oldest first) as
    ``calls`` entries in state lost (``lost``), with the fixed ids ``entry_id.1``, ``.2``..., so a record converted
    twice (read back, merged with another process's) holds them once; its entries that are no object are none."""
    return [lost(entry, f"{entry_id}.{number}")
            for number, entry in enumerate(entries if isinstance(entries, list) else [], 1) if isinstance(entry, dict)]


def lost_entries(record: RecordView) -> list[dict[str, Any]]:
    """The record's ``calls`` entries in state lost (possibly paid: their reply never came), at most MAX_CALLS read."""
    return [entry for entry in _entries(record) if entry.get("state") == LOST]


def call_of(entry: dict[str, Any]) -> str:
    """What a lost entry's call was for, in the journal's words (GENERATE, JUDGE, REJUDGE): a kind that is none
    stands for a generation (what ``lost`` makes of it)."""
    return CALL_OF_KIND.get(str(entry.get("kind")), "generate")


def price_of(entries: Iterable[dict[str, Any]]) -> float:
    """USD the entries (as a record keeps them) count: each one's price, believed (``usd``)."""
    return sum(usd(entry.get("price")) for entry in entries)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def judged(record: RecordView) -> bool:
    """Whether the record's ledger holds its verdicts as entries (a verdict or a re-judgement written as one, or
    converted from an earlier version's ``judge_verdicts_cost``); a judge call lost without its reply gave none."""
    return any(entry.get("kind") in (VERDICT, REJUDGEMENT) and entry.get("state") in PAID_STATES
               for entry in _entries(record))


def unwritten_verdicts(record: RecordView) -> tuple[float, float]:
    """What a record whose ledger holds no verdict entries says its verdicts cost, as records before
    ``judge_verdicts_cost`` was kept counted it: the verdict it holds (``judge_cost``) and its re-judgements
    (``extra["stability"]["cost"]``); (0, 0) once its verdicts are entries."""
    return (0.0, 0.0) if judged(record) else (usd(record.judge_cost), _rejudgements_cost(record))


def _rejudgements_cost(record: RecordView) -> float:
    """What the record's --judge-stability re-judgements cost (``extra["stability"]["cost"]``)."""
    entry = record.extra.get("stability") if isinstance(record.extra, dict) else None
    return usd(entry.get("cost")) if isinstance(entry, dict) else 0.0


def rejudgements_cost(stability: Any) -> float:
    """What the re-judgements of a record's ``extra["stability"]`` (``stability``) say they cost."""
    return usd(stability.get("cost")) if isinstance(stability, dict) else 0.0


def implausible_amounts(record: RecordView) -> int:
    """How many of the record's amounts were not believed (counted as 0 by ``usd``): a number that is negative,
    not finite or above MAX_CALL_USD, or not a number at all where an amount is expected; and the entries past
    MAX_CALLS, not read."""
    amounts = [record.judge_cost]
    amounts += [entry.get("price", 0) for entry in _entries(record)]
    past = max(0, len(record.calls) - MAX_CALLS) if isinstance(record.calls, list) else 0
    unknown = sum(1 for entry in _entries(record) if entry.get("kind") not in KINDS or entry.get("state") not in STATES)
    return past + unknown + sum(1 for value in amounts if value is not None and not believable(value))


# --------------------------------------------------------------------------- every figure, derived


def spent(calls: Iterable[Call]) -> float:
    """USD of every call paid or possibly paid (COUNTED): what the candidate cost."""
    return sum(call.price for call in calls if call.state in COUNTED)


def breakdown(calls: Iterable[Call]) -> dict[str, float]:
    """``spent`` in its parts (the results' ``spent_breakdown``): the image (``generation``), its judging
    (``judge``: verdicts, re-judgements, judge calls paid without a verdict), earlier purchases that left no image
    (``resubmitted``: left behind) and calls possibly paid (``possibly_paid``: lost, at their worst case)."""
    parts = {"generation": 0.0, "judge": 0.0, "resubmitted": 0.0, "possibly_paid": 0.0}
    for call in calls:
        part = _part(call)
        if part is not None:
            parts[part] += call.price
    return parts


def _part(call: Call) -> str | None:
    if call.state == LOST:
        return "possibly_paid"
    if call.state == LEFT_BEHIND:
        return "resubmitted"
    if call.state in PAID_STATES:
        return "generation" if call.kind in GENERATION_KINDS else "judge"
    return None


def by_tier(calls: Iterable[Call]) -> dict[str, dict[str, float]]:
    """The generation and judge parts of ``breakdown`` by the tier that served each call (the results'
    ``spend_by_tier``); a judge call that gave no verdict, and a re-judgement, at its verdict's tier."""
    parts: dict[str, dict[str, float]] = {"generation": {}, "judge": {}}
    for call in calls:
        part = _part(call)
        if part in parts:
            parts[part][call.tier] = parts[part].get(call.tier, 0.0) + call.price
    return parts


def by_kind(calls: Iterable[Call]) -> dict[str, float]:
    """``spent`` by what each call was for (KINDS): USD, kinds that cost nothing left out."""
    kinds: dict[str, float] = {}
    for call in calls:
        if call.state in COUNTED and call.price:
            kinds[call.kind] = kinds.get(call.kind, 0.0) + call.price
    return kinds


def possibly_paid(calls: Iterable[Call]) -> list[Call]:
    """The calls whose reply was lost: possibly paid, at their worst case."""
    return [call for call in calls if call.state == LOST]


def bought_again(calls: Iterable[Call]) -> int:
    """How many of the candidate's paid calls were followed by a purchase of the same thing: a possibly paid call
    bought again, and a purchase left behind (its image lost, its job expired or left behind) that counts once."""
    return sum(1 for call in calls if (call.state == LOST and call.rebought) or call.state == LEFT_BEHIND)


def spent_in_run(record: RecordView, run_id: str | None) -> float:
    """USD the run ``run_id`` bought for this candidate: its ledger's counted entries written by that run (their
    ``run``: the run that sent the call; a job resumed stays the run's that submitted it, an image adopted from disk
    or an entry of an earlier version has none); 0 for a record the run bought nothing for, or without a run id."""
    if run_id is None:
        return 0.0
    return sum(call.price for call in calls_of(record) if call.state in COUNTED and call.run == run_id)


def job_index(record: RecordView) -> int | None:
    """Where the journaled job of the candidate's purchase is in its ledger: the latest generation entry holding one
    (``job``: billed, or left behind with its image lost and the job counted there), None without one."""
    entries = record.calls if isinstance(record.calls, list) else []
    found = [index for index, entry in enumerate(entries[:MAX_CALLS]) if isinstance(entry, dict)
             and entry.get("kind") in GENERATION_KINDS and entry.get("job") is not None]
    return found[-1] if found else None


def job_of(record: RecordView) -> dict[str, Any] | None:
    """The journaled job of the candidate's purchase (``job_index``), a copy; None without one.  A record on disk
    is untrusted: a job that is not an object is kept (it may stand for a paid job), as an object without an id
    that the adapter does not accept, with a message naming the record."""
    index = job_index(record)
    if index is None:
        return None
    job = record.calls[index]["job"]
    return dict(job) if isinstance(job, dict) else {"malformed": job}


def open_price(pending: Any) -> float:
    """What a journaled entry not yet ended (the record's open call) may have cost: its worst-case price once its
    call may have left; 0 for a batch line still gathering, for an entry ended, and for one that is not one."""
    if not isinstance(pending, dict) or pending.get("state") not in (JOURNALED, SENT):
        return 0.0
    return usd(pending.get("price"))
