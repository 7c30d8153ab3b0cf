"""A fake of the Gemini API's ``POST /v1beta/models/{model}:generateContent``.

It checks what the real API checks that matters here (an API key header, a JSON
body of ``contents[].parts[]`` with text or base64 inline data, no unknown part
field, valid enum names for a part's media resolution and the thinking level),
accepting both camelCase (what google-genai's converters emit) and snake_case
(REST samples, and what google-genai sends for objects it passes through, e.g.
``inlineData.mime_type``, ``thinkingConfig.include_thoughts``) at every level,
and answers camelCase JSON like the real API.

It speaks Flex as google-genai sends it (docs/reference/providers.md section 11.6): a top-level ``serviceTier`` (``service_tier``)
of ``types.ServiceTier`` (unspecified, standard, flex, priority; case-insensitive), an unknown value not accepted, with
400.  ``shed`` Flex requests are answered 503 UNAVAILABLE as Flex sheds load, and not billed; every 200 reply
names the tier that served it in ``usageMetadata.serviceTier`` and is billed at that tier's price (``bills``,
``billed_usd``): Flex at 50% of standard (ai.google.dev/gemini-api/docs/flex-inference).

As the API does today (docs/reference/providers.md section 10), an id Google has shut down (``RETIRED``: the preview image
models, off since 2026-06-25) answers 404 ``NOT_FOUND``, whatever is scripted.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import re
from dataclasses import replace
from typing import Any

from .server import LoopbackServer, Reply, SeenRequest, snake_keys

_PATH = re.compile(r"^/(v1beta|v1alpha|v1)/models/([^/:]+):generateContent$")
#: models.get (ai.google.dev/api/models#method:-models.get): free, the run's key check
_MODEL = re.compile(r"^/(v1beta|v1alpha|v1)/models/([^/:]+)$")

#: The fields of a ``Part`` (google-genai 3.4 types.Part and _Part_to_mldev, which sends these on v1beta):
#: a field outside them is rejected, as the API rejects an unknown name ("Invalid JSON payload received").
PART_FIELDS = {"text", "inline_data", "file_data", "function_call", "function_response", "executable_code",
               "code_execution_result", "thought", "thought_signature", "video_metadata", "media_resolution",
               "part_metadata", "tool_call", "tool_response"}
#: ``Part.mediaResolution.level`` (google-genai PartMediaResolutionLevel), per part on Gemini 3
#: (ai.google.dev/gemini-api/docs/media-resolution, v1beta).  Enum names as proto JSON spells them;
#: google-genai always sends them upper-case (whether the API also takes lower case: UNCONFIRMED).
PART_MEDIA_LEVELS = {"MEDIA_RESOLUTION_UNSPECIFIED", "MEDIA_RESOLUTION_LOW", "MEDIA_RESOLUTION_MEDIUM",
                     "MEDIA_RESOLUTION_HIGH", "MEDIA_RESOLUTION_ULTRA_HIGH"}
#: ``generationConfig.thinkingConfig.thinkingLevel`` (google-genai ThinkingLevel).
THINKING_LEVELS = {"THINKING_LEVEL_UNSPECIFIED", "MINIMAL", "LOW", "MEDIUM", "HIGH"}
#: The fields of a ``GenerateContentRequest`` and of its ``generationConfig`` and ``imageConfig`` on v1beta
#: (google-genai 3.6 ``_GenerateContentParameters_to_mldev``, ``_GenerationConfig_to_mldev``,
#: ``_ImageConfig_to_mldev``; ``serviceTier`` for Flex, docs/reference/providers.md section 11.6): an unknown name is a 400
#: "Invalid JSON payload received. Unknown name ..." [G5].  ``imageConfig.outputMimeType`` and
#: ``personGeneration`` are Vertex-only (the SDK raises on the Gemini API [G2]).
REQUEST_FIELDS = {"contents", "generation_config", "safety_settings", "system_instruction", "tools", "tool_config",
                  "cached_content", "labels", "service_tier", "model"}
GENERATION_CONFIG_FIELDS = {
    "temperature", "top_p", "top_k", "candidate_count", "max_output_tokens", "stop_sequences", "response_logprobs",
    "logprobs", "presence_penalty", "frequency_penalty", "seed", "response_mime_type", "response_schema",
    "response_json_schema", "routing_config", "model_selection_config", "response_modalities", "media_resolution",
    "speech_config", "audio_timestamp", "thinking_config", "image_config", "enable_enhanced_civic_answers"}
IMAGE_CONFIG_FIELDS = {"aspect_ratio", "image_size"}
#: ``imageConfig.aspectRatio`` per model (docs/reference/providers.md section 1 [G3][G17]; the wider lists of
#: gemini-3.1-flash-image and gemini-nano-banana-2.1 second-hand, as providers/gemini.py); other models: any of
#: these.  ``imageSize`` is upper-case K (``1K | 2K | 4K``; "512" for flash-image) [G3].
ASPECT_RATIOS_10 = {"1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"}
ASPECT_RATIOS = {"gemini-3-pro-image": ASPECT_RATIOS_10, "gemini-3.1-flash-lite-image": ASPECT_RATIOS_10,
                 "gemini-nano-banana-2.1": ASPECT_RATIOS_10 | {"1:4", "4:1", "1:8", "8:1"},
                 "gemini-3.1-flash-image": ASPECT_RATIOS_10 | {"1:4", "4:1", "1:8", "8:1", "9:21"}}
ALL_SIZES = {"512", "1K", "2K", "4K"}
#: Model ids shut down on 2026-06-25 (Gemini API deprecations page).
RETIRED = frozenset({"gemini-3-pro-image-preview", "gemini-3.1-flash-image-preview"})
#: ``types.ServiceTier`` values (google-genai 3.6.1 types.py), compared case-insensitively.
SERVICE_TIERS = {"unspecified", "standard", "flex", "priority"}
#: USD per token (input, output incl. thinking) at standard of the judge's model, as Google bills it
#: (docs/reference/providers.md section 1: $0.50 / $3.00 per 1M tokens); written here, not read from the judge's code.
STANDARD_PRICE = {"gemini-3-flash-preview": (0.50e-6, 3.00e-6)}
TIER_SHARE = {"standard": 1.0, "flex": 0.5}


class FakeGemini(LoopbackServer):
    """Answers generateContent calls from its script; ``requests[i].parsed`` has
    ``model``, ``texts``, ``images`` (list of (mime, bytes)) and ``config`` (snake_case)."""

    def __init__(self, expected_key: str | None = None) -> None:
        super().__init__()
        self.expected_key = expected_key
        self.retired = set(RETIRED)
        #: asked model id -> the model that answers it (its reply's ``modelVersion``): Google routes a retired
        #: id to a newer model silently; an id not listed is answered by itself, as the real API does
        self.answered_by: dict[str, str] = {}
        #: Flex requests still to shed (503 UNAVAILABLE, not billed), one each
        self.shed = 0
        #: the tier that serves a Flex request (the reply's usageMetadata.serviceTier), as the API spells it
        self.flex_served_as = "flex"
        #: one entry per answered (billed) call: {"model", "tier", "prompt", "output"}
        self.bills: list[dict[str, Any]] = []

    def is_key_check(self, request: SeenRequest) -> bool:
        return request.method == "GET" and _MODEL.match(request.path.split("?")[0]) is not None

    def handle(self, request: SeenRequest) -> Reply:
        if self.is_key_check(request):
            return self.model_info(request)
        match = _PATH.match(request.path.split("?")[0])
        if not match:
            return error_reply(404, f"fake gemini: no route {request.path}", "NOT_FOUND")
        rejected = self.reject_key(request)
        if rejected is not None:
            return rejected
        if match.group(2) in self.retired:
            # The wording Google uses for an unknown model (second-hand, docs/reference/providers.md section 10).
            return error_reply(404, f"models/{match.group(2)} is not found for API version {match.group(1)}, or is "
                                    "not supported for generateContent. Call ListModels to see the list of "
                                    "available models and their supported methods.", "NOT_FOUND")
        problem = _parse_body(request, model=match.group(2))
        if problem:
            request.error = problem
            return error_reply(400, problem, "INVALID_ARGUMENT")
        asked = request.parsed["service_tier"]
        if asked == "flex" and self._shedding():
            return error_reply(503, "The service is currently unavailable.", "UNAVAILABLE")
        served = self.flex_served_as if asked == "flex" else "standard"
        return self._billed(self._versioned(self.next_reply(request), match.group(2)), match.group(2), served)

    def reject_key(self, request: SeenRequest) -> Reply | None:
        """Google's answer to a missing key (403) or a wrong one (400 INVALID_ARGUMENT, reason API_KEY_INVALID,
        ai.google.dev/gemini-api/docs/troubleshooting); None for the right key."""
        key = request.headers.get("x-goog-api-key")
        if not key:
            return error_reply(403, "Method doesn't allow unregistered callers.", "PERMISSION_DENIED")
        if self.expected_key is not None and key != self.expected_key:
            return key_invalid_reply()
        return None

    def model_info(self, request: SeenRequest) -> Reply:
        """models.get: the Model resource, the wrong-key answer, or 404 for a shut-down id."""
        match = _MODEL.match(request.path.split("?")[0])
        assert match is not None
        rejected = self.reject_key(request)
        if rejected is not None:
            return rejected
        model = match.group(2)
        if model in self.retired:
            return error_reply(404, f"models/{model} is not found for API version {match.group(1)}", "NOT_FOUND")
        return Reply(200, {"name": f"models/{model}", "displayName": model, "version": "001",
                           "supportedGenerationMethods": ["generateContent", "batchGenerateContent"]})

    def _shedding(self) -> bool:
        with self._lock:
            if self.shed <= 0:
                return False
            self.shed -= 1
            return True

    def _billed(self, reply: Reply, model: str, served: str) -> Reply:
        """A 200 reply names the tier that served it and is billed at it."""
        if reply.status != 200 or not isinstance(reply.body, dict) or "usageMetadata" not in reply.body:
            return reply
        usage = {**reply.body["usageMetadata"], "serviceTier": served}
        with self._lock:
            self.bills.append({"model": model, "tier": served.lower(), "prompt": usage.get("promptTokenCount", 0),
                               "output": usage.get("candidatesTokenCount", 0) + usage.get("thoughtsTokenCount", 0)})
        return replace(reply, body={**reply.body, "usageMetadata": usage})

    def billed_usd(self, tier: str | None = None) -> float:
        """What the answered calls cost at the tier that served each (of ``tier`` only, when given)."""
        total = 0.0
        for bill in self.bills:
            if tier is None or bill["tier"] == tier:
                price_in, price_out = STANDARD_PRICE.get(bill["model"], (0.0, 0.0))
                share = TIER_SHARE.get(bill["tier"], 1.0)
                total += (bill["prompt"] * price_in + bill["output"] * price_out) * share
        return total

    def _versioned(self, reply: Reply, model: str) -> Reply:
        """A generateContent reply names the model version that answered (``modelVersion``) unless the script
        set one itself."""
        if reply.status != 200 or not isinstance(reply.body, dict) or "candidates" not in reply.body \
                or "modelVersion" in reply.body:
            return reply
        return replace(reply, body={**reply.body, "modelVersion": self.answered_by.get(model, model)})


def _parse_body(request: SeenRequest, model: str) -> str | None:
    """Fill ``request.parsed``; return what is wrong with the body, if anything."""
    if request.error:
        return request.error
    body = snake_keys(request.json)
    if not isinstance(body, dict) or not isinstance(body.get("contents"), list) or not body["contents"]:
        return "* GenerateContentRequest.contents: contents is not specified"
    parsed: dict[str, Any] = {"model": model, "texts": [], "images": [], "media_resolutions": []}
    for content in body["contents"]:
        for part in (content or {}).get("parts") or []:
            problem = _read_part(part, parsed)
            if problem:
                return problem
    parsed["config"] = body.get("generation_config") or {}
    # a field of the request, not of generationConfig (google-genai _GenerateContentConfig_to_mldev)
    tier = body.get("service_tier")
    if tier is not None and (not isinstance(tier, str) or tier.lower() not in SERVICE_TIERS):
        return f"Invalid value at 'service_tier' ({tier!r})"
    if "service_tier" in parsed["config"]:
        return "Invalid JSON payload received. Unknown name \"serviceTier\" at 'generation_config'"
    parsed["service_tier"] = tier.lower() if tier else "standard"
    problem = (_unknown_name(body, REQUEST_FIELDS, "") or _check_config(parsed["config"])
               or _check_image_config(model, parsed["config"]) or _check_image_size(model, parsed["config"]))
    if problem:
        return problem
    request.parsed = parsed
    return None


def _read_part(part: dict, parsed: dict) -> str | None:
    unknown = sorted(set(part) - PART_FIELDS) if isinstance(part, dict) else ["(not an object)"]
    if unknown:
        return f"Invalid JSON payload received. Unknown name {unknown[0]!r} at 'contents.parts'"
    if "text" in part:
        parsed["texts"].append(part["text"])
        return None
    inline = part.get("inline_data")
    if not isinstance(inline, dict) or not inline.get("mime_type") or not inline.get("data"):
        return f"* GenerateContentRequest.contents.parts: unsupported part {sorted(part)}"
    level, problem = _media_level(part.get("media_resolution"))
    if problem:
        return problem
    try:
        parsed["images"].append((inline["mime_type"], decode_base64(inline["data"])))
    except (binascii.Error, ValueError):
        return "* GenerateContentRequest.contents.parts.inline_data.data: invalid base64"
    parsed["media_resolutions"].append(level)
    return None


def _media_level(value: Any) -> tuple[str | None, str | None]:
    """(the part's media resolution level or None, what is wrong with it)."""
    if value is None:
        return None, None
    level = value.get("level") if isinstance(value, dict) else None
    if level not in PART_MEDIA_LEVELS:
        return None, f"Invalid value at 'contents.parts.media_resolution.level', {level!r}"
    return level, None


#: The image sizes a model takes, where it takes fewer than 512/1K/2K/4K (second-hand, as providers/gemini.py):
#: Google answers another with 400 INVALID_ARGUMENT.
IMAGE_SIZES = {"gemini-nano-banana-2.1": {"1K", "2K", "4K"}, "gemini-3.1-flash-lite-image": {"1K"}}


def _unknown_name(value: Any, known: set[str], where: str) -> str | None:
    unknown = sorted(set(value) - known) if isinstance(value, dict) else ["(not an object)"]
    if unknown:
        return f"Invalid JSON payload received. Unknown name {unknown[0]!r} at '{where or 'GenerateContentRequest'}'"
    return None


def _check_image_config(model: str, config: dict) -> str | None:
    """Unknown names in ``generationConfig``/``imageConfig``; a ratio or size the model does not take."""
    problem = _unknown_name(config, GENERATION_CONFIG_FIELDS, "generation_config")
    image = config.get("image_config")
    if problem or image is None:
        return problem
    problem = _unknown_name(image, IMAGE_CONFIG_FIELDS, "generation_config.image_config")
    ratio, size = image.get("aspect_ratio"), image.get("image_size")
    if problem is None and ratio is not None and ratio not in ASPECT_RATIOS.get(model, set().union(
            *ASPECT_RATIOS.values())):
        problem = f"Invalid value at 'generation_config.image_config.aspect_ratio' for {model}: {ratio!r}"
    if problem is None and size is not None and size not in ALL_SIZES:
        problem = f"Invalid value at 'generation_config.image_config.image_size': {size!r}"
    return problem


def _check_image_size(model: str, config: dict) -> str | None:
    size = (config.get("image_config") or {}).get("image_size")
    if size is not None and model in IMAGE_SIZES and size not in IMAGE_SIZES[model]:
        return f"Invalid value at 'generation_config.image_config.image_size' for {model}: {size!r}"
    return None


def _check_config(config: dict) -> str | None:
    thinking = config.get("thinking_config") or {}
    level = thinking.get("thinking_level")
    if level is not None and level not in THINKING_LEVELS:
        return f"Invalid value at 'generation_config.thinking_config.thinking_level', {level!r}"
    if not isinstance(thinking.get("include_thoughts", False), bool):
        return "Invalid value at 'generation_config.thinking_config.include_thoughts'"
    return None


def decode_base64(text: str) -> bytes:
    """Standard or URL-safe base64 (google-genai sends URL-safe; proto JSON accepts both)."""
    text = text.replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


# --------------------------------------------------------------------------- replies


def png_bytes(size: tuple[int, int] = (8, 6), color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def _usage(prompt: int = 1290, candidates: int = 1120, thoughts: int = 0) -> dict:
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": candidates, "totalTokenCount": prompt + candidates + thoughts}
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def _inline(data: bytes, mime: str, thought: bool = False) -> dict:
    part: dict[str, Any] = {"inlineData": {"mimeType": mime, "data": base64.b64encode(data).decode()}}
    if thought:
        part["thought"] = True
    return part


def candidates_reply(parts: list[dict], finish: str = "STOP", usage: dict | None = None, **extra) -> Reply:
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}
    body = {"candidates": [candidate], "usageMetadata": usage or _usage(), "responseId": "fake-resp-1"}
    return Reply(200, {**body, **extra})


def image_reply(data: bytes | None = None, mime: str = "image/png", *, thoughts: list[bytes] = (), text: str | None = None) -> Reply:
    """A final image, after optional interim ``thought: true`` images and a text part."""
    parts = [_inline(t, mime, thought=True) for t in thoughts]
    if text is not None:
        parts.append({"text": text})
    parts.append(_inline(data if data is not None else png_bytes(), mime))
    return candidates_reply(parts)


def text_reply(text: str, finish: str = "STOP", usage: dict | None = None) -> Reply:
    """A text-only answer: a refusal for an image model, the verdict for a judge."""
    return candidates_reply([{"text": text}], finish=finish, usage=usage or _usage(candidates=60))


def verdict_reply(verdict: str = "PASS", reasoning: str = "All required edits are present.", usage: dict | None = None,
                  thoughts: str | None = None) -> Reply:
    """A judge's verdict, after a thought summary part (``thought: true``) when ``thoughts`` is given,
    as the API answers with ``thinkingConfig.includeThoughts``."""
    parts = [{"text": thoughts, "thought": True}] if thoughts is not None else []
    parts.append({"text": json.dumps({"verdict": verdict, "reasoning": reasoning})})
    return candidates_reply(parts, usage=usage or _usage(2400, 80, 300))


def block_reply(reason: str = "SAFETY") -> Reply:
    """A blocked prompt: no candidates, only ``promptFeedback.blockReason``."""
    return Reply(200, {"promptFeedback": {"blockReason": reason}, "usageMetadata": _usage(candidates=0)})


def finish_reply(reason: str = "IMAGE_SAFETY") -> Reply:
    """A candidate stopped for a reason other than STOP, with no parts."""
    candidate = {"content": {"role": "model"}, "finishReason": reason, "index": 0}
    return Reply(200, {"candidates": [candidate], "usageMetadata": _usage(candidates=0)})


def error_reply(code: int, message: str, status: str, retry_after: float | None = None) -> Reply:
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    return Reply(code, {"error": {"code": code, "message": message, "status": status}}, headers)


def key_invalid_reply() -> Reply:
    """A wrong key, as Google answers it: 400 INVALID_ARGUMENT with an ErrorInfo whose reason is API_KEY_INVALID."""
    details = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                "domain": "googleapis.com", "metadata": {"service": "generativelanguage.googleapis.com"}}]
    return Reply(400, {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                 "status": "INVALID_ARGUMENT", "details": details}})


