"""``openrouter``: any image model served through OpenRouter's chat completions API.

Wire format: docs/reference/providers.md section 7.  One user message with the instruction
and the references as ``image_url`` data URLs; ``modalities`` follows
OpenRouter's image-generation guide (openrouter.ai/docs/features/multimodal/
image-generation): "Models that output both text and images (e.g., Gemini): Use
modalities: ["image", "text"]; Models that only output images (e.g., Sourceful,
Flux): Use modalities: ["image"]".  So a model whose id is under an image-only
vendor (``IMAGE_ONLY_VENDORS``) gets ``["image"]`` and every other
``["image", "text"]``; ``options.modalities`` decides for a model this list
does not know.  ``image_config.aspect_ratio``
is the ratio nearest the task's.  The image is the first of
``choices[0].message.images``.  ``usage.cost`` (asked for with
``usage.include``) is the cost when present.

Errors (OpenRouter docs, api_reference/errors-and-debugging.mdx; fetched from
OpenRouterTeam/docs) come as ``{"error": {code, message, metadata}}``: with the
HTTP status when the request failed before generation, else inside an HTTP 200
reply, at the top level or on the choice (``finish_reason`` "error").  Wherever
it arrives, an error is a refusal only when it is a moderation flag or a
content-policy refusal; a guardrail block, missing permissions or a failed
generation is a ProviderError that says what to do.  A ``content_filter``
finish reason, an ``IMAGE_*`` native finish reason or an answer without an
image is a refusal too.

The completion is a paid request sent once (``submits=True``): a reply lost to a
read timeout or a dropped connection is not sent again (engine/journal.py).
OpenRouter documents no client-chosen id or idempotency key (none found in its
API reference or quick start: UNCONFIRMED that none exists); the reply's ``id``
comes only with the reply, so a lost call is known by its time alone.
"""

from __future__ import annotations

from typing import Any

import httpx

from ..transport.http import RETRY_STATUSES, request_id_of
from ..transport.keycheck import KeyProbe
from .adapter import HttpProvider, nearest_ratio, reply_id
from .base import Generation, GenerationRequest
from .images import ImageLimits

ASPECT_RATIOS = ("1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9")
#: Vendors whose models only output images (the guide's examples: Sourceful, Flux): they need ["image"].
IMAGE_ONLY_VENDORS = ("sourceful/", "black-forest-labs/")

#: ``error.metadata`` keys of OpenRouter's ``ModerationErrorMetadata`` ("Moderation errors": reasons,
#: flagged_input, provider_name, model_slug); a 403 carrying them is the model's moderation refusing the input.
MODERATION_METADATA = ("reasons", "flagged_input")
#: ``error.metadata.error_type`` values of the "Content policy" table of the typed error codes: a content
#: filter flagged the input or output, or the model explicitly refused.  Anything else is an error.
REFUSAL_ERROR_TYPES = frozenset({"content_policy_violation", "refusal"})
#: Typed error codes that waiting can fix ("Rate limiting and availability", "Generic" tables).
RETRYABLE_ERROR_TYPES = frozenset({"rate_limit_exceeded", "provider_overloaded", "provider_unavailable",
                                   "server", "timeout"})
#: A guardrail block: "Request blocked: ..." with ``metadata.patterns`` ("Guardrail errors"); with router
#: metadata opted in, a ``pipeline`` stage of type "guardrail".
GUARDRAIL_MESSAGE = "request blocked"

GUARDRAIL_NEXT_STEP = ("an OpenRouter guardrail on this key or account blocked the request: check the guardrail "
                       "settings (OpenRouter Settings > Privacy > Guardrails: content filters, model allowlist, "
                       "budget) or use a key without it, then rerun")
PERMISSION_NEXT_STEP = ("the key may not use this model: check OPENROUTER_API_KEY's permissions (and any guardrail "
                        "model allowlist or budget on it), then rerun")


