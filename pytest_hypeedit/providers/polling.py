"""What the submit-then-poll routes (bfl, fal, replicate, runware) share: patient polls of a journaled job.

A submitted job is paid for; polling it costs nothing.  So once a job is
journaled (``request.call.journal.submitted``, engine/journal.py) every read of it
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

    job = resumed_job(provider, request) or submit(...)   # a journaled job is checked: records are untrusted
    poller = JobPoller(provider, request, job_id, what)
    url = poller.api_url(job["polling_url"], "polling_url")   # the key goes to the provider's hosts only
    reply = poller.read(lambda: poll(url))        # patient: retryable errors are waited out
    ... final status?  poller.fail(...) / raise refusal / poller.expired(...)
    poller.wait(f"still {status!r}")             # sleep, or raise "still journaled" past the deadline

A URL that the job is polled at with the key (from the submit reply, or read back from the record) must be on
the route's API host or one its provider documents (``HttpProvider.api_hosts``); anything else is not sent
the key, with a message naming the record (transport/keyhosts.py).
"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import httpx

from ..errors import JobExpired, JobFailed, ProviderError
from ..secrets import redact
from ..transport.keyhosts import shown_origin
from .adapter import EXPIRED, poll_delays
from .base import GenerationRequest

if TYPE_CHECKING:  # pragma: no cover
    from .adapter import HttpProvider

T = TypeVar("T")

#: Fields of a journaled job that hold URLs, numbers (USD, credits, megapixels) and pixel sizes.
URL_FIELDS = ("polling_url", "response_url", "cancel_url")
NUMBER_FIELDS = ("cost", "credits", "input_mp", "output_mp")
SIZE_FIELDS = ("width", "height")
MAX_URL = 4096
_PRINTABLE = re.compile(r"^[\x21-\x7e]{1,2048}$")  # no spaces, no control characters


def job_problem(job: Any, id_pattern: str | None = None) -> str | None:
    """What is wrong with a journaled job read back from a record, or None (a record is untrusted input)."""
    if not isinstance(job, dict):
        return f"is a {type(job).__name__}, not an object"
    ident = job.get("id")
    if (not isinstance(ident, str) or not _PRINTABLE.match(ident)
            or (id_pattern and not re.fullmatch(id_pattern, ident))):
        return f"has no valid 'id' (got {str(ident)[:60]!r})"
    for name in URL_FIELDS:
        if not _is_url_or_none(job.get(name)):
            return f"has a {name!r} that is not an http(s) URL (got {str(job.get(name))[:60]!r})"
    for name in NUMBER_FIELDS:
        value = job.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value < 0):
            return f"has {name!r} {value!r:.40}, not a number >= 0"
    for name in SIZE_FIELDS:
        value = job.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 100_000):
            return f"has {name!r} {value!r:.40}, not a size in pixels"
    return None


def _is_url_or_none(value: Any) -> bool:
    if value is None:
        return True
    if not isinstance(value, str) or len(value) > MAX_URL:
        return False
    try:
        url = httpx.URL(value)
    except (httpx.InvalidURL, TypeError):
        return False
    return url.scheme in ("http", "https") and bool(url.host)


def resumed_job(provider: "HttpProvider", request: GenerationRequest, *,
                id_pattern: str | None = None) -> dict[str, Any] | None:
    """The job an earlier attempt journaled (None: there is none), checked first: a field that is not what
    the adapter wrote is an error naming the record, never a URL to call or a cost to trust."""
    job = request.call.journal.job
    if job is None:
        return None
    problem = job_problem(job, id_pattern)
    if problem:
        where = getattr(request.call.journal, "source", None) or "the candidate's record"
        raise provider.error(f"{where}: the job journaled for {provider.what(request)} {problem}; nothing was "
                             f"sent. {_DELETE_HINT}", retryable=False)
    return job


_DELETE_HINT = ("If the record was edited, or restored from a cache you do not trust, delete the \"job\" of its "
                "entry in \"calls\" (the entry and its price stay): the next run then submits, and pays for, a new job")


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

    def api_url(self, url: Any, field: str) -> str:
        """``url`` when the route's key may go there (its API host, or one its provider documents); else a
        final error naming the job, the host and where the URL came from.  Nothing is sent to it."""
        text = url if isinstance(url, str) else ""
        try:
            allowed = bool(text) and self.provider.key_hosts.allows(text)
            shown = shown_origin(text)
        except (httpx.InvalidURL, TypeError):
            allowed, shown = False, repr(str(url)[:60])
        if allowed:
            return text
        route = self.provider.route
        raise self.provider.error(
            f"{self.what}: {self.job}: its {field} points at {shown}, not at {route}'s API "
            f"({self.provider.key_hosts.describe()}), so the {route} key was not sent there; {self._came_from()}",
            retryable=False)

    def _came_from(self) -> str:
        source = getattr(self.request.call.journal, "source", None) or "the candidate's record"
        if self.request.call.journal.resumed:
            return f"the URL was read from the job journaled in {source}. {_DELETE_HINT}"
        return f"the URL came in the provider's own reply; the job stays journaled in {source} for review"

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
        self.request.call.journal.forget()
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

        return self.read(lambda: self.provider.download(url, self.what, headers=headers, gone=gone,
                                                        request=self.request, request_id=self.job_id))
