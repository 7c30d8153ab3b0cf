"""pytest glue of ``--sequential``: buy in an order that can decide early, and stop once every gate is decided.

- The order (glue/sequential_order.py): per model, a random interleaving of the run's tasks drawn once per
  outputs folder and run identity and kept there; the controller reads or draws it at configure time and hands
  its seeds to every xdist worker (``pytest_configure_node``), so every process collects the same list (xdist
  does not accept a run whose workers' collections differ).  ``buying_order`` sorts the items by it.
- ``SequentialGates`` (the controller): one ``BettingTest`` per gate and row it applies to, at the run's
  --gate-alpha split over them (``per_gate_alpha``), fed each record as its report arrives
  (``pytest_hypeedit_record``), in the planned order (the longest complete prefix).  A run with no gate the
  test can decide is not accepted at configure time, before anything is paid for.

The decision is kept in the controller's memory (``stopped``), the one process that sees every record; once
every gate is decided it also writes the run's stop file (glue/stopping.py ``write_stop``), but only as the
signal every process already watches to stop buying (it is how ``--maxfail`` and Ctrl-C stop the workers'
pools, under ``-n`` and without).  A stop file is never read back as a decision (``vouched_stop``): one that
reads like a decision and that this run's controller did not make stops the run as any stop does, incomplete.
A pool stopped by it starts no new call; each item it did not buy ends skipped, its reason the decision
(``not started: sequential: gate ... decided FAIL after 38 of 200 candidates``), and a worker goes on through its
items (glue/pool_plugin.py ``_should_stop``) so that each is reported skipped rather than missing.  A decision is
no emergency: the calls in flight, paid for, finish and are saved whatever they take (the pool's grace is lifted;
a second Ctrl-C or SIGTERM still leaves at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Sequence

import pytest

from ..analysis.sequential import (
    FAIL,
    METHOD,
    PASS,
    STOP_PREFIX,
    BettingTest,
    is_sequential_stop,
    paired_threshold,
    paired_value,
    per_gate_alpha,
)
from ..options import settings_of
from .sequential_order import KeptOrder, kept_order, model_orders

if TYPE_CHECKING:
    from ..analysis.gates import Gate, GateResult
    from ..config import RunConfig
    from ..engine.records import Record
    from ..report.results_model import BuyingOrder, GateDecision, Results, RowMetric, Sequential
    from .items import CandidateItem

COMBINED = "combined"  # as report/leaderboard.py names the pooled row (not imported: numpy-free at collection)
#: Metrics a full run can report but a run stopped early cannot: they need every repeat of every task.
NEEDS_EVERY_REPEAT: tuple[RowMetric, ...] = (
    "pass_at_10", "pass_at_4", "expected_attempts", "effective_cost", "first_attempt_pass_rate", "hype_gap",
    "effective_cost_list", "pass_at_4_unbiased", "pass_at_10_unbiased")
Key = tuple[str, str, str, int]
#: The name the controller registers ``SequentialGates`` under (glue/ci.py).
PLUGIN_NAME = "hypeedit-sequential"
#: Each model's order seed, on the process that drew or read them, and the workerinput key that hands them over.
SEEDS_KEY = pytest.StashKey[dict[str, str]]()
SEEDS_INPUT = "hypeedit_sequential_seeds"


def look_ahead(config: pytest.Config, concurrency: int) -> int | None:
    """Under --sequential, how far a process's pool may buy past the item pytest waits for (engine/pool.py
    ``ahead``): its share of --concurrency (every process of the run shares it), so a decision taken from the
    reported items stops the buying about --concurrency candidates later, however fast the provider answers."""
    if not settings_of(config).sequential:
        return None
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1) or 1)
    return max(1, -(-concurrency // workers))


def planned_order(run: RunConfig, seeds: Mapping[str, str]) -> list[Key]:
    """Every item of the run, (split, model, task_id, repeat), in the order --sequential buys them: each model's
    items in its own kept random order (glue/sequential_order.py), the models abreast (every model's first item,
    then every model's second)."""
    orders = model_orders(run, dict(seeds))
    return [order[position] for position in range(len(orders[0]) if orders else 0) for order in orders]


def buying_order(items: list[CandidateItem], config: pytest.Config) -> list[CandidateItem]:
    """The collected items in the planned order (any item the order does not know keeps its place at the end).
    The seeds: the controller's (drawn or read at configure time), handed to a worker in its workerinput."""
    from .stash import RUN_KEY

    if hasattr(config, "workerinput"):
        seeds = config.workerinput.get(SEEDS_INPUT)
        if seeds is None:  # pragma: no cover - the controller always hands them over (pytest_configure_node)
            raise RuntimeError("--sequential: this worker was not given the run's buying order")
    else:
        seeds = config.stash.get(SEEDS_KEY, None)
        if seeds is None:  # an estimate: nothing is bought, no order was drawn
            return items
    rank = {key: position for position, key in enumerate(planned_order(config.stash[RUN_KEY], seeds))}
    return sorted(items, key=lambda item: rank.get((item.task.split, item.spec.name, item.task.task_id,
                                                     item.repeat), len(rank)))


class DecidableGate(NamedTuple):
    """A gate on one row the test can decide: its per-task baseline rates when against the baseline."""

    gate: Any
    model: str
    split: str
    rates: dict[str, float] | None


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

    def __init__(self, config: pytest.Config, run: RunConfig, gates: Sequence[Gate],
                 baseline: Mapping[str, Any] | None) -> None:
        self.config, self.run = config, run
        self.alpha = float(settings_of(config).gate_alpha)
        if not 0 < self.alpha < 1:
            raise pytest.UsageError(f"--gate-alpha {self.alpha:g}: give the chance of a wrong early decision, a "
                                    "number between 0 and 1 (default 0.05)")
        if not gates:
            raise pytest.UsageError("--sequential decides gates early: give at least one --gate (e.g. "
                                    "--gate 'pass_rate>=0.6')")
        self.records: dict[Key, Any] = {}
        self.undecidable: list[tuple[Any, str]] = []  # (gate, why it cannot be decided early)
        decidable: list[DecidableGate] = []
        for gate in gates:
            decidable += self._decidable(gate, baseline)
        if not decidable:
            raise pytest.UsageError(undecidable_message(self.undecidable))
        self.orders: list[KeptOrder] = [kept_order(run, spec) for spec in run.models]
        self.seeds = {order.model: order.seed for order in self.orders}
        config.stash[SEEDS_KEY] = self.seeds
        self.order = planned_order(run, self.seeds)
        self.gate_alpha = per_gate_alpha(self.alpha, len(decidable))
        self.streams = [self._stream(row) for row in decidable]
        self.stopped: str | None = None  # the decision, once made: kept here, never read back from a file

    # ------------------------------------------------------------------ the gates the test can decide
    def _decidable(self, gate: Gate, baseline: Mapping[str, Any] | None) -> list[DecidableGate]:
        why = _why_not_sequential(gate)
        if why:
            self.undecidable.append((gate, why))
            return []
        from ..analysis.gates import route_scoped

        models = [spec.name for spec in self.run.models]
        scoped = route_scoped(gate, models)  # MODEL@ROUTE: the model on that route (analysis/gates.py)
        if scoped.model is not None and scoped.model not in models:
            self.undecidable.append((gate, f"the run has no model {scoped.model!r}"))
            return []
        return [row for model in ([scoped.model] if scoped.model else models) for split in self._scopes(scoped)
                if (row := self._decidable_on(gate, model, split, baseline)) is not None]

    def _scopes(self, gate: Gate) -> list[str]:
        """The rows a gate is checked on (analysis/gates.py _target_rows): its split, else the combined row of a
        run of several splits, else the one split."""
        names = [split.name for split in self.run.splits]
        if gate.split:
            return [gate.split]
        return [COMBINED] if len(names) > 1 else names

    def _decidable_on(self, gate: Gate, model: str, split: str,
                      baseline: Mapping[str, Any] | None) -> DecidableGate | None:
        tasks = [(s.name, t.task_id) for s in self.run.splits for t in s.tasks if split in (s.name, COMBINED)]
        rates = None
        if gate.relative_to_baseline:
            rates, why = baseline_rates(baseline, model, split)
            if rates is None:
                self.undecidable.append((gate, why))
                return None
            tasks = [t for t in tasks if task_key((t[0], model, t[1], 0), split) in rates]  # paired: shared tasks
        if not tasks or self.run.repeats < 1:
            self.undecidable.append((gate, f"no planned candidate of {model} ({split})"))
            return None
        return DecidableGate(gate, model, split, rates)

    def _stream(self, row: DecidableGate) -> Stream:
        """The row's planned items in buying order, and their test at the per-gate alpha."""
        gate, model, split, rates = row
        keys = [k for k in self.order if k[1] == model and (k[0] == split or split == COMBINED)]
        if rates is None:
            low, high, threshold = [0.0] * len(keys), [1.0] * len(keys), gate.threshold
        else:
            rates = like_the_full_run(rates, [task_key(k, split) for k in keys])
            low = [paired_value(0.0, rates[task_key(k, split)]) for k in keys]
            high = [paired_value(1.0, rates[task_key(k, split)]) for k in keys]
            threshold = paired_threshold(gate.threshold)
        return Stream(gate, model, split, keys, BettingTest(threshold, gate.op, self.gate_alpha, low, high), rates)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: every worker collects its items in the kept order (``buying_order``)."""
        node.workerinput[SEEDS_INPUT] = dict(self.seeds)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """A kept order that could not be used or kept is said before the first item, also under -q."""
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for order in self.orders:
            if order.warning and reporter is not None:
                reporter.write_line(f"hypeedit: WARNING: --sequential: {order.warning}", yellow=True, bold=True)

    # ------------------------------------------------------------------ records in
    def pytest_hypeedit_record(self, config: pytest.Config, record: Record) -> None:
        self.records[record.key] = record
        for stream in self.streams:
            self._advance(stream)
        if (self.stopped is None and self.streams and not self.undecidable and all(s.test.decision for s in self.streams)
                and any(key not in self.records for key in self.order)):  # decided on the last item: nothing to stop
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
    def decision_for(self, gate: Gate, model: str | None, split: str | None) -> Stream | None:
        for stream in self.streams:
            if stream.gate is gate and stream.model == model and stream.split == split:
                return stream
        return None

    def results_entry(self, results: Mapping[str, Any]) -> Sequential:
        """The results' ``sequential`` object (docs/reference/results.md)."""
        coverage = results.get("coverage") or {}
        planned = int(coverage.get("selected", len(self.order)))
        gates: list[GateDecision] = [
            {"gate": s.gate.text, "model": s.model, "split": s.split, "decided": s.test.decision is not None,
             "decision": s.test.decision, "after": s.test.decided_at if s.test.decision else s.test.position,
             "planned": len(s.keys)} for s in self.streams]
        gates += [{"gate": gate.text, "model": gate.model, "split": gate.split, "decided": False, "decision": None,
                   "not_decidable": why} for gate, why in self.undecidable]
        orders: list[BuyingOrder] = [{"model": order.model, "file": str(order.path), "drawn": order.drawn}
                                     for order in self.orders]
        return {"candidates_bought": candidates_bought(results), "candidates_planned": planned,
                "alpha": self.alpha, "alpha_per_gate": self.gate_alpha, "method": METHOD,
                "stopped": self.stopped is not None,
                "saved_candidates": max(0, planned - candidates_bought(results)) if self.stopped else 0,
                "saved_usd": self._saved_usd(results) if self.stopped else 0.0, "gates": gates, "orders": orders}

    def _saved_usd(self, results: Mapping[str, Any]) -> float:
        """What the items not bought would have cost at the models' list prices (generation only)."""
        prices = {spec.name: spec.price for spec in self.run.models}
        bought = {key for key, record in self.records.items() if not _not_bought(record)}
        unreported = sum(row.get("bought_unreported", 0) * prices.get(row["model"], 0.0)
                         for row in results.get("rows") or () if row.get("split") != COMBINED)
        left = sum(prices.get(key[1], 0.0) for key in self.order if key not in bought)
        return round(max(0.0, float(left - unreported)), 6)

    def guarantee(self) -> str:
        return (f"sequential: --gate-alpha {self.alpha:g} for the run, split over its {len(self.streams)} early "
                f"decisions: alpha {self.gate_alpha:g} each (an early decision differs from the full run's in at "
                f"most {self.alpha:.0%} of runs, for any task set)")

    def lines(self, results: Mapping[str, Any] | None) -> list[str]:
        """What the terminal says of the decisions, above the gates."""
        entry = (results or {}).get("sequential") or {}
        lines = [self.guarantee()] if len(self.streams) > 1 else []
        lines += [f"sequential (alpha {self.gate_alpha:g}): {s.line()}" for s in self.streams]
        lines += [f"sequential: gate {gate.text!r} cannot be decided early ({why}): the run buys every candidate "
                  "and judges it as without --sequential" for gate, why in self.undecidable]
        if self.stopped:
            lines.append(f"sequential: stopped buying after {entry.get('candidates_bought')} of "
                         f"{entry.get('candidates_planned')} candidates: saved {entry.get('saved_candidates')} "
                         f"candidates (about ${entry.get('saved_usd', 0.0):.2f} at list price, judge not counted)")
        return lines


def _why_not_sequential(gate: Gate) -> str | None:
    """Only a pass rate is a mean of one value per candidate, which the betting test needs."""
    from ..analysis.gates import JUDGE_METRICS

    if gate.metric in JUDGE_METRICS:
        return "a figure of the judge's controls (--judge-controls), judged before the first item"
    if gate.metric != "pass_rate":
        return f"{gate.metric} needs every repeat of a task; only pass_rate gates are decided early"
    if gate.calibrated:
        return "a calibrated figure needs the human sample at the end"
    if gate.bound:
        return "an interval bound is not a mean of candidates; the sequential test is its own interval"
    return None


def like_the_full_run(rates: Mapping[str, float], tasks: Sequence[str]) -> dict[str, float]:
    """The baseline figure each planned task is paired with, so the test decides the full run's gate: its row's
    pass rate against the baseline's on the shared tasks (analysis/gates.py).  When the baseline has every task
    of the row, that is each task's own rate (paired per task: task difficulty cancels out); when the row has
    tasks the baseline lacks, the full gate sets the row's pass rate on ALL its tasks against the baseline's mean
    on the shared ones, so every task is paired with that mean."""
    if all(task in rates for task in tasks):
        return dict(rates)
    shared = sorted(set(tasks) & set(rates))
    mean = math.fsum(rates[task] for task in shared) / len(shared)
    return {task: mean for task in tasks}


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


def _not_bought(record: Record) -> bool:
    from ..engine.records import SKIPPED

    return bool(record.outcome == SKIPPED)


def candidates_bought(results: Mapping[str, Any]) -> int:
    """Items with a candidate this run holds: reported and not skipped, plus those bought ahead and not reported
    (a pool stopped by the decision drops the judging of candidates it had bought: they count as bought)."""
    rows = [row for row in results.get("rows") or () if row.get("split") != COMBINED]
    return int(sum(row.get("candidates", 0) - row.get("skipped", 0) + row.get("bought_unreported", 0)
                   for row in rows))


def not_measured(results: Results, reason: str) -> None:
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
    routes = (results.get("serving") or {}).get("routes")
    if isinstance(routes, list):  # the same comparisons between the routes of one model (analysis/serving.py)
        results["serving"]["routes"] = [e for e in routes if e.get("metric") not in NEEDS_EVERY_REPEAT]


def stopped_sequentially(results: Mapping[str, Any] | None) -> bool:
    return is_sequential_stop(((results or {}).get("coverage") or {}).get("stopped"))


__all__ = ["PASS", "FAIL", "SequentialGates", "buying_order", "planned_order", "not_measured", "vouched_stop"]


def follow_decisions(gate_results: list[GateResult], sequential: SequentialGates, results: Mapping[str, Any],
                     allow_incomplete: bool, incomplete_reasons: Sequence[str]) -> list[GateResult]:
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
                f"candidates (alpha {sequential.gate_alpha:g}{_of_run(sequential)})")
        followed.append(replace(result, passed=stream.test.decision == PASS and not problems,
                                note=_joined(result.note, note)))
    return followed


