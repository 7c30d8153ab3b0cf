"""pytest-hypeedit: HYPE-EDIT-1 as a pytest plugin.

The public surface is what ``__all__`` names, importable from here (``from pytest_hypeedit import Provider``):
what a conftest.py or another tool may rely on.  Every other module may move or change between versions
(docs/reference/public-api.md).

Importing this package imports nothing else: pytest loads the plugin (``pytest_hypeedit.plugin``) in every
process, each of ``-n 16`` workers pays for what it imports, and a conftest.py that imports a name from here
should not pull in httpx, numpy or Pillow.  Each name is imported on first use (PEP 562 ``__getattr__``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it (a module itself when the name is the module's own).
_EXPORTS: dict[str, str] = {
    # Provider adapters (conftest.py: the pytest_hypeedit_make_provider hook)
    "Provider": "pytest_hypeedit.providers.base",
    "GenerationRequest": "pytest_hypeedit.providers.base",
    "Generation": "pytest_hypeedit.providers.base",
    "KeyProbe": "pytest_hypeedit.transport.keycheck",  # an adapter's or a judge's free key check (key_probe)
    # Judges (conftest.py: the pytest_hypeedit_make_judge hook)
    "Judge": "pytest_hypeedit.judges.base",
    "JudgeRequest": "pytest_hypeedit.judges.base",
    "Verdict": "pytest_hypeedit.judges.base",
    # What an adapter or a judge gets and raises
    "ModelSpec": "pytest_hypeedit.registry",
    "Task": "pytest_hypeedit.tasks",
    "HypeEditError": "pytest_hypeedit.errors",
    "ConfigError": "pytest_hypeedit.errors",
    "ProviderError": "pytest_hypeedit.errors",
    "Refusal": "pytest_hypeedit.errors",
    "JudgeError": "pytest_hypeedit.errors",
    # What the hooks pass, and the hook specs themselves
    "Record": "pytest_hypeedit.engine.records",
    "hookspecs": "pytest_hypeedit.hookspecs",
    # A results JSON read back and checked
    "load_results": "pytest_hypeedit.report.results_files",
}

# Spelled out for linters and readers; tests/package/test_public_api.py keeps it, _EXPORTS, the imports below
# and docs/reference/public-api.md in step.
__all__ = [
    "__version__",
    "Provider", "GenerationRequest", "Generation", "KeyProbe",
    "Judge", "JudgeRequest", "Verdict",
    "ModelSpec", "Task", "HypeEditError", "ConfigError", "ProviderError", "Refusal", "JudgeError",
    "Record", "hookspecs",
    "load_results",
]

if TYPE_CHECKING:  # what a type checker and an editor see; at run time each is imported on first use
    from . import hookspecs
    from .engine.records import Record
    from .errors import ConfigError, HypeEditError, JudgeError, ProviderError, Refusal
    from .judges.base import Judge, JudgeRequest, Verdict
    from .providers.base import Generation, GenerationRequest, Provider
    from .registry import ModelSpec
    from .report.results_files import load_results
    from .tasks import Task
    from .transport.keycheck import KeyProbe


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(module_name)
    # Not kept in this module's namespace: each lookup asks sys.modules (a dict lookup), so the name is always
    # the object its module holds now, also after a test harness has put sys.modules back and imported it again.
    return module if module_name.endswith(f".{name}") else getattr(module, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
