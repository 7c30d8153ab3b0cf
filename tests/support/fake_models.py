"""The one way to write a test provider: a class in this module, loaded into a pytester run by a two-line conftest.

A pytester test writes ``pytester.makeconftest(models_conftest(...))``.  The conftest it gets puts this folder on
sys.path (so a run in a subprocess or an xdist worker finds it too), imports :func:`plugin` and binds what it
returns: the provider class as ``FakeModel`` (a conftest appended after it may wrap ``FakeModel.generate``) and the
two hooks that add the models and make their providers.  No provider's source is pasted into a string.

:class:`FakeProvider` covers what most runs need: each call logged to ``$CALL_LOG`` (one line per call, as
``log`` says), then an image (the task's first reference, or a PNG/JPEG of a colour of its own per task and
repeat).  The knobs are keywords of :func:`models_conftest`; a provider with behaviour of its own is a subclass
here, named by ``provider=``.  Providers import only the plugin's public names, but for :class:`SlowProvider`,
which sends through the plugin's own HTTP client (the pool's slots are what its tests are about), and
:class:`SlowIdentity`, the built-in identity provider slowed down.  Test judges
are classes the same way, in fake_judges.py.
"""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_hypeedit import Generation, GenerationRequest, Provider, ProviderError, Refusal

SUPPORT = Path(__file__).resolve().parent

#: The model most runs buy from: route "paid", 4 cents a candidate.
PAID = {"name": "paid", "route": "paid", "provider_model": "paid-v1", "price": 0.04}
#: A second, dearer model on the same route.
PAID_B = {"name": "paid-b", "route": "paid", "provider_model": "paid-v2", "price": 0.10}


class FakeProvider(Provider):
    """Logs each call, then answers with an image; the class attributes are :func:`models_conftest`'s knobs."""

    route = "paid"
    #: A line per call in $CALL_LOG (when set), formatted with task, model and repeat; None: no log.
    log: str | None = "{task} {repeat}"
    #: "reference": the task's first reference image; "png" or "jpeg": a colour of its own per task and repeat.
    image = "reference"
    #: None: the model's price.
    cost: float | None = None
    #: None: the model's provider_model.
    provider_model: str | None = None
    #: "request": the request's seed; an int: that plus the repeat; None: no seed.
    seed: str | int | None = None
    #: Set: task-00's repeat 1 fails with an HTTP 503 (only while the environment variable it names is set, when
    #: it is a string; always, when True).
    flaky: bool | str = False

    def generate(self, request: GenerationRequest) -> Generation:
        self.log_call(request)
        self.misbehave(request)
        if self.flaky and request.task.task_id == "task-00" and request.repeat == 1 and (
                self.flaky is True or os.environ.get(str(self.flaky))):
            raise ProviderError(f"HTTP 503 from {self.route} after 3 attempts")
        data, ext = self.make_image(request)
        return Generation(image=data, ext=ext, cost=request.spec.price if self.cost is None else self.cost,
                          provider_model=self.provider_model or request.spec.provider_model, seed=self.seed_of(request))

    def log_call(self, request: GenerationRequest) -> None:
        if self.log is not None and "CALL_LOG" in os.environ:
            with open(os.environ["CALL_LOG"], "a") as log:
                log.write(self.log.format(task=request.task.task_id, model=request.spec.name,
                                          repeat=request.repeat) + "\n")

    @staticmethod
    def misbehave(request: GenerationRequest) -> None:
        """$PAID_BEHAVIOUR "refuse" or "error": repeat 1 of every task is refused or fails after retries."""
        behaviour = os.environ.get("PAID_BEHAVIOUR", "")
        if behaviour == "refuse" and request.repeat == 1:
            raise Refusal("moderation_blocked")
        if behaviour == "error" and request.repeat == 1:
            raise ProviderError("HTTP 503 from paid after 3 attempts")

    def make_image(self, request: GenerationRequest) -> tuple[bytes, str]:
        if self.image == "reference":
            return request.references[0].read_bytes(), "png"
        from PIL import Image

        index = int(request.task.task_id.rsplit("-", 1)[1]) if request.task.task_id[-1:].isdigit() else 0
        buffer = io.BytesIO()
        Image.new("RGB", (20, 12), (40 * index % 256, 60 * request.repeat % 256, 99)).save(
            buffer, format=self.image.upper())
        return buffer.getvalue(), "jpg" if self.image == "jpeg" else "png"

    def seed_of(self, request: GenerationRequest) -> int | None:
        if self.seed == "request":
            return request.seed
        return None if self.seed is None else int(self.seed) + request.repeat

    @classmethod
    def serves(cls, spec: Any) -> bool:
        """Whether the make_provider hook makes this provider for ``spec``: the models on its route."""
        return spec.route == cls.route

    @classmethod
    def made(cls, config: Any, spec: Any) -> FakeProvider:
        """The provider the make_provider hook makes for ``spec`` in the run of ``config``."""
        return cls(spec)


