"""The differential test bites: a bug planted in what an adapter sends is a difference nobody explained
(and, where the SDK validates, a body its validation does not accept).  Each plant is one mistake an adapter could
make: a wrong field name, a wrong multipart part name, a missing auth scheme, a wrong type, a wrong image."""

from __future__ import annotations

import pytest

from pytest_hypeedit.providers.adapter import HttpProvider
from pytest_hypeedit.providers.ark import ArkProvider
from pytest_hypeedit.providers.gemini import GeminiProvider, nearest_aspect_ratio

from .cases import CASES
from .harness import run
from .shapes import SHAPES
from .test_differential import MODELS


def model(name: str, route: str):
    return next(spec for spec in MODELS if spec.name == name and spec.route == route)


def rename(mapping: dict, old: str, new: str) -> None:
    mapping[new] = mapping.pop(old)


def planted_call(monkeypatch, mutate) -> None:
    """Our adapters' first POST (the submission) goes out changed by ``mutate(kwargs)``."""
    original, done = HttpProvider.call, []

    def call(self, method, url, **kwargs):
        if method == "POST" and not done:
            done.append(True)
            mutate(kwargs)
        return original(self, method, url, **kwargs)

    monkeypatch.setattr(HttpProvider, "call", call)


def drop_client_request_id(kwargs) -> None:
    kwargs["headers"] = {name: value for name, value in kwargs["headers"].items() if name != "X-Client-Request-Id"}


def drop_scheme(kwargs) -> None:
    kwargs["headers"] = {**kwargs["headers"], "Authorization": kwargs["headers"]["Authorization"].split()[-1]}


def swap_images(images: list) -> None:
    images[0], images[1] = images[1], images[0]


