"""How a team adds its own model to pytest-hypeedit, from a conftest.py.

Two hooks (docs/reference/public-api.md, "Hooks"; the names it imports are the public ones listed there):
- ``pytest_hypeedit_add_models`` adds models, or replaces keys of an existing one
  (e.g. its route) without renaming it in the results;
- ``pytest_hypeedit_make_provider`` supplies the adapter of a route the plugin
  does not know.

The example below adds ``grayscale``, a second offline control: it returns the
first reference image in grayscale, a change every task forbids, so a sound
judge fails it. Try: ``pytest --model grayscale --judge labels:...``.
Implement the hooks with ``optionalhook=True`` so this file still loads when
the plugin is disabled (``-p no:hypeedit``).
"""

import io

import pytest

try:
    from pytest_hypeedit import Generation, Provider
except ImportError:  # the plugin is not installed: nothing to add
    Provider = object


class GrayscaleProvider(Provider):
    route = "grayscale"

    def generate(self, request):
        from PIL import Image

        with Image.open(request.references[0]) as image:
            buffer = io.BytesIO()
            image.convert("L").save(buffer, format="PNG")
        return Generation(image=buffer.getvalue(), ext="png", cost=request.spec.price, provider_model="grayscale")


@pytest.hookimpl(optionalhook=True)
def pytest_hypeedit_add_models(config):
    # Keys as in models.yaml. To move an existing model to another route instead:
    #   return [{"name": "riverflow-2-b1", "route": "replicate", "provider_model": "sourceful/riverflow-2.0-pro"}]
    return [{"name": "grayscale", "route": "grayscale", "provider_model": "grayscale", "price": 0.0}]


@pytest.hookimpl(optionalhook=True)
def pytest_hypeedit_make_provider(config, spec):
    return GrayscaleProvider(spec) if spec.route == "grayscale" else None