class ReleaseProvider(FakeProvider):
    """The report's two releases: with $HX_RELEASE=old, the reference's negative (a baseline that looks apart)."""

    def make_image(self, request: GenerationRequest) -> tuple[bytes, str]:
        data, ext = super().make_image(request)
        if os.environ.get("HX_RELEASE") != "old":
            return data, ext
        from PIL import Image, ImageOps

        out = io.BytesIO()
        ImageOps.invert(Image.open(io.BytesIO(data)).convert("RGB")).save(out, format="PNG")
        return out.getvalue(), "png"


class ModelIdProvider(FakeProvider):
    """An image that shows which release made it: red for provider model ``pass_model``, and on repeat 1 of every
    other model; blue otherwise (fake_judges.PixelJudge passes the red ones)."""

    pass_model = "ep-rel-a"

    def make_image(self, request: GenerationRequest) -> tuple[bytes, str]:
        from PIL import Image

        red = request.spec.provider_model == self.pass_model or request.repeat == 1
        buffer = io.BytesIO()
        Image.new("RGB", (20, 12), (220, 10, 10) if red else (10, 10, 220)).save(buffer, format="PNG")
        return buffer.getvalue(), "png"


class EchoProvider(FakeProvider):
    """A plugin's own provider whose errors and refusals quote its key (no HTTP helper redacts them): repeat 1
    fails, repeat 2 is refused, repeat 3 is the reference."""

    def misbehave(self, request: GenerationRequest) -> None:
        key = os.environ[self.key_env[0]]
        if request.repeat == 1:
            raise ProviderError(f"HTTP 401 from {self.route}: key {key} rejected", retryable=False)
        if request.repeat == 2:
            raise Refusal(f"moderation flagged the request signed {key}")


class HostileProvider(FakeProvider):
    """With $HOSTILE set, its errors, refusals and request ids quote ``hostile`` (as a provider's error body would):
    task-00 fails (huge) then is refused, task-02 meets an image error (huge) then a bug of the adapter."""

    hostile = ""

    def misbehave(self, request: GenerationRequest) -> None:
        from pytest_hypeedit.errors import ImageError  # not a provider's to raise: one of ours, not a call error

        if not os.environ.get("HOSTILE") or request.task.task_id not in ("task-00", "task-02"):
            return
        if request.task.task_id == "task-00":
            if request.repeat == 1:
                raise ProviderError(self.hostile + "e" * 200_000, retryable=False)
            raise Refusal(self.hostile)
        if request.repeat == 1:
            raise ImageError(self.hostile + "i" * 200_000)
        raise ValueError(self.hostile)  # a bug of the adapter, quoting what it got

    def generate(self, request: GenerationRequest) -> Generation:
        generation = super().generate(request)
        generation.request_id = self.hostile if os.environ.get("HOSTILE") else "req-1"
        return generation


class SlowProvider(FakeProvider):
    """The pool's provider (tests/engine/test_pool.py), for the models on the routes ``route-*``: asks the loopback
    server at $SLOW_URL (which takes its time) at ``/<route>``, through the plugin's own HTTP client (internal: the
    request is sent as part of the call the pool holds the route's slot for, so it takes no second slot); then
    refuses when $REFUSE_ROUTE is "all" or its route, else returns the first reference."""

    log = "{task} {model} {repeat}"

    def __init__(self, spec: Any, limiter: Any = None):
        super().__init__(spec)
        from pytest_hypeedit.transport.http import RetryPolicy, make_http_client

        self.client = make_http_client(spec.route, policy=RetryPolicy(max_attempts=8, base_delay=0.05),
                                       limiter=limiter)

    @classmethod
    def made(cls, config: Any, spec: Any) -> FakeProvider:
        """With the run's limiter of its route, the one the pool's admission of the route holds (passed in)."""
        from pytest_hypeedit.glue.stash import RUNTIME_KEY

        return cls(spec, limiter=config.stash[RUNTIME_KEY].limiter_for(spec))

    @classmethod
    def serves(cls, spec: Any) -> bool:
        return spec.route.startswith("route-")

    def misbehave(self, request: GenerationRequest) -> None:
        from pytest_hypeedit.transport.http import send

        send(self.client, "GET", os.environ["SLOW_URL"] + "/" + request.spec.route, route=request.spec.route,
             model=request.spec.name, slots=request.call.slots).raise_for_status()
        if os.environ.get("REFUSE_ROUTE") in ("all", request.spec.route):
            raise Refusal("refused, to fail the item")


class CountingProvider(FakeProvider):
    """Every call is one billed generation, written down in $BILLED_DIR/<pid>.txt (a file per process, so the
    count holds under -n 2), after $SLOW seconds (0 when unset)."""

    def log_call(self, request: GenerationRequest) -> None:
        time.sleep(float(os.environ.get("SLOW", "0")))
        with open(os.path.join(os.environ["BILLED_DIR"], f"{os.getpid()}.txt"), "a") as bill:
            bill.write(f"{request.task.task_id} {request.repeat}\n")


