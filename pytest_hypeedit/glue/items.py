"""The pytest items: one per task x model x repeat.

The model call and the judge run in the item's *setup* (in fact in the pool,
engine/pool.py, which works ahead: the setup waits for this candidate), so that a failed call
or an unparseable judge reply is reported by pytest as an ERROR (not the
model's failure); the *call* phase only asserts the verdict, so a FAIL or a
refusal is a test failure whose message is the judge's reasoning.

Node ids are stable and readable, ``hypeedit::<split>::<task_id>[<model>-r<NNN>]``,
so ``-k``, ``--lf`` and ``--deselect`` work; each task type is a marker
(``-m remove``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

import pytest

from ..engine.pool import NotStarted
from ..engine.records import ERROR, FAIL, REFUSED, SKIPPED, Record, record_to_property
from ..errors import HypeEditError
from ..registry import ModelSpec
from ..tasks import Task
from ..text import ERROR_LIMIT, REASONING_LIMIT, clean_text
from .stash import POOL_KEY, RUNNER_KEY, SESSION_KEY

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr, TracebackStyle

    from ..config import RunConfig

_NODE_NAME = re.compile(r"^(?P<task>[^\[]+)\[(?P<model>.+)-r(?P<repeat>\d{3})\]$")


def item_name(task_id: str, model: str, repeat: int) -> str:
    return f"{task_id}[{model}-r{repeat:03d}]"


def label(task_id: str, model: str, repeat: int) -> str:
    """How a message names its candidate, once, at its start: ``<task_id> <model> r<NNN>``."""
    return f"{task_id} {model} r{repeat:03d}"


def parse_nodeid(nodeid: str) -> tuple[str, str, str, int] | None:
    """(split, model, task_id, repeat) of one of our node ids, None for any other."""
    parts = nodeid.split("::")
    if len(parts) != 3 or parts[0] != "hypeedit":
        return None
    match = _NODE_NAME.match(parts[2])
    if not match:
        return None
    return parts[1], match["model"], match["task"], int(match["repeat"])


def printable(message: str) -> str:
    """A failure message as pytest shows it (terminal, ``--tb`` styles, junit XML): it quotes a judge's reasoning
    or a provider's text, cleaned where stored and here again, whatever path it took (text.py)."""
    return clean_text(message, REASONING_LIMIT + ERROR_LIMIT)


class CandidateFailed(Exception):
    """The judge failed the candidate, or the model refused: the message is the reasoning."""


class BenchmarkCollector(pytest.Collector):
    """``hypeedit`` and ``hypeedit::<split>``: containers that give items readable ids."""

    def collect(self) -> list[pytest.Item | pytest.Collector]:  # items are made by the plugin, not discovered
        return []


class CandidateItem(pytest.Item):
    def __init__(self, *, task: Task, spec: ModelSpec, repeat: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.task, self.spec, self.repeat = task, spec, repeat
        self.record: Record | None = None
        for task_type in task.task_types:
            self.add_marker(task_type)

    def setup(self) -> None:
        # The pool has most likely bought and judged it already, while earlier items ran.
        self.record = record_for(self)
        carried = record_to_property(self.record)
        self.user_properties.append(carried)
        session = self.config.stash.get(SESSION_KEY, None)
        if session is not None:  # the session is in this process: it takes the record as it is (glue/session.py)
            session.hand_over(self.nodeid, self.record, carried[1])
        if self.record.outcome == SKIPPED:
            pytest.skip(printable(self.record.error or "skipped"))
        if self.record.outcome == ERROR:
            # pytrace=False: a failed call is one line naming task, model and repeat, not a traceback
            pytest.fail(printable(f"{self._label}: {self.record.error}"), pytrace=False)

    def runtest(self) -> None:
        record = self.record
        assert record is not None  # setup() has read it
        if record.outcome == REFUSED:
            raise CandidateFailed(f"refused: {record.refusal}")  # the label names the model
        if record.outcome == FAIL:
            raise CandidateFailed(f"FAIL ({record.judge}): {record.reasoning}")

    @property
    def _label(self) -> str:
        return label(self.task.task_id, self.spec.name, self.repeat)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        # A verdict is not a bug: the failure is one line with the judge's reasoning, no traceback.
        if isinstance(excinfo.value, (CandidateFailed, HypeEditError)):
            return printable(f"{self._label}: {excinfo.value}")
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.task.split} {self._label}"


def make_items(session: pytest.Session, run: RunConfig) -> list[CandidateItem]:
    """Every task x model x repeat of the run, in a deterministic order (xdist requires it)."""
    items = _build_items(session, run)
    # Tell the terminal (and --lf) about them, as a collector's report would.
    session.config.hook.pytest_collectreport(
        # a list is invariant in its type; the report only reads the items
        report=pytest.CollectReport("hypeedit", "passed", None, cast("list[pytest.Item | pytest.Collector]", items))
    )
    return items


def _build_items(session: pytest.Session, run: RunConfig) -> list[CandidateItem]:
    root = BenchmarkCollector.from_parent(session, name="hypeedit", nodeid="hypeedit")
    items = []
    for split in run.splits:
        parent = BenchmarkCollector.from_parent(root, name=split.name, nodeid=f"hypeedit::{split.name}")
        for task in split.tasks:
            for spec in run.models:
                for repeat in range(1, run.repeats + 1):
                    name = item_name(task.task_id, spec.name, repeat)
                    # The id as a string, parsed by pytest as a parametrized test's: built from the parent,
                    # pytest 9 keeps "[model-rNNN]" in the name, and --lf / --ff never match the ids they
                    # stored (which they parse into name and parameters).
                    items.append(CandidateItem.from_parent(parent, name=name, nodeid=f"{parent.nodeid}::{name}",
                                                           task=task, spec=spec, repeat=repeat))
    return items


def record_for(item: CandidateItem) -> Record:
    """The item's record from this process's pool (or straight from the runner without one)."""
    pool = item.config.stash.get(POOL_KEY, None)
    if pool is None:
        return item.config.stash[RUNNER_KEY].run(item.task, item.spec, item.repeat)
    try:
        return pool.result(item.task, item.spec, item.repeat)
    except NotStarted as exc:
        pytest.skip(str(exc))
