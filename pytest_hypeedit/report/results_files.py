"""Results JSON files from outside: one read and checked (``load_results``), several merged into one.

A results file is untrusted (another machine's run, an older version's, a hand edit): ``load_results`` does not
accept what is not a results JSON (an InputError naming the file), and the merge does not accept two runs that measured the
same model on the same split unless ``prefer`` says which one wins (silently picking one would publish a number
nobody chose), or settings that change the numbers unless told to mix them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence, cast

from ..errors import ConfigError, InputError
from ..finite import finite_number
from ..untrusted import RESULTS_BYTES, UntrustedInput, load_json_file
from .results_model import PairwiseEntry, PairwiseSkipped, Results, ResultsRow, RunSettings
from .results_shape import NotResults, check_results_shape
from .tables import COMBINED, SCHEMA

if TYPE_CHECKING:
    from ..analysis.serving import RunRow

#: Metrics that are means over tasks, so a pooled split is their task-weighted mean.
TASK_MEANS = ("pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "first_attempt_pass_rate")
COUNTS = ("tasks", "candidates", "judged", "errors", "refusals", "spent")
SETTINGS_THAT_CHANGE_NUMBERS = ("retry_cap", "review_cost")

#: Runs as given: (the file's name, its results, checked by ``load_results``).
Runs = Sequence[tuple[str, Results]]
#: The split rows kept, by (model, split): (the row, the name of the run it came from).
Chosen = dict[tuple[str, str], tuple[ResultsRow, str]]


def load_results(path: Path) -> Results:
    """The results file at ``path``, read as records are (untrusted.py): its size checked before it is read
    (``RESULTS_BYTES``), its depth bounded, then every figure its readers take checked (report/results_shape.py);
    anything else is an InputError naming the file, never a traceback."""
    try:
        if os.stat(path).st_size > RESULTS_BYTES:  # before a byte is read: a 400 MB file costs no memory
            raise UntrustedInput(f"larger than {RESULTS_BYTES >> 20} MiB, the most a results file may hold")
        data = load_json_file(Path(path), RESULTS_BYTES)
        check_results_shape(data, SCHEMA)
    except OSError as exc:
        raise InputError(f"{path}: cannot read results file ({exc.strerror or exc})") from None
    except UntrustedInput as exc:
        raise InputError(f"{path}: not a results file: {exc}; expected the results JSON of a benchmark run "
                         "(pytest --model MODEL writes hypeedit-outputs/results.json)") from None
    except NotResults as exc:
        raise InputError(f"{path}: not a results file: {exc}; expected the results JSON of a benchmark run, as "
                         "pytest-hypeedit wrote it") from None
    # checked: a results object whose figures its readers can take (a newer version's keys pass as they are)
    return cast(Results, data)


def merge_results(runs: Runs, prefer: str | None = None, allow_mixed_settings: bool = False) -> Results:
    """Merge several runs' results into one results dict.

    ``prefer``: None (a duplicate model x split is an error), "first", "last",
    or the name of the run whose rows win.  Combined rows are rebuilt from the
    chosen split rows when they come from more than one run.
    """
    if not runs:
        raise ConfigError("hypeedit-leaderboard: no results files given")
    settings = _merged_settings(runs, allow_mixed_settings)
    chosen = _choose_split_rows(runs, prefer)
    rows = [row for row, _ in chosen.values()]
    rows += _combined_rows(chosen, runs, settings)
    merged: Results = {"schema": SCHEMA, "settings": settings, "runs": [name for name, _ in runs], "rows": rows}
    merged.update(merged_pairwise(rows, settings))
    merged.update(merged_serving(runs, rows, settings))
    stamps = [str(r["generated_at"]) for _, r in runs if r.get("generated_at")]
    if stamps:
        merged["generated_at"] = max(stamps)
    return merged


def _merged_settings(runs: Runs, allow_mixed: bool) -> RunSettings:
    first = runs[0][1].get("settings")
    settings: RunSettings = first.copy() if first else {}
    for name, results in runs[1:]:
        other: RunSettings = results.get("settings") or {}
        for key in SETTINGS_THAT_CHANGE_NUMBERS:
            if other.get(key) != settings.get(key) and not allow_mixed:
                raise ConfigError(
                    f"{name}: {key} = {other.get(key)!r} but {runs[0][0]} has {settings.get(key)!r}; "
                    "their effective costs are not comparable. Rerun with the same settings, "
                    "or pass --allow-mixed-settings"
                )
        if other.get("judge") != settings.get("judge"):
            settings["judge"] = " / ".join(dict.fromkeys(filter(None, [settings.get("judge"), other.get("judge")])))
        if other.get("outputs") != settings.get("outputs"):
            settings.pop("outputs", None)  # runs in several folders: a merged file has no one place for its images
    if allow_mixed and any((r.get("settings") or {}).get("review_cost") != settings.get("review_cost") for _, r in runs):
        settings.pop("review_cost", None)
    return settings


def _choose_split_rows(runs: Runs, prefer: str | None) -> Chosen:
    names = [name for name, _ in runs]
    if prefer not in (None, "first", "last") and prefer not in names:
        raise ConfigError(f"--prefer {prefer!r}: expected first, last, or one of the files given ({', '.join(names)})")
    chosen: Chosen = {}
    for name, results in runs:
        for row in results.get("rows") or []:
            if row.get("split") == COMBINED:
                continue
            key = (str(row.get("model")), str(row.get("split")))
            if key in chosen and not _replaces(name, chosen[key][1], prefer, key):
                continue
            chosen[key] = (row.copy(), name)
    return chosen


def _replaces(new: str, old: str, prefer: str | None, key: tuple[str, str]) -> bool:
    if prefer is None:
        raise ConfigError(
            f"{old} and {new} both hold model {key[0]!r} on split {key[1]!r}; say which one wins with "
            f"--prefer first, --prefer last or --prefer {new}"
        )
    if prefer in ("first", "last"):
        return prefer == "last"
    return new == prefer


def _combined_rows(chosen: Chosen, runs: Runs, settings: Mapping[str, Any]) -> list[ResultsRow]:
    """A combined row per model with two or more splits: kept from its run if all splits came from it."""
    by_model: dict[str, list[tuple[ResultsRow, str]]] = {}
    for (model, _split), entry in chosen.items():
        by_model.setdefault(model, []).append(entry)
    combined = []
    for model, entries in by_model.items():
        sources = {name for _, name in entries}
        if len(entries) < 2:
            continue
        original = _original_combined(model, sources, runs) if len(sources) == 1 else None
        combined.append(original or pooled_row(model, [row for row, _ in entries], settings.get("review_cost")))
    return combined


def _original_combined(model: str, sources: set[str], runs: Runs) -> ResultsRow | None:
    for name, results in runs:
        if name in sources:
            for row in results.get("rows") or []:
                if row.get("split") == COMBINED and row.get("model") == model:
                    return row.copy()
    return None


def pooled_row(model: str, rows: Sequence[ResultsRow], review_cost: float | None) -> ResultsRow:
    """The combined row of one model from its split rows.

    Every metric but effective cost and hype gap is a mean over tasks, so the
    pooled value is the task-weighted mean; effective cost is then recomputed
    from the pooled E and P@4 (a ratio of means, as in the design).  Intervals
    cannot be pooled without per-task data and are left out.
    """
    tasks = sum(int(r.get("tasks") or 0) for r in rows)
    pooled: dict[str, Any] = {"model": model, "split": COMBINED}
    for key in COUNTS:
        pooled[key] = sum(r.get(key) or 0 for r in rows)
    for key in TASK_MEANS:
        values: list[tuple[Any, int]] = [(r.get(key), int(r.get("tasks") or 0)) for r in rows]
        pooled[key] = sum(v * t for v, t in values) / tasks if tasks and all(finite_number(v) for v, _ in values) else None
    if finite_number(pooled["pass_at_10"]) and finite_number(pooled["first_attempt_pass_rate"]):
        pooled["hype_gap"] = pooled["pass_at_10"] - pooled["first_attempt_pass_rate"]
    if any(r.get("incomplete") or r.get("complete") is False for r in rows):
        pooled["incomplete"] = True
    pooled["cost_per_candidate"] = rows[0].get("cost_per_candidate")
    if all(r.get("task_tallies") for r in rows):  # as a run's own combined row keys them: split/task
        pooled["task_tallies"] = [{**t, "task_id": f"{r.get('split')}/{t.get('task_id')}"}
                                  for r in rows for t in r["task_tallies"]]
    pooled["effective_cost"] = _effective_cost(pooled, review_cost)
    return cast(ResultsRow, pooled)  # keys by name from COUNTS and TASK_MEANS: the row's own


def _effective_cost(row: Mapping[str, Any], review_cost: float | None) -> float | None:
    attempts, pass_at_4, price = row.get("expected_attempts"), row.get("pass_at_4"), row.get("cost_per_candidate")
    if not (finite_number(attempts) and finite_number(pass_at_4) and finite_number(price) and finite_number(review_cost)) or pass_at_4 <= 0:
        return None
    return attempts * (price + review_cost) / pass_at_4


def merged_pairwise(rows: Sequence[ResultsRow], settings: Mapping[str, Any]) -> Results:
    """``pairwise`` for merged rows carrying ``task_tallies``, and ``pairwise_skipped``: the rows of a split of
    several models that carry none (an older version's results), left out and said so."""
    by_split: dict[str, list[ResultsRow]] = {}
    for row in rows:
        by_split.setdefault(str(row.get("split")), []).append(row)
    several = [row for split_rows in by_split.values() if len(split_rows) > 1 for row in split_rows]
    skipped: list[PairwiseSkipped] = [
        {"split": r["split"], "model": r["model"],
         "reason": "no per-task tallies (results written by an older version), so not in the pairwise comparison; "
                   "rerun it to compare"} for r in several if not r.get("task_tallies")]
    compared = _pairwise_of(settings, [r for r in several if r.get("task_tallies")])
    found: Results = {"pairwise": compared} if compared is not None else {}
    if skipped:
        found["pairwise_skipped"] = skipped
    return found


def _pairwise_of(settings: Mapping[str, Any], rows: list[ResultsRow]) -> list[PairwiseEntry] | None:
    from ..analysis.enrich import AnalysisSettings, pairwise_of_rows
    from ..analysis.pairwise import PAIRWISE_METRICS

    review: Any = settings.get("review_cost")
    metrics = PAIRWISE_METRICS if finite_number(review) else tuple(m for m in PAIRWISE_METRICS if m != "effective_cost")
    try:
        return pairwise_of_rows(rows, AnalysisSettings(_metric_settings(settings)), metrics)
    except (ValueError, TypeError, KeyError) as exc:  # a malformed tally or setting in a file from outside
        raise _not_comparable(exc) from None


def _metric_settings(settings: Mapping[str, Any]) -> Any:
    from ..analysis.metrics import DEFAULT_RETRY_CAP, MetricSettings

    review: Any = settings.get("review_cost")
    cap: Any = settings.get("retry_cap", DEFAULT_RETRY_CAP)
    return MetricSettings(cap, float(review)) if finite_number(review) else MetricSettings(cap)


def _not_comparable(exc: Exception) -> InputError:
    return InputError(f"the per-task tallies or settings of the results files cannot be compared ({exc}); "
                      "check that each file is a results JSON written by pytest-hypeedit")


def merged_serving(runs: Runs, rows: Sequence[ResultsRow], settings: Mapping[str, Any]) -> Results:
    """``serving`` of a merge (analysis/serving.py): the routes of one model among the merged rows, and every two
    files that measured one model on one split (the later file given minus the earlier, on the tasks both judged),
    whichever of them ``--prefer`` chose for the tables; ``{}`` when neither applies.  No drift within a run: a
    results file holds no candidate's purchase time or latency."""
    from ..analysis.enrich import AnalysisSettings, serving_of_rows

    try:
        found = serving_of_rows(rows, {}, AnalysisSettings(_metric_settings(settings)), run_pairs_of(runs))
    except (ValueError, TypeError, KeyError) as exc:  # a malformed tally or setting in a file from outside
        raise _not_comparable(exc) from None
    if not finite_number(settings.get("review_cost")):  # mixed review costs: no one effective cost to compare
        found["routes"] = [e for e in found["routes"] if e.get("metric") != "effective_cost"]
    if not found["routes"] and not found["runs"]:
        return {}
    return {"serving": {"routes": found["routes"], "runs": found["runs"], "limits": found["limits"]}}


def run_pairs_of(runs: Runs) -> list[tuple[RunRow, RunRow]]:
    """(later, earlier) rows of one model on one split from two files, for every two files that hold it, in the
    order the files were given; rows without per-task tallies (an older version's) are left out."""
    from ..analysis.enrich import run_dates, run_row

    by_row: dict[tuple[str, str], list[RunRow]] = {}
    for name, results in runs:
        dates = run_dates(results)
        for row in results.get("rows") or []:
            if row.get("split") == COMBINED:
                continue
            found = run_row(row, results, name, f"{name} ({dates})" if dates else name)
            if found is not None:
                by_row.setdefault((str(row.get("model")), str(row.get("split"))), []).append(found)
    return [(later, earlier) for found in by_row.values()
            for index, later in enumerate(found) for earlier in found[:index]]
