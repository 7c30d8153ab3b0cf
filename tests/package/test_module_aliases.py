"""One word per concept (issue 35): a module of the package is imported under its own name, never as another
word (``journal`` imported as ``paid`` read as a second concept)."""

from __future__ import annotations

import ast

from package_graph import _absolute, _runtime_imports, modules

#: (importing module, imported module, alias), each with its reason: none left (the adapters that took a parameter
#: called ``runtime`` import the ``Runtime`` class, not the module).
ALLOWED: set[tuple[str, str, str]] = set()


def module_aliases() -> set[tuple[str, str, str]]:
    known = modules()
    found = set()
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _runtime_imports(tree.body, type_checking=True):
            if isinstance(node, ast.Import):
                found |= {(name, a.name, a.asname) for a in node.names if a.asname and a.name in known}
                continue
            origin = _absolute(name, path.name == "__init__.py", node)
            found |= {(name, f"{origin}.{a.name}", a.asname) for a in node.names
                      if a.asname and a.asname != a.name and f"{origin}.{a.name}" in known}
    return found


def test_modules_are_imported_under_their_own_names():
    assert module_aliases() - ALLOWED == set(), "import the module under its own name"


def test_the_allowed_aliases_still_exist():
    assert ALLOWED <= module_aliases(), "an alias listed here is gone: take it off the list"
