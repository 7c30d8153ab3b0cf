"""What the vision judges share: the prompt, the order of the message, the verdict parser
and the rule "a reply that cannot be parsed is asked again once, then is an error".

Two prompts (``JudgePrompt``), each named in every verdict by its sha256:

- ``upstream`` (the default): the upstream judge's own prompt, read out of its
  script (``upstream.py``); what the published figures were judged with;
- ``rubric``: the project's own rubric (``prompt.txt``), kept as a named variant.

The message follows the upstream judge's layout, whichever the prompt: the
prompt, each reference image after "Reference image {i}:", the instruction
after "Instruction:", the candidate after "Candidate output image:", then the
prompt again (the repeat keeps the output rules fresh after several large images).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, NamedTuple

from ..errors import HypeEditError, JudgeError
from ..secrets import redact
from . import upstream
from .base import JudgeRequest

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.limits import RouteLimiter
    from ..providers.runtime import Runtime
    from ..transport.http import RetryPolicy
    from . import JudgeOptions

#: The project's own rubric: the ``*-rubric`` judges ask with it.
RUBRIC = resources.files(__package__).joinpath("prompt.txt").read_text(encoding="utf-8")
RUBRIC_SHA256 = hashlib.sha256(RUBRIC.encode("utf-8")).hexdigest()

UPSTREAM, RUBRIC_KIND = "upstream", "rubric"


class JudgePrompt:
    """The text a vision judge asks with.  ``sha256`` names it in every verdict (``extra.prompt_sha256``)
    and decides whether a stored verdict is current, without reading the text."""

    kind: ClassVar[str] = ""

    @property
    def sha256(self) -> str:
        raise NotImplementedError

    def text(self) -> str:
        raise NotImplementedError


class RubricPrompt(JudgePrompt):
    kind = RUBRIC_KIND

    @property
    def sha256(self) -> str:
        return RUBRIC_SHA256

    def text(self) -> str:
        return RUBRIC


class UpstreamPrompt(JudgePrompt):
    """Read out of the upstream judge script on first use (downloaded once into ``cache_dir``)."""

    kind = UPSTREAM

    def __init__(self, cache_dir: Path | None = None):
        self.cache_dir = cache_dir
        self._text: str | None = None
        self._error: HypeEditError | None = None
        self._lock = threading.Lock()

    @property
    def sha256(self) -> str:
        return upstream.PINNED.prompt_sha256  # the pin: a replay decides what is current without a download

    def text(self) -> str:
        with self._lock:  # one load per judge, however many threads judge at once
            if self._text is None and self._error is None:
                try:
                    self._text = upstream.load_prompt(self.cache_dir or _default_cache_dir())
                except HypeEditError as exc:
                    self._error = exc  # a file not accepted stays so: no download per candidate
            if self._error is not None:
                raise self._error
            assert self._text is not None  # loaded, or its error raised above
            return self._text


def _default_cache_dir() -> Path:
    from ..config import default_cache_dir

    return default_cache_dir()


def make_prompt(kind: str, cache_dir: Path | None = None) -> JudgePrompt:
    if kind == UPSTREAM:
        return UpstreamPrompt(cache_dir)
    if kind == RUBRIC_KIND:
        return RubricPrompt()
    raise ValueError(f"unknown judge prompt {kind!r}; known: {UPSTREAM}, {RUBRIC_KIND}")


def _known_prompt(sha256: str) -> str:
    names = {upstream.PINNED.prompt_sha256: "the upstream prompt", RUBRIC_SHA256: "the rubric"}
    return names.get(sha256, "a prompt")


def stale_reason(entry: dict[str, Any], prompt: JudgePrompt) -> str | None:
    """Why a stored verdict (a ``judgements`` entry) was not given under ``prompt``; None when it was."""
    extra = found if isinstance(found := entry.get("extra"), dict) else {}
    recorded = extra.get("prompt_sha256")
    if recorded == prompt.sha256:
        return None
    now = f"now {_known_prompt(prompt.sha256)} {prompt.sha256[:12]}"
    if not isinstance(recorded, str) or not recorded:
        return f"given under an unrecorded prompt ({now})"
    return f"given under another prompt ({_known_prompt(recorded)} {recorded[:12]}, {now})"


#: One piece of the judge's message: text, or an image file.
Piece = str | Path


def message_pieces(request: JudgeRequest, prompt: str) -> list[Piece]:
    """The upstream judge's layout: the prompt first and last, the same labels."""
    pieces: list[Piece] = [prompt]
    for number, reference in enumerate(request.references, start=1):
        pieces += [f"Reference image {number}:", reference]
    pieces += [f"Instruction:\n{request.task.instruction}", "Candidate output image:", request.candidate, prompt]
    return pieces


class UnparseableReply(ValueError):
    """The judge answered, but not with a verdict we can read."""


class Reading(NamedTuple):
    passed: bool
    reasoning: str
    recovered: bool  # read out of a reply cut short (upstream's tolerance), not out of whole JSON


