"""The journal of paid calls: a paid call is sent once, and one that may have been paid is never hidden.

Two things are journaled in a candidate's record, both as its call ledger's entries (``calls``,
engine/call_ledger.py), each written (atomically) *before* the moment that could lose it:

- the call: every paid request (a job submission, a synchronous generation,
  a paid judge call) is an entry written into the record before it is sent
  (state journaled, a batch line gathering), with the id it carries where the
  provider takes one (``call_id``; its entry ``call.<id>``) and its worst-case
  price.  The write of its outcome moves that entry in place: billed (the job,
  the image, the refusal, the verdict), unbilled (an error reply), lost.  A
  run that finds an open entry it did not write knows the call may have
  reached the provider and been paid: if the candidate or verdict it was for
  is on disk, the reply arrived after all (unbilled: the answer's entry counts
  it); else it moves to lost (``abandon``: possibly paid, at its worst-case
  price), the results count it, and the candidate is bought again
  (``--possibly-paid rebuy``) or held as an error for review
  (``--possibly-paid review``).
- the job: some routes answer with a *job* (an id and a URL to poll) and the
  image only later: bfl, fal, replicate, runware in async mode.  An adapter
  reports every job it submits to ``request.call.journal`` *before its first
  poll* (runware, whose task id is its own, before sending it); the runner
  writes it into the record at once, as the ``job`` of the call's entry, which
  it bills (record_spend.set_job).  A later attempt finds the job in
  ``journal.job`` and resumes polling it instead of submitting.  A job whose
  result the provider no longer keeps raises ``JobExpired``: the runner
  records that, and submits once more (counted as ``resubmitted``).

    runner                                     adapter
    ------                                     -------
    entry journaled (sending), written         job = request.call.journal.job
    provider.generate(request)                 if job is None:
                                                   job = submit(..., headers={id: request.call.journal.call_id})
    entry billed, holding the job, written <-  request.call.journal.submitted(id=..., polling_url=...)
                                               poll(job["polling_url"]) ... image
    image + record written, entry billed       result gone?  raise JobExpired(...)
    a reply lost (``reply_lost``)?  -> abandon(): lost, possibly paid, never sent again blindly
"""

from __future__ import annotations

import random
import string
import time
from typing import Any, Callable

from . import call_ledger
from .records import Record, now_iso

#: What an open entry was for: the candidate, its verdict, or a re-judgement of it (--judge-stability, whose
#: lost reply is possibly paid but buys nothing again: the next run just asks for the re-judgements missing).
GENERATE, JUDGE, REJUDGE = "generate", "judge", "rejudge"
#: ``--possibly-paid``: buy a possibly paid candidate again (saying so), or hold it as an error for review.
REBUY, REVIEW = "rebuy", "review"
POSSIBLY_PAID_CHOICES = (REBUY, REVIEW)
#: The record's ``extra`` key of a candidate held for review: what was held (GENERATE or JUDGE).
HELD = "held_for_review"
#: The ``state`` of an open entry whose call has not left yet (engine/call_ledger.py): a batch line gathering in
#: its collector (``--tier batch``, providers/batching.py).  Nothing of it reaches the provider before the line is
#: journaled with its batch's input (the job, whose write bills this entry), and the batch is created only after
#: every line of it was: a gathering entry found on disk, or left by a call that ended, was never sent, so never
#: paid (``call_ledger.open_price`` prices it at 0; ``abandon`` does not accept it; it ends not_sent).
GATHERING = call_ledger.GATHERING
#: Why an open entry found on disk was abandoned.
RUN_ENDED = "its run ended before the reply arrived (a kill, a second Ctrl-C or SIGTERM, a crash)"


#: The key a journaled job gets when the image it delivered is lost from the outputs (engine/planning.py): its cost
#: is kept as a left-behind entry of the record's call ledger (``calls``) with the lost image, so fetching its
#: result again, or its expiry, adds nothing more (engine/purchase.py); a new job submitted in its place is counted
#: as any other.
COUNTED_IN = "counted_in"
RESUBMITTED_COST = "resubmitted_cost"


def counted(job: Any) -> bool:
    """Whether a journaled job's cost is in the record's call ledger already, left behind (its image was lost).
    The marker's value is the name of the field earlier versions counted it in, kept so their records read the
    same."""
    return isinstance(job, dict) and job.get(COUNTED_IN) == RESUBMITTED_COST


class Journal:
    """One candidate's journaled job (``job``), the way to record a new one (``submitted``), and the id an
    adapter sends with its paid request where the provider takes one (``call_id``)."""

    def __init__(self, job: dict[str, Any] | None = None, save: Callable[[dict[str, Any] | None], None] | None = None,
                 *, route: str | None = None, call_id: str | None = None, source: str | None = None):
        self._job = dict(job) if job else None
        self._save = save
        self._route = route
        #: Where the journaled job is kept (the record's path), for messages about a job read back from it.
        self.source = source
        #: Whether this attempt resumes a job an earlier attempt submitted (and paid for).
        self.resumed = self._job is not None
        #: The id of this attempt's paid request, journaled before it is sent (see ``new_call_id``).
        self.call_id = call_id

    @property
    def job(self) -> dict[str, Any] | None:
        """The job an earlier attempt submitted and did not finish: resume it (None: submit a new one)."""
        return dict(self._job) if self._job else None

    def submitted(self, *, id: str, polling_url: str | None = None, **fields: Any) -> dict[str, Any]:
        """Record a job the provider accepted; call it before the first poll.  Fields must be JSON values
        (e.g. ``cost`` in USD, ``response_url``): a later attempt gets them back in ``job``."""
        job = {"id": str(id), "polling_url": polling_url, "route": self._route, "submitted_at": now_iso(),
               **{k: v for k, v in fields.items() if v is not None}}
        self._job, self.resumed = job, False
        if self._save is not None:
            self._save(dict(job))
        return dict(job)

    def forget(self) -> None:
        """The job ended without an image (it failed) or is gone at the provider (expired): the next attempt
        submits a new one."""
        self._job, self.resumed = None, False
        if self._save is not None:
            self._save(None)


