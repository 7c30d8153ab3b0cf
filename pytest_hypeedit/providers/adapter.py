"""What every httpx adapter shares: its client, key, base URL, references, downloads and checks.

A subclass sets ``route``, ``key_env``, ``provider`` (the <PROVIDER> of
``HYPEEDIT_<PROVIDER>_BASE_URL``), ``default_base`` and ``image_limits``, and
implements ``generate``.  Everything that talks HTTP goes through one client
built by ``make_http_client`` (retries, limits, timeouts, deadlines, caps, key
hosts), downloads of result URLs included.  A route whose replies name URLs to
call with the key lists the other hosts its provider documents for its API in
``api_hosts`` (with the documentation cited); result files are fetched without
a key, from wherever the reply says.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterator, Sequence

import httpx

from ..errors import ModelGone, ProviderError, Refusal
from ..registry import ModelSpec
from ..secrets import base_url, key_for, redact
from ..text import image_problem
from ..transport.addresses import base_url_variable, quoted, url_problem
from ..transport.body import json_request
from ..transport.bounds import JSON_CAP, image_cap_of, inline_cap
from ..transport.http import download_to, raise_for_status, request_id_of, send
from ..transport.keycheck import KeyProbe
from ..transport.keyhosts import KeyHosts, key_hosts
from .base import Generation, GenerationRequest, Provider, sniff_image_ext
from .images import IMAGE_WORK, ImageLimits, PixelsTooMany, PreparedImage, open_checked, prepare_references
from .runtime import Runtime

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.preview import Preview

#: Statuses of a result-URL download that mean "gone" (a signed URL past its expiry).
EXPIRED = frozenset({403, 404, 410})


class HttpProvider(Provider):
    provider: ClassVar[str] = ""
    default_base: ClassVar[str] = ""
    image_limits: ClassVar[ImageLimits] = ImageLimits()
    timeout: ClassVar[float] = 180.0  # seconds per HTTP read; image models are slow
    #: Hosts besides the base URL's that the provider documents for its API, where URLs from its replies
    #: may point and the key may go (https only); each route cites its documentation.
    api_hosts: ClassVar[tuple[str, ...]] = ()
    #: Whether the API's JSON replies may carry the image inline (base64): their cap is then an image's.
    inline_images: ClassVar[bool] = True

    def __init__(self, spec: ModelSpec, *, runtime: Runtime | None = None):
        super().__init__(spec)
        # the run's (the glue passes it in); made without one, a runtime of its own, never another run's
        self.runtime = runtime if runtime is not None else Runtime()
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        self._prepared: dict[tuple[str, str, tuple[Path, ...]], tuple[PreparedImage, ...]] = {}  # split, task, refs
        self._gone: ModelGone | None = None  # the provider said this model id does not exist (any more)

    # ------------------------------------------------------------------ plumbing
    @property
    def key(self) -> str:
        return key_for(self.route, self.key_env)

    @property
    def base(self) -> str:
        """The API's address (``HYPEEDIT_<PROVIDER>_BASE_URL`` moves it); one no request can go to is an error
        before anything is sent (start-up does not accept it first: transport/addresses.py)."""
        base = base_url(self.provider or self.route, self.default_base)
        problem = url_problem(base)
        if problem is not None:
            raise self.error(f"{self.route}: not sent: its address {quoted(base)} "
                             f"({base_url_variable(self.provider or self.route)}) cannot be used: {problem}",
                             retryable=False)
        return base

    @property
    def client(self) -> httpx.Client:
        # Built on first use: listing models or reusing results from disk needs no key.
        with self._lock:
            if self._client is None:
                try:
                    timeout = float(self.spec.options.get("timeout_s", self.timeout))
                    self._client = self.make_client(timeout)
                except (TypeError, ValueError) as exc:  # an option start-up did not see (transport/addresses.py)
                    raise self.error(f"{self.route} {self.spec.name}: not sent: its options cannot make a client "
                                     f"({exc})", retryable=False) from None
            return self._client

    @property
    def key_hosts(self) -> KeyHosts:
        return key_hosts(self.route, self.base, self.api_hosts)

    @property
    def image_cap(self) -> int:
        """The cap of a result file, decoded: ``options.max_image_mb`` or bounds.IMAGE_CAP."""
        return image_cap_of(self.spec.options)

    def make_client(self, timeout: float) -> httpx.Client:
        from ..transport.http import make_http_client

        deadline = self.spec.options.get("deadline_s")
        return make_http_client(self.route, secrets=(self.key,), timeout=timeout, policy=self.runtime.policy,
                                limiter=self.runtime.limiter_for(self.spec), transport=self.runtime.transport,
                                deadline_s=None if deadline is None else float(deadline),
                                reply_cap=inline_cap(self.image_cap) if self.inline_images else JSON_CAP,
                                download_cap=self.image_cap, key_hosts=self.key_hosts)

    def probe(self, method: str, url: str, headers: dict[str, str], *, doc: str, body: Any = None,
              hosts: KeyHosts | None = None) -> KeyProbe:
        """The route's key check (``key_probe``): the free ``method url`` with the key in ``headers``, to the
        route's own key hosts unless ``hosts`` says otherwise; ``doc`` is the provider's page for the call."""
        from ..engine.rejected_keys import variable_sent

        return KeyProbe(user=f"route {self.route}", route=self.route, variable=variable_sent(self.key_env),
                        method=method, url=url, headers=headers, secret=self.key, hosts=hosts or self.key_hosts,
                        body=body, doc=doc)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def what(self, request: GenerationRequest) -> str:
        """Who answered, for messages: the route and the provider's model id.  Not the task, model or repeat:
        the item's line names the candidate once (glue/items.py)."""
        return f"{self.route} {self.spec.provider_model}"

    # ------------------------------------------------------------------ inputs
    def references(self, request: GenerationRequest) -> tuple[PreparedImage, ...]:
        """The task's images within this route's limits, prepared once per task x route (on disk), and
        remembered here: the ten repeats of a task do not look for them on disk ten times."""
        key = (request.task.split, request.task.task_id, request.references)
        prepared = self._prepared.get(key)
        if prepared is None:
            prepared = prepare_references(request.references, self.image_limits, self.runtime.images_dir(),
                                          task_id=request.task.task_id, route=self.route)
            self._prepared[key] = prepared
        return prepared

    # ------------------------------------------------------------------ HTTP
    def paid_call_headers(self, request: GenerationRequest) -> dict[str, str]:
        """The key as a bearer token, and the journaled call id as ``X-Client-Request-Id``: the caller's own id
        of a paid request, which the provider's support can look a call up by (ark, openai)."""
        headers = {"Authorization": f"Bearer {self.key}"}
        if request.call.journal.call_id:
            headers["X-Client-Request-Id"] = request.call.journal.call_id
        return headers

    def call(self, method: str, url: str, *, request: GenerationRequest | None = None, submits: bool = False,
             download: bool = False, **kwargs: Any) -> httpx.Response:
        """One HTTP request under the route's policy, as part of the call for ``request``: it carries the
        request's in-flight slots (``GenerationRequest.call.slots``), so it takes no second one, from whatever
        thread it is sent (without ``request``, it takes its own).  ``submits=True`` for the request that
        submits a paid job to a submit-then-poll route: it is never sent again once it may have reached the
        provider; ``download=True`` for a result file's URL (storage, not the API: no request-per-minute
        token).  A ``json=`` body that carries images (``InlineImage``) is streamed from their files."""
        if self._gone is not None and not download:
            # No call of a model id the provider says does not exist can succeed: not asked again.
            raise ModelGone(str(self._gone), status=self._gone.status)
        if "json" in kwargs:
            kwargs.update(json_request(kwargs.pop("json"), kwargs.pop("headers", None)))
        return send(self.client, method, url, route=self.route, model=self.spec.name, submits=submits,
                    download=download, slots=request.call.slots if request is not None else (), **kwargs)

    def check(self, response: httpx.Response) -> None:
        raise_for_status(response, route=self.route, model=self.spec.name)

    def json_of(self, response: httpx.Response, what: str) -> Any:
        """The decoded JSON of a successful reply; malformed JSON is a (retryable) ProviderError."""
        try:
            return response.json()
        except ValueError:
            excerpt = redact(response.text[:120])
            raise ProviderError(f"{what}: HTTP {response.status_code} reply is not JSON: {excerpt!r}",
                                retryable=True, status=response.status_code) from None

    def download(self, url: object, what: str, *, headers: dict[str, str] | None = None,
                 gone: Callable[[int], Exception | None] | None = None,
                 request: GenerationRequest | None = None, request_id: str | None = None) -> bytes | Path:
        """Fetch a returned image URL at once (signed URLs expire) with the same client and policy, straight
        into a file (a 2K image in flight is held on disk, not in memory) in the request's landing folder (the
        candidate's folder in the outputs: paid bytes never depend on the cache's disk); a data URL's bytes as
        they are.  A URL that no request can go to (a newline, ``http://[::1/x.png``, no http(s)) is the answered
        call's failure: a Refusal at the call's price (it was paid), never a call to buy again."""
        if isinstance(url, str) and url.startswith("data:"):
            return decode_data_url(url, what, cost=self.paid_for(request), request_id=request_id)
        problem = url_problem(url)
        if problem is not None:
            raise Refusal(f"{what}: the reply's result URL {quoted(url)} cannot be fetched: {problem}; the call "
                          "was answered (and paid), so it is not bought again", cost=self.paid_for(request),
                          request_id=request_id)
        assert isinstance(url, str)  # url_problem says so

        def expired(status: int) -> Exception | None:
            if status not in EXPIRED:
                return None
            return ProviderError(redact(f"{what}: the result URL answered HTTP {status} (expired or gone); "
                                        "the image was generated but cannot be fetched"), retryable=True, status=status)

        folder = request.call.landing if request is not None and request.call.landing is not None \
            else self.runtime.downloads_dir()
        return download_to(self.client, url, folder, route=self.route, model=self.spec.name, headers=headers,
                           gone=gone or expired, slots=request.call.slots if request is not None else ())

    def paid_for(self, request: GenerationRequest | None) -> float:
        """What an answered call cost when its reply cannot be used and says no price: its worst case."""
        return self.worst_case_cost(request) if request is not None else self.spec.price

    # ------------------------------------------------------------------ outputs
    def generation(self, request: GenerationRequest, data: bytes | Path, *, cost: float | None = None,
                   request_id: str | None = None, seed: int | None = None, **extra: Any) -> Generation:
        """A checked Generation: the image (bytes, or a downloaded file) must decode (a truncated or foreign
        file is a Refusal)."""
        cost = self.spec.price if cost is None else cost
        previews: list[Preview] = []
        try:
            ext = decoded_ext(data, self.what(request), request_id=request_id, cost=cost, previews=previews)
        except Refusal:
            if isinstance(data, Path):
                data.unlink(missing_ok=True)
            raise
        extra = {k: v for k, v in extra.items() if v is not None}
        return Generation(image=data, ext=ext, cost=cost, provider_model=self.spec.provider_model,
                          seed=seed, request_id=request_id, extra=extra, preview=previews[0] if previews else None)

    def gone(self, reply: str, *, status: int | None = None) -> ModelGone:
        """The final error for the provider's "this model does not exist / was retired" reply (``reply`` quotes
        it), with the shutdown date and successor when retirements.yaml knows the id; this adapter's later
        calls raise it without a request."""
        from ..retirements import model_gone

        self._gone = model_gone(self.spec, redact(reply), status=status)
        return self._gone

    @staticmethod
    def error(message: str, *, retryable: bool = True, status: int | None = None) -> ProviderError:
        """A ProviderError whose message is redacted (it may quote the provider's reply)."""
        return ProviderError(redact(message), retryable=retryable, status=status)

    def refusal(self, request: GenerationRequest, reason: str, *, request_id: str | None = None,
                cost: float = 0.0) -> Refusal:
        return Refusal(redact(f"{self.what(request)}: {reason}"), cost=cost, request_id=request_id)


