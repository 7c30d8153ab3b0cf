"""One exception tree for the whole plugin.

Every message names what went wrong (the file, the task, the model, the
option) and says what to do next; none ever contains an API key.

    HypeEditError
    ├── ConfigError          a bad option, models.yaml or judge spec (a usage error)
    ├── InputError           bad benchmark input: fix the file, then rerun
    │   ├── TaskFileError    a task file that is unreadable, not JSON, or not the schema
    │   ├── ImageError       a reference image that is missing, truncated or corrupt
    │   ├── LabelsError      a human-labels file that is not the upstream schema
    │   ├── JudgeScriptError the upstream judge script is not the pinned file, or holds no prompt
    │   └── NotRegularFile   a file of the outputs that is a symbolic link, not a regular file, or outside them
    ├── CallError            a paid call failed after its retries: outcome "error"
    │   ├── ProviderError    the image model's API failed (network, 5xx, auth, quota)
    │   │   ├── JobExpired   a journaled job's result is gone at the provider: submit again
    │   │   ├── JobFailed    a journaled job ended without an image: forgotten, the next run submits anew
    │   │   ├── RouteUnreachable  nothing answers on a route: no more calls start on it (engine/routes.py)
    │   │   └── ModelGone    the provider says the model id does not exist (retired): final, never retried
    │   ├── JudgeError       the judge failed or its reply could not be parsed
    │   └── DiskFull         no room on the outputs' disk: the run stops buying; what was paid is kept
    ├── Refusal              the model answered without a usable image: outcome "refused"
    └── BudgetExceeded       the next call could pass --budget: the item is skipped

    LifecycleError           (an AssertionError, on purpose not a HypeEditError) a bug of the plugin: the money
                             path took a step its candidate's state forbids (engine/lifecycle.py)

``LifecycleError`` stands apart from the tree: the money path catches ``HypeEditError`` around every paid
call to record it as the candidate's error, and a broken protocol (a write before its journal, a reservation
settled twice) must not be recorded as a failed call and forgotten, but stop the step, loudly.

A ``CallError`` is never the model's verdict: the candidate is left out of the
metrics, counted under ``errors`` and retried by the next run.  A ``Refusal``
is: the user paid for an attempt that gave nothing, so it counts as FAIL.
A ``CallError`` with ``reply_lost`` set is a paid request that may have reached
the provider and whose reply never came (a read timeout, a dropped connection):
it was not sent again, and the candidate counts as possibly paid
(engine/journal.py).
"""

from __future__ import annotations

from .text import ERROR_LIMIT, clean_text


class HypeEditError(Exception):
    """Base of every error the plugin raises on purpose."""


class ConfigError(HypeEditError):
    """A bad command-line option, models.yaml entry or judge spec."""


class InputError(HypeEditError):
    """Benchmark input (tasks, images, labels) that cannot be used as it is."""


class TaskFileError(InputError):
    """A task file that cannot be read or does not follow the upstream schema."""


class ImageError(InputError):
    """A reference image that is missing, truncated or cannot be decoded."""


class LabelsError(InputError):
    """A human-labels file that cannot be read or is not schema version 2."""


class JudgeScriptError(InputError):
    """The upstream judge script (judges/upstream.py) does not match its pin, or its prompt cannot be found."""


class NotRegularFile(InputError, OSError):
    """A file of the outputs tree that is not a regular file reached inside it: a symbolic link (the file or one of
    its folders), a folder or device under a file's name, or a path that leads out.  Never followed or read; an
    OSError too, so a reader that treats an unreadable file as absent treats this one so as well."""


class CallError(HypeEditError):
    """A model or judge call that failed after its retries."""

    #: Whether trying again later may succeed (network, 429, 5xx).  Auth,
    #: quota and validation errors are not retryable: rerunning wastes time.
    retryable: bool = True
    #: A paid request that may have reached the provider, whose reply was lost: it may be billed.
    reply_lost: bool = False
    #: The provider said the key itself is invalid, whatever the status (Google's 400 ``API_KEY_INVALID``):
    #: a rejected key, as a 401 is (engine/rejected_keys.py).
    key_invalid: bool = False

    def __init__(self, message: str, *, retryable: bool | None = None, status: int | None = None,
                 reply_lost: bool = False):
        super().__init__(clean_text(str(message), ERROR_LIMIT))  # it quotes a provider's or judge's reply
        if retryable is not None:
            self.retryable = retryable
        self.status = status
        self.reply_lost = reply_lost


class ProviderError(CallError):
    """The image model's API failed."""


class JobExpired(ProviderError):
    """A submitted job (engine/journal.py) whose result the provider no longer keeps: the runner submits again."""


class JobFailed(ProviderError):
    """A submitted job that the provider says failed: it is forgotten, so the next run submits a new one."""


class RouteUnreachable(ProviderError):
    """The first calls to a route all failed to connect: no more calls start on it in this run (nothing paid)."""


class ModelGone(ProviderError):
    """The provider says the model id does not exist (any more): final, never retried (retirements.py)."""

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message, retryable=False, status=status)


class JudgeError(CallError):
    """The judge failed, or gave a reply that cannot be parsed as a verdict."""

    #: What was paid all the same (a panel's answered jurors, two answered but unreadable asks), when known.
    cost: float | None = None


class DiskFull(CallError):
    """A write into the outputs found no room (ENOSPC, EDQUOT): nothing more is bought in this run
    (engine/room.py)."""


class Refusal(HypeEditError):
    """The model answered, but gave no usable image (moderation, no image part, undecodable file)."""

    def __init__(self, reason: str, *, cost: float | None = None, request_id: str | None = None,
                 tier: str | None = None):
        reason = clean_text(str(reason), ERROR_LIMIT)  # the provider's words
        super().__init__(reason)
        self.reason = reason
        self.cost = cost
        self.request_id = request_id
        self.tier = tier  # the tier the refused call was billed at (a batch line: "batch"); None: standard


class BudgetExceeded(HypeEditError):
    """The next paid call could take the run past ``--budget``."""


class LifecycleError(AssertionError):
    """A step of a candidate's money path that its state forbids (engine/lifecycle.py): a bug of the plugin, never
    of the input.  Not a HypeEditError, so no handler of call errors records it as a failed call."""
