"""What the submit-then-poll routes (bfl, fal, replicate, runware) share: patient polls of a journaled job.

A submitted job is paid for; polling it costs nothing.  So once a job is
journaled (``request.journal.submitted``, engine/journal.py) every read of it
is patient: a poll or a result download that fails in a way waiting can fix
(5xx or 429 after the HTTP policy's own retries, a timeout, a dropped
connection, a body that is not the JSON we expect) is tried again, with
backoff, until the job's deadline (``options.max_wait_s``).  Past the deadline
the error says the job stays journaled and the next run resumes it: it is
never submitted again for such a fault.

Only a final answer ends a job early:
- the image (or a refusal: moderation, no image, an undecodable file);
- a failure of the job itself (the provider says it failed): ``fail`` forgets
  the job, so the next run submits a new one, and returns ``JobFailed`` naming it;
- the provider no longer has the result (``JobExpired``, raised by
  ``expired``): the runner submits once more and counts ``resubmitted``.

    poller = JobPoller(provider, request, job_id, what)
    reply = poller.read(lambda: poll(url))        # patient: retryable errors are waited out
    ... final status?  poller.fail(...) / raise refusal / poller.expired(...)
    poller.wait(f"still {status!r}")             # sleep, or raise "still journaled" past the deadline
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TypeVar

from ..errors import JobExpired, JobFailed, ProviderError
from ..secrets import redact
from .adapter import EXPIRED, poll_delays
from .base import GenerationRequest

if TYPE_CHECKING:  # pragma: no cover
    from .adapter import HttpProvider

T = TypeVar("T")


class JobPoller:
    """The patience of one attempt at one job: its deadline, its backoff and what it says when it gives up."""

    def __init__(self, provider: "HttpProvider", request: GenerationRequest, job_id: str, what: str, *,
                 default_wait: float = 900.0, default_poll: float = 0.5, default_cap: float = 5.0):
        options = provider.spec.options
        self.provider, self.request, self.job_id, self.what = provider, request, job_id, what
        self.max_wait = float(options.get("max_wait_s", default_wait))
        self.deadline = time.monotonic() + self.max_wait
        self.delays = poll_delays(float(options.get("poll_s", default_poll)),
                                  cap=float(options.get("poll_max_s", default_cap)))
        self.last_problem: str | None = None  # the latest read error waited out, for the final message

    @property
    def job(self) -> str:
        return f"{self.provider.route} job {self.job_id}"

    def read(self, call: Callable[[], T]) -> T:
        """``call()``'s answer; a retryable ProviderError is waited out until the deadline."""
        while True:
            try:
                return call()
            except (JobExpired, JobFailed):
                raise
            except ProviderError as exc:
                if not exc.retryable:
                    raise self._still_journaled(f"a read failed for good: {exc}", retryable=False,
                                                status=exc.status) from None
                self.last_problem = str(exc)
            self.wait("unreadable")

    def wait(self, state: str) -> None:
        """Sleep before the next poll; past the deadline, a retryable error that keeps the job journaled."""
        if time.monotonic() > self.deadline:
            detail = f" (last problem: {self.last_problem})" if self.last_problem and state == "unreadable" else ""
            raise self._still_journaled(f"still {state} after {self.max_wait:g} s{detail}", retryable=True)
        time.sleep(next(self.delays))

    def _still_journaled(self, why: str, *, retryable: bool, status: int | None = None) -> ProviderError:
        return ProviderError(redact(f"{self.what}: {self.job} {why}; the job stays journaled in the candidate's "
                                    "record and the next run resumes it without submitting it again"),
                             retryable=retryable, status=status)

    def fail(self, why: str, *, retryable: bool = True) -> JobFailed:
        """The job ended without an image (the provider says it failed): forget it, so the next run submits
        a new one, and return the error to raise."""
        self.request.journal.forget()
        return JobFailed(redact(f"{self.what}: {self.job} failed: {why}; it ended without an image, so the "
                                    "next run submits a new job"), retryable=retryable)

    def expired(self, why: str, *, status: int | None = None) -> JobExpired:
        """The provider no longer has this job's result: the runner submits once more (``resubmitted``)."""
        return JobExpired(redact(f"{self.what}: {self.job} expired: {why}"), retryable=True, status=status)

    def download(self, url: str, *, keeps: str, headers: dict[str, str] | None = None) -> "bytes | Path":
        """The result file at ``url``, patiently, straight into a file; 403/404/410 mean the signed URL or the
        file is gone (``keeps`` says how long the provider keeps it), which is ``expired``."""
        def gone(status: int) -> JobExpired | None:
            if status in EXPIRED:
                return self.expired(f"its result URL answered HTTP {status} ({keeps})", status=status)
            return None

        return self.read(lambda: self.provider.download(url, self.what, headers=headers, gone=gone))