# --------------------------------------------------------------------------- helpers


def decoded_ext(data: bytes | Path, what: str, *, request_id: str | None = None, cost: float | None = None,
                previews: list[Preview] | None = None) -> str:
    """The extension of an image (bytes, or a file) that fully decodes; else a Refusal (an undecodable
    file from the model is a refusal: docs/reference/results.md, "Outcomes of one candidate").  Formats other than PNG/JPEG/WebP are refused too: readers
    accept only those.  So is an image of more pixels than ``images.MAX_IMAGE_PIXELS``, before it is decoded:
    the model answered, and paid for, with an image no one can use here (a 12000 x 12000 PNG is 140 KB on
    the wire and 430 MB decoded), so it is the model's failed attempt, not a fault of the call to retry.
    ``previews``: a list that receives the image's preview for the pixel signals (engine/signals.py)."""
    if isinstance(data, Path):
        with open(data, "rb") as handle:
            head, size = handle.read(16), data.stat().st_size
    else:
        head, size = data[:16], len(data)
    ext = sniff_image_ext(head)
    if ext is None:
        raise Refusal(f"{what}: the returned file is not a PNG, JPEG or WebP image ({size} bytes)",
                      cost=cost, request_id=request_id)
    source = data if isinstance(data, Path) else io.BytesIO(data)
    try:
        # a 2K image decoded is 12 MB: a few at a time
        with IMAGE_WORK, open_checked(source, f"the returned {ext} image") as image:
            image.load()
            if previews is not None:  # the pixel signals' copy, while the image is decoded (engine/signals.py)
                from ..engine.signals import preview_of

                previews.append(preview_of(image))
    except PixelsTooMany as exc:
        raise Refusal(f"{what}: {exc}", cost=cost, request_id=request_id) from None
    except Exception as exc:  # PIL raises OSError, SyntaxError, ValueError... on bad files
        raise Refusal(f"{what}: the returned {ext} image cannot be decoded ({type(exc).__name__}: "
                      f"{image_problem(exc)[:80]})", cost=cost, request_id=request_id) from None
    return ext


