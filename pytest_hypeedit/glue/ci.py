"""What CI reads: gates decide the exit status, statistics go into the results, session metrics go into the junit
XML.

Gates and statistics are pure (analysis/gates.py, analysis/enrich.py); this module only applies them, called in
order by the session's end of the run (glue/session.py ``BenchmarkSession.finish``), never through hook order:

- ``add_statistics`` and ``add_sequential`` (analyses, before the results JSON is written): intervals,
  sensitivity, per-task tallies and the baseline comparison are added to rows; ``--sequential``'s decisions.
- ``decide`` (after the results are written, before junitxml and pytest-html write their files): the gates are
  evaluated and set ``session.exitstatus``; metrics become junit properties.
- ``detail_lines`` and ``write_gates`` (called by glue/terminal_layout.py): intervals, sensitivity and the
  baseline comparison above the table; one explicit line per gate under it, because pytest's last line still
  says "N failed" when the gates pass (and "N passed" when not).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import pytest

from ..analysis.gates import Gate, GateResult, all_pass, evaluate, format_value, parse_gates
from ..errors import HypeEditError, InputError
from ..options import settings_of
from ..report.results_files import load_results

if TYPE_CHECKING:
    from ..analysis.enrich import AnalysisSettings
    from ..analysis.metrics import TaskTally
    from ..config import RunConfig
    from ..report.results_model import Baseline, Results

GATES_KEY = pytest.StashKey[list[str]]()
JUNIT_METRICS = ("pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "effective_cost",
                 "first_attempt_pass_rate", "hype_gap")
JUNIT_COUNTS = ("tasks", "candidates", "judged", "errors", "refusals", "skipped", "spent")
#: What the run covered (report/results.py coverage_summary), for a CI system that reads the junit XML only.
JUNIT_COVERAGE = ("planned", "selected", "recorded", "without_record", "bought_unreported")
#: Exit statuses the gates may override; an interruption or an internal error stays what it is.
GATEABLE = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)


class CiPlugin:
    def __init__(self, config: pytest.Config, run: RunConfig) -> None:
        self.config, self.run = config, run
        self.settings = settings = settings_of(config)
        try:
            self.gates = parse_gates(list(settings.gates))
            self.baseline = _load_baseline(settings.baseline)
        except HypeEditError as exc:
            raise pytest.UsageError(str(exc)) from None
        if any(g.relative_to_baseline for g in self.gates) and self.baseline is None:
            raise pytest.UsageError("--gate refers to 'baseline' but no --baseline RESULTS.json was given")
        if settings.bootstrap < 0 or settings.bootstrap == 1:
            raise pytest.UsageError(f"--bootstrap {settings.bootstrap}: must be 0 (off) or a number of resamples >= 2")
        self.gate_results: list[GateResult] = []
        self.incomplete_reasons: list[str] = []
        self.session: pytest.Session | None = None
        self.sequential = None
        if settings.sequential:  # the decisions, fed every record on the controller (glue/early_stop.py)
            from .early_stop import PLUGIN_NAME, SequentialGates

            self.sequential = SequentialGates(config, run, self.gates, self.baseline)
            config.pluginmanager.register(self.sequential, PLUGIN_NAME)

    @property
    def analysis(self) -> AnalysisSettings:
        """The statistics' settings; numpy is imported here, when the results are computed, not at start-up
        (a tenth of a second before the first paid call)."""
        from ..analysis.enrich import AnalysisSettings

        settings, run = self.settings, self.run
        return AnalysisSettings(run.metric_settings, settings.bootstrap, settings.bootstrap_seed,
                                review_seconds=run.review_seconds, review_rate=run.review_rate)

    def add_statistics(self, results: Results) -> None:
        """Intervals, sensitivity, per-task tallies and the baseline comparison of every row."""
        from ..analysis.enrich import enrich_results
        from ..analysis.serving import candidates_of
        from .stash import SESSION_KEY

        candidates = candidates_of(self.config.stash[SESSION_KEY].records.values())  # serving: routes, drift
        enrich_results(results, _tallies_by_row(self.config, results), self.analysis, self.baseline, candidates)

    def add_sequential(self, results: Results) -> None:
        """``--sequential``: its decisions (``sequential``), and which figures a decided stop left unmeasured."""
        if self.sequential is None:
            return
        from .early_stop import not_measured, stopped_sequentially

        if stopped_sequentially(results):
            not_measured(results, "not measured: --sequential stopped buying before every repeat of every "
                                  "task was bought")
        results["sequential"] = self.sequential.results_entry(results)

    def decide(self, session: pytest.Session, results: Results | None, write_failed: bool) -> None:
        """The gates and the exit status (once the results are written: a run whose results could not be written
        does not exit 0), then the junit XML's properties and gate cases."""
        self.session = session
        if self.gates:
            self.incomplete_reasons = _run_level_problems(session, self.config)
            self.gate_results = evaluate(self.gates, results or {}, (self.baseline or {}).get("rows"),
                                         self.settings.allow_incomplete, self.incomplete_reasons)
            if self.sequential is not None:
                from .early_stop import follow_decisions

                self.gate_results = follow_decisions(self.gate_results, self.sequential, results or {},
                                                     self.settings.allow_incomplete,
                                                     self.incomplete_reasons)
            self.config.stash[GATES_KEY] = [r.line() for r in self.gate_results]
            if session.exitstatus in GATEABLE:
                passed = all_pass(self.gate_results)
                session.exitstatus = pytest.ExitCode.OK if passed else pytest.ExitCode.TESTS_FAILED
        if session.exitstatus == pytest.ExitCode.OK and (write_failed or self._unfinished(results)):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        add_junit_properties(self.config, results, self.gate_results)
        add_junit_gate_cases(self.config, self.gates, self.gate_results)

    def _unfinished(self, results: Results | None) -> bool:
        """A run that is not complete (stopped, a subset, errors, nothing measured) does not exit 0, unless
        --allow-incomplete says a partial run is what was wanted."""
        if results is None or self.settings.allow_incomplete:
            return False
        if self.sequential is not None and finished_by_decision(results):
            return False  # a deliberate, declared stop: the gates' decisions are the exit status
        return not results.get("complete", True)

    def write_details(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The details above the table: each row's pass rate with its interval, and the comparison with the
        baseline; with -v every metric's interval and the effective cost by review time x retry cap (the
        results JSON always has them all)."""
        from .terminal_layout import write_folded

        results = _session_results(self.config)
        if not (results and results.get("rows")):
            return
        verbose = self.config.get_verbosity() > 0
        lines = []
        if self.analysis.bootstrap:
            terminalreporter.write_sep("-", "95% intervals over tasks")
            lines += interval_lines(results) if verbose else headline_interval_lines(results)
        lines += sensitivity_lines(results) if verbose else []
        from ..report.terminal_table import pairwise_lines

        write_folded(terminalreporter, lines + baseline_lines(results) + pairwise_lines(results))
        from ..report.serving_view import serving_lines, serving_title

        serving = serving_lines(results)  # only when it applies: two routes of one model, or a significant drift
        if serving:
            terminalreporter.write_sep("-", serving_title(results))
            write_folded(terminalreporter, serving)
        if not verbose and (self.analysis.bootstrap or sensitivity_lines(results)):
            hint = "-v shows every interval and the effective cost by review time x retry cap (all in results.json)"
            write_folded(terminalreporter, [hint])

    def write_gates(self, terminalreporter: pytest.TerminalReporter) -> None:
        """One line per gate and the verdict, under the results table: printed last, by glue/terminal_layout.py."""
        if not self.gates or self.settings.collect_only:
            return
        terminalreporter.write_sep("=", "HYPE-EDIT-1 gates")
        from .terminal_layout import write_folded

        if self.sequential is not None:
            write_folded(terminalreporter, self.sequential.lines(_session_results(self.config)))

        for result in self.gate_results:
            write_folded(terminalreporter, [result.line()], green=result.passed, red=not result.passed)
        passed = all_pass(self.gate_results)
        status = int(self.session.exitstatus) if self.session is not None else int(not passed)
        verdict = f"all gates pass: exit status {status}" if passed else f"metric gate FAILED: exit status {status}"
        why = "the gates decide the exit status, not single items"
        if passed and status != 0:  # an interrupted, stopped or incomplete run: the status says so, not the gates
            why = "the gates pass, but the run did not finish (its last line says why)"
        terminalreporter.write_line(f"{verdict} ({why})", bold=True, green=passed and status == 0, red=not passed)


def _load_baseline(path: str | None) -> Baseline | None:
    if not path:
        return None
    try:
        baseline = load_results(Path(path))
    except InputError as exc:
        raise InputError(f"--baseline {exc}") from None
    return {**baseline, "source": str(path)}


def _session_results(config: pytest.Config) -> Results | None:
    from .stash import SESSION_KEY

    session = config.stash.get(SESSION_KEY, None)
    return getattr(session, "results", None)


def _tallies_by_row(config: pytest.Config, results: Results) -> dict[tuple[str, str], list[TaskTally]]:
    """Per-task tallies of every row, from the session's records (as report/results.py builds them)."""
    from ..report.results import tallies_of
    from ..report.tables import COMBINED
    from .stash import SESSION_KEY

    records = list(config.stash[SESSION_KEY].records.values())
    tallies = {}
    for row in results.get("rows") or []:
        model, split = row["model"], row["split"]
        mine = [r for r in records if r.model == model and (split == COMBINED or r.split == split)]
        tallies[(model, split)] = tallies_of(mine, pooled_keys=split == COMBINED)
    return tallies


