"""The public request types carry what docs/reference/public-api.md says and nothing more: the run's own state of a
call (its journal, download folder, in-flight slots, call id) rides in the one ``call`` field, so an internal field
added to a request later fails here instead of becoming public by accident."""

from __future__ import annotations

import dataclasses
import re

import pytest
from package_graph import PACKAGE

from pytest_hypeedit import GenerationRequest, JudgeRequest
from pytest_hypeedit.engine.call_context import GenerationContext, JudgeContext

DOCS_PAGE = PACKAGE.parent / "docs" / "reference" / "public-api.md"
REQUESTS = {"GenerationRequest": GenerationRequest, "JudgeRequest": JudgeRequest}


def documented_fields(name: str) -> list[str]:
    """The fields the page's row for ``name`` lists after "gets:": its backticked names outside parentheses."""
    rows = [line for line in DOCS_PAGE.read_text(encoding="utf-8").splitlines() if line.startswith(f"| `{name}` |")]
    assert len(rows) == 1, f"{DOCS_PAGE.name}: expected one row for `{name}`, found {len(rows)}"
    listed = rows[0].split("gets:", 1)[1]
    while re.search(r"\([^()]*\)", listed):  # what a field is, said in parentheses, is not a field
        listed = re.sub(r"\([^()]*\)", "", listed)
    return re.findall(r"`(\w+)`", listed)


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_a_request_has_exactly_the_documented_fields(name):
    declared = [f.name for f in dataclasses.fields(REQUESTS[name])]
    assert declared == documented_fields(name), (
        f"{name}'s fields are not the ones docs/reference/public-api.md lists: a field the run needs for itself "
        "goes into its context (engine/call_context.py), a field for users goes into the page's row")


def test_the_page_is_read_as_intended():
    """The parsing above drops the parentheses' words (a row that lost its fields would fail the test above)."""
    assert documented_fields("GenerationRequest") == ["task", "repeat", "seed", "references", "spec", "call"]
    assert documented_fields("JudgeRequest") == ["task", "model", "repeat", "candidate", "references", "call"]


def test_a_request_built_outside_a_run_gets_an_empty_context(tmp_path):
    """A library user builds a request without the context: nothing journaled, no landing folder, no slots."""
    from pytest_hypeedit.registry import ModelSpec
    from pytest_hypeedit.tasks import Task

    task = Task("t1", ("a.png",), ("style",), "edit it", 1024, 1024, "example")
    spec = ModelSpec("m", "r", "m", 0.01)
    generation = GenerationRequest(task, 1, 7, (tmp_path / "a.png",), spec)
    assert isinstance(generation.call, GenerationContext)
    assert generation.call.landing is None and generation.call.slots == () and generation.call.journal.job is None
    verdict = JudgeRequest(task, "m", 1, tmp_path / "c.png", ())
    assert verdict.call == JudgeContext() and verdict.call.call_id is None and verdict.call.slots == ()
    # two requests of the same call compare equal whatever context the run gave them
    assert dataclasses.replace(verdict, call=JudgeContext(call_id="c-1")) == verdict
