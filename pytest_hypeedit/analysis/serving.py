"""Is a model served the same everywhere and all the time: its routes compared, its PASS rate against the time of
purchase and against the provider's latency.

Two questions, one results key (``serving``):

* **Routes.**  The same model bought through two or more routes in one run (``--model NAME@ROUTE`` rows, or rows
  of one name whose releases name different routes): every pair of its rows on a split, over the tasks both
  judged, on every headline metric and on latency (per task, the mean seconds of a reply), with the paired
  sign-flip test, its interval and Holm's correction of ``pairwise.py`` (``holm_family``: one family per split,
  the route pairs x metrics of every model on it).

* **Drift.**  Within each model, whether the chance of PASS moves with the time the candidate was bought
  (``generated_at``) or with the provider's reply time (``latency_s``, a proxy for load), the task held fixed.
  The candidates are cut into thirds by that value (early, middle, late; fastest, middle, slowest); the estimate
  is the task-adjusted difference in PASS rate between the last and the first third (each verdict minus its
  task's PASS rate among the candidates used, so a hard task bought late moves nothing); the test permutes the
  values among the candidates of each task (a stratified permutation test: under "no drift" the candidates of a
  task are exchangeable, whatever the tasks' difficulties and however the buying order spread them), two-sided,
  p = (1 + as extreme) / (1 + permutations), never 0; the p-values of every model x {time, latency} of the run
  are one Holm family.  The interval is a bootstrap over tasks (percentile, 95%): it describes the estimate's
  spread and is not the test's inversion, so near the threshold the two may disagree.  A task with one usable
  candidate tells nothing within a task and is left out; fewer than ``MIN_CANDIDATES`` usable candidates (or
  fewer than two tasks) is "not enough data", said, not tested.

* **Runs.**  The same model on the same split in two runs (``--baseline RESULTS.json``: this run against that
  one; a leaderboard merge: every two files that measured it): the PASS rate of the later minus the earlier, over
  the tasks both judged, from each run's per-task tallies (``task_tallies``: PASS and judged per task, all a
  task-stratified comparison of two runs needs), with the same paired sign-flip test, interval and Holm's
  correction as the routes (one family per split: every model's pair of runs on it).  Each entry names both runs'
  judges and the model versions that answered them, and both releases: a change between two runs may be the
  model's, its serving's or the judge's, and the test cannot tell which.

Neither is a model's score: each entry names its sample size and what it cannot show (``LIMITS``).
Pure: numpy and the results' own numbers in, JSON-ready dictionaries out; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np

from .metrics import MetricSettings
from .pairwise import ALPHA, DEGENERATE, PAIRWISE_METRICS, Entrant, compare_pair, holm_exact, holm_family

if TYPE_CHECKING:
    from ..report.results_model import BoughtSpan, DriftEntry, DriftThird, RouteComparison, RunComparison, Serving

#: The latency comparison's name among the route metrics (seconds per reply, per task mean).
LATENCY = "latency_s"
#: What the values are thirds of: ``time`` (purchase time in the run), ``latency`` (the provider's reply time).
BY = ("time", "latency")
#: The thirds' names, by what they are thirds of.
THIRDS = {"time": ("first", "middle", "last"), "latency": ("fastest", "middle", "slowest")}
#: Usable candidates (in tasks with two or more) below which no drift is tested.
MIN_CANDIDATES = 30
PERMUTATIONS = 9999
BOOTSTRAP = 2000
_CHUNK = 500  # permutations per matrix: bounded memory with thousands of candidates
_TIE = 1e-9

#: What each figure cannot show, said beside it (results, terminal, report, docs/how-to/serving.md).
LIMITS = {
    "routes": "the routes served these tasks differently during this run; not which route is right, nor that the "
              "difference lasts; not a model's score",
    "time": "drift over the times these candidates were bought (one run's minutes to hours, and the earlier runs' "
            "whose candidates it reused), not over days or between releases; not a model's score",
    "latency": "latency is a proxy for the provider's load (a large image or a slow network also take longer); an "
               "association, not a cause; not a model's score",
    "runs": "a change between two runs on the same tasks: the model (another release), its serving or the judge "
            "(another served version, prompt or setting) may have changed, and this cannot tell which; two runs, "
            "not a trend; not a model's score",
}
#: The metric compared between runs: the chance of PASS (per task, its share of PASS verdicts).
RUN_METRIC = "pass_rate"
#: How ``--baseline`` names the current run.
THIS_RUN = "this run"


@dataclass(frozen=True)
class Candidate:
    """One judged candidate of a model: its split and task, verdict, when it was bought (seconds, any origin; None:
    not recorded) and the provider's reply time (None: not recorded)."""

    split: str
    task_id: str
    passed: bool
    bought_at: float | None
    latency_s: float | None

    @property
    def task(self) -> str:
        """The task's key across splits, as a pooled row's tallies name it."""
        return f"{self.split}/{self.task_id}"