def _run_level_problems(session: pytest.Session, config: pytest.Config) -> list[str]:
    """Items that ended without a record (a crashed worker, -x, an internal error) make a run incomplete."""
    from .stash import SESSION_KEY

    results = getattr(config.stash.get(SESSION_KEY, None), "results", None) or {}
    covered = results.get("coverage")
    if covered:  # the results' own account (glue/session.py): stopped, a subset, items without a record
        ignored = ROW_REASONS + (DECIDED_STOP if finished_by_decision(results) else ())
        return [r["detail"] for r in covered.get("reasons") or () if r["reason"] not in ignored]
    recorded = len(getattr(config.stash.get(SESSION_KEY, None), "records", {}) or {})
    collected = session.testscollected or 0
    if recorded < collected:
        return [f"{collected - recorded} of {collected} items ended without a record"]
    return []


#: Reasons each row already shows to its gate (analysis/gates.py incompleteness): not repeated at run level.
ROW_REASONS = ("errors", "skipped", "disk_full")
#: What a stop by --sequential leaves (report/results.py incomplete_reasons): the items deliberately not bought,
#: and candidates the pool had bought whose judging the stop dropped.  Neither fails a gate: it was decided.
DECIDED_STOP = ("sequential", "bought_unreported")


def finished_by_decision(results: Mapping[str, Any]) -> bool:
    """Stopped by --sequential's decision, and nothing else keeps the run from being complete."""
    reasons = ((results or {}).get("coverage") or {}).get("reasons") or ()
    return any(r["reason"] == "sequential" for r in reasons) and all(r["reason"] in DECIDED_STOP for r in reasons)


