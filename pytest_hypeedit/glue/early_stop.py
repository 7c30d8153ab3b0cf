"""pytest glue of ``--sequential``: buy in an order that can decide early, and stop once every gate is decided.

- ``buying_order`` (every process, at collection): the items in the seeded random interleaving of
  analysis/sequential.py, a pure function of the run's tasks, models and repeats, so every xdist worker
  collects the same list (xdist refuses a run whose workers' collections differ).
- ``SequentialGates`` (the controller): one ``BettingTest`` per gate and row it applies to, fed each record
  as its report arrives (``pytest_hypeedit_record``), in the planned order (the longest complete prefix).
  Once every gate is decided it writes the run's stop file with the decision (glue/stopping.py ``write_stop``).

Why the stop file is the shared truth: every process of the run already watches it (it is how ``--maxfail``
and Ctrl-C stop the workers' pools, under ``-n`` and without), the controller alone sees every record (the
workers each see their share), and a decision is one line written once.  Reading the records on disk
instead would have each worker reread every record of the run, and decide from records whose reports the
controller has not seen.  A pool stopped by it starts no new call; each item it did not buy ends skipped,
its reason the decision (``not started: sequential: gate ... decided FAIL after 38 of 200 candidates``), and a
worker goes on through its items (glue/pool_plugin.py ``_should_stop``) so that each is reported skipped rather than
missing.  A decision is no emergency: the calls in flight, paid for, finish and are saved whatever they take
(the pool's grace is lifted; a second Ctrl-C or SIGTERM still leaves at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pytest

from ..analysis.sequential import (
    FAIL,
    METHOD,
    PASS,
    STOP_PREFIX,
    BettingTest,
    interleaving,
    is_sequential_stop,
    paired_threshold,
    paired_value,
)

COMBINED = "combined"  # as report/leaderboard.py names the pooled row (not imported: numpy-free at collection)
#: Metrics a full run can report but a run stopped early cannot: they need every repeat of every task.
NEEDS_EVERY_REPEAT = ("pass_at_10", "pass_at_4", "expected_attempts", "effective_cost", "first_attempt_pass_rate",
                      "hype_gap", "effective_cost_list", "pass_at_4_unbiased", "pass_at_10_unbiased")
Key = tuple[str, str, str, int]


def look_ahead(config: pytest.Config, concurrency: int) -> int | None:
    """Under --sequential, how far a process's pool may buy past the item pytest waits for (engine/pool.py
    ``ahead``): its share of --concurrency (every process of the run shares it), so a decision taken from the
    reported items stops the buying about --concurrency candidates later, however fast the provider answers."""
    if not config.option.hypeedit_sequential:
        return None
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1) or 1)
    return max(1, -(-concurrency // workers))


def planned_order(run) -> list[Key]:
    """Every item of the run, (split, model, task_id, repeat), in the order --sequential buys them: the tasks of
    every split interleaved at random (seeded), each turn every model's candidate of that task and repeat."""
    tasks = [(split.name, task.task_id) for split in run.splits for task in split.tasks]
    return [(tasks[index][0], spec.name, tasks[index][1], repeat)
            for index, repeat in interleaving(tasks, run.repeats) for spec in run.models]


def buying_order(items: list, run) -> list:
    """The collected items in the planned order (any item the plan does not know keeps its place at the end)."""
    rank = {key: position for position, key in enumerate(planned_order(run))}
    return sorted(items, key=lambda item: rank.get((item.task.split, item.spec.name, item.task.task_id,
                                                     item.repeat), len(rank)))


@dataclass
class Stream:
    """One gate on one row: the row's planned items in order, and the test they feed."""

    gate: Any  # analysis.gates.Gate
    model: str
    split: str
    keys: list[Key]
    test: BettingTest
    baseline: dict[str, float] | None = None  # per-task baseline pass rate, for a gate against the baseline

    @property
    def where(self) -> str:
        return f"{self.model} ({self.split})"

    def line(self) -> str:
        test = self.test
        if test.decision:
            return (f"gate {self.gate.text!r} on {self.where} decided {test.decision} after {test.decided_at} of "
                    f"{len(self.keys)} candidates")
        return f"gate {self.gate.text!r} on {self.where} undecided after {test.position} of {len(self.keys)} candidates"


