"""What every table of results shares: the columns, the number format, the order of splits and rows.

One module that the Markdown leaderboard (leaderboard_markdown.py), the HTML index page (index.py), the terminal
table (terminal_table.py), the charts and the gates all read, so that a figure is printed the same everywhere.
Pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..finite import finite_number

if TYPE_CHECKING:
    from .published import Published

SCHEMA = "hypeedit-results/1"
COMBINED = "combined"
#: (results key, upstream column title, kind)
COLUMNS = (
    ("pass_rate", "Pass rate", "percent"),
    ("pass_at_4", "Pass@4", "percent"),
    ("pass_at_10", "Pass@10", "percent"),
    ("expected_attempts", "Expected attempts", "attempts"),
    ("effective_cost", "Effective cost/success", "dollars"),
    ("hype_gap", "Hype gap", "percent"),
)


def section_order(rows: Sequence[Mapping[str, Any]], published: "Published | None") -> list[str]:
    """The run's splits in first-seen order, then the paper's that the run lacks, ``combined`` last."""
    ours = split_order(rows)
    theirs = [s for s in (published.splits if published else []) if s not in ours]
    names = ours + theirs
    return [s for s in names if s != COMBINED] + ([COMBINED] if COMBINED in names else [])


def split_order(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Splits in first-seen order, ``combined`` last."""
    splits = list(dict.fromkeys(str(r.get("split")) for r in rows))
    return [s for s in splits if s != COMBINED] + ([COMBINED] if COMBINED in splits else [])


def by_pass_rate(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(rows, key=lambda r: (-_sort_key(r.get("pass_rate")), bool(r.get("published")), str(r.get("model"))))


def _sort_key(value: Any) -> float:
    return float(value) if finite_number(value) else -1.0


def format_metric(value: Any, kind: str) -> str:
    if not finite_number(value):
        return "n/a"
    if kind == "percent":
        return f"{value * 100:.1f}%"
    if kind == "dollars":
        return f"${value:.2f}"
    return f"{value:.2f}"


def cell(value: Any) -> str:
    # A model or judge name must not break the table: escape the pipe, drop newlines.
    return " ".join(str(value).split()).replace("|", "\\|")
