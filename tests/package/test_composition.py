"""One concept per module, by composition: no class of the engine (the runner and its collaborators, the pool and
its own, every module of ``engine/``) inherits from a class defined in another module of the package.  A class
split over files for size has halves that redeclare each other's fields for the type checker, and a change to
one concept means reading every file of it: the runner was ``Runner(Purchase(Verdicts(Planning(PaidCalls))))``
in five files, the pool ``CandidatePool(Dispatcher, Finishers)`` in three.  Now each is an owner that builds its
collaborators and hands them what they need.

What the rule allows, and why:

- a base of the package's one exception tree (``pytest_hypeedit/errors.py``): an exception class is a kind of
  error, not a half of a class (``class NotStarted(HypeEditError)``);
- a base that is a ``typing.Protocol`` of the package: inheriting it states that the class keeps that narrow
  interface, and brings neither fields nor code;
- a base from outside the package (``Enum``, ``NamedTuple``, ``Protocol``, ``threading.Thread``, ...): a kind of
  thing the standard library or a dependency defines, not one of our classes split over modules;
- a base defined in the same module: one concept in one module.

Anything else from the package fails, a dataclass included (its fields would be the redeclared half).  Read with
ast, so nothing is imported."""

from __future__ import annotations

import ast

from package_graph import _absolute, modules

#: The modules held to it: the whole engine (the runner and its collaborators, the pool and its own).
ENGINE = "pytest_hypeedit.engine"
#: The package's one exception tree: a base from it is a kind of error.
ERRORS = "pytest_hypeedit.errors"


def _imported(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """Name bound in the module -> the dotted name it stands for, for every import of the package."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            origin = _absolute(module, is_package, node)
            if origin.startswith("pytest_hypeedit"):
                names.update({alias.asname or alias.name: f"{origin}.{alias.name}" for alias in node.names})
        elif isinstance(node, ast.Import):
            names.update({alias.asname or alias.name: alias.name for alias in node.names
                          if alias.name.startswith("pytest_hypeedit")})
    return names


def package_bases(source: str, module: str = "pytest_hypeedit.engine.x", is_package: bool = False
                  ) -> list[tuple[str, str]]:
    """(class, dotted name of its base) for each base of a class that names something imported from the package
    (a relative import or ``pytest_hypeedit``)."""
    tree = ast.parse(source)
    ours = _imported(tree, module, is_package)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                parts = []
                root = base
                while isinstance(root, ast.Attribute):
                    parts.insert(0, root.attr)
                    root = root.value
                if isinstance(root, ast.Name) and root.id in ours:
                    found.append((node.name, ".".join([ours[root.id], *parts])))
    return found


def _is_protocol(source: str, name: str) -> bool:
    """Whether ``source`` defines the class ``name`` as a ``typing.Protocol``."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return any((isinstance(b, ast.Name) and b.id == "Protocol")
                       or (isinstance(b, ast.Attribute) and b.attr == "Protocol") for b in node.bases)
    return False


def allowed(base: str, known: dict[str, str]) -> bool:
    """A base the rule allows (the module docstring says why): one of the exception tree, or a Protocol of the
    package.  ``known``: module -> its source."""
    module, _, name = base.rpartition(".")
    if module == ERRORS:
        return True
    return module in known and _is_protocol(known[module], name)


def split_classes() -> dict[str, list[tuple[str, str]]]:
    """Module of the engine -> its classes' bases that the rule does not allow."""
    paths = modules()
    known = {name: path.read_text(encoding="utf-8") for name, path in paths.items()}
    found = {}
    for name in (m for m in known if m == ENGINE or m.startswith(f"{ENGINE}.")):
        pairs = package_bases(known[name], name, paths[name].name == "__init__.py")
        found[name] = [(cls, base) for cls, base in pairs if not allowed(base, known)]
    return found


def test_no_class_of_the_engine_inherits_from_a_class_of_another_module():
    found = {name: pairs for name, pairs in split_classes().items() if pairs}
    assert not found, ("classes split over modules (make the base a collaborator the class holds, and give it what "
                       f"it needs): {found}")


def test_the_rule_reads_the_runner_and_the_pool():
    """The check above is only as good as what it reads: the runner's and the pool's modules are among them."""
    read = split_classes()
    for name in ("runner", "purchase", "verdicts", "planning", "paidcall", "means", "pool", "board", "dispatch",
                 "finishing", "jobs", "stability"):
        assert f"{ENGINE}.{name}" in read


def test_a_class_split_over_modules_is_found():
    source = "from .dispatch import Dispatcher\nfrom . import finishing\nclass Pool(Dispatcher, finishing.Finishers): pass\n"
    assert package_bases(source, "pytest_hypeedit.engine.pool") == [
        ("Pool", "pytest_hypeedit.engine.dispatch.Dispatcher"), ("Pool", "pytest_hypeedit.engine.finishing.Finishers")]
    chain = "from .verdicts import Verdicts\nclass Purchase(Verdicts): pass\n"
    assert package_bases(chain, "pytest_hypeedit.engine.purchase") == [
        ("Purchase", "pytest_hypeedit.engine.verdicts.Verdicts")]
    assert package_bases("import threading\nclass Board(threading.Thread): pass\n") == []


def test_what_the_rule_allows():
    known = {ERRORS: "class HypeEditError(Exception): pass\n",
             "pytest_hypeedit.engine.call_ledger": "from typing import Protocol\nclass RecordView(Protocol): pass\n",
             "pytest_hypeedit.engine.verdicts": "class Verdicts:\n    pass\n"}
    assert allowed("pytest_hypeedit.errors.HypeEditError", known)
    assert allowed("pytest_hypeedit.engine.call_ledger.RecordView", known)
    assert not allowed("pytest_hypeedit.engine.verdicts.Verdicts", known)
    assert not allowed("pytest_hypeedit.engine.runner.Plan", known)  # a name re-exported elsewhere: not trusted
