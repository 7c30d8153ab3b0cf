"""Groups of models that cannot be told apart, per headline metric, for the HTML report.  Pure: the results'
``pairwise`` entries (analysis/pairwise.py: paired over tasks, Holm-adjusted) and rows in, letters and HTML out.

A compact letter display: two models share a letter when their difference on the metric is not significant.
Each letter is a largest set of models no two of which differ (a maximal clique of the "cannot be told apart"
graph), so a model may carry several letters (a ~ b and b ~ c while a and c differ: a "a", b "ab", c "b").
Letters go in the order of the best model of each group; "not different" is not "shown equal".
"""

from __future__ import annotations

from html import escape
from string import ascii_lowercase
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from .tables import columns, row_repeats

if TYPE_CHECKING:
    from .results_model import PairwiseEntry, ResultsRow

#: Metrics where less is better: their groups are ordered from the lowest value.
LOWER_IS_BETTER = ("expected_attempts", "effective_cost", "hype_gap")


def letter_groups(models: Sequence[str], differ: set[frozenset[str]]) -> dict[str, str]:
    """Letters per model (``models`` best first); ``differ``: the pairs shown different."""
    cliques = _maximal_cliques(list(models), lambda a, b: frozenset((a, b)) not in differ)
    rank = {model: position for position, model in enumerate(models)}
    cliques.sort(key=lambda clique: sorted(rank[m] for m in clique))
    letters = {model: "" for model in models}
    for index, clique in enumerate(cliques):
        letter = _letter(index)
        for model in sorted(clique, key=rank.__getitem__):
            letters[model] += letter
    return letters


def _letter(index: int) -> str:
    return ascii_lowercase[index] if index < len(ascii_lowercase) else f"[{index + 1}]"


def _maximal_cliques(nodes: list[str], alike: Callable[[str, str], bool]) -> list[frozenset[str]]:
    """Bron-Kerbosch without pivoting: a report compares a handful of models."""
    found: list[frozenset[str]] = []

    def extend(clique: set[str], candidates: list[str], excluded: list[str]) -> None:
        if not candidates and not excluded:
            found.append(frozenset(clique))
            return
        for node in list(candidates):
            extend(clique | {node}, [n for n in candidates if n != node and alike(node, n)],
                   [n for n in excluded if alike(node, n)])
            candidates.remove(node)
            excluded.append(node)

    extend(set(), nodes, [])
    return found


def groups_by_metric(split: str, rows: Iterable[ResultsRow], pairwise: Iterable[PairwiseEntry] | None
                     ) -> list[tuple[str, str, dict[str, str]]]:
    """(metric key, its label, letters per model) for each headline metric compared on ``split``."""
    entries = [e for e in pairwise or () if isinstance(e, Mapping) and e.get("split") == split]
    values = {str(r.get("model")): r for r in rows if isinstance(r, Mapping)}
    found = []
    repeats = {row_repeats(row) for row in values.values()}
    for key, label, _ in columns(repeats.pop() if len(repeats) == 1 else None):  # Pass@k titled for what it is
        mine = [e for e in entries if e.get("metric") == key and str(e.get("a")) in values
                and str(e.get("b")) in values]
        if not mine:
            continue
        models = sorted({str(e.get(side)) for e in mine for side in ("a", "b")},
                        key=lambda m: _sort_value(values[m].get(key), key))
        differ = {frozenset((str(e.get("a")), str(e.get("b")))) for e in mine if e.get("significant")}
        found.append((key, label, letter_groups(models, differ)))
    return found


def _sort_value(value: object, key: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return float("inf")
    return float(value) if key in LOWER_IS_BETTER else -float(value)


def groups_html(split: str, rows: Sequence[ResultsRow], pairwise: Iterable[PairwiseEntry] | None) -> str:
    """A table: per metric, each model's letters; "" when the split has no pairwise comparison."""
    groups = groups_by_metric(split, rows, pairwise)
    if not groups:
        return ""
    models = [str(r.get("model")) for r in rows if any(str(r.get("model")) in g for _, _, g in groups)]
    head = "<tr><th>Metric</th>" + "".join(f"<th>{escape(m)}</th>" for m in models) + "</tr>"
    lines = ["<tr><td>" + escape(label) + "</td>"
             + "".join(f'<td class="hx-group">{escape(letters.get(m, "")) or "&ndash;"}</td>' for m in models)
             + "</tr>" for _, label, letters in groups]
    note = ("<p>Models sharing a letter cannot be told apart on that metric (paired over tasks, Holm-adjusted "
            "over the split's pairs x metrics, 5%); not told apart is not shown equal.</p>")
    return (f'<div class="hx-groups"><h4>Which differences are real</h4>{note}<div class="hx-scroll"><table>'
            f"<thead>{head}</thead><tbody>{''.join(lines)}</tbody></table></div></div>")
