"""Our exchange for every model of models.yaml (and the manual's other-route examples) and every task shape
(shapes.py) against the same exchange made through the provider's official SDK, asked for the size or aspect
ratio the documented rule gives (expected.py): no difference may be left unexplained, in any request."""

from __future__ import annotations

import pytest

from pytest_hypeedit.providers import BUILTIN_ROUTES
from pytest_hypeedit.registry import load_registry

from .cases import CASES, NO_WIRE
from .harness import run, spec_of
from .shapes import SHAPES

#: The manual's "Other routes" examples (docs/how-to/models.md, Other routes): routes that no models.yaml
#: entry uses are compared through these.
EXAMPLES = (
    spec_of("qwen-image-edit-2511", "dashscope", "qwen-image-edit-plus-2025-12-15", 0.03),
    spec_of("seedream-4.5-fal", "fal", "fal-ai/bytedance/seedream/v4.5/edit", 0.04),
    spec_of("gemini-3-pro-preview-or", "openrouter", "google/gemini-3-pro-image-preview", 0.134),
    spec_of("riverflow-2-b1", "replicate", "sourceful/riverflow-2.0-pro", 0.15),
    spec_of("seedream-4.5-replicate", "replicate", "bytedance/seedream-4.5", 0.04),
)
MODELS = [spec for spec in load_registry().models.values() if spec.route not in NO_WIRE] + list(EXAMPLES)


def test_every_route_has_a_case():
    missing = sorted(set(BUILTIN_ROUTES) - set(CASES) - set(NO_WIRE))
    assert not missing, f"routes with no SDK case in tests/providers/sdk_diff/cases: {missing}"


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("spec", MODELS, ids=lambda spec: f"{spec.route}-{spec.name}")
def test_our_exchange_is_the_sdks(spec, shape, tmp_path, monkeypatch):
    case = CASES.get(spec.route)
    assert case is not None, (f"model {spec.name}: route {spec.route} has no SDK case in tests/providers/sdk_diff/cases; "
                              "add one (harness.Case) so its requests are checked against the provider's SDK")
    comparison = run(case, spec, tmp_path, monkeypatch, SHAPES[shape])
    if comparison.failed:
        pytest.fail(comparison.report(), pytrace=False)
    case.validate(comparison.call, comparison.ours[0])
