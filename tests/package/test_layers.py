"""The layers of the data flow: analysis/, engine/, providers/, transport/, judges/, report/ and review/ know nothing of
pytest; glue/ is where the benchmark meets pytest (with plugin.py, the entry point, hookspecs.py, the hook
specs, and options.py, the settings read from pytest's config).  So a module of those six imports neither
pytest (nor its plugins) nor glue/, at import time, lazily or for the type checker."""

from __future__ import annotations

import ast

from package_graph import _runtime_imports, import_graph, modules

LAYERS = ("analysis", "engine", "providers", "transport", "judges", "report", "review")
PYTEST_WORLD = ("pytest", "_pytest", "xdist", "pytest_html", "pluggy")


def _in_layers(name: str) -> bool:
    parts = name.split(".")
    return len(parts) > 1 and parts[1] in LAYERS


def test_no_layer_below_the_glue_imports_pytest():
    found = []
    for name, path in modules().items():
        if not _in_layers(name):
            continue
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8")).body, type_checking=True):
            targets = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and node.level:
                continue
            found += [f"{name} imports {t}" for t in targets if t.split(".")[0] in PYTEST_WORLD]
    assert found == [], "move the pytest side to glue/: " + "; ".join(found)


def test_no_layer_below_the_glue_imports_the_glue():
    found = [f"{name} imports {target}" for name, targets in import_graph(type_checking=True).items()
             if _in_layers(name) for target in targets if target.startswith("pytest_hypeedit.glue")]
    assert found == [], "; ".join(found)