class OpenRouterProvider(HttpProvider):
    route = "openrouter"
    key_env = ("OPENROUTER_API_KEY",)
    provider = "openrouter"
    default_base = "https://openrouter.ai/api/v1"
    # Limits depend on the model behind OpenRouter (UNCONFIRMED): keep references modest.
    image_limits = ImageLimits(max_count=10, max_side=2048, max_bytes=10 * 1024 * 1024,
                               formats=("png", "jpeg", "webp"), convert_to="jpeg")
    # OpenRouter's quick start calls it with openai-python (openrouter.ai/docs/quick-start), whose default is
    # 600 s (openai-python ``_constants.py`` DEFAULT_TIMEOUT); an image model may take minutes.
    timeout = 600.0

    def key_probe(self) -> KeyProbe:
        """OpenRouter's current key info, free: ``GET /api/v1/key`` answers 401 to a wrong key."""
        return self.probe("GET", f"{self.base}/key", {"Authorization": f"Bearer {self.key}"},
                          doc="https://openrouter.ai/docs/api/api-reference/api-keys/get-current-key")

    def generate(self, request: GenerationRequest) -> Generation:
        what = self.what(request)
        response = self.call("POST", f"{self.base}/chat/completions", json=self.body(request),
                             headers={"Authorization": f"Bearer {self.key}", "X-Title": "pytest-hypeedit"},
                             submits=True, request=request)
        if not response.is_success:
            self.raise_for_error_status(request, response)
        reply = self.json_of(response, what)
        if not isinstance(reply, dict):
            raise self.error(f"{what}: the reply is not an object", retryable=True)
        request_id = reply_id(reply.get("id"))
        url = self.image_url(request, reply, request_id, what)
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        return self.generation(request, self.download(url, what, request=request, request_id=request_id),
                               cost=reported_cost(reply), request_id=request_id,
                               seed=request.seed, usage=usage or None, served_by=reply.get("provider"),
                               aspect_ratio=self.aspect_ratio(request))

    @property
    def modalities(self) -> list[str]:
        if self.spec.options.get("modalities"):
            return list(self.spec.options["modalities"])
        image_only = self.spec.provider_model.lower().startswith(IMAGE_ONLY_VENDORS)
        return ["image"] if image_only else ["image", "text"]

    def aspect_ratio(self, request: GenerationRequest) -> str:
        return nearest_ratio(request.task.width, request.task.height,
                             tuple(self.spec.options.get("aspect_ratios") or ASPECT_RATIOS))

    def body(self, request: GenerationRequest) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": request.task.instruction}]
        content += [{"type": "image_url", "image_url": {"url": image.inline_data_url()}} for image in self.references(request)]
        image_config: dict[str, Any] = {"aspect_ratio": self.aspect_ratio(request)}
        if "image_size" in self.spec.options:
            image_config["image_size"] = self.spec.options["image_size"]
        return {"model": self.spec.provider_model, "messages": [{"role": "user", "content": content}],
                "modalities": self.modalities,
                "image_config": image_config, "seed": request.seed, "usage": {"include": True}}

    # ------------------------------------------------------------------ errors
    def raise_for_error_status(self, request: GenerationRequest, response: httpx.Response) -> None:
        """A failed HTTP reply: a refusal when it is moderation, else the ProviderError that says what to do."""
        error = error_object(_json_or_none(response))
        kind = error_kind(error)
        request_id = request_id_of(response)
        if kind == "moderation":
            raise self.refusal(request, f"moderation: {describe(error)}", request_id=request_id)
        if response.status_code == 403:
            step = GUARDRAIL_NEXT_STEP if kind == "guardrail" else PERMISSION_NEXT_STEP
            raise self.error(f"{self.what(request)}: HTTP 403 from OpenRouter: {describe(error)}; {step}",
                             retryable=False, status=403)
        self.check(response)

    def raise_for_reply_error(self, request: GenerationRequest, error: dict[str, Any], request_id: str | None,
                              where: str, cost: float) -> None:
        """An error inside an HTTP 200 reply (generation had started): the refusal or ProviderError it is."""
        if error_kind(error) == "moderation":
            raise self.refusal(request, f"moderation {where}: {describe(error)}", request_id=request_id, cost=cost)
        raise self.error(f"{self.what(request)}: generation failed {where} (request id {request_id}): "
                         f"{describe(error)}", retryable=error_retryable(error), status=_int(error.get("code")))

    # ------------------------------------------------------------------ the answer
    def image_url(self, request: GenerationRequest, reply: dict[str, Any], request_id: str | None, what: str) -> str:
        cost = reported_cost(reply) or 0.0
        if reply.get("error"):
            # "errors after generation starts can arrive as HTTP 200" (docs/reference/providers.md section 7)
            self.raise_for_reply_error(request, error_object(reply), request_id, "after it started", cost)
        choice = first_choice(reply)
        if choice.get("error") or choice.get("finish_reason") == "error":
            # NonStreamingChoice.error?: ErrorResponse, with finish_reason "error" (api_reference/overview.mdx)
            self.raise_for_reply_error(request, error_object(choice), request_id, "on the choice", cost)
        message = found if isinstance(found := choice.get("message"), dict) else {}
        listed = message.get("images")
        images = [i for i in listed if isinstance(i, dict)] if isinstance(listed, list) else []
        image_url = images[0].get("image_url") if images else None
        url = image_url.get("url") if isinstance(image_url, dict) else None  # another shape: no image
        # finish_reason and native_finish_reason are both ``string | null`` in the response schema.
        native = str(choice.get("native_finish_reason") or "")
        if choice.get("finish_reason") == "content_filter" or native.upper().startswith("IMAGE_"):
            raise self.refusal(request, f"finish reason {native or 'content_filter'}", request_id=request_id,
                               cost=cost)
        if not url:
            text = str(message.get("content") or "")[:200]
            raise self.refusal(request, f"answered without an image: {text!r}", request_id=request_id, cost=cost)
        return str(url)


