"""No module of the package over 1,000 lines: a sanity cap, not the rule.  The rule is one concept per module,
as long as it needs (a class is not split over files, by mixins or otherwise, to stay under a count); a module
past this cap almost surely holds more than one concept.  Split it by concept, with names of their own
(test_module_names.py)."""

from __future__ import annotations

from package_graph import PACKAGE, modules

MAX_LINES = 1000


def test_no_package_module_is_over_the_limit():
    long = {path.relative_to(PACKAGE.parent).as_posix(): count for path in modules().values()
            if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split each by concept): " + ", ".join(
        f"{name} ({count})" for name, count in sorted(long.items()))


def test_every_module_is_counted():
    """Sub-packages too, not only the top folder."""
    counted = {path.relative_to(PACKAGE).as_posix() for path in modules().values()}
    assert {"plugin.py", "report/leaderboard.py", "engine/store.py", "glue/__init__.py"} <= counted
