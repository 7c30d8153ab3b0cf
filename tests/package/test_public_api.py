"""The public surface (pytest_hypeedit.__all__) is one list: the package's lazy exports, the names a type checker
sees, docs/reference/public-api.md and what our own conftest.py and docs import all agree, and a bare
``import pytest_hypeedit`` imports nothing else."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
from package_graph import PACKAGE

import pytest_hypeedit

ROOT = PACKAGE.parent
DOCS_PAGE = ROOT / "docs" / "reference" / "public-api.md"
HEAVY = ("httpx", "httpcore", "numpy", "PIL", "google.genai", "yaml")

PUBLIC = [name for name in pytest_hypeedit.__all__ if name != "__version__"]


def _loaded_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after ``statement`` (this tree's package first on the path)."""
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_a_bare_import_loads_the_package_alone():
    loaded = _loaded_after("import pytest_hypeedit")
    assert {m for m in loaded if m.startswith("pytest_hypeedit")} == {"pytest_hypeedit"}
    assert not {m for m in loaded for heavy in HEAVY if m == heavy or m.startswith(heavy + ".")}


def test_the_plugin_entry_stays_light():
    """pytest imports the entry point in every process, benchmark or not: no HTTP, numpy, Pillow or YAML."""
    loaded = _loaded_after("import pytest_hypeedit.plugin")
    assert not {m for m in loaded for heavy in HEAVY if m == heavy or m.startswith(heavy + ".")}


def test_one_name_imports_only_what_it_needs():
    loaded = _loaded_after("from pytest_hypeedit import Refusal")
    assert "pytest_hypeedit.errors" in loaded
    assert not {m for m in loaded for heavy in HEAVY if m == heavy or m.startswith(heavy + ".")}


def test_all_lists_each_export_once_and_nothing_else():
    assert len(PUBLIC) == len(set(PUBLIC))
    assert set(PUBLIC) == set(pytest_hypeedit._EXPORTS)
    assert {"Provider", "Generation", "GenerationRequest", "Refusal", "ProviderError", "Judge", "JudgeRequest",
            "Verdict", "ModelSpec", "Task", "hookspecs", "load_results"} <= set(PUBLIC)


@pytest.mark.parametrize("name", PUBLIC)
def test_each_name_is_the_object_its_module_defines(name):
    module = importlib.import_module(pytest_hypeedit._EXPORTS[name])
    value = getattr(pytest_hypeedit, name)
    assert value is (module if module.__name__.endswith("." + name) else getattr(module, name))
    if not isinstance(value, type(module)):
        assert value.__module__ == module.__name__, f"{name} is re-exported by {module.__name__}: name its home"


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'runner'"):
        pytest_hypeedit.runner  # noqa: B018
    assert not hasattr(pytest_hypeedit, "_nothing_here")


def test_a_type_checker_sees_the_same_names():
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING")
    seen = {alias.asname or alias.name for node in block.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert seen == set(PUBLIC)


def _documented_names() -> list[str]:
    section = DOCS_PAGE.read_text(encoding="utf-8").split("## Names", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)


def test_the_docs_page_lists_every_public_name_and_no_other():
    documented = _documented_names()
    assert sorted(documented) == sorted(PUBLIC), (
        f"docs/reference/public-api.md lacks {sorted(set(PUBLIC) - set(documented))}, "
        f"lists names that are not public {sorted(set(documented) - set(PUBLIC))}")


def test_the_docs_page_lists_every_hook():
    from pytest_hypeedit import hookspecs

    hooks = {name for name in vars(hookspecs) if name.startswith("pytest_hypeedit_")}
    section = DOCS_PAGE.read_text(encoding="utf-8").split("## Hooks", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(pytest_hypeedit_\w+)\(", section, re.MULTILINE))
    assert documented == hooks and len(hooks) >= 5


def test_the_docs_page_is_in_the_manual():
    assert "reference/public-api.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def _python_sources() -> list[tuple[Path, str]]:
    """Our own conftest.py, the examples' Python files, and every Python code block of the docs."""
    sources = [(ROOT / "conftest.py", (ROOT / "conftest.py").read_text(encoding="utf-8"))]
    sources += [(path, path.read_text(encoding="utf-8")) for path in sorted((ROOT / "examples").rglob("*.py"))]
    for page in sorted((ROOT / "docs").rglob("*.md")):
        blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)
        sources += [(page, block) for block in blocks]
    return sources


def test_our_conftest_examples_and_docs_import_only_the_public_surface():
    reaching_in = []
    for path, source in _python_sources():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                reaching_in += [f"{path.name}: import {a.name}" for a in node.names if a.name.startswith("pytest_hypeedit.")]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pytest_hypeedit"):
                private = [a.name for a in node.names if node.module != "pytest_hypeedit" or a.name not in PUBLIC]
                reaching_in += [f"{path.name}: from {node.module} import {name}" for name in private]
    assert not reaching_in, f"imports past the public surface (docs/reference/public-api.md): {reaching_in}"


def test_the_import_check_reads_the_docs_code_blocks():
    pages = {path.name for path, _ in _python_sources()}
    assert {"conftest.py", "public-api.md"} <= pages