# --------------------------------------------------------------------------- helpers


def first_choice(reply: dict[str, Any]) -> dict[str, Any]:
    choices = reply.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return {}


def error_object(holder: Any) -> dict[str, Any]:
    """The ``ErrorResponse`` under ``holder["error"]`` as a dict (a bare string becomes its message)."""
    error = holder.get("error") if isinstance(holder, dict) else None
    if isinstance(error, dict):
        return error
    return {"message": str(error)} if error else {}


def metadata_of(error: dict[str, Any]) -> dict[str, Any]:
    metadata = error.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def error_kind(error: dict[str, Any]) -> str:
    """``moderation`` (the model refusing), ``guardrail``, or ``error`` (permissions and everything else)."""
    metadata = metadata_of(error)
    if any(key in metadata for key in MODERATION_METADATA) or metadata.get("error_type") in REFUSAL_ERROR_TYPES:
        return "moderation"
    if str(error.get("message") or "").lower().startswith(GUARDRAIL_MESSAGE) or "patterns" in metadata:
        return "guardrail"
    return "error"


def error_retryable(error: dict[str, Any]) -> bool:
    """Whether the next run may succeed: by the typed error code, else by the HTTP-like ``code``."""
    error_type = metadata_of(error).get("error_type")
    if isinstance(error_type, str):
        return error_type in RETRYABLE_ERROR_TYPES
    code = _int(error.get("code"))
    return code is None or code in RETRY_STATUSES or code >= 500


def describe(error: dict[str, Any]) -> str:
    """``code (error_type): message``, plus the moderation reasons when there are some."""
    metadata = metadata_of(error)
    parts = [str(part) for part in (error.get("code"), metadata.get("error_type")) if part is not None]
    text = f"{' '.join(parts)}: " if parts else ""
    text += str(error.get("message") or "no message")[:300]
    reasons = metadata.get("reasons")
    if isinstance(reasons, list) and reasons:
        text += f" (reasons: {', '.join(map(str, reasons[:5]))})"
    return text


def reported_cost(reply: dict[str, Any]) -> float | None:
    usage = reply.get("usage")
    cost = usage.get("cost") if isinstance(usage, dict) else None
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0 else None


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None