class SequentialGates:
    """The controller's sequential decisions (see the module docstring)."""

    def __init__(self, config: pytest.Config, run, gates: Sequence, baseline: Mapping[str, Any] | None):
        self.config, self.run = config, run
        self.alpha = float(config.option.hypeedit_gate_alpha)
        if not 0 < self.alpha < 1:
            raise pytest.UsageError(f"--gate-alpha {self.alpha:g}: give the chance of a wrong early decision, a "
                                    "number between 0 and 1 (default 0.05)")
        if not gates:
            raise pytest.UsageError("--sequential decides gates early: give at least one --gate (e.g. "
                                    "--gate 'pass_rate>=0.6')")
        self.order = planned_order(run)
        self.records: dict[Key, Any] = {}
        self.streams: list[Stream] = []
        self.undecidable: list[tuple[Any, str]] = []  # (gate, why it cannot be decided early)
        for gate in gates:
            self._add_streams(gate, baseline)
        self.stopped: str | None = None

    # ------------------------------------------------------------------ the plan
    def _add_streams(self, gate, baseline: Mapping[str, Any] | None) -> None:
        why = _why_not_sequential(gate)
        if why:
            self.undecidable.append((gate, why))
            return
        models = [spec.name for spec in self.run.models]
        if gate.model is not None and gate.model not in models:
            self.undecidable.append((gate, f"the run has no model {gate.model!r}"))
            return
        for model in ([gate.model] if gate.model else models):
            for split in self._scopes(gate):
                self._add_stream(gate, model, split, baseline)

    def _scopes(self, gate) -> list[str]:
        """The rows a gate is checked on (analysis/gates.py _target_rows): its split, else the combined row of a
        run of several splits, else the one split."""
        names = [split.name for split in self.run.splits]
        if gate.split:
            return [gate.split]
        return [COMBINED] if len(names) > 1 else names

    def _add_stream(self, gate, model: str, split: str, baseline: Mapping[str, Any] | None) -> None:
        keys = [k for k in self.order if k[1] == model and (k[0] == split or split == COMBINED)]
        rates = None
        if gate.relative_to_baseline:
            rates, why = baseline_rates(baseline, model, split)
            if rates is None:
                self.undecidable.append((gate, why))
                return
            keys = [k for k in keys if task_key(k, split) in rates]  # paired: the shared tasks only
        if not keys:
            self.undecidable.append((gate, f"no planned candidate of {model} ({split})"))
            return
        if rates is None:
            low, high, threshold = [0.0] * len(keys), [1.0] * len(keys), gate.threshold
        else:
            low = [paired_value(0.0, rates[task_key(k, split)]) for k in keys]
            high = [paired_value(1.0, rates[task_key(k, split)]) for k in keys]
            threshold = paired_threshold(gate.threshold)
        test = BettingTest(threshold, gate.op, self.alpha, low, high)
        self.streams.append(Stream(gate, model, split, keys, test, rates))

    # ------------------------------------------------------------------ records in
    def pytest_hypeedit_record(self, config: pytest.Config, record) -> None:
        self.records[record.key] = record
        for stream in self.streams:
            self._advance(stream)
        if self.stopped is None and self.streams and not self.undecidable and all(s.test.decision for s in self.streams):
            self.stopped = STOP_PREFIX + "; ".join(s.line() for s in self.streams)
            from .stash import POOL_KEY
            from .stopping import write_stop

            write_stop(self.config, self.stopped)
            pool = self.config.stash.get(POOL_KEY, None)
            if pool is not None:  # this process's pool stops now, not at its next look at the stop file: pytest
                pool.grace = math.inf  # asks on meanwhile, and every item it asks lets the pool buy one more
                pool.stop(self.stopped)

    def _advance(self, stream: Stream) -> None:
        test = stream.test
        while test.position < len(stream.keys) and stream.keys[test.position] in self.records:
            record = self.records[stream.keys[test.position]]
            if not record.judged:  # an error or a budget skip: no value (analysis/sequential.py, assumption 3)
                test.skip()
                continue
            outcome = 1.0 if record.passed else 0.0
            if stream.baseline is None:
                test.update(outcome)
            else:
                test.update(paired_value(outcome, stream.baseline[task_key(record.key, stream.split)]))

    # ------------------------------------------------------------------ out: results, gates, terminal
    def decision_for(self, gate, model: str | None, split: str | None) -> Stream | None:
        for stream in self.streams:
            if stream.gate is gate and stream.model == model and stream.split == split:
                return stream
        return None

    def results_entry(self, results: Mapping[str, Any]) -> dict[str, Any]:
        """The results' ``sequential`` object (docs/reference/results.md)."""
        coverage = results.get("coverage") or {}
        planned = int(coverage.get("selected", len(self.order)))
        gates = [{"gate": s.gate.text, "model": s.model, "split": s.split, "decided": s.test.decision is not None,
                  "decision": s.test.decision, "after": s.test.decided_at if s.test.decision else s.test.position,
                  "planned": len(s.keys)} for s in self.streams]
        gates += [{"gate": gate.text, "model": gate.model, "split": gate.split, "decided": False, "decision": None,
                   "not_decidable": why} for gate, why in self.undecidable]
        return {"candidates_bought": candidates_bought(results), "candidates_planned": planned,
                "alpha": self.alpha, "method": METHOD, "stopped": self.stopped is not None,
                "saved_candidates": max(0, planned - candidates_bought(results)) if self.stopped else 0,
                "saved_usd": self._saved_usd(results) if self.stopped else 0.0, "gates": gates}

    def _saved_usd(self, results: Mapping[str, Any]) -> float:
        """What the items not bought would have cost at the models' list prices (generation only)."""
        prices = {spec.name: spec.price for spec in self.run.models}
        bought = {key for key, record in self.records.items() if not _not_bought(record)}
        unreported = sum(row.get("bought_unreported", 0) * prices.get(row["model"], 0.0)
                         for row in results.get("rows") or () if row.get("split") != COMBINED)
        left = sum(prices.get(key[1], 0.0) for key in self.order if key not in bought)
        return round(max(0.0, left - unreported), 6)

    def lines(self, results: Mapping[str, Any] | None) -> list[str]:
        """What the terminal says of the decisions, above the gates."""
        entry = (results or {}).get("sequential") or {}
        lines = [f"sequential (alpha {self.alpha:g}): {s.line()}" for s in self.streams]
        lines += [f"sequential: gate {gate.text!r} cannot be decided early ({why}): the run buys every candidate "
                  "and judges it as without --sequential" for gate, why in self.undecidable]
        if self.stopped:
            lines.append(f"sequential: stopped buying after {entry.get('candidates_bought')} of "
                         f"{entry.get('candidates_planned')} candidates: saved {entry.get('saved_candidates')} "
                         f"candidates (about ${entry.get('saved_usd', 0.0):.2f} at list price, judge not counted)")
        return lines


