"""``openai:MODEL``: any OpenAI-compatible chat-completions server as the judge
(OpenAI itself, or a local vLLM / Ollama serving a vision model).

``POST {base}/chat/completions`` with the same prompt and message layout as the
Gemini judge, images as base64 data URLs.  The prompt is the upstream judge's
(``openai:MODEL``), so a panel such as ``gemini-3-flash,openai:gpt-4.1`` asks
every juror the same question and agreement figures compare judges, not
prompts; ``openai-rubric:MODEL`` asks with the project's rubric instead (it
needs no download of the upstream script).  The base URL is ``--judge-base-url``
(``JudgeOptions.openai_base_url``), else ``HYPEEDIT_OPENAI_BASE_URL``, else
OpenAI's.  ``OPENAI_API_KEY`` is required for OpenAI's own API (api.openai.com):
missing, it is a usage error at start-up, like a model's key.  It goes to OpenAI's
API only (or the HYPEEDIT_OPENAI_BASE_URL that moves it): a server elsewhere (a
local vLLM or Ollama) gets ``HYPEEDIT_JUDGE_API_KEY`` when set, else no
Authorization header at all.  The price of an arbitrary model is not
known, so the cost is recorded as 0 and the token usage is kept in ``extra``,
with the reply's ``model`` (the model that answered: judges/versions.py).

A verdict is a paid request sent once (``submits``): a reply lost to a read
timeout or a dropped connection is not sent again, and is a JudgeError with
``reply_lost`` (engine/journal.py).  It carries the journaled call id as
``X-Client-Request-Id`` (as the openai image route does: UNCONFIRMED that
OpenAI logs it; a local server ignores it).
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from ..errors import ConfigError, ImageError, JudgeError
from ..providers.base import sniff_image_ext
from ..secrets import base_url, redact
from ..transport.body import InlineImage, json_request
from ..transport.http import (
    error_details,
    is_retryable,
    make_http_client,
    may_have_reached_provider,
    retryable_transport,
)
from ..transport.keycheck import KeyProbe
from ..transport.keyhosts import key_hosts, origin
from ..transport.requestopts import with_options
from ..transport.slots import CallSlots
from .base import Judge, JudgeRequest, Verdict
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
    from ..providers.runtime import Runtime
    from . import JudgeOptions

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_VARIABLE = "OPENAI_API_KEY"
#: The key of a judge server that is not OpenAI's (a vLLM or Ollama started with an API key): OPENAI_API_KEY
#: never goes there, since a key goes to its own provider's hosts only.
OTHER_SERVER_KEY = "HYPEEDIT_JUDGE_API_KEY"
ROUTE = "openai-judge"


class OpenAICompatJudge(Judge):
    name = "openai"
    routes = (ROUTE,)
    #: Standard only: it talks to any chat-completions server (vLLM, Ollama, ...), whose tiers are unknown.
    tiers = ("standard",)

    def __init__(self, model: str, options: JudgeOptions | None = None, *, prompt: str = UPSTREAM):
        if not model or not model.strip():
            raise ConfigError("--judge openai:MODEL: name the model the server serves, e.g. openai:gpt-4.1")
        self.model = model.strip()
        self.options = options
        self.runtime = judge_runtime(options)  # its retry policy, route limiter and folder of converted images
        self.prompt: JudgePrompt = make_prompt(prompt, getattr(options, "cache_dir", None))
        self.base = (getattr(options, "openai_base_url", None) or base_url("openai", DEFAULT_BASE_URL)).rstrip("/")
        # OpenAI's own API answers 401 without its key: say so before anything is paid.  A local server
        # (vLLM, Ollama) may need none, so there a missing key is not an error.
        self.key_env = (KEY_VARIABLE,) if origin(self.base) == origin(DEFAULT_BASE_URL) else ()
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @property
    def key_variables(self) -> tuple[str, ...]:
        """The variable this judge's key is read from (engine/rejected_keys.py names it when it is rejected)."""
        return (key_variable_for(self.base),)

    @property
    def id(self) -> str:
        return f"openai-rubric:{self.model}" if self.prompt.kind == RUBRIC_KIND else f"openai:{self.model}"

    @property
    def client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = _make_client(self.options, self.runtime, self.model, self.base)
            return self._client

    def prepare(self) -> None:
        self.prompt.text()

    def stale_reason(self, entry: dict[str, Any]) -> str | None:
        return stale_reason(entry, self.prompt)

    def key_probe(self) -> KeyProbe | None:
        """On OpenAI's own API (OPENAI_API_KEY): the models retrieve of the judge's model, free.  Another server
        (vLLM, Ollama) documents no such call: none, and its first rejected key stops the judge."""
        key = os.environ.get(KEY_VARIABLE, "").strip()
        if key_variable_for(self.base) != KEY_VARIABLE or not key:
            return None
        return KeyProbe(user=f"judge {self.id}", route=ROUTE, variable=KEY_VARIABLE, method="GET",
                        url=f"{self.base}/models/{self.model}", headers={"Authorization": f"Bearer {key}"},
                        secret=key, hosts=key_hosts(ROUTE, self.base),
                        doc="https://platform.openai.com/docs/api-reference/models/retrieve")

    def judge(self, request: JudgeRequest) -> Verdict:
        content = _content(request, self.prompt.text(), self.runtime.images_dir() / ROUTE)
        body: dict[str, Any] = {"model": self.model, "messages": [{"role": "user", "content": content}],
                "response_format": {"type": "json_object"}}
        temperature = getattr(self.options, "temperature", 0.0)
        if temperature is not None:  # some reasoning models take only their default: JudgeOptions(temperature=None)
            body["temperature"] = temperature
        who = f"{self.model} at {self.base}"  # the runner names the judge, the item the candidate: each once
        parsed = ask_until_parsed(lambda: self._ask(body, who, request.call.call_id, request.call.slots), who=who)
        extra = {"judge_model": self.model, "judge_base_url": self.base, "prompt": self.prompt.kind,
                 "prompt_sha256": self.prompt.sha256, **parsed.extra}
        return Verdict(passed=parsed.passed, reasoning=parsed.reasoning, judge=self.id, cost=0.0, extra=extra)

    def _ask(self, body: dict[str, Any], who: str, call_id: str | None = None, slots: CallSlots = ()) -> Answer:
        request = json_request(body, {"X-Client-Request-Id": call_id} if call_id else None)
        # paid: sent once; under the pool's slot of the verdict, if any (no second one, from any thread)
        extensions = with_options(None, submits=True, slots=slots)
        try:
            response = self.client.post(f"{self.base}/chat/completions", extensions=extensions, **request)
        except httpx.HTTPError as exc:  # the policy already retried it (a paid request only if it never left)
            lost = may_have_reached_provider(exc)
            note = "; the request may have reached the server, so it was not sent again" if lost else ""
            raise JudgeError(redact(f"{who}: {type(exc).__name__} on POST {self.base}/chat/completions: {exc}"
                                    f"{note}"), retryable=retryable_transport(exc), reply_lost=lost) from None
        if not response.is_success:
            code, message = error_details(response)
            text = f"{who}: HTTP {response.status_code}" + (f": {code}" if code else "") + f": {message[:500]}"
            raise JudgeError(redact(text), retryable=is_retryable(response), status=response.status_code)
        return Answer(_message_text(response), 0.0,
                      {"usage": _usage(response), MODEL_VERSION: answering_model(_reply_model(response))})

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def key_variable_for(base: str) -> str:
    """Which variable holds the key for the judge server at ``base``: OpenAI's own key for OpenAI's API (its
    origin, or the HYPEEDIT_OPENAI_BASE_URL that moves it, e.g. a proxy), another server's own otherwise.
    Origins (scheme, host, port), not host names: a server on another port or scheme of the same host (a
    local vLLM beside a local proxy of OpenAI's API) is another server, and OPENAI_API_KEY never goes there."""
    own = {origin(DEFAULT_BASE_URL), origin(base_url("openai", DEFAULT_BASE_URL))}
    return KEY_VARIABLE if origin(base) in own else OTHER_SERVER_KEY


