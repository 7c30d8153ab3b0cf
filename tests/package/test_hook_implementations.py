"""The end of a run is one sequence of plain calls (glue/session.py), not an order of hooks: the package implements
``pytest_sessionfinish`` once and ``pytest_terminal_summary`` once.  Read as text (ast): a method or a function of
that name anywhere in the package is an implementation pluggy would call, whatever the class it sits in."""

from __future__ import annotations

import ast

from package_graph import PACKAGE, modules

#: The hooks whose order used to carry the end of the run, and how many implementations the package may have.
ONCE = ("pytest_sessionfinish", "pytest_terminal_summary")


def implementations(name: str) -> list[str]:
    found = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                found.append(f"{module}:{node.lineno}")
    return found


def test_the_package_finishes_a_session_in_one_place():
    for name in ONCE:
        found = implementations(name)
        assert len(found) <= 1, (f"{name} is implemented {len(found)} times ({', '.join(found)}): make it a step of "
                                 "the one sequence in glue/session.py (or terminal_layout.py) instead")


def test_the_one_implementations_are_where_the_docs_say():
    assert [place.split(":")[0] for place in implementations("pytest_sessionfinish")] == ["pytest_hypeedit.plugin"]
    assert [place.split(":")[0] for place in implementations("pytest_terminal_summary")] == [
        "pytest_hypeedit.glue.terminal_layout"]
    assert (PACKAGE / "glue" / "session.py").is_file()


def test_every_hook_spec_is_typed():
    """Each parameter and return of the public hooks has a type a plugin author can read, not ``Any`` (the
    model entries' values and the results' are JSON: ``dict[str, Any]`` is their type)."""
    tree = ast.parse((PACKAGE / "hookspecs.py").read_text(encoding="utf-8"))
    specs = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("pytest_")]
    assert len(specs) == 5
    for spec in specs:
        annotations = [arg.annotation for arg in spec.args.args] + [spec.returns]
        assert all(annotation is not None for annotation in annotations), spec.name
        untyped = [ast.unparse(a) for a in annotations if a is not None and ast.unparse(a) in ("Any", "object")]
        assert not untyped, f"{spec.name}: {untyped}"
