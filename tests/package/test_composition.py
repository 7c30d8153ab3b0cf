"""One concept per module, by composition: a class of the modules below does not inherit from a class defined in
another module of the package (a class split over files for size, its halves redeclaring each other's fields for
the type checker).  Read with ast, so nothing is imported."""

from __future__ import annotations

import ast

from package_graph import modules

#: The modules held to it (the pool: its state, its dispatcher and call threads, its finishers, its jobs).
COMPOSED = ["pytest_hypeedit.engine.pool", "pytest_hypeedit.engine.board", "pytest_hypeedit.engine.dispatch",
            "pytest_hypeedit.engine.finishing", "pytest_hypeedit.engine.jobs"]


def package_bases(source: str) -> list[tuple[str, str]]:
    """(class, base) for each base of a class that names something imported from the package (a relative import
    or ``pytest_hypeedit``)."""
    tree = ast.parse(source)
    ours = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and (node.level or (node.module or "").startswith("pytest_hypeedit")) for alias in node.names}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                root = base
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in ours:
                    found.append((node.name, ast.unparse(base)))
    return found


def test_the_pools_classes_inherit_from_no_class_of_another_module():
    known = modules()
    found = {name: package_bases(known[name].read_text(encoding="utf-8")) for name in COMPOSED}
    # an exception class of the package's one tree (errors.py) is a kind of error, not a half of a class
    found = {name: [(cls, base) for cls, base in pairs if not base.endswith("Error")] for name, pairs in found.items()}
    assert not any(found.values()), found


def test_a_class_split_over_modules_is_found():
    source = "from .dispatch import Dispatcher\nfrom . import finishing\nclass Pool(Dispatcher, finishing.Finishers): pass\n"
    assert package_bases(source) == [("Pool", "Dispatcher"), ("Pool", "finishing.Finishers")]
    assert package_bases("import threading\nclass Board(threading.Thread): pass\n") == []
