"""A benchmark run prints its failures in one line per task and model: its FAILs are verdicts, not bugs; a chosen
traceback style gives pytest's own section per item, with the item's message."""

from __future__ import annotations

from hype_ci_fixtures import (
    args,
    bench,  # noqa: F401 - fixture
)


def test_failures_print_a_line_per_task_unless_a_traceback_style_is_chosen(bench):
    plain = bench.runpytest(*args(repeats=2, judge="htmljudge"))
    plain.assert_outcomes(passed=4, failed=4)
    plain.stdout.fnmatch_lines(["*= FAILURES =*", "task-00 identity: FAIL r001*"])
    plain.stdout.no_fnmatch_line("*_ mini task-00 identity r001 _*")  # no per-failure section header
    long = bench.runpytest(*args("--tb=long", repeats=2, judge="htmljudge"))
    long.stdout.fnmatch_lines(["*_ mini task-00 identity r001 _*", "task-00 identity r001: FAIL (htmljudge): *"])