def _make_client(options: JudgeOptions | None, run: Runtime, model: str, base: str) -> httpx.Client:
    key = os.environ.get(key_variable_for(base), "").strip()
    policy, limiter = http_plumbing(options, run, ROUTE, model)
    # The key goes to the judge's own server only (the base URL chosen), never off it by a redirect.
    client = make_http_client(ROUTE, secrets=(key,) if key else (), timeout=getattr(options, "timeout_s", 120.0),
                              policy=policy, limiter=limiter, key_hosts=key_hosts(ROUTE, base))
    if key:
        client.headers["Authorization"] = f"Bearer {key}"
    return client


def _content(request: JudgeRequest, prompt: str, folder: Path) -> list[dict[str, Any]]:
    return [{"type": "text", "text": p} if isinstance(p, str) else
            {"type": "image_url", "image_url": {"url": data_url(p, folder)}} for p in message_pieces(request, prompt)]


#: OpenAI's vision models first scale an image to fit within 2048 x 2048 ("high" detail; the image input
#: guide's cost section, developers.openai.com/docs/guides/images-vision): more pixels are never seen,
#: and at 64 calls in flight a 4K reference as PNG would cost gigabytes.
MAX_SIDE = 2048
_MIME = {"png": "image/png", "jpg": "image/jpeg"}


