"""pytest-hypeedit: HYPE-EDIT-1 as a pytest plugin.

The names a conftest author writes a provider with are exported here, loaded on first use (PEP 562) so that
importing the package (pytest does, for the plugin entry point) imports nothing else.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Provider": "pytest_hypeedit.providers.base",
    "Generation": "pytest_hypeedit.providers.base",
    "GenerationRequest": "pytest_hypeedit.providers.base",
    "Refusal": "pytest_hypeedit.errors",
    "ProviderError": "pytest_hypeedit.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pytest_hypeedit' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
