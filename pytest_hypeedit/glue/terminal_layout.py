"""Where and when a benchmark run prints its end of session, so that the terminal leads with the answer.

From top to bottom, on the controller:

    FAILURES and ERRORS   one line per task and model in the task files' order, its failed, refused and
                          errored repeats (``task-04 identity: FAIL r003 r005; ERROR r001``), at most
                          MAX_TASK_LINES, then each error's message once; the judge's reasoning of each FAIL
                          is in the report and in the one line per item of ``-rfE``
    the details           each row's pass rate and interval (-v: every interval, the effective-cost grid),
                          baseline, agreement, the HTML report (the plugins' summaries)
    short test summary    condensed: a count per model and outcome, and the command that lists the items;
                          pytest's own line per item when ``-r`` is on the command line (or PYTEST_ADDOPTS)
    HYPE-EDIT-1 results   the table with the run's totals, the results file and the gates: the answer
    = 500 failed in 9s =  pytest's own last line

The answer comes last because a run with hundreds of failures would otherwise scroll it away, and every line
fits 100 columns (report/terminal_table.py: tables fit, prose is folded) so that none wraps.  The
layout is the package's one ``pytest_terminal_summary``, a hook wrapper around everyone's: before them it
prints the one-line sections (and has pytest skip its own); after them, just before pytest's short summary, the
details (``BenchmarkSession.write_details``); after that summary, the answer.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from collections import Counter
from typing import TYPE_CHECKING, Any, Generator, Iterable

import pytest

from ..engine.records import REFUSED
from ..options import set_traceback_style, settings_of, traceback_style
from .items import label, parse_nodeid
from .stash import SESSION_KEY

if TYPE_CHECKING:
    from _pytest.reports import BaseReport

    from ..config import RunConfig
    from ..engine.jobs import Key

#: A failed or errored report as the terminal's stats hold it, with its stat ("failed", "error").
StatReport = tuple[str, "BaseReport"]
#: (item key, FAIL | REFUSED | ERROR, its report).
Outcome = tuple["Key", str, "BaseReport"]

#: Options left out of the listing command (whether each takes a value): those that write files, which a
#: listing must not overwrite, and the run's own -r (the command adds its own).
LEFT_OUT = {"--html": True, "--junitxml": True, "--junit-xml": True, "--results": True, "--css": True,
            "--self-contained-html": False, "-r": True, "--report-chars": True}
#: A short-option cluster that asks for report characters: -r, -rf, -ra, -vrA (v, q, s, l, x take no value).
_REPORT_CHARS = re.compile(r"^-[vqslx]*r")


class BenchmarkTerminal:
    def __init__(self, config: pytest.Config):
        self.config = config

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> Generator[None, None, None]:
        style = traceback_style(self.config)
        summary = not settings_of(self.config).no_summary  # --no-summary: the answer alone
        condensed = summary and not report_chars_given(self.config)
        if style == "line" and summary:
            write_one_line_sections(terminalreporter)
            set_traceback_style(self.config, "no")  # pytest's own sections would print every item again
        skips_asked = condensed and "s" in terminalreporter.reportchars  # an ini file's -ra: one line, not 100
        if condensed:
            terminalreporter.reportchars = "".join(c for c in terminalreporter.reportchars if c not in "fEs")
        details = DetailsFirst(terminalreporter, self.config)
        try:
            return (yield)
        finally:
            details.write()  # if pytest had no short summary to print them before
            set_traceback_style(self.config, style)
            if condensed:
                write_condensed_summary(terminalreporter, self.config)
            if skips_asked:
                for line in skip_lines(terminalreporter.stats):
                    terminalreporter.write_line(line, yellow=True)
            self.write_answer(terminalreporter)

    def write_answer(self, terminalreporter: pytest.TerminalReporter) -> None:
        session = self.config.stash.get(SESSION_KEY, None)
        if session is not None:
            session.write_table(terminalreporter)
        ci = self.config.pluginmanager.get_plugin("hypeedit-ci")
        if ci is not None:
            ci.write_gates(terminalreporter)
        if session is not None:  # last: what the run left out, and the exit status the process returns
            status = getattr(getattr(terminalreporter, "_session", None), "exitstatus", 0)
            session.write_verdict(terminalreporter, status)


class DetailsFirst:
    """The details (intervals, comparisons, agreement, calibration, controls, the HTML report's notes) where the
    other plugins' summaries end: after theirs (junitxml's and pytest-html's file lines) and before pytest's own
    short summary, which pytest prints after every plugin's summary.  Its ``short_test_summary`` is the one seam
    between the two, so it is taken for the length of the hook; a pytest without it gets the details at the end
    of the plugins' summaries all the same (``write`` after the hook)."""

    def __init__(self, terminalreporter: Any, config: pytest.Config):
        self.terminalreporter, self.config, self.written = terminalreporter, config, False
        self.summary = getattr(terminalreporter, "short_test_summary", None)
        if callable(self.summary):
            terminalreporter.short_test_summary = self._then_summary

    def _then_summary(self, *args: Any, **kwargs: Any) -> Any:
        self.write()
        assert self.summary is not None  # set in place of it only
        return self.summary(*args, **kwargs)

    def write(self) -> None:
        if callable(self.summary):
            with contextlib.suppress(AttributeError):
                del self.terminalreporter.short_test_summary  # the class's own again
        if self.written:
            return
        self.written = True
        session = self.config.stash.get(SESSION_KEY, None)
        if session is not None:
            session.write_details(self.terminalreporter)


# --------------------------------------------------------------------------- failures by task

#: Task lines at most; the rest are counted (the report and -rfE list them all).
MAX_TASK_LINES = 20
#: Distinct refusal and error messages at most.
MAX_ERROR_LINES = 5


def write_folded(terminalreporter: pytest.TerminalReporter, lines: Iterable[str], **markup: bool) -> None:
    """Each line within the summary's width, folded at its spaces (report/terminal_table.py ``fold``)."""
    from ..report.terminal_table import fold

    for line in lines:
        for part in fold(line):
            terminalreporter.write_line(part, **markup)


def write_one_line_sections(terminalreporter: pytest.TerminalReporter) -> None:
    """The failed, refused and errored candidates, one line per task and model in the task files' order, and
    each error's message once (with how many candidates it ended)."""
    config = terminalreporter.config
    reports = [(stat, report) for stat in ("failed", "error") for report in terminalreporter.stats.get(stat) or []]
    if not reports:
        return
    terminalreporter.write_sep("=", section_title({stat for stat, _ in reports}))
    others = [report for _, report in reports if parse_nodeid(report.nodeid) is None]  # e.g. a collection error
    write_folded(terminalreporter, [one_line(report) for report in others])
    ours = in_task_order([(stat, report) for stat, report in reports if parse_nodeid(report.nodeid) is not None],
                         config)
    outcomes = candidate_outcomes(ours, config)
    write_folded(terminalreporter, task_lines(outcomes) + reason_lines(outcomes))


def section_title(stats: set[str]) -> str:
    return " and ".join(title for stat, title in (("failed", "FAILURES"), ("error", "ERRORS")) if stat in stats)


def in_task_order(reports: list[StatReport], config: pytest.Config) -> list[StatReport]:
    """(stat, report) pairs in the order of the task files, then of --model, then of the repeats (not in the
    order they completed)."""
    from .stash import RUN_KEY

    order = task_order(config.stash.get(RUN_KEY, None))

    def place(pair: StatReport) -> tuple[tuple[Any, ...], int]:
        key = parse_nodeid(pair[1].nodeid)
        assert key is not None  # only our items are ordered
        split, model, task_id, repeat = key
        return order.get((split, task_id, model), (len(order), split, task_id, model)), repeat

    return sorted(reports, key=place)


def candidate_outcomes(reports: list[StatReport], config: pytest.Config) -> list[Outcome]:
    """(key, FAIL | REFUSED | ERROR, report) of each (stat, report): a failed item whose record says refused is
    a refusal."""
    session = config.stash.get(SESSION_KEY, None)
    records = getattr(session, "records", {}) or {}
    found: list[Outcome] = []
    for stat, report in reports:
        key = parse_nodeid(report.nodeid)
        assert key is not None  # only our items have an outcome
        outcome = "ERROR" if stat == "error" else "FAIL"
        if outcome == "FAIL" and getattr(records.get(key), "outcome", None) == REFUSED:
            outcome = "REFUSED"
        found.append((key, outcome, report))
    return found


def task_lines(outcomes: list[Outcome]) -> list[str]:
    """``task-04 identity: FAIL r003 r005; REFUSED r007; ERROR r001`` per task and model, in the order of the
    outcomes, at most MAX_TASK_LINES of them."""
    marks: dict[tuple[str, str, str], dict[str, list[int]]] = {}
    for (split, model, task_id, repeat), outcome, _ in outcomes:
        marks.setdefault((split, task_id, model), {}).setdefault(outcome, []).append(repeat)
    several = len({split for split, _, _ in marks}) > 1
    groups = list(marks)
    lines = [_task_line(group, marks[group], several) for group in groups[:MAX_TASK_LINES]]
    if len(groups) > MAX_TASK_LINES:
        lines.append(f"... and {len(groups) - MAX_TASK_LINES} more tasks with failures: see the report (--html), or "
                     "rerun with -rfE for one line each")
    return lines


def task_order(run: RunConfig | None) -> dict[tuple[str, str, str], tuple[int, int, int]]:
    """(split, task_id, model) -> its place: the splits' and their task files' order, then --model's."""
    if run is None:
        return {}
    models = [spec.name for spec in run.models]
    return {(split.name, task.task_id, model): (s, t, m) for s, split in enumerate(run.splits)
            for t, task in enumerate(split.tasks) for m, model in enumerate(models)}


def _task_line(group: tuple[str, str, str], outcomes: dict[str, list[int]], several_splits: bool) -> str:
    split, task_id, model = group
    where = f"{split} {task_id}" if several_splits else task_id
    parts = [f"{outcome} " + " ".join(f"r{repeat:03d}" for repeat in sorted(outcomes[outcome]))
             for outcome in ("FAIL", "REFUSED", "ERROR") if outcome in outcomes]
    return f"{where} {model}: " + "; ".join(parts)


def reason_lines(outcomes: list[Outcome]) -> list[str]:
    """Why candidates were refused or errored: each message once, with how many it ended and the first of them
    (``ERROR x10, e.g. task-04 identity r001: ...``); the judge's reasoning of a FAIL is in the report."""
    messages: dict[tuple[str, str], list[str]] = {}
    for (_split, model, task_id, repeat), outcome, report in outcomes:
        if outcome in ("REFUSED", "ERROR"):
            own = label(task_id, model, repeat)
            messages.setdefault((outcome, one_line(report).removeprefix(own + ": ")), []).append(own)
    lines = [f"{outcome}{f' x{len(who)}, e.g.' if len(who) > 1 else ''} {who[0]}: {message}"
             for (outcome, message), who in messages.items()]
    if len(lines) > MAX_ERROR_LINES:
        more = f"... and {len(lines) - MAX_ERROR_LINES} more messages: rerun with -rfE for one line each"
        lines[MAX_ERROR_LINES:] = [more]
    return lines


def one_line(report: BaseReport) -> str:
    """The item's message on one line, starting with the item's task, model and repeat once."""
    key = parse_nodeid(report.nodeid)
    text = str(report.longrepr).strip()  # not longreprtext: under -n it starts with the worker's "[gw0] linux ..."
    if key is None:  # not one of ours (a collection error): pytest's crash message
        crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", None)
        return squeeze(f"{report.head_line or report.nodeid}: {crash or text}")
    split, model, task_id, repeat = key
    own = label(task_id, model, repeat)
    text = squeeze(text)
    return text if text.startswith(own) else f"{own}: {text}"


def squeeze(text: str) -> str:
    """A message on one line: a judge's reasoning may hold line breaks."""
    return " ".join(str(text).split())


# --------------------------------------------------------------------------- the condensed short summary


def report_chars_given(config: pytest.Config) -> bool:
    """Whether ``-r``/``--report-chars`` is on the command line or in PYTEST_ADDOPTS.  An ini file's addopts
    does not count: a project's ``addopts = -ra`` is meant for its own tests, not for 500 benchmark items."""
    args = [*shlex.split(os.environ.get("PYTEST_ADDOPTS", "")), *config.invocation_params.args]
    return any(arg.startswith("--report-chars") or _REPORT_CHARS.match(arg) for arg in map(str, args))


def write_condensed_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    counts = outcome_counts(terminalreporter.stats, config)
    if not counts:
        return
    totals: Counter[str] = Counter()
    for by_outcome in counts.values():
        totals.update(by_outcome)
    terminalreporter.write_sep("=", "short test summary: " + describe(totals))
    for model, by_outcome in counts.items():
        terminalreporter.write_line(f"{model}: {describe(by_outcome)}")
    write_folded(terminalreporter, listing_lines(config))


def outcome_counts(stats: dict[str, list[Any]], config: pytest.Config) -> dict[str, Counter[str]]:
    """{model: Counter(outcome)} of the items that failed (FAIL or refused) or errored."""
    session = config.stash.get(SESSION_KEY, None)
    records = getattr(session, "records", {}) or {}
    counts: dict[str, Counter[str]] = {}
    for stat in ("failed", "error"):
        for report in stats.get(stat) or []:
            key = parse_nodeid(report.nodeid)
            model = key[1] if key else "other"
            record = records.get(key) if key else None
            outcome = REFUSED if stat == "failed" and getattr(record, "outcome", None) == REFUSED else stat
            counts.setdefault(model, Counter())[outcome] += 1
    return counts


#: Kinds of skip reason shown, each with its count and one example; the rest are counted.
MAX_SKIP_LINES = 5


def skip_lines(stats: dict[str, list[Any]]) -> list[str]:
    """Our skipped items condensed: one line per kind of reason (the text before its first ": ", e.g.
    "--budget 2 USD reached" or "not started"), with the count, the models and one example, where pytest's -rs
    prints a line per item (a budget stop skips hundreds)."""
    kinds: dict[str, list[tuple[str, str]]] = {}
    for report in stats.get("skipped") or []:
        key = parse_nodeid(report.nodeid)
        if key is None:
            continue
        reason = _skip_reason(report)
        kinds.setdefault(reason.split(": ", 1)[0], []).append((key[1], reason))
    lines = []
    for kind, items in list(kinds.items())[:MAX_SKIP_LINES]:
        models = Counter(model for model, _ in items)
        by_model = ", ".join(f"{model} {count}" for model, count in models.items())
        lines.append(f"skipped: {len(items)} item{'s' if len(items) != 1 else ''} ({by_model}): {kind} "
                     f"(e.g. {squeeze(items[0][1])[:300]})")
    rest = sum(len(items) for items in list(kinds.values())[MAX_SKIP_LINES:])
    if rest:
        lines.append(f"skipped: {rest} more items for other reasons")
    return lines


def _skip_reason(report: BaseReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return str(text).removeprefix("Skipped: ")


def describe(counts: Counter[str]) -> str:
    words = {"failed": "failed", REFUSED: "refused", "error": "errors"}
    return ", ".join(f"{counts[outcome]} {word}" for outcome, word in words.items() if counts[outcome])


def listing_lines(config: pytest.Config) -> list[str]:
    args = ["pytest", *without_file_outputs([str(a) for a in config.invocation_params.args]), "--lf", "--co", "-q"]
    lines = []
    if config.pluginmanager.has_plugin("cacheprovider"):
        lines += command_lines("list them: ", args)
    lines.append("one line each: the same command with -rfE (reuses what is on disk; errors are tried again)")
    return lines


def command_lines(lead: str, args: list[str]) -> list[str]:
    """A shell command within the summary's width: continued with a backslash, so that it still pastes."""
    from ..report.terminal_table import WIDTH

    lines, current = [], lead + shlex.quote(args[0])
    for word in map(shlex.quote, args[1:]):
        if len(current) + 1 + len(word) > WIDTH - 2:
            lines.append(current + " \\")
            current = "    " + word
        else:
            current += " " + word
    return lines + [current]


def without_file_outputs(args: list[str]) -> list[str]:
    """The run's arguments without those that write files and without its -r."""
    kept, skip = [], False
    for arg in args:
        name = arg.split("=", 1)[0]
        if skip:
            skip = False
        elif name in LEFT_OUT:
            skip = LEFT_OUT[name] and "=" not in arg
        elif not re.fullmatch(r"-r\w+", arg):
            kept.append(arg)
    return kept
