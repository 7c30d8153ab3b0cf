"""Provider adapters, one module per provider API, chosen by a model's ``route``.

The built-in table below is the ``trylast`` default of the
``pytest_hypeedit_make_provider`` hook, so a conftest.py can add a route or
replace one.  Adapters are imported lazily: a run of ``identity`` never
imports google-genai.

Same file names by design: base.py, gemini.py (judges/ has both too: the folder says which side of a
call it is, here the image provider's interface and its Gemini route, there the judge's and the Gemini judge).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Callable

from ..errors import ConfigError
from ..registry import ModelSpec
from .base import Generation, GenerationRequest, Provider, seed_for

if TYPE_CHECKING:  # a name only: the runtime imports the HTTP stack, which a run of identity never needs
    from .runtime import Runtime

__all__ = ["Generation", "GenerationRequest", "Provider", "seed_for", "BUILTIN_ROUTES", "builtin_provider"]

#: route -> "module:Class" of its adapter.
BUILTIN_ROUTES: dict[str, str] = {
    "identity": "pytest_hypeedit.providers.identity:IdentityProvider",
    "gemini": "pytest_hypeedit.providers.gemini:GeminiProvider",
    "ark": "pytest_hypeedit.providers.ark:ArkProvider",
    "openai": "pytest_hypeedit.providers.openai:OpenAIProvider",
    "bfl": "pytest_hypeedit.providers.bfl:BflProvider",
    "fal": "pytest_hypeedit.providers.fal:FalProvider",
    "runware": "pytest_hypeedit.providers.runware:RunwareProvider",
    "replicate": "pytest_hypeedit.providers.replicate:ReplicateProvider",
    "dashscope": "pytest_hypeedit.providers.dashscope:DashScopeProvider",
    "openrouter": "pytest_hypeedit.providers.openrouter:OpenRouterProvider",
}


def builtin_provider(spec: ModelSpec, runtime: Runtime | None = None) -> Provider:
    """The built-in adapter of ``spec``'s route, given the run's ``runtime`` (its limits, folders, tier and batch
    collectors; None: a runtime of the adapter's own, providers/runtime.py)."""
    target = BUILTIN_ROUTES.get(spec.route)
    if target is None:
        raise ConfigError(
            f"model {spec.name}: unknown route {spec.route!r}. Built-in routes: {', '.join(sorted(BUILTIN_ROUTES))}; "
            "a conftest.py can add one with the pytest_hypeedit_make_provider hook."
        )
    module_name, class_name = target.split(":")
    adapter: Callable[..., Provider] = getattr(importlib.import_module(module_name), class_name)  # the table above
    if runtime is None or spec.route == "identity":  # the identity route calls nothing: it has no runtime
        return adapter(spec)
    return adapter(spec, runtime=runtime)
