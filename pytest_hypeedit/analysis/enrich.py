"""What the results rows carry beyond the point estimates: intervals, sensitivity, baseline.

Pure: per-row task tallies and settings in, keys added to the rows out.  The
statistics themselves are in ``stats.py`` and ``metrics.py``; this module
only decides which tallies go with which row and stores the answers as JSON.

Keys added to each results row (the results contract allows new keys: docs/reference/results.md):

    intervals     {metric: [low, high]}   95% interval over tasks, valid at 0% and 100% (task_intervals.py)
    interval_notes {metric: why}          a metric with a value but no interval (or no upper bound), and why
    sensitivity   [{review_seconds, retry_cap, effective_cost, ...}]
    task_tallies  [{task_id, passes, judged, first_passed, task_types}]
                  so a later run can compare itself with this one (--baseline)
    baseline      {metric: {current, baseline, difference, low, high, tasks}}
                  paired over the tasks both runs judged, low/high the sign-flip test's 95% interval
                  (pairwise.py paired_comparison); baseline_model names the row used
    baseline_tasks [{task_id, passes, judged, baseline_passes, baseline_judged, difference}]
                  per shared task, the change in its pass rate, worst first (the report lists
                  the tasks that got worse)

And at the top level, when a split has two or more models:

    pairwise      [{split, a, b, metric, difference, interval, level, p_adjusted, significant, tasks}]
                  every pair x headline metric, paired over tasks, Holm-adjusted per split (pairwise.py)

And, when the session's candidates are given:

    serving       {routes, drift, runs, bought, limits}
                  the routes of one model compared, PASS against purchase time and latency, and (with
                  --baseline) this run against the baseline run on the same tasks (serving.py)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence, TypeVar, cast

from ..report.results_model import (
    BaselineTask,
    CalibratedFigure,
    PairedDifference,
    PairwiseEntry,
    Results,
    ResultsRow,
    SensitivityEntry,
    Serving,
    StatisticsSettings,
    TaskTallyEntry,
)
from .metrics import MetricSettings, TaskTally, sensitivity
from .pairwise import PAIRWISE_METRICS, Entrant, paired_comparison, pairwise
from .serving import THIS_RUN, Candidate, RouteRow, RunRow, serving
from .task_intervals import METHOD, TARGET_TEXT, task_intervals

SENSITIVITY_REVIEW_SECONDS = (10.0, 20.0, 60.0, 120.0)
SENSITIVITY_RETRY_CAPS = (1, 2, 4, 10)


@dataclass(frozen=True)
class AnalysisSettings:
    metrics: MetricSettings
    bootstrap: int = 1000  # resamples; 0 disables the intervals
    seed: int = 0
    level: float = 0.95
    review_seconds: float = 20.0
    review_rate: float = 50.0


def enrich_results(
    results: Results,
    tallies: Mapping[tuple[str, str], Sequence[TaskTally]],
    settings: AnalysisSettings,
    baseline: Mapping[str, Any] | None = None,
    candidates: Mapping[str, Sequence[Candidate]] | None = None,
) -> Results:
    """Add intervals, sensitivity, task tallies and the baseline comparison to every row, in place.

    ``tallies`` maps (model, split) of each row to its per-task tallies; ``candidates`` each model's judged
    candidates (keys ``split/task_id``), for ``serving``.
    """
    for row in results.get("rows") or []:
        row_tallies = list(tallies.get((row["model"], row["split"]), ()))
        cost = row_price(row)
        row["task_tallies"] = [tally_to_json(t) for t in row_tallies]
        if settings.bootstrap:
            row["intervals"], notes = interval_entries(row_tallies, cost, settings)
            if notes:
                row["interval_notes"] = notes
        row["sensitivity"] = sensitivity_grid(row_tallies, cost, settings)
        if baseline is not None:
            row.update(baseline_entry(row, row_tallies, cost, baseline, settings))
    compared = pairwise_of_rows(results.get("rows") or [], settings)
    if compared is not None:
        results["pairwise"] = compared
    if candidates is not None:
        runs = run_pairs(results, baseline) if baseline is not None else []
        results["serving"] = serving_of_rows(results.get("rows") or [], candidates, settings, runs)
    results.setdefault("settings", {})["statistics"] = _statistics_settings(settings, baseline)
    return results


def row_price(row: Mapping[str, Any]) -> float:
    """The price per candidate a row's effective cost is at: what its run paid (``cost_per_candidate_paid``, at the
    tiers that served it), else the list price (a results file written before tiers were recorded)."""
    price = row.get("cost_per_candidate_paid", row.get("cost_per_candidate"))
    return float(price or 0.0)


def pairwise_of_rows(rows: Sequence[Mapping[str, Any]], settings: AnalysisSettings,
                     metrics: Sequence[str] = PAIRWISE_METRICS) -> list[PairwiseEntry] | None:
    """The pairwise comparisons of rows carrying ``task_tallies``; None when no split has two models."""
    splits: dict[str, list[Entrant]] = {}
    for row in rows:
        tallies = tuple(tally_from_json(t) for t in row.get("task_tallies") or ())
        splits.setdefault(str(row.get("split")), []).append(
            Entrant(str(row.get("model")), tallies, row_price(row)))
    several = {split: entrants for split, entrants in splits.items() if len(entrants) > 1}
    if not several:
        return None
    return pairwise(several, settings.metrics, metrics, seed=settings.seed)


def serving_of_rows(rows: Sequence[Mapping[str, Any]], candidates: Mapping[str, Sequence[Candidate]],
                    settings: AnalysisSettings, runs: Sequence[tuple[RunRow, RunRow]] = ()) -> Serving:
    """``serving`` (serving.py) of rows carrying ``task_tallies`` and ``release``, with each model's candidates,
    and ``runs``: the pairs of rows of one model from two runs (``run_pairs``)."""
    from ..registry import parse_model_name

    found = []
    for row in rows:
        model, split = str(row.get("model")), str(row.get("split"))
        route = (row.get("release") or {}).get("route")
        if not route:
            continue
        tallies = tuple(tally_from_json(t) for t in row.get("task_tallies") or ())
        found.append(RouteRow(Entrant(model, tallies, row_price(row)), split, parse_model_name(model)[0], str(route),
                              task_latencies(candidates.get(model, ()), split)))
    return serving(found, candidates, settings.metrics, runs=runs, seed=settings.seed)


def run_pairs(results: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[tuple[RunRow, RunRow]]:
    """Each split row of this run against the baseline's row of the same model and split (both with per-task
    tallies): what ``serving.runs`` tests.  Only the same model: ``baseline_row``'s fallback to the only model of
    a split is a comparison of releases under two names (the rows' ``baseline``), not of one model's runs.  The
    combined rows are left out: their tasks are the split rows'."""
    source = baseline.get("source")
    name = str(source) if source else "baseline"
    dates = run_dates(baseline)
    phrase = f"the baseline run of {dates}" if dates else f"the baseline run ({name})"
    pairs = []
    for row in results.get("rows") or []:
        old = baseline_row(row, baseline)
        if row.get("split") == "combined" or old is None or old.get("model") != row.get("model"):
            continue
        now, before = run_row(row, results, THIS_RUN, THIS_RUN), run_row(old, baseline, name, phrase)
        if now is not None and before is not None:
            pairs.append((now, before))
    return pairs


def run_row(row: Mapping[str, Any], results: Mapping[str, Any], run: str, phrase: str) -> RunRow | None:
    """A results row as ``serving.runs`` needs it (None without per-task tallies: an older version's row).  The
    results may come from anywhere: the judge and its versions are taken only as short plain text."""
    if not row.get("task_tallies"):
        return None
    tallies = tuple(tally_from_json(t) for t in row["task_tallies"])
    settings = results.get("settings")
    judge = settings.get("judge") if isinstance(settings, Mapping) else None
    release = row.get("release")
    release_id = release.get("id") if isinstance(release, Mapping) else None
    return RunRow(Entrant(str(row.get("model")), tallies, row_price(row)), str(row.get("split")), run, phrase,
                  _plain(judge), answered_versions(results.get("judge_versions")), _plain(release_id))


def answered_versions(found: Any) -> tuple[str, ...]:
    """The model versions that answered the run's judges (results ``judge_versions``: per judge, ``answered``)."""
    versions: set[str] = set()
    for counts in (found.values() if isinstance(found, Mapping) else ()):
        answered = counts.get("answered") if isinstance(counts, Mapping) else None
        versions |= {v for v in (answered or {}) if _plain(v) is not None}
    return tuple(sorted(versions))


def run_dates(results: Mapping[str, Any]) -> str | None:
    """The day(s) a run's candidates were bought (its ``serving.bought``; a leaderboard merge's ``generated_at``):
    ``2026-11-20``, or ``2026-11-18 to 2026-11-20``; None when the results say nothing of it."""
    served = results.get("serving")
    bought = served.get("bought") if isinstance(served, Mapping) else None
    days = [str(bought.get(key))[:10] for key in ("first", "last")] if isinstance(bought, Mapping) else []
    if not days and results.get("generated_at"):
        days = [str(results["generated_at"])[:10]]
    days = [day for day in days if _DAY.fullmatch(day)]
    if not days:
        return None
    return days[0] if days[0] == days[-1] else f"{days[0]} to {days[-1]}"


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _plain(value: Any) -> str | None:
    """A short printable text, as read from a results file from anywhere; None for anything else."""
    if not isinstance(value, str) or not value or len(value) > 200 or not value.isprintable():
        return None
    return value


def task_latencies(candidates: Sequence[Candidate], split: str) -> dict[str, float]:
    """Per task of ``split``, the mean latency of its candidates that have one, keyed as the row's tallies are: by
    task id, or, for a split none of the candidates is on (the pooled row of several splits), by ``split/task_id``
    over all of them."""
    pooled = not any(candidate.split == split for candidate in candidates)
    found: dict[str, list[float]] = {}
    for candidate in candidates:
        if candidate.latency_s is None or not (pooled or candidate.split == split):
            continue
        found.setdefault(candidate.task if pooled else candidate.task_id, []).append(candidate.latency_s)
    return {task: sum(values) / len(values) for task, values in found.items()}


def _statistics_settings(settings: AnalysisSettings, baseline: Mapping[str, Any] | None) -> StatisticsSettings:
    info: StatisticsSettings = {"bootstrap_resamples": settings.bootstrap, "bootstrap_seed": settings.seed,
                                "level": settings.level, "interval": METHOD, "target": TARGET_TEXT}
    if baseline is not None:
        info["baseline"] = baseline.get("source") or "given"
    return info


def interval_entries(tallies: Sequence[TaskTally], cost: float, settings: AnalysisSettings
                     ) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Each metric's interval as ``[low, high]``, and why a metric with a value has none (task_intervals.py)."""
    found = task_intervals(tallies, cost, settings.metrics, level=settings.level, n_resamples=settings.bootstrap,
                           seed=settings.seed)
    bounds = {name: [float(b[0]), float(b[1])] for name, b in found.bounds.items() if b is not None}
    return bounds, dict(found.notes)


def intervals_json(tallies: Sequence[TaskTally], cost: float, settings: AnalysisSettings) -> dict[str, list[float]]:
    return interval_entries(tallies, cost, settings)[0]


def sensitivity_grid(tallies: Sequence[TaskTally], cost: float, settings: AnalysisSettings) -> list[SensitivityEntry]:
    """Effective cost across review times x retry caps, always including the run's own setting."""
    seconds = sorted(set(SENSITIVITY_REVIEW_SECONDS) | {float(settings.review_seconds)})
    caps = sorted(set(SENSITIVITY_RETRY_CAPS) | {settings.metrics.retry_cap})
    return sensitivity(tallies, cost, review_seconds=seconds, retry_caps=caps, rate_per_hour=settings.review_rate)


def tally_to_json(tally: TaskTally) -> TaskTallyEntry:
    return {"task_id": tally.task_id, "passes": tally.passes, "judged": tally.judged,
            "first_passed": tally.first_passed, "task_types": list(tally.task_types)}


def tally_from_json(data: Mapping[str, Any]) -> TaskTally:
    return TaskTally(str(data["task_id"]), int(data["passes"]), int(data["judged"]),
                     data.get("first_passed"), tuple(data.get("task_types") or ()))


def baseline_row(row: Mapping[str, Any], baseline: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The baseline's row for this row: same model and split, else the only model on that split.

    The second case is "an earlier release of the same model" under another name
    (seedream-4.0 as the baseline of seedream-4.5).
    """
    same_split = [r for r in baseline.get("rows") or [] if r.get("split") == row.get("split")]
    named = [r for r in same_split if r.get("model") == row.get("model")]
    found: Mapping[str, Any] | None = named[0] if named else same_split[0] if len(same_split) == 1 else None
    return found


def baseline_entry(row: Mapping[str, Any], tallies: Sequence[TaskTally], cost: float, baseline: Mapping[str, Any],
                   settings: AnalysisSettings) -> ResultsRow:
    old = baseline_row(row, baseline)
    if old is None:
        return {"baseline_error": f"the baseline has no row for {row.get('model')} on split {row.get('split')}"}
    if not old.get("task_tallies"):
        return {"baseline_error": "the baseline results carry no per-task tallies (written by an older version); rerun it"}
    old_tallies = [tally_from_json(t) for t in old["task_tallies"]]
    try:
        comparison = paired_comparison(tallies, old_tallies, cost, row_price(old), settings.metrics,
                                       seed=settings.seed, level=settings.level)
    except ValueError as exc:  # no shared task: say so in the row rather than fail the run
        return {"baseline_error": str(exc)}
    return {"baseline": marked_degenerate(comparison), "baseline_model": old.get("model"),
            "baseline_tasks": task_deltas(tallies, old_tallies),
            "baseline_release": old.get("release")}  # the release it measured (engine/release.py), None before


#: Why a paired difference has no interval: every task moved by the same amount (both runs at 100% on every
#: shared task, say), so the sign-flip test (``baseline``) and the bootstrap (``calibrated_baseline``) both give a
#: zero-width interval.
DEGENERATE_DIFFERENCE = ("every shared task changed by the same amount: no interval over tasks (a zero-width one "
                         "would claim certainty)")


#: The paired differences of a row's ``baseline``, or of its ``calibrated_baseline`` (where a metric may be refused).
Compared = TypeVar("Compared", bound=Mapping[str, "PairedDifference | CalibratedFigure"])


def marked_degenerate(comparison: Compared) -> Compared:
    """A zero-width interval of a paired difference is no interval: its bounds become null, with the reason."""
    for entry in comparison.values():
        if entry.get("low") is not None and entry["low"] == entry.get("high"):
            # bounds: a difference (a refused metric has none)
            cast("PairedDifference", entry).update({"low": None, "high": None, "degenerate": DEGENERATE_DIFFERENCE})
    return comparison


def task_deltas(current: Sequence[TaskTally], baseline: Sequence[TaskTally]) -> list[BaselineTask]:
    """Each task judged in both runs: its passes now and before, and the change in its pass rate, worst first."""
    before = {t.task_id: t for t in baseline if t.judged}
    deltas: list[BaselineTask] = [
        {"task_id": t.task_id, "passes": t.passes, "judged": t.judged, "baseline_passes": before[t.task_id].passes,
         "baseline_judged": before[t.task_id].judged,
         "difference": round(t.passes / t.judged - before[t.task_id].passes / before[t.task_id].judged, 6)}
        for t in current if t.judged and t.task_id in before
    ]
    return sorted(deltas, key=lambda d: (d["difference"], d["task_id"]))
