"""What every table of results shares: the columns, the number format, the order of splits and rows.

One module that the Markdown leaderboard (leaderboard_markdown.py), the HTML index page (index.py), the terminal
table (terminal_table.py), the charts and the gates all read, so that a figure is printed the same everywhere.
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence, TypeVar

from ..finite import finite_number, format_metric

if TYPE_CHECKING:
    from .published import Published
    from .results_model import ResultsRow

#: A leaderboard row: a results row, or a row of the paper's published figures (report/published.py: results-shaped,
#: marked ``published``; not the results model), read by the functions every table shares.
Row = TypeVar("Row", bound=Mapping[str, object])

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

#: The images per task the paper's Pass@10 and hype gap are defined on (and its published figures were made with).
PAPER_REPEATS = 10


def metric_labels(repeats: int | None) -> dict[str, str]:
    """What ``pass_at_10`` and ``hype_gap`` measure at ``repeats`` images per task: Pass@10 and the hype gap at 10
    (or when not known: an older results file), Pass@k and the hype gap on it ("Hype gap@k") otherwise."""
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats == PAPER_REPEATS:
        return {"pass_at_10": "Pass@10", "hype_gap": "Hype gap"}
    # at 4 repeats, "(any)" tells it from the Pass@4 column (1 - (1 - p)^4, modelled from the pass rate)
    return {"pass_at_10": f"Pass@{repeats}" + (" (any)" if repeats == 4 else ""), "hype_gap": f"Hype gap@{repeats}"}


def columns(repeats: int | None = None) -> tuple[tuple[str, str, str], ...]:
    """COLUMNS titled for what they measure at ``repeats`` images per task (see ``metric_labels``)."""
    labels = metric_labels(repeats)
    return tuple((key, labels.get(key, title), kind) for key, title, kind in COLUMNS)


def repeats_note(repeats: int | None) -> str:
    """The line under a table whose rows were measured on other than 10 images per task ("" at 10)."""
    labels = metric_labels(repeats)
    if labels["pass_at_10"] == "Pass@10":
        return ""
    return (f"{labels['pass_at_10']}: tasks with a PASS among their {repeats} images; {labels['hype_gap']}: "
            f"{labels['pass_at_10']} - first-attempt pass rate. Measured on {repeats} images per task, they are not "
            f"the paper's Pass@10 and hype gap (10 images per task) and do not compare with them")


def row_repeats(row: Mapping[str, object], fallback: object = None) -> int | None:
    """The images per task a row was measured on: its own ``repeats`` (written since rows carry it), else
    ``fallback`` (its file's settings)."""
    for value in (row.get("repeats"), fallback):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


@dataclass(frozen=True)
class Section:
    """One table of a leaderboard: a split's rows measured on the same number of images per task, and the paper's
    rows of the split when they were measured on as many (never beside rows of another number)."""

    split: str
    repeats: int | None
    rows: list[ResultsRow]
    published: list[Mapping[str, Any]]  # report/published.py's rows
    several: bool  # the split has more than one table: its title names the images per task

    @property
    def title(self) -> str:
        name = self.split.capitalize()
        if not self.several:
            return name
        if self.rows:
            return f"{name}, {self.repeats or '?'} images per task"
        return f"{name}, published ({self.repeats} images per task)"


def sections(rows: Sequence[ResultsRow], published: "Published | None" = None,
             repeats: int | None = None) -> list[Section]:
    """The leaderboard's tables in order: per split (section_order), one per number of images per task among its
    rows (``row_repeats``, ``repeats`` for a row that does not say), the paper's rows beside the run's rows of the
    paper's repeats, else in a table of their own.  Rows of 2 and 4 repeats are never one table: their Pass@k are
    not the same metric."""
    found = []
    paper = published.settings.get("repeats") if published else None
    for split in section_order(rows, published):
        groups: dict[int | None, list[ResultsRow]] = {}
        for row in rows:
            if row.get("split") == split:
                groups.setdefault(row_repeats(row, repeats), []).append(row)
        theirs = list(published.rows_of(split)) if published else []
        tables = [(k, group, theirs if k == paper else []) for k, group in groups.items()]
        if theirs and paper not in groups:
            tables.append((paper, [], theirs))
        found += [Section(split, k, ours, beside, len(tables) > 1) for k, ours, beside in tables]
    return found


def model_name(row: Mapping[str, object]) -> str:
    """A leaderboard row's model as every leaderboard table prints it (Markdown and HTML alike, unescaped): the name,
    the release it measured when the row says (provider model id and label), whose figures (judge, calibrated)
    and (incomplete); a published row is marked (published)."""
    name = " ".join(str(row.get("model")).split())
    if row.get("published"):
        return f"{name} (published)"
    given = row.get("release")
    release: Mapping[str, object] = given if isinstance(given, Mapping) else {}
    provider, label = release.get("provider_model"), release.get("label")
    # the provider's model id when it says more than the name, and the team's label
    named = [str(part) for part in (provider if provider and str(provider) != name else None, label) if part]
    if named:
        name += f" (release {', '.join(named)})"
    if row.get("figures"):
        name += f" ({row['figures']})"
    return name + (" (incomplete)" if row.get("incomplete") or row.get("complete") is False else "")


def leaderboard_cells(row: Mapping[str, object]) -> list[str]:
    """A leaderboard row's metrics as every leaderboard table prints them: effective cost at list price
    (``effective_cost_list``), so that runs bought at other tiers compare."""
    at_list = {**row, "effective_cost": row["effective_cost_list"]} if "effective_cost_list" in row else row
    return [format_metric(at_list.get(key), kind) for key, _, kind in COLUMNS]


def paid_elsewhere(row: Mapping[str, object]) -> bool:
    """Whether the row's run paid another price than the list price (a batch or Flex tier): the tables show its
    effective cost at list price, and its interval (at the price paid) is left out."""
    paid = row.get("cost_per_candidate_paid")
    return paid is not None and paid != row.get("cost_per_candidate")


def section_order(rows: Sequence[ResultsRow], published: "Published | None") -> list[str]:
    """The run's splits in first-seen order, then the paper's that the run lacks, ``combined`` last."""
    ours = split_order(rows)
    theirs = [s for s in (published.splits if published else []) if s not in ours]
    names = ours + theirs
    return [s for s in names if s != COMBINED] + ([COMBINED] if COMBINED in names else [])


def split_order(rows: Sequence[ResultsRow]) -> list[str]:
    """Splits in first-seen order, ``combined`` last."""
    splits = list(dict.fromkeys(str(r.get("split")) for r in rows))
    return [s for s in splits if s != COMBINED] + ([COMBINED] if COMBINED in splits else [])


def by_pass_rate(rows: Sequence[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (-_sort_key(r.get("pass_rate")), bool(r.get("published")), str(r.get("model"))))


def _sort_key(value: object) -> float:
    return float(value) if finite_number(value) else -1.0


def cell(value: object) -> str:
    # A model or judge name must not break the table: escape the pipe, drop newlines.
    return " ".join(str(value).split()).replace("|", "\\|")
