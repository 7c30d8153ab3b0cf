"""The results' ``serving`` (analysis/serving.py) shown: a few terminal lines when it applies (two routes of one
model, a significant drift, or a comparison with the baseline run), and a small HTML section (per model, the PASS
rate by third of purchase time and of latency; the route comparison side by side; this run against the baseline
run).  Pure: results in, text out; every string from a run is escaped.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Mapping, Sequence

if TYPE_CHECKING:
    from .results_model import DriftEntry, Results, RouteComparison, RunComparison, RunJudge, Serving

#: The route metrics a terminal line names, with how each is written.
SHOWN = (("pass_rate", "pass rate", "points"), ("latency_s", "latency", "seconds"))
#: What the HTML headers call a drift's thirds.
BY_TEXT = {"time": "Purchase time in the run", "latency": "Provider latency (a proxy for load)"}


def _serving(results: Results) -> Serving:
    # a results file from disk is read through the model, but its ``serving`` may be anything
    serving = results.get("serving")
    return serving if isinstance(serving, Mapping) else {}


def _routes(results: Results) -> list[RouteComparison]:
    return [entry for entry in _serving(results).get("routes") or () if isinstance(entry, Mapping)]


def _drift(results: Results) -> list[DriftEntry]:
    return [entry for entry in _serving(results).get("drift") or () if isinstance(entry, Mapping)]


def _runs(results: Results) -> list[RunComparison]:
    return [entry for entry in _serving(results).get("runs") or () if isinstance(entry, Mapping)]


def _limits(results: Results) -> Mapping[str, str]:
    limits = _serving(results).get("limits")
    return limits if isinstance(limits, Mapping) else {}


def _difference(value: object, unit: str) -> str:
    if not isinstance(value, (int, float)):
        return "n/a"
    return f"{value * 100:+.1f} points" if unit == "points" else f"{value:+.2f} s"


def _bound(value: object, unit: str) -> str:
    if not isinstance(value, (int, float)):
        return "unbounded"
    return f"{value * 100:+.1f}" if unit == "points" else f"{value:+.2f}"


def comparison_text(entry: RouteComparison | RunComparison, unit: str) -> str:
    """``-6.1 points [-11.0, -1.2], significant``."""
    low, high = (list(entry.get("interval") or ()) + [None, None])[:2]
    verdict = "significant" if entry.get("significant") else "not significant"
    return f"{_difference(entry.get('difference'), unit)} [{_bound(low, unit)}, {_bound(high, unit)}], {verdict}"


def route_pairs(results: Results) -> dict[tuple[str, str, str], list[RouteComparison]]:
    """The route comparisons grouped by (split, a, b), in the results' order."""
    pairs: dict[tuple[str, str, str], list[RouteComparison]] = {}
    for entry in _routes(results):
        pairs.setdefault((str(entry.get("split")), str(entry.get("a")), str(entry.get("b"))), []).append(entry)
    return pairs


def serving_lines(results: Results) -> list[str]:
    """Per pair of routes of one model, its pass rate and latency difference (and the other metrics that differ);
    each significant drift's sentence; what they cannot show.  [] when nothing applies."""
    lines = []
    for (split, a, b), entries in route_pairs(results).items():
        first = entries[0]
        by_metric = {entry.get("metric"): entry for entry in entries}
        shown = [f"{name} {comparison_text(by_metric[metric], unit)}" for metric, name, unit in SHOWN
                 if metric in by_metric]
        others = [str(entry.get("metric")) for entry in entries
                  if entry.get("significant") and entry.get("metric") not in {metric for metric, _, _ in SHOWN}]
        also = f"; also differ: {', '.join(others)}" if others else ""
        lines.append(f"{first.get('model')} via {first.get('route_a')} vs via {first.get('route_b')} ({a} - {b}, "
                     f"{split}, {first.get('tasks')} tasks): {'; '.join(shown)}{also}")
    drifts = [entry for entry in _drift(results) if entry.get("significant") and entry.get("sentence")]
    lines += [str(entry["sentence"]) for entry in drifts]
    runs = _runs(results)
    lines += [line for entry in runs for line in runs_lines(entry)]
    if not lines:
        return []
    limits = _limits(results)
    kinds = ((["routes"] if route_pairs(results) else []) + list(dict.fromkeys(str(e.get("by")) for e in drifts))
             + (["runs"] if runs else []))
    lines += [f"  ({kind}: {limits[kind]})" for kind in kinds if kind in limits]
    lines.append("  (paired over shared tasks, Holm-corrected, 5%; drift: stratified by task; all in results.json: "
                 "serving)")
    return lines


def serving_title(results: Results) -> str:
    """The terminal section's title, naming what it holds: ``serving: routes, drift and between runs (...)``,
    or only the parts present (a run with --baseline and one route shows only ``between runs``)."""
    drifts = [entry for entry in _drift(results) if entry.get("significant") and entry.get("sentence")]
    parts = ((["routes"] if route_pairs(results) else []) + (["drift"] if drifts else [])
             + (["between runs"] if _runs(results) else []))
    named = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1] if parts else "nothing"
    return f"serving: {named} (not a model's score; results: serving)"


def runs_text(entry: RunComparison) -> str:
    """``served (mini, 12 tasks; 120 and 120 verdicts): this run - base/results.json: pass rate -30.0 points
    [-41.7, -18.3], significant``, and whether the judge differs."""
    judge = "; the judge differs between the runs" if entry.get("judge_changed") else ""
    return (f"{entry.get('model')} ({entry.get('split')}, {entry.get('tasks')} tasks; {entry.get('judged_a')} and "
            f"{entry.get('judged_b')} verdicts): {entry.get('run_a')} - {entry.get('run_b')}: pass rate "
            f"{comparison_text(entry, 'points')}{judge}")


