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
($0.50 in, $3 out per million tokens; thinking is billed as output), at the tier that served the call.

``--judge-tier flex`` asks Gemini's Flex tier (judges/judge_tiers.py): ``GenerateContentConfig(service_tier=
"flex")``, which google-genai 3.6.1 sends as the request's top-level ``"serviceTier": "flex"``
(``models.py`` ``_GenerateContentConfig_to_mldev``: ``setv(parent_object, ['serviceTier'], ...)``; the values are
``types.ServiceTier``: unspecified, flex, standard, priority).  The reply's ``usageMetadata.serviceTier`` says
which tier served it (``types.UsageMetadata.service_tier``, "Output only. Service tier of the request"), but
google-genai parses the reply into ``GenerateContentResponseUsageMetadata``, which has no such field, and drops
unknown fields (``_common.BaseModel._from_response`` -> ``_remove_extra_fields``): so the tier is read from the
raw reply by an httpx response hook (``_ServedTiers``).  A verdict is billed at the tier its reply names (Flex:
50% of standard, ai.google.dev/gemini-api/docs/flex-inference, "a 50% cost reduction compared to standard
rates"); a reply that names none was served at the tier asked (Flex is never upgraded server-side, same page);
one that names a tier we do not know is billed at standard and recorded as unknown (spend is never less).
Flex sheds load with 503 UNAVAILABLE ("Because Flex is sheddable and fails with 503 errors", same page): the HTTP
policy retries it with backoff on Flex, with the same request (transport/http.py retries a 503 of a paid call: the
reply says it was not taken), and only ``flex-or-standard`` asks once more at standard when Flex still sheds
after those retries ("To prevent unexpected charges, the system won't automatically upgrade a Flex request to
the Standard tier", same page).  A shed request is taken as not billed: Gemini bills the tokens of an answer
(ai.google.dev/gemini-api/docs/pricing) and a 503 carries none, Google's staff describing it as "can't service
your request" (discuss.ai.google.dev/t/handling-429-503-errors-from-the-gemini-api/124640); that nothing at all is
charged is UNCONFIRMED first-hand (docs/reference/providers.md section 11.6).  A reply lost on the way is never sent again
(genai_client.mark_paid) and goes to the journal as every paid call does.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from ..engine.records import FLEX, SERVED_TIER, STANDARD, UNKNOWN_TIER
from ..errors import ConfigError, JudgeError
from ..providers.gemini import image_part
from ..providers.genai_client import GEMINI_KEY_ENV, GenaiSession, call, enum_name, gemini_probe, import_genai
from ..secrets import redact
from .base import Judge, JudgeRequest, Verdict
from .judge_tiers import FLEX_OR_STANDARD, asked_tier
from .prompting import (
    RUBRIC_KIND,
    UPSTREAM,
    Answer,
    JudgePrompt,
    UnparseableReply,
    ask_until_parsed,
    http_plumbing,
    judge_runtime,
    make_prompt,
    message_pieces,
    stale_reason,
)
from .versions import MODEL_VERSION, answering_model

if TYPE_CHECKING:  # pragma: no cover
    from google.genai.types import Content, GenerateContentConfig, GenerateContentResponse

    from ..transport.keycheck import KeyProbe
    from . import JudgeOptions

FLASH_MODEL = "gemini-3-flash-preview"
ROUTE = "gemini-judge"  # its own limits: Gemini's quotas are per model
#: USD per token (input, output incl. thinking) by model; a model not listed is recorded at 0 (price unknown).
PRICES = {FLASH_MODEL: (0.50e-6, 3.00e-6)}

#: What one verdict can cost at most (``worst_case_cost``, reserved against --budget), with the prices above:
#: each image at media resolution HIGH is at most 1120 tokens on Gemini 3 (ai.google.dev/gemini-api/docs/
#: media-resolution, "Token counts": the resolution sets the maximum tokens of a media input; the figure is
#: second-hand, docs/reference/providers.md [G27], UNCONFIRMED); text is at most one token per UTF-8 byte (a SentencePiece
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

#: What a verdict served at Flex costs, as a share of its standard price ("a 50% cost reduction compared to
#: standard rates", ai.google.dev/gemini-api/docs/flex-inference; docs/reference/providers.md section 11.6).
FLEX_SHARE = 0.5
#: Seconds per read of a Flex call: "Minutes (1-15 min target)", "we recommend increasing client-side timeouts to
#: 10 minutes or more" (the same page): the top of the target, never less than the run's own timeout.
FLEX_TIMEOUT_S = 900.0
#: The status Flex sheds a request with ("503 Service Unavailable: The system is currently at capacity");
#: a 429 is the project's own rate limit, which standard shares ("Flex counts towards your general rate limits").
SHED_STATUS = 503


class GeminiJudge(Judge):
    name = "gemini-3-flash"
    key_env = GEMINI_KEY_ENV
    routes = (ROUTE,)
    tiers = (STANDARD, FLEX)

    def __init__(self, options: JudgeOptions | None = None, *, model: str | None = None, prompt: str = UPSTREAM):
        self.model = model or getattr(options, "gemini_model", None) or FLASH_MODEL
        self.options = options
        self.runtime = judge_runtime(options)  # its retry policy and route limiter
        self.tier_choice: str = getattr(options, "tier", None) or STANDARD
        self._served = _ServedTiers()
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
                policy, limiter = http_plumbing(self.options, self.runtime, ROUTE, self.model)
                timeout = getattr(self.options, "timeout_s", 120.0)
                if self.asked == FLEX:
                    timeout = max(timeout, FLEX_TIMEOUT_S)
                self._session = GenaiSession(route=ROUTE, timeout_s=timeout, policy=policy, limiter=limiter)
                hooks = self._session.http.event_hooks
                self._session.http.event_hooks = {**hooks, "response": [*hooks["response"], self._served.note]}
            return self._session

    @property
    def asked(self) -> str:
        """The tier each verdict is asked at first (--judge-tier)."""
        return asked_tier(self.tier_choice)

    def prepare(self) -> None:
        self.prompt.text()
        if self.asked == FLEX:
            _, types, _ = import_genai()
            if "service_tier" not in types.GenerateContentConfig.model_fields:
                raise ConfigError("--judge-tier flex: this google-genai cannot ask for a service tier "
                                  "(GenerateContentConfig.service_tier, google-genai 3.6.1 has it): upgrade it "
                                  "with pip install -U google-genai, or use --judge-tier standard")

    def stale_reason(self, entry: dict[str, Any]) -> str | None:
        return stale_reason(entry, self.prompt)

    def key_probe(self) -> KeyProbe:
        """Google's models.get of the judge's model, free (genai_client.gemini_probe)."""
        return gemini_probe(f"judge {self.id}", ROUTE, self.model)

    def worst_case_cost(self, request: JudgeRequest) -> float:
        """Every ask at its most: the message's tokens at their bound and MAX_OUTPUT_TOKENS out (see
        IMAGE_TOKENS_MAX); 0 for a model whose price is unknown (its verdicts are recorded at 0 too)."""
        price_in, price_out = PRICES.get(self.model, (0.0, 0.0))
        pieces = message_pieces(request, self.prompt.text())
        tokens_in = sum((len(p.encode("utf-8")) if isinstance(p, str) else IMAGE_TOKENS_MAX) + PART_TOKENS
                        for p in pieces)
        share = FLEX_SHARE if self.tier_choice == FLEX else 1.0  # flex-or-standard may be billed at standard
        return ASKS_MAX * (tokens_in * price_in + MAX_OUTPUT_TOKENS * price_out) * share

    def judge(self, request: JudgeRequest) -> Verdict:
        contents = self._contents(request)
        who = self.model  # the runner names the judge, the item the candidate: each once
        with self.session.for_call(request.call.slots) as tied:  # the pool's slot: no second one for its requests
            parsed = ask_until_parsed(lambda: self._ask(contents, who, tied), who=who)
        extra = {"judge_model": self.model, "prompt": self.prompt.kind, "prompt_sha256": self.prompt.sha256,
                 **parsed.extra}
        return Verdict(passed=parsed.passed, reasoning=parsed.reasoning, judge=self.id, cost=parsed.cost, extra=extra)

    def _contents(self, request: JudgeRequest) -> list[Content]:
        _, types, _ = import_genai()
        parts = [types.Part.from_text(text=p) if isinstance(p, str)
                 else image_part(p.read_bytes(), str(p), media_resolution=MEDIA_RESOLUTION)
                 for p in message_pieces(request, self.prompt.text())]
        return [types.Content(role="user", parts=parts)]

    def _ask(self, contents: list[Content], who: str, tied: dict[str, Any]) -> Answer:
        """``tied``: what ties the config's requests to the call's in-flight slots (GenaiSession.for_call)."""
        try:
            response, tier = self._generate(contents, who, self.asked, tied)
        except JudgeError as exc:
            if self.tier_choice != FLEX_OR_STANDARD or exc.status != SHED_STATUS:
                raise _shed_note(exc, self.asked) from None
            # --judge-tier flex-or-standard: Flex kept shedding this verdict through the policy's retries (a
            # 503 is not a paid answer), so it is asked once at standard, as the user chose; billed so.
            response, tier = self._generate(contents, who, STANDARD, tied)
        text, thoughts = _reply_texts(response, who)
        kept = {"usage": _usage(response), "finish_reason": _finish_reason(response),
                MODEL_VERSION: answering_model(getattr(response, "model_version", None)), SERVED_TIER: tier}
        if thoughts:
            kept["thoughts"] = redact(thoughts)  # for audit only: the reasoning is the verdict's own
        return Answer(text, _cost(self.model, response, tier), kept)

    def _generate(self, contents: list[Content], who: str, tier: str,
                  tied: dict[str, Any]) -> tuple[GenerateContentResponse, str]:
        """The reply of one generateContent asked at ``tier``, and the tier that served it (its usage metadata's
        ``serviceTier``; the tier asked when it names none)."""
        def generate() -> GenerateContentResponse:
            try:
                reply: GenerateContentResponse = self.session.client.models.generate_content(
                    model=self.model, contents=contents, config=self._config(tier).model_copy(update=tied))
                return reply
            except json.JSONDecodeError as exc:  # a reply body that is not JSON: ask again once
                raise UnparseableReply(f"reply body is not JSON ({exc.msg})") from None

        self._served.clear()
        response = call(generate, what=who, error=JudgeError)
        return response, self._served.tier() or tier

    @staticmethod
    def _config(tier: str = STANDARD) -> GenerateContentConfig:
        _, types, _ = import_genai()
        # standard is sent as no tier at all: the request of a run without --judge-tier is as it always was
        flex = {"service_tier": types.ServiceTier.FLEX} if tier == FLEX else {}
        config: GenerateContentConfig = types.GenerateContentConfig(
            **flex,
            temperature=TEMPERATURE,
            max_output_tokens=MAX_OUTPUT_TOKENS,
            response_modalities=["TEXT"],
            response_mime_type="application/json",  # JSON out, but no response schema: upstream sets none
            thinking_config=types.ThinkingConfig(include_thoughts=True,
                                                 thinking_level=types.ThinkingLevel[THINKING_LEVEL]),
        )
        return config

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


def _cost(model: str, response: Any, tier: str = STANDARD) -> float:
    """The reply's tokens at the model's price at ``tier``: Flex at FLEX_SHARE, any other (an unknown tier too:
    spend is never less than it may have been) at standard."""
    price_in, price_out = PRICES.get(model, (0.0, 0.0))
    usage = _usage(response)
    out_tokens = usage.get("candidates_token_count", 0) + usage.get("thoughts_token_count", 0)
    standard = usage.get("prompt_token_count", 0) * price_in + out_tokens * price_out
    return standard * (FLEX_SHARE if tier == FLEX else 1.0)


def _shed_note(exc: JudgeError, asked: str) -> JudgeError:
    """A verdict Flex shed after every retry: the error says what the user can do (the next run asks again)."""
    if asked != FLEX or exc.status != SHED_STATUS:
        return exc
    return JudgeError(f"{exc}; Flex shed it after every retry (a shed request is not billed): rerun later, or use "
                      "--judge-tier flex-or-standard to ask such a verdict at standard",
                      retryable=exc.retryable, status=exc.status, reply_lost=exc.reply_lost)


class _ServedTiers:
    """The tier that served the last generateContent reply of each thread, read from the raw reply (google-genai
    drops ``usageMetadata.serviceTier`` while parsing): an httpx response hook, called in the calling thread."""

    def __init__(self) -> None:
        self._local = threading.local()

    def clear(self) -> None:
        self._local.tier = None

    def tier(self) -> str | None:
        return getattr(self._local, "tier", None)

    def note(self, response: Any) -> None:
        if response.status_code != 200 or not response.request.url.path.endswith(":generateContent"):
            return
        try:
            usage = json.loads(response.read()).get("usageMetadata") or {}
        except (ValueError, AttributeError):
            return  # google-genai reports a body that is not a JSON object itself
        self._local.tier = served_tier(usage.get("serviceTier") if isinstance(usage, dict) else None)


def served_tier(value: Any) -> str | None:
    """``usageMetadata.serviceTier`` as a tier of ours: None when absent; its wire spelling is UNCONFIRMED
    (``"flex"`` as types.ServiceTier's value, or ``"FLEX"``; a ``SERVICE_TIER_`` prefix as proto enums have):
    compared case-insensitively; a value we do not know (``priority``, junk) is UNKNOWN_TIER."""
    if value is None:
        return None
    text = str(value).strip().lower().removeprefix("service_tier_")
    return text if text in (STANDARD, FLEX) else UNKNOWN_TIER