def reply_id(value: Any) -> str | None:
    """A request id read from a reply's JSON, as the record keeps it: text as it is, a number as text (as
    records.check_fields reads one back), anything else (an object, a list, true) None.  A record whose
    ``request_id`` is not text or a number cannot be read back, and its paid candidate would be bought again."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def decode_base64(text: str, what: str, *, cost: float | None = None, request_id: str | None = None) -> bytes:
    """``text`` decoded; else a Refusal of an answered call (``cost``: what it was billed, when the caller knows)."""
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError, TypeError):
        raise Refusal(f"{what}: the returned base64 image is not valid base64", cost=cost,
                      request_id=request_id) from None


def decode_data_url(url: str, what: str, *, cost: float | None = None, request_id: str | None = None) -> bytes:
    header, _, payload = url.partition(",")
    if ";base64" not in header:
        raise Refusal(f"{what}: the returned data URL is not base64 ({header[:40]!r})", cost=cost,
                      request_id=request_id)
    return decode_base64(payload, what, cost=cost, request_id=request_id)


def size_at_pixels(width: int, height: int, pixels: float, *, multiple: int = 16,
                   min_side: int = 64, max_side: int | None = None) -> tuple[int, int]:
    """A width x height near ``pixels`` in area with the task's aspect ratio, sides multiples of ``multiple``."""
    ratio = width / height
    w, h = math.sqrt(pixels * ratio), math.sqrt(pixels / ratio)
    if max_side and max(w, h) > max_side:
        scale = max_side / max(w, h)
        w, h = w * scale, h * scale

    def snap(x: float) -> int:
        value = max(min_side, multiple * round(x / multiple))
        return min(value, max_side - max_side % multiple) if max_side else value

    return snap(w), snap(h)