def runs_lines(entry: RunComparison) -> list[str]:
    """A comparison between runs, and its sentence when significant."""
    sentence = [f"  {entry['sentence']}"] if entry.get("significant") and entry.get("sentence") else []
    return [runs_text(entry), *sentence]


# --------------------------------------------------------------------------- HTML


def _text(value: object) -> str:
    return escape("" if value is None else str(value))


def _percent(value: object) -> str:
    return f"{value * 100:.1f}%" if isinstance(value, (int, float)) else "n/a"


def serving_html(results: Results) -> str:
    """The route comparisons and each model's PASS rate by third; "" when the results have no ``serving``."""
    drift = _drift(results)
    pairs = route_pairs(results)
    runs = _runs(results)
    if not drift and not pairs and not runs:
        return ""
    limits = _limits(results)
    parts = ['<h3 id="hx-serving">Serving</h3><p>Is each model served the same everywhere and all the time? Not a '
             "model's score.</p>"]
    if pairs:
        parts.append(_routes_table(pairs))
        parts.append(f"<p>{_text(limits.get('routes'))}</p>")
    if runs:
        parts.append(_runs_table(runs))
        parts.append(f"<p>{_text(limits.get('runs'))}</p>")
    models = list(dict.fromkeys(str(entry.get("model")) for entry in drift))
    for model in models:
        parts.append(_drift_table(model, [entry for entry in drift if str(entry.get("model")) == model]))
    if models:
        parts.append("".join(f"<p>{_text(BY_TEXT.get(kind, kind))}: {_text(limits.get(kind))}</p>"
                             for kind in ("time", "latency") if limits.get(kind)))
    return "".join(parts)


def _routes_table(pairs: Mapping[tuple[str, str, str], Sequence[RouteComparison]]) -> str:
    rows = []
    for (split, a, b), entries in pairs.items():
        by_metric = {entry.get("metric"): entry for entry in entries}
        cells = "".join(f"<td>{_text(comparison_text(by_metric[metric], unit)) if metric in by_metric else 'n/a'}</td>"
                        for metric, _, unit in SHOWN)
        rows.append(f'<tr><th scope="row">{_text(a)} - {_text(b)}</th><td>{_text(split)}</td>'
                    f"<td>{_text(entries[0].get('tasks'))}</td>{cells}</tr>")
    return ("<table><thead><tr><th>Routes (a - b)</th><th>Split</th><th>Tasks</th><th>Pass rate</th>"
            f"<th>Latency</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _runs_table(entries: Sequence[RunComparison]) -> str:
    rows = []
    for entry in entries:
        judges = found if isinstance(found := entry.get("judges"), Mapping) else {}
        judge = "; ".join(f"{_text(entry.get(f'run_{key}'))}: {_text(_judge_cell(judges.get(key)))}"
                          for key in ("a", "b"))
        sentence = f"<br>{_text(entry['sentence'])}" if entry.get("significant") and entry.get("sentence") else ""
        rows.append(f'<tr><th scope="row">{_text(entry.get("model"))}</th><td>{_text(entry.get("split"))}</td>'
                    f"<td>{_text(entry.get('run_a'))} - {_text(entry.get('run_b'))}</td>"
                    f"<td>{_text(entry.get('tasks'))} ({_text(entry.get('judged_a'))} and "
                    f"{_text(entry.get('judged_b'))} verdicts)</td>"
                    f"<td>{_text(comparison_text(entry, 'points'))}{sentence}</td><td>{judge}</td></tr>")
    return ("<h4>Between runs, on the same tasks</h4><table><thead><tr><th>Model</th><th>Split</th>"
            "<th>Runs (a - b)</th><th>Tasks</th><th>Pass rate</th><th>Judge (served versions)</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _judge_cell(side: RunJudge | None) -> str:
    if not isinstance(side, Mapping):
        return "not recorded"
    versions = [str(v) for v in side.get("versions") or () if isinstance(v, str)]
    name = side.get("judge") if isinstance(side.get("judge"), str) else "not recorded"
    return f"{name} ({', '.join(versions)})" if versions else str(name)


def _drift_table(model: str, entries: Sequence[DriftEntry]) -> str:
    rows = []
    for entry in entries:
        name = BY_TEXT.get(str(entry.get("by")), str(entry.get("by")))
        if entry.get("note"):
            rows.append(f'<tr><th scope="row">{_text(name)}</th><td colspan="4">{_text(entry["note"])}</td></tr>')
            continue
        thirds = "".join(f"<td>{_text(third.get('third'))}: {_percent(third.get('pass_rate'))} "
                         f"({_text(third.get('candidates'))})</td>" for third in entry.get("thirds") or ())
        low, high = (list(entry.get("interval") or ()) + [None, None])[:2]
        verdict = "significant" if entry.get("significant") else "not significant"
        rows.append(f'<tr><th scope="row">{_text(name)}</th>{thirds}<td>{_difference(entry.get("difference"), "points")} '
                    f"[{_bound(low, 'points')}, {_bound(high, 'points')}], p = {_p(entry.get('p_adjusted'))}, "
                    f"{verdict}</td></tr>")
    return (f"<h4>{_text(model)}: PASS rate by third</h4><table><thead><tr><th>By</th><th>First third</th>"
            "<th>Middle</th><th>Last third</th><th>Last - first, task-adjusted</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _p(value: object) -> str:
    return f"{value:.2g}" if isinstance(value, (int, float)) else "n/a"
