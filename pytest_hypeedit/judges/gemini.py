"""``gemini-3-flash``: the upstream judge, Gemini 3 Flash through google-genai.

It reproduces ``src/judge_gemini_3_flash.py`` of the upstream benchmark (see
upstream.py): its prompt, read out of that file; its message layout (the
prompt first and last, the same labels, prompting.message_pieces); and its
settings (``_config``).  Images go as inline parts, each at high media
resolution as upstream sends them.  The model's thoughts are kept in the
verdict's ``extra`` for audit, never shown as the reasoning.

``gemini-3-flash-rubric`` is the same judge asking with the project's own
rubric (prompt.txt): only the prompt differs, so comparing the two measures
the prompt.  Each verdict records the sha256 of its prompt, and a verdict
given under another prompt is judged again (``stale_reason``), never reused
silently.  Each verdict also records the model version that answered (the reply's ``modelVersion``,
which google-genai reads as ``response.model_version``): Google serves a retired id with a newer model
without saying so elsewhere (judges/versions.py).  The cost is computed from the token usage at the published price
($0.50 in, $3 out per million tokens; thinking is billed as output).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from ..errors import JudgeError
from ..providers.gemini import image_part
from ..providers.genai_client import GEMINI_KEY_ENV, GenaiSession, call, enum_name, import_genai
from ..secrets import redact
from .base import Judge, JudgeRequest, Verdict
from .prompting import (
    RUBRIC_KIND,
    UPSTREAM,
    Answer,
    JudgePrompt,
    UnparseableReply,
    ask_until_parsed,
    http_plumbing,
    make_prompt,
    message_pieces,
    stale_reason,
)
from .versions import MODEL_VERSION, answering_model

FLASH_MODEL = "gemini-3-flash-preview"
ROUTE = "gemini-judge"  # its own limits: Gemini's quotas are per model
#: USD per token (input, output incl. thinking) by model; a model not listed is recorded at 0 (price unknown).
PRICES = {FLASH_MODEL: (0.50e-6, 3.00e-6)}

#: What one verdict can cost at most (``worst_case_cost``, reserved against --budget), with the prices above:
#: each image at media resolution HIGH is at most 1120 tokens on Gemini 3 (ai.google.dev/gemini-api/docs/
#: media-resolution, "Token counts": the resolution sets the maximum tokens of a media input; the figure is
#: second-hand, providers.md [G27], UNCONFIRMED); text is at most one token per UTF-8 byte (a SentencePiece
#: token covers at least one byte; UNCONFIRMED for Gemini's tokenizer), plus a few per part for its framing;
#: the output, thinking included, is capped by MAX_OUTPUT_TOKENS; and a reply that cannot be read is asked once
#: more (prompting.ask_until_parsed): two paid asks.
IMAGE_TOKENS_MAX = 1120
PART_TOKENS = 16
ASKS_MAX = 2

# The upstream judge's settings (Gemini3FlashJudge.judge and ._image_part at the pinned commit).
TEMPERATURE = 0  # Google advises 1.0 for Gemini 3 (second-hand, UNCONFIRMED); upstream judged at 0
MAX_OUTPUT_TOKENS = 4096  # thinking counts against it: a reply may be cut (prompting._recover_truncated)
THINKING_LEVEL = "MEDIUM"  # types.ThinkingLevel.MEDIUM, in google-genai >= 1.56
# Per part, spelled as upstream passes it to Part.from_bytes.  google-genai turns it into
# PartMediaResolution(level=MEDIA_RESOLUTION_HIGH) (types.Part._t_part_media_resolution; the enum is
# case-insensitive) and _Part_to_mldev sends it as the part's "mediaResolution": {"level": ...} on v1beta
# (google-genai 1.51 to 3.x; ai.google.dev/gemini-api/docs/media-resolution: per part, Gemini 3).
MEDIA_RESOLUTION = {"level": "media_resolution_high"}


class GeminiJudge(Judge):
    name = "gemini-3-flash"
    key_env = GEMINI_KEY_ENV
    routes = (ROUTE,)

    def __init__(self, options=None, *, model: str | None = None, prompt: str = UPSTREAM):
        self.model = model or getattr(options, "gemini_model", None) or FLASH_MODEL
        self.options = options
        self.prompt: JudgePrompt = make_prompt(prompt, getattr(options, "cache_dir", None))
        self._session: GenaiSession | None = None
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        rubric = self.prompt.kind == RUBRIC_KIND
        if self.model == FLASH_MODEL:
            return f"{self.name}-rubric" if rubric else self.name
        return f"gemini-rubric:{self.model}" if rubric else f"gemini:{self.model}"

    @property
    def session(self) -> GenaiSession:
        with self._lock:  # one client per judge, built on first use (listing judges needs no key)
            if self._session is None:
                policy, limiter = http_plumbing(self.options, ROUTE, self.model)
                self._session = GenaiSession(route=ROUTE, timeout_s=getattr(self.options, "timeout_s", 120.0),
                                             policy=policy, limiter=limiter)
            return self._session

    def prepare(self) -> None:
        self.prompt.text()

    def stale_reason(self, entry: dict[str, Any]) -> str | None:
        return stale_reason(entry, self.prompt)

    def worst_case_cost(self, request: JudgeRequest) -> float:
        """Every ask at its most: the message's tokens at their bound and MAX_OUTPUT_TOKENS out (see
        IMAGE_TOKENS_MAX); 0 for a model whose price is unknown (its verdicts are recorded at 0 too)."""
        price_in, price_out = PRICES.get(self.model, (0.0, 0.0))
        pieces = message_pieces(request, self.prompt.text())
        tokens_in = sum((len(p.encode("utf-8")) if isinstance(p, str) else IMAGE_TOKENS_MAX) + PART_TOKENS
                        for p in pieces)
        return ASKS_MAX * (tokens_in * price_in + MAX_OUTPUT_TOKENS * price_out)

    def judge(self, request: JudgeRequest) -> Verdict:
        contents = self._contents(request)
        who = self.model  # the runner names the judge, the item the candidate: each once
        with self.session.for_call(request.slots) as tied:  # the pool's slot: no second one for its requests
            parsed = ask_until_parsed(lambda: self._ask(contents, who, self._config().model_copy(update=tied)),
                                      who=who)
        extra = {"judge_model": self.model, "prompt": self.prompt.kind, "prompt_sha256": self.prompt.sha256,
                 **parsed.extra}
        return Verdict(passed=parsed.passed, reasoning=parsed.reasoning, judge=self.id, cost=parsed.cost, extra=extra)

    def _contents(self, request: JudgeRequest) -> list:
        _, types, _ = import_genai()
        parts = [types.Part.from_text(text=p) if isinstance(p, str)
                 else image_part(p.read_bytes(), str(p), media_resolution=MEDIA_RESOLUTION)
                 for p in message_pieces(request, self.prompt.text())]
        return [types.Content(role="user", parts=parts)]

    def _ask(self, contents: list, who: str, config: Any) -> Answer:
        def generate():
            try:
                return self.session.client.models.generate_content(model=self.model, contents=contents,
                                                                   config=config)
            except json.JSONDecodeError as exc:  # a reply body that is not JSON: ask again once
                raise UnparseableReply(f"reply body is not JSON ({exc.msg})") from None

        response = call(generate, what=who, error=JudgeError)
        text, thoughts = _reply_texts(response, who)
        kept = {"usage": _usage(response), "finish_reason": _finish_reason(response),
                MODEL_VERSION: answering_model(getattr(response, "model_version", None))}
        if thoughts:
            kept["thoughts"] = redact(thoughts)  # for audit only: the reasoning is the verdict's own
        return Answer(text, _cost(self.model, response), kept)

    @staticmethod
    def _config():
        _, types, _ = import_genai()
        return types.GenerateContentConfig(
            temperature=TEMPERATURE,
            max_output_tokens=MAX_OUTPUT_TOKENS,
            response_modalities=["TEXT"],
            response_mime_type="application/json",  # JSON out, but no response schema: upstream sets none
            thinking_config=types.ThinkingConfig(include_thoughts=True,
                                                 thinking_level=types.ThinkingLevel[THINKING_LEVEL]),
        )

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


def _reply_texts(response: Any, who: str) -> tuple[str | None, str]:
    """(the final non-thought text, the thought summaries) of the first candidate; a blocked prompt is a
    JudgeError (the judge refused, not the model).  Thought parts are text parts with ``thought: true``."""
    if not response.candidates:
        reason = enum_name(getattr(getattr(response, "prompt_feedback", None), "block_reason", None))
        raise JudgeError(f"{who}: the judge's prompt was blocked ({reason or 'no candidates'})", retryable=False)
    parts = getattr(response.candidates[0].content, "parts", None) or []
    text = "".join(p.text for p in parts if p.text and not p.thought)
    thoughts = "\n".join(p.text for p in parts if p.text and p.thought).strip()
    return text or None, thoughts


def _finish_reason(response: Any) -> str | None:
    return enum_name(getattr(response.candidates[0], "finish_reason", None))


def _usage(response: Any) -> dict[str, int]:
    usage = getattr(response, "usage_metadata", None)
    names = ("prompt_token_count", "candidates_token_count", "thoughts_token_count")
    return {name: getattr(usage, name) for name in names if getattr(usage, name, None) is not None}


def _cost(model: str, response: Any) -> float:
    price_in, price_out = PRICES.get(model, (0.0, 0.0))
    usage = _usage(response)
    out_tokens = usage.get("candidates_token_count", 0) + usage.get("thoughts_token_count", 0)
    return usage.get("prompt_token_count", 0) * price_in + out_tokens * price_out