#: For callers with nowhere to keep a job (a library user calling an adapter directly).
def detached() -> Journal:
    return Journal()


# --------------------------------------------------------------------------- pending calls


def new_call_id() -> str:
    """A fresh id for one paid request: the format of the ModelArk SDK's ``X-Client-Request-Id``
    (byteplussdkarkruntime ``_utils._gen_request_id``: the UTC time to the second, then 20 letters and
    digits), which is as good a unique id for every other route."""
    alphabet = string.ascii_letters + string.digits
    return time.strftime("%Y%m%d%H%M%S", time.gmtime()) + "".join(random.choices(alphabet, k=20))


def sending(call: str, *, route: str, price: float, call_id: str | None, run: str | None = None,
            **fields: Any) -> dict[str, Any]:
    """The ledger entry of a paid request about to be sent (call_ledger.journaled): what it is for, how the
    provider may know it, and the most it can cost."""
    return call_ledger.journaled(call, route=route, price=price, call_id=call_id, run=run, **fields)


def gathering(pending: Any) -> bool:
    """Whether an open entry is a batch line still gathering (GATHERING): nothing sent, nothing paid."""
    return isinstance(pending, dict) and pending.get("state") == GATHERING


def abandon(record: Record, why: str) -> dict[str, Any]:
    """Move the record's open call to lost in its call ledger, in place: its reply never came, so it may have been
    paid (at its worst-case price).  Returns the entry."""
    index = call_ledger.open_index(record)
    pending = record.calls[index] if index is not None else {}
    # a journaled call may have left: lost, possibly paid; one still gathering never did (the ledger does not accept it)
    state = call_ledger.move(GATHERING if gathering(pending) else call_ledger.JOURNALED, call_ledger.LOST,
                             f"{record.model} {record.task_id} r{record.repeat:03d}")
    if index is None:
        return {}
    record.calls = call_ledger.replaced(record, index, state=state, why=why, found_at=now_iso())
    return dict(record.calls[index])


def end_open(record: Record, to: str, **fields: Any) -> dict[str, Any] | None:
    """Move the record's open call (if any) to ``to`` in place (call_ledger.end), its worst case dropped unless
    ``to`` is lost; the entry, None without one."""
    index = call_ledger.open_index(record)
    if index is None:
        return None
    entry = record.calls[index]
    state = call_ledger.end(str(entry.get("state")), to, f"{record.model} {record.task_id} r{record.repeat:03d}")
    worst = True if state == call_ledger.LOST else None
    price = fields.pop("price", 0.0 if state in (call_ledger.UNBILLED, call_ledger.NOT_SENT) else None)
    record.calls = call_ledger.replaced(record, index, state=state, worst=worst, **fields,
                                        **({} if price is None else {"price": round(float(price), 6)}))
    return dict(record.calls[index])


def unresolved(record: Record, call: str) -> list[dict[str, Any]]:
    """The possibly paid calls (lost entries of the ledger) of this kind that no later call has bought again."""
    return [entry for entry in record.possibly_paid_calls if call_ledger.call_of(entry) == call
            and entry.get("rebought") is not True]


def mark_rebought(record: Record, call: str) -> int:
    """A new paid call is about to buy again what possibly paid calls of this kind were for: their entries say so
    (``rebought``, each a new copy in its place: an entry read may be shared); how many."""
    ids = {id(entry) for entry in unresolved(record, call)}
    if ids:
        record.calls = [{**entry, "rebought": True} if id(entry) in ids else entry for entry in record.calls]
    return len(ids)


def pending_call(record: Record) -> str | None:
    """What the record's open call was for (GENERATE, JUDGE or REJUDGE), None without one."""
    pending = call_ledger.open_call(record)
    if pending is None:
        return None
    return call_ledger.call_of(pending)


def held_message(record: Record, call: str) -> str:
    """The error of a candidate held for review (``--possibly-paid review``)."""
    entries = unresolved(record, call)
    price = call_ledger.price_of(entries)
    what = "generation" if call == GENERATE else "judge call"
    ids = ", ".join(str(e["id"]) for e in entries if e.get("id")) or "none sent"
    return (f"held for review: {len(entries)} paid {what}(s) for it may have been paid (up to ${price:.2f}) and "
            f"their reply never came ({entries[-1].get('why', 'reply lost') if entries else ''}; request id(s) "
            f"{ids}); look for them in the provider's dashboard, then rerun with --possibly-paid rebuy to buy it "
            "again")