def parse_verdict(text: str | None) -> Reading:
    """The verdict in a reply holding ``{"verdict": "PASS"|"FAIL", "reasoning": "..."}``.

    Tolerates a Markdown code fence or words around the object, and, as the upstream
    parser does, a reply cut short after an explicit verdict and some reasoning.  Never
    guesses a verdict: upstream turns an unreadable reply into FAIL, here it is an
    UnparseableReply (asked again, then an error), since a guessed FAIL is a wrong verdict.
    """
    text = text or ""
    try:
        data = _json_object(text)
    except UnparseableReply:
        recovered = _recover_truncated(text)
        if recovered is None:
            raise
        return recovered
    verdict = str(data.get("verdict", "")).strip().upper()
    reasoning = data.get("reasoning")
    if verdict not in ("PASS", "FAIL"):
        raise UnparseableReply(f"verdict is {data.get('verdict')!r}, not PASS or FAIL")
    if not isinstance(reasoning, str) or not reasoning.strip():
        raise UnparseableReply("no reasoning given")
    return Reading(verdict == "PASS", reasoning.strip(), False)


def _recover_truncated(text: str) -> Reading | None:
    """Upstream's last resort (``_parse_verdict``): the first ``"verdict": "PASS|FAIL"`` and the reasoning
    up to its first quote, e.g. from ``{"verdict":"FAIL","reasoning":"The logo is`` when the output-token
    limit cut the reply.  Unlike upstream, no verdict in the text is not a FAIL but None."""
    verdict = re.search(r'"verdict"\s*:\s*"(PASS|FAIL)"', text, re.IGNORECASE)
    reasoning = re.search(r'"reasoning"\s*:\s*"(.*)', text, re.DOTALL)
    if not verdict or not reasoning:
        return None
    cut = reasoning.group(1).split('"', 1)[0]
    cut = cut.replace("\\n", "\n").replace('\\"', '"').rstrip("\\").strip()  # a cut escape leaves a backslash
    if not cut:
        return None
    return Reading(verdict.group(1).upper() == "PASS", cut, True)


def _json_object(text: str) -> dict[str, Any]:
    text = re.sub(r"^\s*```(?:json)?\s*|\s*```\s*$", "", text.strip())
    for candidate in (text, text[text.find("{"): text.rfind("}") + 1]):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    excerpt = text[:120] + ("..." if len(text) > 120 else "")
    raise UnparseableReply(f"not a JSON object: {excerpt!r}" if text else "empty reply")


@dataclass
class Answer:
    """One reply of a judge model: its text, what it cost, and what to keep of it."""

    text: str | None
    cost: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Parsed:
    passed: bool
    reasoning: str
    cost: float  # all attempts together
    attempts: int
    answer: Answer
    recovered: bool = False

    @property
    def extra(self) -> dict[str, Any]:
        """What every verdict records of how it was read, plus what the judge kept of its reply."""
        extra: dict[str, Any] = {"attempts": self.attempts, **self.answer.extra}
        if self.recovered:
            extra["recovered_from_truncated_reply"] = True
        return extra


def ask_until_parsed(ask: Callable[[], Answer], *, who: str) -> Parsed:
    """Ask, and once more if the reply cannot be parsed; then a JudgeError, never a FAIL.

    ``ask`` may itself raise UnparseableReply (a reply body that is not JSON at all).
    """
    cost, problem = 0.0, "no reply"
    for attempt in (1, 2):
        try:
            answer = ask()
            cost += answer.cost
            reading = parse_verdict(answer.text)
        except UnparseableReply as exc:
            problem = str(exc)
            continue
        return Parsed(reading.passed, reading.reasoning, cost, attempt, answer, reading.recovered)
    error = JudgeError(redact(f"{who}: the reply could not be read as a verdict, twice ({problem})"), retryable=True)
    error.cost = cost  # both asks were answered, and paid: --budget commits it (engine/runner.py)
    raise error


def judge_runtime(options: JudgeOptions | None) -> Runtime:
    """The runtime a judge is made with: the run's (``JudgeOptions.runtime``, which the glue passes in), else one
    of the judge's own (providers/runtime.py: no route limits, images prepared in a temporary folder), never
    another run's."""
    from ..providers.runtime import Runtime

    given = getattr(options, "runtime", None)
    return given if given is not None else Runtime()


def http_plumbing(options: JudgeOptions | None, run: Runtime, route: str,
                  model: str) -> tuple[RetryPolicy | None, RouteLimiter | None]:
    """(retry policy, limiter) of a judge: JudgeOptions' when given, else those of ``run``, the judge's runtime.

    A judge route has its own limits (``routes: {gemini-judge: {rpm, inflight}}`` in models.yaml):
    Gemini's quotas are per model, so the judge does not share the image model's.
    """
    from ..registry import ModelSpec

    policy = getattr(options, "policy", None) or run.policy
    factory = getattr(options, "limiter_for", None)
    if factory is not None:
        return policy, factory(route)
    return policy, run.limiter_for(ModelSpec(name=f"judge-{route}", route=route, provider_model=model, price=0.0))