# --------------------------------------------------------------------------- junit XML


def junit_properties(results: Mapping[str, Any] | None, gate_results: list[GateResult]) -> list[tuple[str, str]]:
    """Flat ``hypeedit.<model>.<split>.<metric>`` properties a CI system can read without parsing JSON."""
    props: list[tuple[str, str]] = []
    for row in (results or {}).get("rows") or []:
        prefix = f"hypeedit.{row['model']}.{row['split']}"
        for key in JUNIT_METRICS + JUNIT_COUNTS:
            if row.get(key) is not None:
                props.append((f"{prefix}.{key}", _scalar(row[key])))
        for key, bounds in (row.get("intervals") or {}).items():
            if key in JUNIT_METRICS:
                props += [(f"{prefix}.{key}.low", _scalar(bounds[0])), (f"{prefix}.{key}.high", _scalar(bounds[1]))]
        if row.get("repeats") is not None:  # what pass_at_10 and hype_gap measure at this many (Pass@k below 10)
            props.append((f"{prefix}.repeats", str(row["repeats"])))
            props += [(f"{prefix}.{key}.label", str(label)) for key, label in (row.get("metric_labels") or {}).items()]
    if results is not None:
        props.append(("hypeedit.complete", str(bool(results.get("complete", True))).lower()))
        coverage = results.get("coverage") or {}
        props += [(f"hypeedit.coverage.{key}", str(coverage[key])) for key in JUNIT_COVERAGE if key in coverage]
    if gate_results:
        props.append(("hypeedit.gates", "passed" if all_pass(gate_results) else "failed"))
        props += [(f"hypeedit.gate.{i}", r.line()) for i, r in enumerate(gate_results, start=1)]
    return props


def _scalar(value: Any) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


def add_junit_properties(config: pytest.Config, results: Mapping[str, Any] | None, gate_results: list[GateResult]) -> None:
    """Add testsuite properties through the controller's LogXML (record_testsuite_property cannot reach
    the controller from an xdist worker); our sessionfinish runs before LogXML writes the file."""
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    for name, value in junit_properties(results, gate_results):
        xml.add_global_property(name, value)


