"""One differential run: the same request through our adapter and through the official SDK, to one recorder.

A route's ``Case`` (cases/<route>.py) says how its provider answers (so both
sides finish their call, polls included), how the official SDK is pointed at the
recorder and called with the same task, references, seed and options, and which
differences it documents as harmless.  The size or aspect ratio the SDK asks for
comes from expected.py (the documented rule, per task shape), never from our
adapter.  The whole exchange is compared: every request (submission, polls,
downloads) in order, headers included.
"""

from __future__ import annotations

import base64
import importlib
import io
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

from PIL import Image

from pytest_hypeedit.engine.call_context import GenerationContext
from pytest_hypeedit.engine.journal import Journal
from pytest_hypeedit.providers import BUILTIN_ROUTES
from pytest_hypeedit.providers.base import GenerationRequest, Provider, seed_for
from pytest_hypeedit.providers.runtime import Runtime
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.secrets import KEY_ENV
from pytest_hypeedit.tasks import Task
from pytest_hypeedit.transport.http import RetryPolicy

from .expected import expected
from .recorder import Recorded, Recorder, Reply
from .shapes import SHAPES, Shape
from .wire import KEY, MISSING, Allow, Difference, differences, normal, sniff, unexplained

#: Not ASCII on purpose: a prompt must reach the provider as the same UTF-8 text through JSON and multipart.
INSTRUCTION = "Make the mug blue \u2014 keep the \u201cCaf\u00e9\u201d logo exactly as it is."
#: The id our adapters are given for their paid request (``Journal.call_id``, engine/journal.py new_call_id's
#: format); the SDK side is given the same one, so the header that carries it is compared by value.
CALL_ID = "20261126120000sdkdiffCallId0123456"
NO_RETRIES = RetryPolicy(max_attempts=1)
#: Both sides' wait between polls (our ``options.poll_s``; an SDK's own setting, per case).
QUICK_POLL_S = 0.01


def output_png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (20, 120, 220)).save(buffer, format="PNG")
    return buffer.getvalue()


OUTPUT = output_png()


def reference_files(folder: Path, shape: Shape) -> tuple[Path, ...]:
    """The shape's references, JPEG and PNG in turn; every route takes them as they are (no re-encoding):
    each at least 384 px a side (DashScope's minimum), under 1 MP (BFL's cap), within 1:3..3:1 (ModelArk
    pads others), so the bytes the SDK reads from the file are the bytes our adapter must send."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, (width, height) in enumerate(shape.references, start=1):
        path = folder / (f"{index:03d}.jpg" if index % 2 else f"{index:03d}.png")
        colour = (200 - 40 * index, 40 * index, 90)
        if index % 2:
            Image.new("RGB", (width, height), colour).save(path, format="JPEG", quality=90)
        else:
            Image.new("RGB", (width, height), colour).save(path, format="PNG")
        paths.append(path)
    return tuple(paths)


def data_uri(path: Path) -> str:
    data = path.read_bytes()
    return f"data:{sniff(data)};base64,{base64.b64encode(data).decode()}"


@dataclass(frozen=True)
class Call:
    """What both sides are asked to send, and where."""

    spec: ModelSpec
    request: GenerationRequest
    provider: Provider  # our adapter; the SDK side never asks it anything (expected.py says what it must send)
    base: str  # the recorder's URL
    shape: Shape

    @property
    def references(self) -> tuple[Path, ...]:
        return self.request.references

    @property
    def options(self):
        return self.spec.options

    @property
    def expected(self):
        """The size or aspect ratio the request must carry for this task (expected.py, the documented rule)."""
        return expected(self.spec.provider_model, self.shape.name)


class Case:
    """How one route is compared with its provider's official SDK (subclassed per route in cases/)."""

    route: ClassVar[str]
    #: The official SDK's distribution on PyPI ("" when the provider publishes none: then ``send_with_sdk``
    #: sends the request its documentation shows, and ``validate`` checks it against its published schema).
    sdk: ClassVar[str]
    #: The <PROVIDER> of HYPEEDIT_<PROVIDER>_BASE_URL, and what our adapter's base adds to the server URL.
    provider_env: ClassVar[str]
    adapter_base: ClassVar[str] = ""
    #: Differences that do not matter, each with why (see wire.Allow).
    allowed: ClassVar[tuple[Allow, ...]] = ()

    def answer(self, recorder: Recorder, request: Recorded) -> Reply:
        raise NotImplementedError

    def send_with_sdk(self, call: Call) -> None:
        """The whole exchange as the SDK (or the documentation) makes it: the submission, every poll and the
        download of the result, in order; values by the task and expected.py, never by our adapter."""
        raise NotImplementedError

    def validate(self, call: Call, ours: Recorded) -> None:
        """Raise AssertionError when our request fails the SDK's (or the published schema's) own checks."""


def file_reply(request: Recorded) -> Reply | None:
    """The generated image, for a download of ``/files/out.png`` (every case's result URL)."""
    if request.method == "GET" and request.path == "/files/out.png":
        return Reply(200, OUTPUT, {"content-type": "image/png"})
    return None


