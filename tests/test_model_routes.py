"""``--model NAME@ROUTE``: the model on another of its routes (models file ``routes:``), as its own row, release and
folder; one parser of a model's name (registry.parse_model_name) for every place that reads one."""

from __future__ import annotations

import pytest

from pytest_hypeedit.engine.release import release_of
from pytest_hypeedit.errors import ConfigError
from pytest_hypeedit.registry import build_registry, load_registry, parse_model_name

ENTRY = {"route": "fal", "provider_model": "fal-ai/q", "price": 0.03, "options": {"steps": 30}, "release": "v1",
         "routes": {"dashscope": {"provider_model": "q-plus", "options": {"pixels": 1048576}},
                    "replicate": {"provider_model": "qwen/q", "price": 0.05, "release": "v2"}}}


def registry(entry=ENTRY):
    return build_registry([("mine.yaml", {"models": {"q": entry}})])


def test_a_model_name_is_read_one_way():
    assert parse_model_name("q") == ("q", None)
    assert parse_model_name("q@dashscope") == ("q", "dashscope")
    for bad in ("q@", "@dashscope", "q@a@b"):
        with pytest.raises(ConfigError, match="NAME@ROUTE"):
            parse_model_name(bad)


def test_the_model_on_another_route_is_its_own_named_spec():
    spec = registry().get("q@dashscope")
    assert (spec.name, spec.route, spec.provider_model) == ("q@dashscope", "dashscope", "q-plus")
    assert spec.price == 0.03 and spec.release == "v1"  # the model's, not given for the route
    assert dict(spec.options) == {"pixels": 1048576}  # the route's own adapter options only
    other = registry().get("q@replicate")
    assert (other.price, other.release) == (0.05, "v2")


def test_the_models_own_route_named_is_a_row_of_its_own_of_the_same_release():
    plain, named = registry().get("q"), registry().get("q@fal")
    assert named.name == "q@fal" and named.route == "fal" and not named.routes
    assert release_of(named).id == release_of(plain).id  # the same thing bought: its candidates are the same kind
    assert release_of(registry().get("q@dashscope")).id != release_of(plain).id  # the route is in the identity


def test_a_route_the_model_has_not_names_the_model_the_route_and_its_routes():
    with pytest.raises(ConfigError) as caught:
        registry().get("q@openrouter")
    message = str(caught.value)
    assert "--model q@openrouter" in message and "model q has no route 'openrouter'" in message
    assert "its routes: fal, dashscope, replicate" in message and "--models-file" in message


def test_an_unknown_model_with_a_route_is_the_unknown_model_error():
    with pytest.raises(ConfigError, match="--model nope: unknown model"):
        registry().get("nope@fal")


@pytest.mark.parametrize("routes, words", [
    ({"dashscope": {"route": "x"}}, "unknown keys ['route']"),
    ({"fal": {"provider_model": "again"}}, "another route than the model's own (fal)"),
    ({"da/sh": {"provider_model": "x"}}, "plain name"),
    (["dashscope"], "'routes' must be a mapping"),
    ({"dashscope": {"price": -1}}, "'price' must be a finite number"),
])
def test_a_bad_routes_entry_names_the_file_model_and_route(routes, words):
    with pytest.raises(ConfigError) as caught:
        registry({**ENTRY, "routes": routes})
    assert "mine.yaml" in str(caught.value) and "model q" in str(caught.value) and words in str(caught.value)


def test_the_built_in_qwen_has_its_dashscope_route():
    spec = load_registry().get("qwen-image-edit-2511@dashscope")
    assert spec.route == "dashscope" and spec.provider_model == "qwen-image-edit-plus-2025-12-15"
    assert load_registry().models["qwen-image-edit-2511"].route_names() == ["fal", "dashscope"]
