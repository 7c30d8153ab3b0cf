"""One differential run: the same request through our adapter and through the official SDK, to one recorder.

A route's ``Case`` (cases/<route>.py) says how its provider answers (so both
sides finish their call), how the official SDK is pointed at the recorder and
called with the same task, references, seed, size and options, which request
of the exchange is the one to compare (the submission, not the polls), and
which differences it documents as harmless.
"""

from __future__ import annotations

import base64
import importlib
import io
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

from PIL import Image

from pytest_hypeedit.providers import BUILTIN_ROUTES
from pytest_hypeedit.providers.base import GenerationRequest, Provider, seed_for
from pytest_hypeedit.providers.http import RetryPolicy
from pytest_hypeedit.providers.runtime import Runtime
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.secrets import KEY_ENV
from pytest_hypeedit.tasks import Task

from .recorder import Recorded, Recorder, Reply
from .wire import KEY, Allow, Difference, differences, normal, sniff, unexplained

#: Not ASCII on purpose: a prompt must reach the provider as the same UTF-8 text through JSON and multipart.
INSTRUCTION = "Make the mug blue \u2014 keep the \u201cCaf\u00e9\u201d logo exactly as it is."
WIDTH, HEIGHT = 4800, 3584  # a landscape task, as the public split's 4:3 ones
NO_RETRIES = RetryPolicy(max_attempts=1)


def output_png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (20, 120, 220)).save(buffer, format="PNG")
    return buffer.getvalue()


OUTPUT = output_png()


def reference_files(folder: Path) -> tuple[Path, ...]:
    """Two references every route takes as they are (no re-encoding): a JPEG and a PNG, each at least
    384 px a side (DashScope's minimum) and under 1 MP (BFL's cap), so the bytes the SDK reads from the
    file are the bytes our adapter must send."""
    folder.mkdir(parents=True, exist_ok=True)
    first, second = folder / "001.jpg", folder / "002.png"
    Image.new("RGB", (640, 480), (200, 40, 40)).save(first, format="JPEG", quality=90)
    Image.new("RGB", (512, 448), (40, 200, 90)).save(second, format="PNG")
    return first, second


def data_uri(path: Path) -> str:
    data = path.read_bytes()
    return f"data:{sniff(data)};base64,{base64.b64encode(data).decode()}"


@dataclass(frozen=True)
class Call:
    """What both sides are asked to send, and where."""

    spec: ModelSpec
    request: GenerationRequest
    provider: Provider  # our adapter: the values it decides by policy (size, aspect ratio) come from it
    base: str  # the recorder's URL

    @property
    def references(self) -> tuple[Path, ...]:
        return self.request.references

    @property
    def options(self):
        return self.spec.options


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
        raise NotImplementedError

    def compared(self, requests: list[Recorded]) -> Recorded:
        """The request of an exchange that is compared: the first one (the submission) by default."""
        return requests[0]

    def validate(self, call: Call, ours: Recorded) -> None:
        """Raise AssertionError when our request fails the SDK's (or the published schema's) own checks."""


def file_reply(request: Recorded) -> Reply | None:
    """The generated image, for a download of ``/files/out.png`` (every case's result URL)."""
    if request.method == "GET" and request.path == "/files/out.png":
        return Reply(200, OUTPUT, {"content-type": "image/png"})
    return None


@dataclass
class Comparison:
    case: Case
    call: Call
    ours: Recorded
    theirs: Recorded

    @property
    def found(self) -> list[Difference]:
        return differences(normal(self.ours), normal(self.theirs))

    @property
    def unexplained(self) -> list[Difference]:
        return unexplained(self.found, self.case.allowed)

    def report(self) -> str:
        lines = [f"{self.call.spec.name} ({self.case.route}): our request differs from {self.case.sdk or 'the docs'}'s:"]
        lines += [f"  {difference}" for difference in self.unexplained]
        return "\n".join(lines)


def make_call(spec: ModelSpec, folder: Path, base: str) -> Call:
    task = Task(task_id="task-sdkdiff", input_images=("001.jpg", "002.png"), task_types=("object_edit",),
                instruction=INSTRUCTION, width=WIDTH, height=HEIGHT, split="public")
    request = GenerationRequest(task, 3, seed_for(task.task_id, 3), reference_files(folder / "refs"), spec)
    return Call(spec, request, adapter(spec, folder), base)


def adapter(spec: ModelSpec, folder: Path) -> Provider:
    """The built-in adapter of the spec's route, with no retries (the recorder never fails) and its own cache."""
    module, name = BUILTIN_ROUTES[spec.route].split(":")
    cls = getattr(importlib.import_module(module), name)
    return cls(spec, runtime=Runtime(cache_dir=folder / "cache", policy=NO_RETRIES))


def run(case: Case, spec: ModelSpec, folder: Path, monkeypatch) -> Comparison:
    """Our adapter's request and the SDK's, for the same task, recorded by one loopback server."""
    with Recorder(case.answer) as recorder:
        for name in KEY_ENV.get(case.route, ()):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv(KEY_ENV[case.route][-1], KEY)
        monkeypatch.setenv(f"HYPEEDIT_{case.provider_env}_BASE_URL", recorder.url + case.adapter_base)
        call = make_call(spec, folder, recorder.url)
        try:
            call.provider.generate(call.request)
        finally:
            call.provider.close()
        ours = case.compared(recorder.take())
        case.send_with_sdk(call)
        theirs = case.compared(recorder.take())
    return Comparison(case, call, ours, theirs)


def spec_of(name: str, route: str, provider_model: str, price: float = 0.1, **options: Any) -> ModelSpec:
    """A model entry as models.yaml or a --models-file would give it (for the manual's other-route examples)."""
    return ModelSpec(name=name, route=route, provider_model=provider_model, price=price,
                     options=MappingProxyType(dict(options)))