def data_url(path: Path, folder: Path) -> InlineImage:
    """A data URL of a PNG or JPEG no more than 2048 px a side, streamed from disk when the body is sent.
    Anything else (WebP, which not every server reads; a larger image) is converted once, into ``folder`` (the
    judge's in the run's prepared-image cache)."""
    path = Path(path)
    with open(path, "rb") as handle:
        ext = sniff_image_ext(handle.read(16))
    if ext in _MIME and max(_image_size(path)) <= MAX_SIDE:
        return InlineImage(path, f"data:{_MIME[ext]};base64,")
    converted, mime = _converted(path, folder)
    return InlineImage(converted, f"data:{mime};base64,")


def _image_size(path: Path) -> tuple[int, int]:
    from PIL import Image

    try:
        with Image.open(path) as image:  # reads the header only
            size: tuple[int, int] = image.size  # (width, height): mypy reads a `with Image.open()` target as Any
            return size
    except OSError as exc:
        raise JudgeError(f"{path}: not an image the judge can be shown ({exc})", retryable=False) from None


def _converted(path: Path, folder: Path) -> tuple[Path, str]:
    """``path`` as a PNG (or a JPEG, when it was one) within MAX_SIDE, made once per file version in ``folder``;
    (file, MIME type)."""
    from ..engine.limits import exclusive
    from ..files import atomic_write_bytes
    from ..providers.images import EXT, MIME, ImageLimits, fit

    stat = path.stat()
    key = hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{MAX_SIDE}".encode()).hexdigest()[:24]
    folder.mkdir(parents=True, exist_ok=True)
    with exclusive(folder / f".{key}.lock"):  # the ten repeats of a task are judged at once: convert it once
        for fmt in ("png", "jpeg"):
            done = folder / f"{key}.{EXT[fmt]}"
            if done.is_file():
                return done, MIME[fmt]
        limits = ImageLimits(max_side=MAX_SIDE, formats=("png", "jpeg"), convert_to="png")
        try:
            data, fmt = fit(path.read_bytes(), limits, where=str(path))
        except ImageError as exc:
            raise JudgeError(f"{exc}", retryable=False) from None
        target = folder / f"{key}.{EXT[fmt]}"
        atomic_write_bytes(target, data)
    return target, MIME[fmt]


def _message_text(response: httpx.Response) -> str | None:
    try:
        content = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise UnparseableReply(f"reply body is not a chat completion: {response.text[:120]!r}") from None
    if isinstance(content, list):  # some servers answer with content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else None


def _reply_model(response: httpx.Response) -> Any:
    """The reply's ``model``: the model that answered (chat completions name a dated snapshot of an alias)."""
    body = response.json()
    return body.get("model") if isinstance(body, dict) else None


def _usage(response: httpx.Response) -> dict[str, int]:
    usage = response.json().get("usage") or {}
    return {k: v for k, v in usage.items() if k in ("prompt_tokens", "completion_tokens") and isinstance(v, int)}
