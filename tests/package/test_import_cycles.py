"""No import circle among the package's modules: each layer imports only those below it.

Read with ast, so nothing is imported.  Lazy imports inside functions count (the circle
providers/images.py <-> tasks.py was one); ``if TYPE_CHECKING:`` imports do not (never run)."""

from __future__ import annotations

import ast

from package_graph import _runtime_imports, cycles, import_graph, modules


def test_the_package_has_no_import_circle():
    found = cycles(import_graph())
    assert not found, "import circles (move what both sides need into a module below them): " + "; ".join(
        " <-> ".join(group) for group in found)


def test_the_graph_sees_the_package_and_its_imports():
    """The check above is only as good as the graph: it finds the modules and resolves relative imports."""
    graph = import_graph()
    assert len(modules()) > 100
    assert "pytest_hypeedit.errors" in graph["pytest_hypeedit.registry"]  # from .errors import ...
    assert "pytest_hypeedit.providers.base" in graph["pytest_hypeedit.providers"]  # from .base import ...
    assert "pytest_hypeedit.providers.images" in graph["pytest_hypeedit.tasks"]  # lazy, inside a function


def test_a_circle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_type_checking_imports_are_not_dependencies():
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\ndef f():\n    import y\n")
    assert [alias.name for node in _runtime_imports(tree.body) for alias in node.names] == ["TYPE_CHECKING", "y"]
