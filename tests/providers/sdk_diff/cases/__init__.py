"""One ``Case`` per built-in route: how that route's requests are compared with its provider's official SDK.

A route without a case here fails ``test_differential.py`` loudly: add one
(see harness.Case) when a route is added.  ``NO_WIRE`` lists the routes that
send nothing over the network, with why.
"""

from __future__ import annotations

from ..harness import Case
from .ark import ArkCase
from .bfl import BflCase
from .dashscope import DashScopeCase
from .fal import FalCase
from .gemini import GeminiCase
from .openai import OpenAICase
from .openrouter import OpenRouterCase
from .replicate import ReplicateCase
from .runware import RunwareCase

CASES: dict[str, Case] = {case.route: case for case in (OpenAICase(), ArkCase(), GeminiCase(), OpenRouterCase(),
                                                           DashScopeCase(), FalCase(), ReplicateCase(), RunwareCase(), BflCase())}

#: Routes that make no request at all, so there is nothing to compare.
NO_WIRE = {"identity": "returns the first reference image unchanged, with no network call"}