def malformed_reply() -> Reply:
    return Reply(200, b'{"candidates": [{"content": {"parts": [{"inlineDa')


def slow(reply: Reply, delay: float) -> Reply:
    reply.delay = delay
    return reply


def echo_key_error(request: SeenRequest) -> Reply:
    """A 400 whose message quotes the request's key, as some proxies do: the client must redact it."""
    key = request.headers.get("x-goog-api-key", "")
    return error_reply(400, f"API key {key} not valid for this project", "INVALID_ARGUMENT")


def quota_reply(retry_delay: str | None = "34s",
                quota_id: str = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier") -> Reply:
    """Google's 429 as the Gemini API sends it: no Retry-After header; the wait in ``error.details[]`` as a
    ``google.rpc.RetryInfo`` with ``retryDelay`` (a protobuf Duration), the quota in a ``google.rpc.QuotaFailure``.
    Shape as quoted in UKGovernmentBEIS/inspect_ai#5526 and browserbase/mcp-server-browserbase#129, read by
    gemini-cli ``googleQuotaErrors.ts``."""
    details: list[dict] = [
        {"@type": "type.googleapis.com/google.rpc.Help",
         "links": [{"description": "Learn more about Gemini API quotas",
                    "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
         "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                         "quotaId": quota_id, "quotaDimensions": {"location": "global", "model": "gemini-3-flash"},
                         "quotaValue": "10"}]},
    ]
    if retry_delay is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay})
    message = ("You exceeded your current quota, please check your plan and billing details. For more information "
               "on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
               + (f" Please retry in {retry_delay}." if retry_delay else ""))
    return Reply(429, {"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED", "details": details}})