def download(url: str) -> None:
    """A result file fetched as every provider documents it: a plain GET of the URL it returned, no key."""
    import httpx

    httpx.get(url).raise_for_status()


@dataclass
class Comparison:
    """Both sides' whole exchanges (every request, in order), and what our adapter raised, if anything."""

    case: Case
    call: Call
    ours: list[Recorded]
    theirs: list[Recorded]
    error: BaseException | None = None

    @property
    def found(self) -> list[Difference]:
        return exchange_differences(self.ours, self.theirs)

    @property
    def unexplained(self) -> list[Difference]:
        return unexplained(self.found, self.case.allowed)

    @property
    def failed(self) -> bool:
        return self.error is not None or bool(self.unexplained)

    def report(self) -> str:
        lines = [f"{self.call.spec.name} ({self.case.route}, {self.call.shape.name} task): our exchange differs "
                 f"from {self.case.sdk or 'the docs'}'s:"]
        lines += [f"  {difference}" for difference in self.unexplained]
        if self.error is not None:
            lines.append(f"  our adapter raised {type(self.error).__name__}: {self.error}")
        return "\n".join(lines)


def exchange_differences(ours: list[Recorded], theirs: list[Recorded]) -> list[Difference]:
    """Request i of ours against request i of theirs; a request only one side sent is a difference itself."""
    found: list[Difference] = []
    for index in range(max(len(ours), len(theirs))):
        if index >= len(ours) or index >= len(theirs):
            found.append(Difference("request", headline(ours, index), headline(theirs, index), index))
            continue
        found += [replace(difference, request=index)
                  for difference in differences(normal(ours[index]), normal(theirs[index]))]
    return found


def headline(requests: list[Recorded], index: int) -> object:
    return f"{requests[index].method} {requests[index].path}" if index < len(requests) else MISSING


def make_call(spec: ModelSpec, folder: Path, base: str, shape: Shape) -> Call:
    references = reference_files(folder / "refs", shape)
    task = Task(task_id="task-sdkdiff", input_images=tuple(path.name for path in references),
                task_types=("object_edit",), instruction=INSTRUCTION, width=shape.width, height=shape.height,
                split="public")
    request = GenerationRequest(task, 3, seed_for(task.task_id, 3), references, spec,
                                call=GenerationContext(journal=Journal(call_id=CALL_ID)))
    return Call(spec, request, adapter(spec, folder), base, shape)


def adapter(spec: ModelSpec, folder: Path) -> Provider:
    """The built-in adapter of the spec's route, with no retries (the recorder never fails) and its own cache."""
    module, name = BUILTIN_ROUTES[spec.route].split(":")
    cls = getattr(importlib.import_module(module), name)
    return cls(spec, runtime=Runtime(cache_dir=folder / "cache", policy=NO_RETRIES))


def run(case: Case, spec: ModelSpec, folder: Path, monkeypatch, shape: Shape = SHAPES["landscape"]) -> Comparison:
    """Our adapter's exchange and the SDK's, for the same task, recorded by one loopback server."""
    with Recorder(case.answer) as recorder:
        for name in KEY_ENV.get(case.route, ()):
            monkeypatch.delenv(name, raising=False)
        # every exchange is plain HTTP to the recorder, so no certificate is ever checked; yet each HTTP client an
        # SDK (or download()) opens loads the CA bundle it is given, and certifi's whole bundle was half of every
        # case's CPU (three clients a case): httpx, which most SDKs use, reads this variable instead
        monkeypatch.setenv("SSL_CERT_FILE", str(one_certificate(folder)))
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        monkeypatch.setenv(KEY_ENV[case.route][-1], KEY)
        monkeypatch.setenv(f"HYPEEDIT_{case.provider_env}_BASE_URL", recorder.url + case.adapter_base)
        # polls at once: how long a side waits between polls is not on the wire (replicate's 1 s wait made each
        # of its cases ~1.8 s)
        call = make_call(replace(spec, options=MappingProxyType({**spec.options, "poll_s": QUICK_POLL_S})), folder,
                         recorder.url, shape)
        error = None
        try:
            call.provider.generate(call.request)
        except Exception as exc:  # reported with the differences: a plant may make the exchange go wrong
            error = exc
        finally:
            call.provider.close()
        ours = recorder.take()
        case.send_with_sdk(call)
        theirs = recorder.take()
    return Comparison(case, call, ours, theirs, error)


def one_certificate(folder: Path) -> Path:
    """A CA bundle of one certificate (certifi's first): valid for any client that loads it, and quick to load."""
    import certifi

    bundle = Path(certifi.where()).read_text()
    end = "-----END CERTIFICATE-----"
    path = folder / "one-ca.pem"
    path.write_text(bundle[bundle.index("-----BEGIN CERTIFICATE-----"):bundle.index(end) + len(end)] + "\n")
    return path


def spec_of(name: str, route: str, provider_model: str, price: float = 0.1, **options: Any) -> ModelSpec:
    """A model entry as models.yaml or a --models-file would give it (for the manual's other-route examples)."""
    return ModelSpec(name=name, route=route, provider_model=provider_model, price=price,
                     options=MappingProxyType(dict(options)))
