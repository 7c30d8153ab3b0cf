"""The HTTP stack (pytest_hypeedit/transport/) is the layer under the adapters and the judges: it imports nothing of
providers/, judges/, engine/ or glue/, at import time, lazily or for the type checker.  What it needs of the run (a
route's limiter, a call's in-flight slots) it names as Protocols of its own (transport/slots.py)."""

from __future__ import annotations

from package_graph import import_graph, modules

ABOVE = ("providers", "judges", "engine", "glue")


def _package_part(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_transport_package_exists_and_holds_the_http_stack():
    names = set(modules())
    for module in ("http", "httperrors", "bounds", "waits", "keyhosts", "requestopts", "body", "addresses",
                   "keycheck", "slots"):
        assert f"pytest_hypeedit.transport.{module}" in names
        assert f"pytest_hypeedit.providers.{module}" not in names  # moved, not copied


def test_the_transport_imports_nothing_above_it():
    found = [f"{name} imports {target}" for name, targets in import_graph(type_checking=True).items()
             if _package_part(name) == "transport" for target in targets if _package_part(target) in ABOVE]
    assert found == [], "the HTTP stack must not know its users (name what it needs in transport/slots.py): " + (
        "; ".join(sorted(found)))


def test_providers_and_judges_reach_the_http_stack_through_the_transport():
    """Both sides use the one stack: a judge that stopped importing it would have grown its own."""
    graph = import_graph(type_checking=True)
    for user in ("pytest_hypeedit.providers.adapter", "pytest_hypeedit.judges.openai_compat"):
        assert any(target.startswith("pytest_hypeedit.transport.") for target in graph[user]), user