def add_junit_gate_cases(config: pytest.Config, gates: list[Gate], gate_results: list[GateResult]) -> None:
    """One testcase per gate (classname ``hypeedit.gates``, named by the gate's text), failed exactly when the gate
    failed on some row it applies to, its lines the failure's message: the decision, beside the candidates' own
    testcases (whose FAILs are verdicts).  Fed to the controller's LogXML as the reports of a test that ran; xdist
    workers write no junit XML, so each gate appears once."""
    from _pytest.junitxml import xml_key
    from _pytest.reports import TestReport

    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    for index, gate in enumerate(gates, start=1):
        mine = [result for result in gate_results if result.gate == gate]
        passed = bool(mine) and all_pass(mine)
        lines = "\n".join(result.line() for result in mine) or f"gate {gate.text!r} was not evaluated"
        nodeid = f"hypeedit::gates::{gate.text}"  # a gate's text has no "::" (analysis/gates.py _GATE)
        location = ("hypeedit", None, f"gate {index}")
        xml.pytest_runtest_logreport(TestReport(nodeid, location, {}, "passed", None, "setup"))
        call = TestReport(nodeid, location, {}, "passed", None, "call") if passed else \
            TestReport(nodeid, location, {}, "failed", lines, "call")
        xml.pytest_runtest_logreport(call)
        xml.pytest_runtest_logreport(TestReport(nodeid, location, {}, "passed", None, "teardown"))


# --------------------------------------------------------------------------- terminal


def interval_lines(results: Mapping[str, Any]) -> list[str]:
    """-v: every metric of every row with its interval, a row's cells folded within the terminal's width."""
    from ..report.tables import COLUMNS
    from ..report.terminal_table import fold_cells

    lines = []
    for row in results.get("rows") or []:
        cells = [_with_interval(row, key) for key, _, _ in COLUMNS]
        lines += fold_cells(f"{row['model']} ({row['split']}):", cells)
    return lines


def headline_interval_lines(results: Mapping[str, Any]) -> list[str]:
    """The default: each row's pass rate and its interval."""
    return [f"{row['model']} ({row['split']}): {_with_interval(row, 'pass_rate')}" for row in results.get("rows") or []]


def _with_interval(row: Mapping[str, Any], key: str) -> str:
    from ..analysis.gates import METRIC_KINDS

    kind, bounds = METRIC_KINDS[key], (row.get("intervals") or {}).get(key)
    ci = f" [{format_value(bounds[0], kind)}, {format_value(bounds[1], kind)}]" if bounds else ""
    note = (row.get("interval_notes") or {}).get(key)
    if note and not bounds:  # a figure without an interval says why (analysis/task_intervals.py)
        ci = f" (no interval: {note})"
    return f"{_named(row, key)} {format_value(row.get(key), kind)}{ci}"


def _named(row: Mapping[str, Any], key: str) -> str:
    """A metric's key, and what it measures when the row's repeats make pass_at_10 a Pass@k: "pass_at_10 (Pass@2)"."""
    from ..report.tables import metric_labels

    label = metric_labels(row.get("repeats")).get(key)
    return f"{key} ({label})" if label is not None and label != metric_labels(None)[key] else key


def sensitivity_lines(results: Mapping[str, Any]) -> list[str]:
    """Effective cost of each combined (or only) row across review times x retry caps."""
    rows = [r for r in results.get("rows") or [] if r.get("split") == "combined"] or list(results.get("rows") or [])
    lines = []
    for row in rows:
        grid = row.get("sensitivity") or []
        if not grid:
            continue
        caps = sorted({g["retry_cap"] for g in grid})
        cost = {(g["review_seconds"], g["retry_cap"]): g.get("effective_cost") for g in grid}
        lines.append(f"effective cost of {row['model']} ({row['split']}) by review time x retry cap: "
                     + "  ".join(f"cap {c:>2}" for c in caps))
        for seconds in sorted({g["review_seconds"] for g in grid}):
            cells = "  ".join(f"{format_value(cost.get((seconds, c)), 'dollars'):>6}" for c in caps)
            lines.append(f"  {seconds:>5g} s review: {cells}")
    return lines


def baseline_lines(results: Mapping[str, Any]) -> list[str]:
    from ..analysis.gates import METRIC_KINDS

    lines = []
    for row in results.get("rows") or []:
        if row.get("baseline_error"):
            lines.append(f"baseline for {row['model']} ({row['split']}): {row['baseline_error']}")
        for key, entry in (row.get("baseline") or {}).items():
            if key not in METRIC_KINDS or entry.get("difference") is None:
                continue
            kind = METRIC_KINDS[key]
            ci = ""
            if entry.get("low") is not None:
                ci = f" [{format_value(entry['low'], kind)}, {format_value(entry['high'], kind)}]"
            elif entry.get("degenerate"):
                ci = " (no interval: every shared task changed by the same amount)"
            else:  # null bounds: the test rules out no difference at 95% (5 shared tasks or fewer)
                ci = f" (no 95% interval: {entry['tasks']} shared tasks are too few to rule out any difference)"
            lines.append(f"vs baseline {row.get('baseline_model')}: {row['model']} ({row['split']}) {key} "
                         f"{format_value(entry['current'], kind)} vs {format_value(entry['baseline'], kind)}, "
                         f"difference {format_value(entry['difference'], kind)}{ci} on {entry['tasks']} tasks")
    return lines
