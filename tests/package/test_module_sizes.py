"""No module of the package over 450 lines: past that a module holds more than one idea, and a change to one
risks the others.  Split a long module into cohesive ones with names of their own (test_module_names.py)."""

from __future__ import annotations

from package_graph import PACKAGE, modules

MAX_LINES = 450


def test_no_package_module_is_over_the_limit():
    long = {path.relative_to(PACKAGE.parent).as_posix(): count for path in modules().values()
            if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split each into cohesive modules): " + ", ".join(
        f"{name} ({count})" for name, count in sorted(long.items()))


def test_every_module_is_counted():
    """Sub-packages too, not only the top folder."""
    counted = {path.relative_to(PACKAGE).as_posix() for path in modules().values()}
    assert {"plugin.py", "report/leaderboard.py", "engine/store.py", "glue/__init__.py"} <= counted
