"""The ``Runtime`` is passed in, not read from a module global (issue 35): providers/runtime.py keeps no runtime of
the process (the ``configure()``/``current()`` of earlier versions are gone), and no module reads one back.
Read as text (ast): the module imported under any name, or ``current`` imported from it, is a read."""

from __future__ import annotations

import ast

from package_graph import _absolute, _runtime_imports, modules

RUNTIME_MODULE = "pytest_hypeedit.providers.runtime"
#: The names of the module global and its reader.
GLOBAL_NAMES = {"current", "_current"}
#: Modules that may name them: the runtime module itself (which defines neither now).
ALLOWED = {RUNTIME_MODULE}


def global_reads(module: str, tree: ast.Module, is_package: bool) -> list[int]:
    """The lines of ``module`` that read the runtime module's global."""
    bound, lines = set(), []
    for node in _runtime_imports(tree.body, type_checking=True):
        if isinstance(node, ast.Import):
            bound |= {alias.asname for alias in node.names if alias.name == RUNTIME_MODULE and alias.asname}
            continue
        origin = _absolute(module, is_package, node)
        for alias in node.names:
            if f"{origin}.{alias.name}" == RUNTIME_MODULE:
                bound.add(alias.asname or alias.name)
            elif origin == RUNTIME_MODULE and alias.name in GLOBAL_NAMES:
                lines.append(node.lineno)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in GLOBAL_NAMES and (
                (isinstance(node.value, ast.Name) and node.value.id in bound)
                or ast.unparse(node.value) == RUNTIME_MODULE):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_module_reads_the_runtime_from_the_module_global():
    found = {}
    for module, path in modules().items():
        lines = global_reads(module, ast.parse(path.read_text(encoding="utf-8")), path.name == "__init__.py")
        if lines and module not in ALLOWED:
            found[module] = lines
    assert not found, ("modules that read the run's runtime from providers/runtime.py instead of being given it "
                       f"(take it as a parameter, as the glue passes it in): {found}")


def test_the_runtime_module_keeps_no_runtime_of_the_process():
    from pytest_hypeedit.providers import runtime

    kept = [name for name, value in vars(runtime).items() if isinstance(value, runtime.Runtime)]
    assert not kept and not hasattr(runtime, "current") and not hasattr(runtime, "configure"), kept


def test_the_check_sees_each_way_of_reading_it():
    planted = ast.parse(
        "from ..providers import runtime\n"
        "from ..providers import runtime as runtime_module\n"
        "from ..providers.runtime import current\n"
        "import pytest_hypeedit.providers.runtime as rt\n"
        "def f():\n"
        "    from .runtime import current as now\n"
        "    return runtime.current(), runtime_module.current().cache_dir, rt._current, now()\n"
        "x = pytest_hypeedit.providers.runtime.current()\n"
        "y = other.current()\n"
        "z = runtime.Runtime()\n")
    assert global_reads("pytest_hypeedit.providers.adapter", planted, False) == [3, 6, 7, 7, 7, 8]