PLANTS = {
    # name: (model, route, what our adapter gets wrong, the path that must show it, must validation not accept it)
    "openai-multipart-part-name": ("gpt-image-1.5", "openai",
                                   lambda kw: kw.update(files=[("image", f) for _, f in kw["files"]]),
                                   "body.files[0].name", False),
    "openai-field-name": ("gpt-image-1.5", "openai", lambda kw: rename(kw["data"], "input_fidelity", "fidelity"),
                          "body.fields.fidelity", True),
    "ark-auth-scheme": ("seedream-4.5", "ark", drop_scheme, "header.authorization", False),
    "ark-reference-order": ("seedream-4.5", "ark", lambda kw: swap_images(kw["json"]["image"]), "body.image[0]",
                            False),
    "bfl-field-name": ("flux-2-max", "bfl", lambda kw: rename(kw["json"], "input_image_2", "input_image2"),
                       "body.input_image2", True),
    "fal-auth-scheme": ("qwen-image-edit-2511", "fal",
                        lambda kw: kw.update(headers={"Authorization": kw["headers"]["Authorization"].replace(
                            "Key ", "Bearer ")}), "header.authorization", False),
    "runware-seed": ("riverflow-2-b1", "runware", lambda kw: kw["json"][0].update(seed=7), "body[0].seed", True),
    "replicate-prefer-wait": ("riverflow-2-b1", "replicate",
                              lambda kw: kw.update(headers={**kw["headers"], "Prefer": "wait=60"}), "header.prefer",
                              False),
    "dashscope-size-separator": ("qwen-image-edit-2511", "dashscope",
                                 lambda kw: kw["json"]["parameters"].update(
                                     size=kw["json"]["parameters"]["size"].replace("*", "x")),
                                 "body.parameters.size", False),
    "fal-two-images": ("qwen-image-edit-2511", "fal", lambda kw: kw["json"].update(num_images=2),
                       "body.num_images", False),
    "ark-no-client-request-id": ("seedream-4.5", "ark", drop_client_request_id, "header.x-client-request-id", False),
    "openai-no-client-request-id": ("gpt-image-2", "openai", drop_client_request_id, "header.x-client-request-id",
                                    False),
    "openrouter-seed-as-text": ("gemini-3-pro-preview-or", "openrouter",
                                lambda kw: kw["json"].update(seed=str(kw["json"]["seed"])), "body.seed", True),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_bug_is_an_unexplained_difference(plant, tmp_path, monkeypatch):
    name, route, mutate, path, invalid = PLANTS[plant]
    planted_call(monkeypatch, mutate)
    comparison = run(CASES[route], model(name, route), tmp_path, monkeypatch)
    assert path in [difference.path for difference in comparison.unexplained], comparison.report()
    if invalid:
        with pytest.raises(AssertionError):
            comparison.case.validate(comparison.call, comparison.ours[0])


def test_a_planted_gemini_config_bug_is_an_unexplained_difference(tmp_path, monkeypatch):
    original = GeminiProvider._config

    def config(self, request):
        planted = original(self, request)
        planted.image_config.image_size = None  # forgets the model's image size
        return planted

    monkeypatch.setattr(GeminiProvider, "_config", config)
    comparison = run(CASES["gemini"], model("gemini-3-pro-preview", "gemini"), tmp_path, monkeypatch)
    paths = [difference.path for difference in comparison.unexplained]
    assert "body.generationConfig.imageConfig.imageSize" in paths, comparison.report()


def planted_method(monkeypatch, cls, name: str, planted) -> None:
    """``cls.name`` replaced by ``planted(original, self, *args)``: a bug in how an adapter decides a value."""
    original = getattr(cls, name)
    monkeypatch.setattr(cls, name, lambda self, *args, **kwargs: planted(original, self, *args, **kwargs))


def swapped(original, self, request):
    width, height = original(self, request).split("x")
    return f"{height}x{width}"


def ratio_upside_down(original, self, request):
    return nearest_aspect_ratio(request.task.height, request.task.width, self.aspect_ratios)


@pytest.mark.parametrize("shape", ["landscape", "portrait", "multi"])
def test_a_planted_swap_of_width_and_height_is_caught(shape, tmp_path, monkeypatch):
    """Seedream's size with width and height swapped: the SDK side asks for the documented size of the task."""
    planted_method(monkeypatch, ArkProvider, "size", swapped)
    comparison = run(CASES["ark"], model("seedream-4.5", "ark"), tmp_path, monkeypatch, SHAPES[shape])
    assert "body.size" in [difference.path for difference in comparison.unexplained], comparison.report()


@pytest.mark.parametrize("shape", ["landscape", "portrait", "extreme"])
def test_a_planted_wrong_aspect_ratio_is_caught(shape, tmp_path, monkeypatch):
    """Gemini's aspect ratio from height/width: the SDK side asks for the documented nearest ratio."""
    planted_method(monkeypatch, GeminiProvider, "_aspect_ratio", ratio_upside_down)
    comparison = run(CASES["gemini"], model("gemini-3-pro-preview", "gemini"), tmp_path, monkeypatch, SHAPES[shape])
    paths = [difference.path for difference in comparison.unexplained]
    assert "body.generationConfig.imageConfig.aspectRatio" in paths, comparison.report()


def test_a_planted_poll_of_a_url_we_built_is_caught(tmp_path, monkeypatch):
    """BFL's poll sent to a URL built from our base instead of the polling_url the submit returned."""
    original = HttpProvider.call

    def call(self, method, url, **kwargs):
        if method == "GET" and "get_result" in url:
            url = url.replace("/eu4/v1/", "/v1/")  # what f"{base}/v1/get_result?id=..." would be
        return original(self, method, url, **kwargs)

    monkeypatch.setattr(HttpProvider, "call", call)
    comparison = run(CASES["bfl"], model("flux-2-max", "bfl"), tmp_path, monkeypatch)
    found = [(difference.request, difference.path) for difference in comparison.unexplained]
    assert (1, "path") in found, comparison.report()
