"""Hooks a conftest.py or another plugin implements to extend pytest-hypeedit.

Implement them with ``@pytest.hookimpl(optionalhook=True)`` so the conftest
still loads when the plugin is disabled (``-p no:hypeedit``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # names only: this module loads in every pytest process
    from .engine.records import Record
    from .judges.base import Judge
    from .providers.base import Provider
    from .registry import ModelSpec
    from .report.results_model import Results


# A spec has no body (pluggy calls the implementations), which mypy reads as a missing return.
def pytest_hypeedit_add_models(config: pytest.Config) -> list[dict[str, Any]]:  # type: ignore[empty-body]
    """Return model entries (``name``, ``route``, ``provider_model``, ``price``, ...) to add or override."""


@pytest.hookspec(firstresult=True)
def pytest_hypeedit_make_provider(config: pytest.Config, spec: ModelSpec) -> Provider | None:
    """Return the provider adapter for a model spec, or None to leave it to the next implementation."""


@pytest.hookspec(firstresult=True)
def pytest_hypeedit_make_judge(config: pytest.Config, name: str, argument: str | None) -> Judge | None:
    """Return the judge named in ``--judge NAME[:ARGUMENT]``, or None to leave it to the next implementation."""


def pytest_hypeedit_record(config: pytest.Config, record: Record) -> None:
    """Called on the controller with each finished candidate's record (e.g. to stream it elsewhere)."""


def pytest_hypeedit_results(config: pytest.Config, results: Results) -> None:
    """Called once on the controller with the results JSON before it is written, after every built-in analysis
    added its part (glue/session.py); may add keys."""