def size_in_pixel_range(width: int, height: int, low: float, high: float, *, pixels: float | None = None,
                        multiple: int = 16) -> tuple[int, int]:
    """The task's aspect ratio at ``pixels`` (default: its own area) brought into [low, high] pixels, sides
    multiples of ``multiple``, still within the range after rounding (a model that bounds total pixels does not
    accept a size past them)."""
    area = width * height if pixels is None else pixels
    w, h = size_at_pixels(width, height, min(max(area, low), high), multiple=multiple)
    while w * h > high:  # rounding went over: the long side gives way
        w, h = (w - multiple, h) if w >= h else (w, h - multiple)
    while w * h < low:  # rounding went under: the short side grows
        w, h = (w + multiple, h) if w <= h else (w, h + multiple)
    return w, h


def nearest_size(width: int, height: int, choices: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """The allowed (w, h) whose aspect ratio is nearest width/height, in log space."""
    target = math.log(width / height)
    return min(choices, key=lambda wh: abs(math.log(wh[0] / wh[1]) - target))


def nearest_ratio(width: int, height: int, ratios: Sequence[str]) -> str:
    """The allowed ``W:H`` nearest width/height, in log space (2:1 and 1:2 are as far from 1:1)."""
    target = math.log(width / height)

    def distance(ratio: str) -> float:
        w, h = (float(x) for x in ratio.split(":"))
        return abs(math.log(w / h) - target)

    return min(ratios, key=distance)


def poll_delays(first: float = 0.5, factor: float = 1.5, cap: float = 5.0) -> Iterator[float]:
    """Waits between polls of an async job: quick at first, then backing off to ``cap``."""
    delay = first
    while True:
        yield delay
        delay = min(delay * factor, cap)


__all__ = ["HttpProvider", "decoded_ext", "reply_id", "decode_base64", "decode_data_url", "size_at_pixels", "size_in_pixel_range",
           "nearest_size",
           "nearest_ratio", "poll_delays", "request_id_of", "EXPIRED"]
