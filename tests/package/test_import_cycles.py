"""No import circle among the package's modules: each layer imports only those below it.

Read with ast, so nothing is imported.  Lazy imports inside functions count (the circle
providers/images.py <-> tasks.py was one).  ``if TYPE_CHECKING:`` imports never run, yet a circle through them
is one concept split over modules all the same: none may exist either."""

from __future__ import annotations

import ast

from package_graph import _runtime_imports, cycles, import_graph, modules


def test_the_package_has_no_import_circle():
    found = cycles(import_graph())
    assert not found, "import circles (move what both sides need into a module below them): " + "; ".join(
        " <-> ".join(group) for group in found)


def test_no_circle_even_through_type_checking_imports():
    """An ``if TYPE_CHECKING:`` import never runs, yet a circle through one is one concept split over modules all the
    same (the pool's ``Dispatcher`` declared the pool's fields and imported it for the type checker; ``Runner`` and
    ``stability`` reached into each other): give each side what it needs from a module below both (a Protocol, a
    small types module)."""
    found = cycles(import_graph(type_checking=True))
    assert not found, "import circles through TYPE_CHECKING imports: " + "; ".join(" <-> ".join(g) for g in found)


def test_the_pools_modules_import_no_circle_even_for_the_type_checker():
    """The pool's state, its dispatcher and its finishers are collaborators, not halves of one class."""
    graph = import_graph(type_checking=True)
    pool = {f"pytest_hypeedit.engine.{name}" for name in ("pool", "board", "dispatch", "finishing", "jobs")}
    assert not [group for group in cycles(graph) if pool & set(group)]
    assert "pytest_hypeedit.engine.board" in graph["pytest_hypeedit.engine.dispatch"]


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


def test_type_checking_imports_are_not_dependencies_at_run_time_but_are_for_the_type_checker():
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\ndef f():\n    import y\n")
    assert [alias.name for node in _runtime_imports(tree.body) for alias in node.names] == ["TYPE_CHECKING", "y"]
    every = _runtime_imports(tree.body, type_checking=True)
    assert [alias.name for node in every for alias in node.names] == ["TYPE_CHECKING", "x", "y"]
