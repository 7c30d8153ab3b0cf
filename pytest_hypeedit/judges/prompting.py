"""What the vision judges share: the prompt, the order of the message, the verdict parser
and the rule "a reply that cannot be parsed is asked again once, then is an error".

The message follows the upstream judge's layout: the rubric, each reference
image with its number, the instruction, the candidate, then the rubric again
(the repeat keeps the output rules fresh after several large images).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Union

from ..errors import JudgeError
from ..secrets import redact
from .base import JudgeRequest

PROMPT = resources.files(__package__).joinpath("prompt.txt").read_text(encoding="utf-8")
#: Recorded with every verdict: a verdict judged under another prompt can be told apart (drift warnings).
PROMPT_SHA256 = hashlib.sha256(PROMPT.encode("utf-8")).hexdigest()

#: The JSON schema of a verdict, for servers that constrain output to a schema.
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["PASS", "FAIL"]}, "reasoning": {"type": "string"}},
    "required": ["verdict", "reasoning"],
}

#: One piece of the judge's message: text, or an image file.
Piece = Union[str, Path]


def message_pieces(request: JudgeRequest) -> list[Piece]:
    pieces: list[Piece] = [PROMPT]
    for number, reference in enumerate(request.references, start=1):
        pieces += [f"Reference image {number}:", reference]
    pieces += [f"Instruction:\n{request.task.instruction}", "Candidate:", request.candidate, PROMPT]
    return pieces


class UnparseableReply(ValueError):
    """The judge answered, but not with a verdict we can read."""


def parse_verdict(text: str | None) -> tuple[bool, str]:
    """(passed, reasoning) from a reply holding ``{"verdict": "PASS"|"FAIL", "reasoning": "..."}``.

    Tolerates a Markdown code fence or words around the object; never guesses a
    verdict from free text (a guessed FAIL would be a wrong verdict, not an error).
    """
    data = _json_object(text or "")
    verdict = str(data.get("verdict", "")).strip().upper()
    reasoning = data.get("reasoning")
    if verdict not in ("PASS", "FAIL"):
        raise UnparseableReply(f"verdict is {data.get('verdict')!r}, not PASS or FAIL")
    if not isinstance(reasoning, str) or not reasoning.strip():
        raise UnparseableReply("no reasoning given")
    return verdict == "PASS", reasoning.strip()


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


def ask_until_parsed(ask: Callable[[], Answer], *, who: str) -> Parsed:
    """Ask, and once more if the reply cannot be parsed; then a JudgeError, never a FAIL.

    ``ask`` may itself raise UnparseableReply (a reply body that is not JSON at all).
    """
    cost, problem = 0.0, "no reply"
    for attempt in (1, 2):
        try:
            answer = ask()
            cost += answer.cost
            passed, reasoning = parse_verdict(answer.text)
        except UnparseableReply as exc:
            problem = str(exc)
            continue
        return Parsed(passed, reasoning, cost, attempt, answer)
    raise JudgeError(redact(f"{who}: the reply could not be read as a verdict, twice ({problem})"), retryable=True)


def http_plumbing(options: Any, route: str, model: str) -> tuple[Any, Any]:
    """(retry policy, limiter) of a judge: JudgeOptions' when given, else the run's (providers.runtime).

    A judge route has its own limits (``routes: {gemini-judge: {rpm, inflight}}`` in models.yaml):
    Gemini's quotas are per model, so the judge does not share the image model's.
    """
    from ..providers import runtime as runtime_module
    from ..registry import ModelSpec

    run = runtime_module.current()
    policy = getattr(options, "policy", None) or run.policy
    factory = getattr(options, "limiter_for", None)
    if factory is not None:
        return policy, factory(route)
    return policy, run.limiter_for(ModelSpec(name=f"judge-{route}", route=route, provider_model=model, price=0.0))