def candidates_of(records: Iterable[Any]) -> dict[str, list[Candidate]]:
    """Each model's judged candidates (a refusal is a judged FAIL, as in the metrics) from records
    (engine/records.py ``Record``): the time ``generated_at`` says, in seconds, and ``latency_s``, but for a candidate
    bought on a batch tier, whose latency is its wait in the batch, not the provider's reply time."""
    from ..registry import BATCH

    found: dict[str, list[Candidate]] = {}
    for record in records:
        if record.judged:
            timed = isinstance(record.latency_s, (int, float)) and getattr(record, "tier", None) != BATCH
            latency = record.latency_s if timed else None
            found.setdefault(record.model, []).append(
                Candidate(record.split, record.task_id, bool(record.passed), _seconds(record.generated_at), latency))
    return found


def _seconds(text: Any) -> float | None:
    """An ISO timestamp's POSIX seconds; None for none, or one that is not a timestamp with its zone (a record is
    untrusted: a time without a zone would be read in the machine's)."""
    try:
        moment = datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None
    return moment.timestamp() if moment is not None and moment.tzinfo is not None else None


@dataclass(frozen=True)
class RouteRow:
    """A results row as the route comparison needs it: its entrant (name, tallies, price), split, the model it is
    a route of (``base``), the route, and per task id the mean latency of its candidates."""

    entrant: Entrant
    split: str
    base: str
    route: str
    latency: Mapping[str, float]


@dataclass(frozen=True)
class RunRow:
    """A results row as the comparison between runs needs it: its entrant (name, per-task tallies, price) and
    split, and the run it is of: ``run`` (its name in the results: ``THIS_RUN``, or its results file), ``phrase``
    (how a sentence names it: "this run", "the baseline run of 2026-11-20"), the judge its settings name, the
    model versions that answered that judge (``judge_versions``), and the id of the release it measured."""

    entrant: Entrant
    split: str
    run: str
    phrase: str
    judge: str | None = None
    judge_versions: tuple[str, ...] = ()
    release: str | None = None


def serving(rows: Sequence[RouteRow], candidates: Mapping[str, Sequence[Candidate]], settings: MetricSettings, *,
            runs: Sequence[tuple[RunRow, RunRow]] = (), seed: int = 0, alpha: float = ALPHA,
            permutations: int = PERMUTATIONS, bootstrap: int = BOOTSTRAP) -> Serving:
    """``{"routes": [...], "drift": [...], "runs": [...], "bought": {...}, "limits": LIMITS}``
    (docs/reference/results.md ``serving``); ``runs``: (this run's row, the baseline's row) of each model."""
    return {"routes": route_comparisons(rows, settings, seed=seed, alpha=alpha),
            "drift": drift(candidates, seed=seed, alpha=alpha, permutations=permutations, bootstrap=bootstrap),
            "runs": between_runs(runs, settings, seed=seed, alpha=alpha),
            "bought": bought_span(candidates),
            "limits": dict(LIMITS)}


