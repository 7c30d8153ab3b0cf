"""The package's modules read as text (ast, nothing imported): their names, sizes and the imports between them.

Shared by the layout tests of this folder (import cycles, module sizes, file names)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_hypeedit"


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the package (``pkg.__init__`` as ``pkg``)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(body: list[ast.stmt], *, type_checking: bool = False):
    """Every import statement that can run: the module body's and those inside functions (a lazy import is a
    dependency all the same, only paid later), but not ``if TYPE_CHECKING:`` blocks (never run) unless
    ``type_checking`` (the type checker's imports: a circle there is one concept split over two modules)."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not type_checking:
            yield from _runtime_imports(node.orelse)
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                yield from _runtime_imports([child for child in block if isinstance(child, ast.AST)],
                                            type_checking=type_checking)


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, known: dict[str, Path], *, type_checking: bool = False) -> set[str]:
    """The package's modules that ``module`` imports, at import time or later from a function (``type_checking``:
    and for the type checker only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    targets: set[str] = set()
    for node in _runtime_imports(tree.body, type_checking=type_checking):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            origin = _absolute(module, path.name == "__init__.py", node)
            names = [origin] + [f"{origin}.{alias.name}" for alias in node.names]
        for name in names:
            if name in known:
                targets.add(name)
    targets.discard(module)
    return targets


def import_graph(*, type_checking: bool = False) -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known, type_checking=type_checking) for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted, as import circles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
