"""The one small interface every judge implements.

A judge gets a ``JudgeRequest`` (the task, the candidate on disk and the
reference images) and returns a ``Verdict``, or raises ``JudgeError`` when it
cannot give one (a failed call, a reply that cannot be parsed).  A JudgeError
is never a FAIL: the candidate is counted under ``errors`` and re-judged by
the next run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..engine.call_context import JudgeContext
from ..tasks import Task
from ..text import REASONING_LIMIT, clean_entries, clean_text

if TYPE_CHECKING:  # pragma: no cover
    from ..transport.keycheck import KeyProbe


@dataclass(frozen=True)
class JudgeRequest:
    task: Task
    model: str
    repeat: int  # 1-based
    candidate: Path
    references: tuple[Path, ...]
    #: The run's own context of this verdict (engine/call_context.py: its journaled call id, the in-flight
    #: slots the pool took): a judge passes it on and relies on none of its contents.  A library user
    #: leaves the default (empty).
    call: JudgeContext = field(default_factory=JudgeContext, compare=False, repr=False)


@dataclass
class Verdict:
    passed: bool
    reasoning: str
    judge: str  # the judge's id, e.g. "gemini-3-flash" or "labels[3 raters]"
    votes: list[dict[str, Any]] = field(default_factory=list)  # one per juror / rater
    cost: float = 0.0  # USD, when the judge's price is known
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The reasoning and the votes' notes are a judge's or a rater's words: cleaned and capped where they
        # enter (text.py), before any record, terminal line or report holds them.
        self.reasoning = clean_text(str(self.reasoning), REASONING_LIMIT)
        self.votes = clean_entries(self.votes)

    @property
    def label(self) -> str:
        return "PASS" if self.passed else "FAIL"


class Judge:
    """Base class of judges.  Subclasses set ``name`` and implement ``judge``."""

    name: ClassVar[str] = ""
    #: Environment variables that hold this judge's key; any one of them will do.
    key_env: tuple[str, ...] = ()  # a class default an instance may shadow (a panel, a local server)
    #: Whether the judge looks at the images (a labels judge does not).
    needs_images: bool = True
    #: The HTTP routes a verdict calls (each has its own limits); none for a free, instant judge
    #: (human labels), which the pool then runs without a slot.
    routes: tuple[str, ...] = ("judge",)
    #: Whether a verdict this judge gave in an earlier run may be reused.  A paid
    #: judge's verdict is (never pay twice); free human labels are read afresh,
    #: since raters keep adding files.
    reuse_verdicts: bool = True
    #: The price tiers this judge can be asked at (``--judge-tier``, judges/judge_tiers.py); a judge that lists
    #: only standard does not accept any other: a usage error naming itself and these.
    tiers: tuple[str, ...] = ("standard",)

    @property
    def id(self) -> str:
        return self.name

    def judge(self, request: JudgeRequest) -> Verdict:
        raise NotImplementedError

    def worst_case_cost(self, request: JudgeRequest) -> float:
        """The most one verdict can be charged, in USD (every ask of it, tokens at their max): ``--budget``
        reserves it before the judge is asked.  0 for a free judge (human labels, a local server) and for one
        whose price is unknown (whose verdicts are recorded at 0 too)."""
        return 0.0

    def prepare(self) -> None:
        """Fetch and check what the judge needs before its first call (the upstream prompt), raising a
        HypeEditError that names the file and what to do.  Called on the controller at start-up, only
        when some candidate still needs a verdict: a replay from disk needs nothing."""

    def stale_reason(self, entry: dict[str, Any]) -> str | None:
        """Why a verdict this judge gave earlier (a record's ``judgements[id]`` entry) must not be reused,
        e.g. "given under another prompt"; None when it may stand.  Never reused silently: the runner
        records the reason and the session reports how many were judged again."""
        return None

    def key_probe(self) -> KeyProbe | None:
        """The free request that proves this judge's key before anything is paid (transport/keycheck.py); None
        for a judge that needs no key, or whose server documents no such call."""
        return None

    def close(self) -> None:
        """Release clients; called once at the end of a worker's session."""