def _why_not_sequential(gate) -> str | None:
    """Only a pass rate is a mean of one value per candidate, which the betting test needs."""
    if gate.metric != "pass_rate":
        return f"{gate.metric} needs every repeat of a task; only pass_rate gates are decided early"
    if gate.calibrated:
        return "a calibrated figure needs the human sample at the end"
    if gate.bound:
        return "an interval bound is not a mean of candidates; the sequential test is its own interval"
    return None


def task_key(key: Key, split: str) -> str:
    """How a row's task tallies name a task: ``task_id``, or ``split/task_id`` in a combined row."""
    return f"{key[0]}/{key[2]}" if split == COMBINED else key[2]


def baseline_rates(baseline: Mapping[str, Any] | None, model: str, split: str) -> tuple[dict[str, float] | None, str]:
    """Per task, the baseline's pass rate on the row matching (model, split) (analysis/enrich.py baseline_row)."""
    from ..analysis.enrich import baseline_row

    old = baseline_row({"model": model, "split": split}, baseline or {})
    if old is None:
        return None, f"the baseline has no row for {model} on {split}"
    rates = {}
    for tally in old.get("task_tallies") or ():
        judged, passes = tally.get("judged"), tally.get("passes")
        if isinstance(judged, int) and judged > 0 and isinstance(passes, int) and 0 <= passes <= judged:
            rates[str(tally.get("task_id"))] = passes / judged
    if not rates:
        return None, "the baseline results carry no per-task tallies to pair with; rerun the baseline"
    return rates, ""