def _of_run(sequential: SequentialGates) -> str:
    return f" of the run's {sequential.alpha:g}" if len(sequential.streams) > 1 else ""


def check_decidable(gates: Sequence[Any]) -> None:
    """--sequential with no gate the test can decide is a usage error at start-up (glue/startup.py check_gates),
    before the run writes anything: not even its release's folder marker or a buying order."""
    undecidable = [(gate, why) for gate in gates if (why := _why_not_sequential(gate)) is not None]
    if len(undecidable) == len(gates):
        raise pytest.UsageError(undecidable_message(undecidable))


def undecidable_message(undecidable: Sequence[tuple[Any, str]]) -> str:
    """Why a run with --sequential and no gate the test can decide is not accepted, before anything is paid for."""
    whys = "; ".join(f"{gate.text!r}: {why}" for gate, why in undecidable)
    return (f"--sequential: no gate of this run can be decided early ({whys}); only pass_rate gates, absolute or "
            "against --baseline, are: add one (e.g. --gate 'pass_rate>=0.6'), or drop --sequential to buy every "
            "candidate and judge the gates on the full run")


def vouched_stop(config: pytest.Config, written: str | None) -> str | None:
    """Why the run stopped, as it may be counted: a --sequential decision only when this run's controller made
    it (kept in its memory), whatever the stop file says; a stop file that reads like a decision and that this
    run did not make is a stop like any other (the run is incomplete), never a decision."""
    sequential = config.pluginmanager.get_plugin(PLUGIN_NAME)
    decided = getattr(sequential, "stopped", None)
    if decided and (written is None or is_sequential_stop(written)):
        return str(decided)
    if is_sequential_stop(written):
        text = str(written)[len(STOP_PREFIX):][:200]
        return (f"a stop file that reads as a --sequential decision this run did not make (\"{text}\"); "
                "no gate was decided")
    return written


def _joined(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second