def bought_span(candidates: Mapping[str, Sequence[Candidate]]) -> BoughtSpan | None:
    """When the judged candidates were bought, first and last (UTC, ISO): what a later run's comparison with this
    one names it by ("the baseline run of 2026-11-20"); None when no candidate has its time."""
    times = [c.bought_at for found in candidates.values() for c in found
             if c.bought_at is not None and math.isfinite(c.bought_at)]
    if not times:
        return None
    return {"first": _iso(min(times)), "last": _iso(max(times))}


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(timespec="seconds")


# --- routes --------------------------------------------------------------------------------


def route_comparisons(rows: Sequence[RouteRow], settings: MetricSettings, *, seed: int = 0,
                      alpha: float = ALPHA) -> list[RouteComparison]:
    """Every pair of rows of one model on different routes, per split: each headline metric and latency, a - b.

    Entries: ``split``, ``model`` (the model both are routes of), ``a``, ``b``, ``route_a``, ``route_b``,
    ``metric``, ``difference``, ``interval``, ``level``, ``p_adjusted``, ``significant``, ``tasks``."""
    found: list[RouteComparison] = []
    by_split: dict[str, list[RouteRow]] = {}
    for row in rows:
        by_split.setdefault(row.split, []).append(row)
    for split, members in by_split.items():
        family = []
        for a, b in combinations(members, 2):
            if a.base != b.base or a.route == b.route:
                continue
            named = {"split": split, "model": a.base, "a": a.entrant.model, "b": b.entrant.model,
                     "route_a": a.route, "route_b": b.route}
            try:
                entries = compare_pair(a.entrant, b.entrant, settings, PAIRWISE_METRICS)
            except ValueError:  # no task judged on both routes: nothing to pair on
                continue
            entries += _latency_entry(a, b)
            family += [{**named, **entry} for entry in entries]
        holm_family(family, seed=seed, alpha=alpha)
        found += [_route_entry(entry) for entry in family]
    return found


def _latency_entry(a: RouteRow, b: RouteRow) -> list[dict[str, Any]]:
    """Per shared task with a latency on both routes, the difference of their mean reply times (seconds)."""
    shared = sorted(set(a.latency) & set(b.latency))
    if len(shared) < 2:
        return []
    values = np.array([a.latency[task] - b.latency[task] for task in shared], dtype=float)
    return [{"metric": LATENCY, "difference": float(values.mean()), "values": values, "tasks": len(shared),
             "task_ids": tuple(shared)}]


def _route_entry(entry: dict[str, Any]) -> RouteComparison:
    """A tested entry of a routes family (``holm_family``), its keys in the order they were filled."""
    found: RouteComparison = {
        "split": entry["split"], "model": entry["model"], "a": entry["a"], "b": entry["b"],
        "route_a": entry["route_a"], "route_b": entry["route_b"], "metric": entry["metric"],
        "difference": entry["difference"], "tasks": entry["tasks"], "interval": entry["interval"],
        "level": entry["level"], "p_adjusted": entry["p_adjusted"], "significant": entry["significant"]}
    if _degenerate(found["interval"]):
        found["degenerate"] = DEGENERATE
    return found


def _degenerate(interval: Sequence[float | None]) -> bool:
    low, high = interval
    return low is not None and low == high


# --- runs ----------------------------------------------------------------------------------


