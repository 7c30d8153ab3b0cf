"""The journal of submitted jobs: a paid job is never lost, and never submitted twice.

Some routes answer a request with a *job* (an id and a URL to poll) and the
image only later: bfl, fal, replicate, runware in async mode.  Between the
submit and the image the job lives at the provider; if we forgot it (a kill,
a poll that errors, a malformed reply) a rerun would submit, and pay, again.

So an adapter reports every job it submits to ``request.journal`` *before its
first poll*; the runner writes it into the candidate's record at once
(atomically).  A later attempt finds the job in ``journal.job`` and resumes
polling it instead of submitting.  A job whose result the provider no longer
keeps raises ``JobExpired``: the runner records that, and submits once more
(counted as ``resubmitted``).

    adapter                                   runner
    -------                                   ------
    job = request.journal.job                 Journal(record.job, save=write record)
    if job is None:
        job = submit(...)
        request.journal.submitted(id=..., polling_url=..., cost=...)   -> record.job, written
    poll(job["polling_url"]) ... image        -> candidate + record written, record.job kept
    result gone?  raise JobExpired(...)       -> record.resubmitted += 1, record.job = None, submit again
"""

from __future__ import annotations

from typing import Any, Callable

from .records import now_iso


class Journal:
    """One candidate's journaled job (``job``) and the way to record a new one (``submitted``)."""

    def __init__(self, job: dict[str, Any] | None = None, save: Callable[[dict[str, Any] | None], None] | None = None,
                 *, route: str | None = None, source: str | None = None):
        self._job = dict(job) if job else None
        self._save = save
        self._route = route
        #: Where the journaled job is kept (the record's path), for messages about a job read back from it.
        self.source = source
        #: Whether this attempt resumes a job an earlier attempt submitted (and paid for).
        self.resumed = self._job is not None

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
