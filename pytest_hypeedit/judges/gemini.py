"""``gemini-3-flash``: the default judge, Gemini 3 Flash through google-genai.

Settings follow the upstream judge where they change verdicts: temperature 0,
thinking level MEDIUM, JSON output.  Input images are read at high media
resolution (fine detail such as text and logos decides many tasks).  The
reply is a JSON verdict constrained by a schema; its cost is computed from
the token usage at the published price ($0.50 in, $3 out per million tokens).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from ..errors import JudgeError
from ..providers.gemini import image_part
from ..providers.genai_client import GEMINI_KEY_ENV, GenaiSession, call, enum_name, import_genai
from .base import Judge, JudgeRequest, Verdict
from .prompting import (PROMPT_SHA256, VERDICT_SCHEMA, Answer, UnparseableReply, ask_until_parsed, http_plumbing,
                        message_pieces)

FLASH_MODEL = "gemini-3-flash-preview"
ROUTE = "gemini-judge"  # its own limits: Gemini's quotas are per model
#: USD per token (input, output incl. thinking) by model; a model not listed is recorded at 0 (price unknown).
PRICES = {FLASH_MODEL: (0.50e-6, 3.00e-6)}
THINKING_LEVEL = "MEDIUM"  # the upstream judge's level


class GeminiJudge(Judge):
    name = "gemini-3-flash"
    key_env = GEMINI_KEY_ENV
    routes = (ROUTE,)

    def __init__(self, options=None, *, model: str | None = None):
        self.model = model or getattr(options, "gemini_model", None) or FLASH_MODEL
        self.options = options
        self._session: GenaiSession | None = None
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return self.name if self.model == FLASH_MODEL else f"gemini:{self.model}"

    @property
    def session(self) -> GenaiSession:
        with self._lock:  # one client per judge, built on first use (listing judges needs no key)
            if self._session is None:
                policy, limiter = http_plumbing(self.options, ROUTE, self.model)
                self._session = GenaiSession(route=ROUTE, timeout_s=getattr(self.options, "timeout_s", 120.0),
                                             policy=policy, limiter=limiter)
            return self._session

    def judge(self, request: JudgeRequest) -> Verdict:
        contents = self._contents(request)
        who = f"judge {self.id} on task {request.task.task_id}, {request.model} repeat {request.repeat:03d}"
        parsed = ask_until_parsed(lambda: self._ask(contents, who), who=who)
        extra = {"judge_model": self.model, "prompt_sha256": PROMPT_SHA256, "attempts": parsed.attempts,
                 **parsed.answer.extra}
        return Verdict(passed=parsed.passed, reasoning=parsed.reasoning, judge=self.id, cost=parsed.cost, extra=extra)

    def _contents(self, request: JudgeRequest) -> list:
        _, types, _ = import_genai()
        parts = [types.Part.from_text(text=p) if isinstance(p, str) else image_part(p.read_bytes(), str(p))
                 for p in message_pieces(request)]
        return [types.Content(role="user", parts=parts)]

    def _ask(self, contents: list, who: str) -> Answer:
        def generate():
            try:
                return self.session.client.models.generate_content(model=self.model, contents=contents,
                                                                   config=self._config())
            except json.JSONDecodeError as exc:  # a reply body that is not JSON: ask again once
                raise UnparseableReply(f"reply body is not JSON ({exc.msg})") from None

        response = call(generate, what=who, error=JudgeError)
        return Answer(_reply_text(response, who), _cost(self.model, response), {"usage": _usage(response)})

    def _config(self):
        _, types, _ = import_genai()
        return types.GenerateContentConfig(
            # 0 as upstream, for verdicts that agree with the published figures; Google advises 1.0
            # for Gemini 3 (second-hand, UNCONFIRMED), which would make verdicts vary between runs.
            temperature=0,
            max_output_tokens=8192,  # thinking counts against it: room enough that the JSON is never cut
            response_mime_type="application/json",
            # responseJsonSchema: structured output of Gemini 2.5+; for gemini-3-flash-preview UNCONFIRMED.
            response_json_schema=VERDICT_SCHEMA,
            thinking_config=types.ThinkingConfig(thinking_level=THINKING_LEVEL),
            # Request-wide, as v1beta takes it; the per-part level (and ULTRA_HIGH) needs v1alpha.
            media_resolution=types.MediaResolution.MEDIA_RESOLUTION_HIGH,
        )

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


def _reply_text(response: Any, who: str) -> str | None:
    """The final (non-thought) text; a blocked prompt is a JudgeError (the judge refused, not the model)."""
    if not response.candidates:
        reason = enum_name(getattr(getattr(response, "prompt_feedback", None), "block_reason", None))
        raise JudgeError(f"{who}: the judge's prompt was blocked ({reason or 'no candidates'})", retryable=False)
    parts = getattr(response.candidates[0].content, "parts", None) or []
    text = "".join(p.text for p in parts if p.text and not p.thought)
    return text or None


def _usage(response: Any) -> dict[str, int]:
    usage = getattr(response, "usage_metadata", None)
    names = ("prompt_token_count", "candidates_token_count", "thoughts_token_count")
    return {name: getattr(usage, name) for name in names if getattr(usage, name, None) is not None}


def _cost(model: str, response: Any) -> float:
    price_in, price_out = PRICES.get(model, (0.0, 0.0))
    usage = _usage(response)
    out_tokens = usage.get("candidates_token_count", 0) + usage.get("thoughts_token_count", 0)
    return usage.get("prompt_token_count", 0) * price_in + out_tokens * price_out