def between_runs(pairs: Sequence[tuple[RunRow, RunRow]], settings: MetricSettings, *, seed: int = 0,
                 alpha: float = ALPHA) -> list[RunComparison]:
    """Each (a, b) pair of rows of one model on one split from two runs (a the later: this run against its
    baseline): a's PASS rate minus b's over the tasks both judged, per task the difference of their shares of
    PASS (task difficulty, shared by both runs, cancels), tested as the routes are (``holm_family``: one family
    per split).

    Entries: ``split``, ``model``, ``run_a``, ``run_b``, ``metric``, ``difference``, ``interval``, ``level``,
    ``p_adjusted``, ``significant``, ``tasks``, ``judged_a``, ``judged_b`` (their verdicts on those tasks),
    ``judges`` (per side, the judge and the versions that answered it), ``judge_changed``, ``releases`` and, when
    significant, ``sentence``.  A pair sharing fewer than 2 judged tasks is left out: nothing to test."""
    by_split: dict[str, list[tuple[RunRow, RunRow]]] = {}
    for a, b in pairs:
        by_split.setdefault(a.split, []).append((a, b))
    found: list[RunComparison] = []
    for split, members in by_split.items():
        family, sides = [], []
        for a, b in members:
            try:
                entries = compare_pair(a.entrant, b.entrant, settings, (RUN_METRIC,))
            except ValueError:  # no task judged in both runs: nothing to pair on
                continue
            for entry in entries:
                judged = [_judged_on(row, entry["task_ids"]) for row in (a, b)]
                family.append({"split": split, "model": a.entrant.model, "run_a": a.run, "run_b": b.run, **entry,
                               "judged_a": judged[0], "judged_b": judged[1]})
                sides.append((a, b))
        holm_family(family, seed=seed, alpha=alpha)
        found += [_run_entry(entry, a, b) for entry, (a, b) in zip(family, sides)]
    return found


def _judged_on(row: RunRow, task_ids: Sequence[str]) -> int:
    wanted = set(task_ids)
    return sum(t.judged for t in row.entrant.tallies if t.task_id in wanted)


def _run_entry(tested: dict[str, Any], a: RunRow, b: RunRow) -> RunComparison:
    """The test's entry (``holm_family``) with both runs' judges and releases, and its sentence when significant,
    its keys in the order they were filled."""
    entry: RunComparison = {
        "split": tested["split"], "model": tested["model"], "run_a": tested["run_a"], "run_b": tested["run_b"],
        "metric": tested["metric"], "difference": tested["difference"], "tasks": tested["tasks"],
        "judged_a": tested["judged_a"], "judged_b": tested["judged_b"], "interval": tested["interval"],
        "level": tested["level"], "p_adjusted": tested["p_adjusted"], "significant": tested["significant"]}
    if _degenerate(entry["interval"]):
        entry["degenerate"] = DEGENERATE
    entry["judges"] = {"a": {"judge": a.judge, "versions": list(a.judge_versions)},
                       "b": {"judge": b.judge, "versions": list(b.judge_versions)}}
    entry["judge_changed"] = _differ(a.judge, b.judge) or _differ(frozenset(a.judge_versions),
                                                                   frozenset(b.judge_versions))
    entry["releases"] = {"a": a.release, "b": b.release}
    if entry["significant"]:
        entry["sentence"] = runs_sentence(entry, a.phrase, b.phrase)
    return entry


def _differ(a: Any, b: Any) -> bool:
    """Both known (a run that recorded none, an older version's, says nothing) and not the same."""
    return bool(a) and bool(b) and a != b


def runs_sentence(entry: Mapping[str, Any], phrase_a: str, phrase_b: str) -> str:
    """``seedream-4.5 passed 9.8 points less in this run than in the baseline run of 2026-11-20 (paired over 50
    tasks, p = 0.003 after Holm; judge gemini-2.5-flash answered by gemini-2.5-flash-001 in both)``."""
    points = abs(float(entry["difference"])) * 100
    way = "less" if entry["difference"] < 0 else "more"
    return (f"{entry['model']} passed {points:.1f} points {way} in {phrase_a} than in {phrase_b} (paired over "
            f"{entry['tasks']} tasks, p = {entry['p_adjusted']:.2g} after Holm; {judge_text(entry, phrase_a, phrase_b)})")


def judge_text(entry: Mapping[str, Any], phrase_a: str, phrase_b: str) -> str:
    """The two runs' judges in words: the same in both, or each run's."""
    a, b = entry["judges"]["a"], entry["judges"]["b"]
    if not entry["judge_changed"]:
        return f"judge {_judge_words(a)} in both" if a["judge"] or a["versions"] else "judge not recorded"
    return f"the judge differs: {_judge_words(a)} in {phrase_a}, {_judge_words(b)} in {phrase_b}"