def _not_bought(record) -> bool:
    from ..engine.records import SKIPPED

    return record.outcome == SKIPPED


def candidates_bought(results: Mapping[str, Any]) -> int:
    """Items with a candidate this run holds: reported and not skipped, plus those bought ahead and not reported
    (a pool stopped by the decision drops the judging of candidates it had bought: they count as bought)."""
    rows = [row for row in results.get("rows") or () if row.get("split") != COMBINED]
    return int(sum(row.get("candidates", 0) - row.get("skipped", 0) + row.get("bought_unreported", 0)
                   for row in rows))


def not_measured(results: dict, reason: str) -> None:
    """A run stopped early has too few repeats of its tasks for the metrics that need every one: they are not
    measured (None, with the reason), never extrapolated."""
    for row in results.get("rows") or ():
        missing = {key: reason for key in NEEDS_EVERY_REPEAT if key in row}
        for key in missing:
            row[key] = None
            (row.get("intervals") or {}).pop(key, None)
            (row.get("interval_notes") or {}).pop(key, None)  # not measured: no "no interval" to explain
        for entry in (row.get("by_task_type") or {}).values():
            if isinstance(entry, dict):
                entry.update({key: None for key in missing if key in entry})
        row["not_measured"] = missing
    if isinstance(results.get("pairwise"), list):
        results["pairwise"] = [e for e in results["pairwise"] if e.get("metric") not in NEEDS_EVERY_REPEAT]


def stopped_sequentially(results: Mapping[str, Any] | None) -> bool:
    return is_sequential_stop(((results or {}).get("coverage") or {}).get("stopped"))


__all__ = ["PASS", "FAIL", "SequentialGates", "buying_order", "planned_order", "not_measured"]


def follow_decisions(gate_results: list, sequential: SequentialGates, results: Mapping[str, Any],
                     allow_incomplete: bool, incomplete_reasons: Sequence[str]) -> list:
    """Each gate decided early passes or fails by its decision (the value on the candidates bought is an
    estimate; the decision is the test's); undecided ones are judged as without --sequential, and say so.  A
    row with errors or skips still fails (analysis/gates.py) unless --allow-incomplete."""
    from dataclasses import replace

    from ..analysis.gates import incompleteness

    rows = {(row.get("model"), row.get("split")): row for row in results.get("rows") or ()}
    followed = []
    for result in gate_results:
        stream = sequential.decision_for(result.gate, result.model, result.split)
        if stream is None or stream.test.decision is None:
            why = next((w for g, w in sequential.undecidable if g is result.gate), None)
            note = (f"not decided early ({why})" if why else
                    f"undecided by --sequential after {stream.test.position if stream else 0} candidates: judged "
                    "on the candidates bought, as without --sequential")
            followed.append(replace(result, note=_joined(result.note, note)))
            continue
        problems = [] if allow_incomplete else list(incomplete_reasons) + incompleteness(rows.get((result.model,
                                                                                                    result.split), {}))
        note = (f"decided {stream.test.decision} by --sequential after {stream.test.decided_at} of {len(stream.keys)} "
                f"candidates (alpha {sequential.alpha:g})")
        followed.append(replace(result, passed=stream.test.decision == PASS and not problems,
                                note=_joined(result.note, note)))
    return followed


def _joined(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second
