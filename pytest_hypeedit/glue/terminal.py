"""Where and when a benchmark run prints its end of session, so that the terminal leads with the answer.

From top to bottom, on the controller:

    ERRORS, FAILURES      one line per errored or failed item: its own message, which names the task,
                          model and repeat once (glue/items.py); pytest's ``--tb=line`` would print each
                          twice, the message and then its first 50 characters again
    the details           intervals, sensitivity, baseline, agreement, the HTML report (the plugins' summaries)
    short test summary    condensed: a count per model and outcome, and the command that lists the items;
                          pytest's own line per item when ``-r`` is on the command line (or PYTEST_ADDOPTS)
    HYPE-EDIT-1 results   the table with the run's totals, the results file and the gates: the answer
    = 500 failed in 9s =  pytest's own last line

The answer comes last because a run with hundreds of failures would otherwise scroll it away.  The
layout is one hook wrapper around everyone's ``pytest_terminal_summary``: before them it prints the
one-line sections (and has pytest skip its own), after them, and after pytest's short summary, the answer.
"""

from __future__ import annotations

import os
import re
import shlex
from collections import Counter

import pytest

from ..engine.records import REFUSED
from .items import label, parse_nodeid
from .stash import SESSION_KEY

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
    def pytest_terminal_summary(self, terminalreporter):
        style = self.config.option.tbstyle
        summary = not getattr(self.config.option, "no_summary", False)  # --no-summary: the answer alone
        condensed = summary and not report_chars_given(self.config)
        if style == "line" and summary:
            write_one_line_sections(terminalreporter)
            self.config.option.tbstyle = "no"  # pytest's own sections would print every item again
        skips_asked = condensed and "s" in terminalreporter.reportchars  # an ini file's -ra: one line, not 100
        if condensed:
            terminalreporter.reportchars = "".join(c for c in terminalreporter.reportchars if c not in "fEs")
        try:
            return (yield)
        finally:
            self.config.option.tbstyle = style
            if condensed:
                write_condensed_summary(terminalreporter, self.config)
            if skips_asked:
                for line in skip_lines(terminalreporter.stats):
                    terminalreporter.write_line(line, yellow=True)
            self.write_answer(terminalreporter)

    def write_answer(self, terminalreporter) -> None:
        session = self.config.stash.get(SESSION_KEY, None)
        if session is not None:
            session.write_table(terminalreporter)
        ci = self.config.pluginmanager.get_plugin("hypeedit-ci")
        if ci is not None:
            ci.write_gates(terminalreporter)
        if session is not None:  # last: what the run left out, and the exit status the process returns
            status = getattr(getattr(terminalreporter, "_session", None), "exitstatus", 0)
            session.write_verdict(terminalreporter, status)


# --------------------------------------------------------------------------- one line per item


def write_one_line_sections(terminalreporter) -> None:
    for stat, title in (("error", "ERRORS"), ("failed", "FAILURES")):
        reports = terminalreporter.stats.get(stat) or []
        if reports:
            terminalreporter.write_sep("=", title)
            for report in reports:
                terminalreporter.write_line(one_line(report))


def one_line(report) -> str:
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


def write_condensed_summary(terminalreporter, config: pytest.Config) -> None:
    counts = outcome_counts(terminalreporter.stats, config)
    if not counts:
        return
    totals = Counter()
    for by_outcome in counts.values():
        totals.update(by_outcome)
    terminalreporter.write_sep("=", "short test summary: " + describe(totals))
    for model, by_outcome in counts.items():
        terminalreporter.write_line(f"{model}: {describe(by_outcome)}")
    for line in listing_lines(config):
        terminalreporter.write_line(line)


def outcome_counts(stats: dict, config: pytest.Config) -> dict[str, Counter]:
    """{model: Counter(outcome)} of the items that failed (FAIL or refused) or errored."""
    session = config.stash.get(SESSION_KEY, None)
    records = getattr(session, "records", {}) or {}
    counts: dict[str, Counter] = {}
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


def skip_lines(stats: dict) -> list[str]:
    """Our skipped items condensed: one line per kind of reason (the text before its first ": ", e.g.
    "--budget 2 USD reached" or "not started"), with the count, the models and one example, where pytest's -rs
    prints a line per item (a budget stop skips hundreds)."""
    kinds: dict[str, list] = {}
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


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return str(text).removeprefix("Skipped: ")


def describe(counts: Counter) -> str:
    words = {"failed": "failed", REFUSED: "refused", "error": "errors"}
    return ", ".join(f"{counts[outcome]} {word}" for outcome, word in words.items() if counts[outcome])


def listing_lines(config: pytest.Config) -> list[str]:
    args = shlex.join(["pytest", *without_file_outputs([str(a) for a in config.invocation_params.args])])
    lines = []
    if config.pluginmanager.has_plugin("cacheprovider"):
        lines.append(f"list them: {args} --lf --co -q")
    lines.append("one line each: the same command with -rfE (reuses what is on disk; errors are tried again)")
    return lines


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