def _judge_words(side: Mapping[str, Any]) -> str:
    name = side["judge"] or "not recorded"
    versions = ", ".join(side["versions"])
    return f"{name} answered by {versions}" if versions else str(name)


# --- drift ---------------------------------------------------------------------------------


def drift(candidates: Mapping[str, Sequence[Candidate]], *, seed: int = 0, alpha: float = ALPHA,
          permutations: int = PERMUTATIONS, bootstrap: int = BOOTSTRAP) -> list[DriftEntry]:
    """Per model and per ``BY``: the thirds, the task-adjusted last-minus-first difference, its interval and
    p-value, Holm-adjusted over every tested entry of the run, and a sentence when significant."""
    entries = [entry for model, found in candidates.items()
               for entry in model_drift(model, found, BY, seed=seed, permutations=permutations, bootstrap=bootstrap)]
    tested = [entry for entry in entries if entry.get("p_value") is not None]
    adjusted = holm_exact([Fraction(entry["p_value"]) for entry in tested])
    for entry, p in zip(tested, adjusted):
        entry["p_adjusted"] = float(p)
        entry["significant"] = bool(p < Fraction(str(alpha)))
        if entry["significant"]:
            entry["sentence"] = drift_sentence(entry)
    return entries


def drift_entry(model: str, by: str, candidates: Sequence[Candidate], *, seed: int = 0,
                permutations: int = PERMUTATIONS, bootstrap: int = BOOTSTRAP) -> DriftEntry:
    """One model's drift with ``by`` (see the module docstring); "not enough data" when too few are usable."""
    return model_drift(model, candidates, (by,), seed=seed, permutations=permutations, bootstrap=bootstrap)[0]


def model_drift(model: str, candidates: Sequence[Candidate], by: Sequence[str], *, seed: int = 0,
                permutations: int = PERMUTATIONS, bootstrap: int = BOOTSTRAP) -> list[DriftEntry]:
    """One model's drift entry for each of ``by``.  The entries tested on the same candidates (every candidate
    has both a purchase time and a latency: the usual case) share their permutations and resamples: each is drawn
    once and every entry's statistic is taken on it, so each entry gets the p-value and interval it would get
    alone, for the price of one (at the end of a run, where the drift was most of the time the session took)."""
    prepared = [_drift_start(model, name, candidates) for name in by]
    shared: list[tuple[np.ndarray, np.ndarray, list[tuple[DriftEntry, np.ndarray]]]] = []
    for entry, arrays in prepared:
        if arrays is None:
            continue
        strata, residual, third = arrays
        same = next((group for group in shared
                     if np.array_equal(group[0], strata) and np.array_equal(group[1], residual)), None)
        if same is None:
            shared.append((strata, residual, [(entry, third)]))
        else:
            same[2].append((entry, third))
    for strata, residual, members in shared:
        splits = [third for _, third in members]
        intervals = _bootstrap_intervals(strata, splits, residual, bootstrap, seed)
        p_values = stratified_ps(strata, splits, residual, permutations, seed)
        for (entry, _), interval, p_value in zip(members, intervals, p_values):
            entry["interval"] = list(interval)
            entry["p_value"] = p_value
            entry["permutations"] = permutations
    return [entry for entry, _ in prepared]