class HalfPriceProvider(FakeProvider):
    """Says repeat 1 was served at the batch tier, at half the model's price; the other repeats at standard."""

    def generate(self, request: GenerationRequest) -> Generation:
        generation = super().generate(request)
        if request.repeat == 1:
            generation.tier, generation.cost = "batch", request.spec.price / 2
        else:
            generation.tier = "standard"
        return generation


class ServingProvider(FakeProvider):
    """A model served differently by its routes ``serve-*`` (tests/e2e/test_serving_run.py): a red image (which
    fake_judges.PixelJudge passes) with chance ``pass_rates[route]``, from a coin seeded by route, task and repeat
    (the same run after run; ``salt`` draws other coins, as another run of the same serving would); odd repeats are
    slow replies (``slow_s`` seconds), and with ``slow_pass_rate`` set a slow reply is red with that chance instead
    (a pass rate that falls with latency)."""

    pass_rates: dict[str, float] = {}
    slow_s = 0.0
    slow_pass_rate: float | None = None
    salt = ""

    @classmethod
    def serves(cls, spec: Any) -> bool:
        return spec.route.startswith("serve-")

    def make_image(self, request: GenerationRequest) -> tuple[bytes, str]:
        import random

        from PIL import Image

        slow = request.repeat % 2 == 1
        if slow:
            time.sleep(self.slow_s)
        rate = self.pass_rates.get(request.spec.route, 0.5)
        rate = self.slow_pass_rate if slow and self.slow_pass_rate is not None else rate
        red = random.Random(f"{self.salt}{request.spec.route} {request.task.task_id} {request.repeat}").random() < rate
        buffer = io.BytesIO()
        Image.new("RGB", (20, 12), (220, 10, 10) if red else (10, 10, 220)).save(buffer, format="PNG")
        return buffer.getvalue(), "png"


class SlowIdentity(FakeProvider):
    """The built-in ``identity`` model's own provider (internal), 50 ms a call."""

    def generate(self, request: GenerationRequest) -> Generation:
        from pytest_hypeedit.providers.identity import IdentityProvider

        time.sleep(0.05)
        return IdentityProvider(self.spec).generate(request)


PROVIDERS: dict[str, type[FakeProvider]] = {kind.__name__: kind for kind in (
    FakeProvider, ReleaseProvider, ModelIdProvider, EchoProvider, HostileProvider, SlowProvider, CountingProvider,
    HalfPriceProvider, ServingProvider, SlowIdentity)}


def plugin(provider: str = "FakeProvider", models: tuple[dict[str, Any], ...] = (PAID,), **knobs: Any):
    """(the provider class, the add_models hook, the make_provider hook) for ``models`` on ``knobs["route"]``."""
    base = PROVIDERS[provider]
    unknown = {name for name in knobs if name.startswith("_") or not hasattr(base, name)}
    assert not unknown, f"fake_models.plugin: no knob {sorted(unknown)}"
    if "key_env" in knobs:
        knobs["key_env"] = tuple(knobs["key_env"])
    model_class = type(provider, (base,), knobs)

    @pytest.hookimpl(optionalhook=True)
    def pytest_hypeedit_add_models(config):
        return [dict(model) for model in models]

    @pytest.hookimpl(optionalhook=True)
    def pytest_hypeedit_make_provider(config, spec):
        return model_class.made(config, spec) if model_class.serves(spec) else None

    return model_class, pytest_hypeedit_add_models, pytest_hypeedit_make_provider


def fast_retries(max_attempts: int, max_delay: float = 0.05):
    """A make_provider hook that makes no provider: it gives the real adapters tiny backoffs (the faults under test
    are the fakes', not the network's)."""

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_hypeedit_make_provider(config, spec):
        from pytest_hypeedit.glue.stash import RUNTIME_KEY
        from pytest_hypeedit.transport.http import RetryPolicy

        runtime = config.stash.get(RUNTIME_KEY, None)  # the run's, which the plugin passes in to the adapter it makes
        if runtime is not None:
            runtime.policy = RetryPolicy(max_attempts=max_attempts, base_delay=0.01, max_delay=max_delay)
        return None

    return pytest_hypeedit_make_provider


def conftest_head() -> str:
    """A conftest's first lines: this folder on sys.path, also in a subprocess or an xdist worker."""
    return f"import sys\nif {str(SUPPORT)!r} not in sys.path:\n    sys.path.insert(0, {str(SUPPORT)!r})\n"


def fast_retries_conftest(max_attempts: int = 3, max_delay: float = 0.05) -> str:
    """The conftest text of :func:`fast_retries`."""
    return conftest_head() + ("from fake_models import fast_retries\n"
                              f"pytest_hypeedit_make_provider = fast_retries({max_attempts}, {max_delay})\n")


def models_conftest(provider: str = "FakeProvider", models: tuple[dict[str, Any], ...] = (PAID,), **knobs: Any) -> str:
    """The conftest text that loads ``provider`` for ``models`` (see the module's docstring); append more hooks to it."""
    return (conftest_head() + "from fake_models import plugin\n"
            f"FakeModel, pytest_hypeedit_add_models, pytest_hypeedit_make_provider = plugin(\n"
            f"    {provider!r}, {tuple(models)!r}, **{knobs!r})\n")