def _drift_start(model: str, by: str, candidates: Sequence[Candidate]
                 ) -> tuple[DriftEntry, tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
    """The entry up to its estimate, and what its test needs (task index, residual, third per candidate); no
    test (None) with "not enough data" when too few are usable."""
    usable = _usable(candidates, by)
    tasks = len({c.task for c in usable})
    entry: DriftEntry = {"model": model, "by": by, "candidates": len(usable), "tasks": tasks,
                         "limits": LIMITS[by]}
    if len(usable) < MIN_CANDIDATES or tasks < 2:
        entry["note"] = (f"not enough data: {len(usable)} usable candidates in {tasks} tasks (candidates with a "
                         f"recorded {'purchase time' if by == 'time' else 'latency'} in tasks with two or more; "
                         f"{MIN_CANDIDATES} in 2 tasks needed)")
        return entry, None
    strata, passed, values = _arrays(usable, by)
    third = thirds(values)
    residual = passed - _task_means(strata, passed)[strata]
    estimate = residual @ _weights(third)
    entry["thirds"] = [_third_entry(name, passed[third == k], values[third == k])
                       for k, name in enumerate(THIRDS[by])]
    entry["difference"] = float(estimate) + 0.0
    return entry, (strata, residual, third)


def _usable(candidates: Sequence[Candidate], by: str) -> list[Candidate]:
    """The candidates with a finite value, in tasks with two or more of them (a lone one tells nothing)."""
    valued = [c for c in candidates if _value(c, by) is not None]
    counts: dict[str, int] = {}
    for c in valued:
        counts[c.task] = counts.get(c.task, 0) + 1
    return [c for c in valued if counts[c.task] >= 2]


def _value(candidate: Candidate, by: str) -> float | None:
    value = candidate.bought_at if by == "time" else candidate.latency_s
    return value if value is not None and math.isfinite(value) else None


def _arrays(usable: Sequence[Candidate], by: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Task index (sorted: each task's candidates are one block), verdict (0/1) and value, per candidate."""
    ordered = sorted(usable, key=lambda c: c.task)
    index = {task: i for i, task in enumerate(sorted({c.task for c in ordered}))}
    strata = np.array([index[c.task] for c in ordered], dtype=np.int64)
    passed = np.array([1.0 if c.passed else 0.0 for c in ordered])
    values = np.array([_value(c, by) for c in ordered], dtype=float)
    return strata, passed, values


def thirds(values: np.ndarray) -> np.ndarray:
    """0, 1 or 2 per value: its third by rank over all of them (ties in the order given)."""
    n = values.size
    ranks = np.empty(n, dtype=np.int64)
    ranks[np.argsort(values, kind="stable")] = np.arange(n)
    result: np.ndarray = (3 * ranks) // max(n, 1)
    return result


def _task_means(strata: np.ndarray, passed: np.ndarray) -> np.ndarray:
    counts = np.bincount(strata)
    result: np.ndarray = np.bincount(strata, weights=passed) / counts
    return result


def _weights(third: np.ndarray) -> np.ndarray:
    """Per candidate, its weight in the statistic: 1 / (size of the last third) in it, -1 / (size of the first) in
    that, 0 in the middle; the statistic is the weighted sum of the residuals (the last third's mean residual minus
    the first's)."""
    last, first = (third == 2), (third == 0)
    result: np.ndarray = last / last.sum() - first / first.sum()
    return result


def stratified_p(strata: np.ndarray, third: np.ndarray, residual: np.ndarray, permutations: int = PERMUTATIONS,
                 seed: int = 0) -> float:
    """Two-sided p of the statistic under random permutations within each task (``strata`` sorted, so a task is
    one block): (1 + as extreme) / (1 + permutations)."""
    return stratified_ps(strata, [third], residual, permutations, seed)[0]


def stratified_ps(strata: np.ndarray, splits: Sequence[np.ndarray], residual: np.ndarray,
                  permutations: int = PERMUTATIONS, seed: int = 0) -> list[float]:
    """``stratified_p`` of each of ``splits`` (thirds of the same candidates by different values), on the same
    permutations: each p-value is the one ``stratified_p`` gives it alone (the draws depend on the tasks only).
    The residuals are shuffled within each block against the fixed thirds, which has the distribution of the
    thirds shuffled against fixed residuals (a uniform permutation's inverse is uniform), the tasks with as many
    candidates together: one sort of small rows per chunk."""
    weights = [_weights(third) for third in splits]
    observed = [abs(float(residual @ w)) for w in weights]
    tie = _TIE * max(1.0, float(np.abs(residual).max(initial=0.0)))
    rng = np.random.default_rng(seed)
    groups = _tasks_by_size(strata)
    extreme = [0] * len(splits)
    for start in range(0, permutations, _CHUNK):
        size = min(_CHUNK, permutations - start)
        flipped = np.zeros((len(splits), size))
        for index in groups:  # tasks x candidates of each, one row per task
            order = np.argsort(rng.random((size, *index.shape)), axis=2)
            # each row's own residuals in its drawn order: positions into the rows laid end to end
            shuffled = residual[index].ravel()[order + index.shape[1] * np.arange(index.shape[0])[:, None]]
            for k, w in enumerate(weights):
                flipped[k] += np.einsum("ptc,tc->p", shuffled, w[index])
        for k, found in enumerate(observed):
            extreme[k] += int(np.count_nonzero(np.abs(flipped[k]) >= found - tie))
    return [(1 + count) / (1 + permutations) for count in extreme]


def _tasks_by_size(strata: np.ndarray) -> list[np.ndarray]:
    """The candidates' positions, one row per task, in one matrix per number of candidates a task has."""
    by_size: dict[int, list[np.ndarray]] = {}
    for rows in np.split(np.arange(strata.size), np.flatnonzero(np.diff(strata)) + 1):
        by_size.setdefault(rows.size, []).append(rows)
    return [np.stack(rows) for rows in by_size.values()]


def _bootstrap_intervals(strata: np.ndarray, splits: Sequence[np.ndarray], residual: np.ndarray, resamples: int,
                         seed: int) -> list[tuple[float | None, float | None]]:
    """Per split (thirds of the same candidates), the 95% percentile interval of the statistic over tasks drawn
    with replacement (a task's candidates together), every split on the same draws; None bounds when too few
    resamples have both thirds (or none is asked for)."""
    if resamples < 1:
        return [(None, None)] * len(splits)
    tasks = int(strata.max()) + 1
    weights = np.random.default_rng(seed).multinomial(tasks, np.full(tasks, 1 / tasks), size=resamples)
    return [_interval_on(weights, strata, third, residual, tasks, resamples) for third in splits]


def _interval_on(weights: np.ndarray, strata: np.ndarray, third: np.ndarray, residual: np.ndarray, tasks: int,
                 resamples: int) -> tuple[float | None, float | None]:
    sums = [np.bincount(strata, weights=residual * (third == k), minlength=tasks) for k in (2, 0)]
    counts = [np.bincount(strata, weights=(third == k).astype(float), minlength=tasks) for k in (2, 0)]
    with np.errstate(divide="ignore", invalid="ignore"):
        found = (weights @ sums[0]) / (weights @ counts[0]) - (weights @ sums[1]) / (weights @ counts[1])
    found = found[np.isfinite(found)]
    if found.size < resamples / 2:
        return None, None
    low, high = np.percentile(found, [2.5, 97.5])
    return float(low) + 0.0, float(high) + 0.0


def _third_entry(name: str, passed: np.ndarray, values: np.ndarray) -> DriftThird:
    return {"third": name, "candidates": int(passed.size), "pass_rate": float(passed.mean()),
            "from": float(values.min()), "to": float(values.max())}


def drift_sentence(entry: Mapping[str, Any]) -> str:
    """``seedream-4.5 passed 12 points less in the slowest third of replies than in the fastest (task-adjusted,
    p = 0.003 after Holm, 600 candidates)``."""
    points = abs(float(entry["difference"])) * 100
    way = "less" if entry["difference"] < 0 else "more"
    where = ("in the last third of the run than in the first" if entry["by"] == "time"
             else "in the slowest third of replies than in the fastest")
    return (f"{entry['model']} passed {points:.0f} points {way} {where} (task-adjusted, p = "
            f"{entry['p_adjusted']:.2g} after Holm, {entry['candidates']} candidates)")
