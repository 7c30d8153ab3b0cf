"""The keys of what the plugin keeps in ``config.stash`` (as pytest-html does), in one place.

Light on purpose: the pytest entry module imports it in every process.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Protocol

import pytest

if TYPE_CHECKING:  # names only: this module stays light at run time
    from ..config import RunConfig
    from ..engine.jobs import Key
    from ..engine.pool import CandidatePool
    from ..engine.records import Record
    from ..engine.runner import Runner
    from ..engine.survey import Survey
    from ..providers.runtime import Runtime
    from ..report.results_model import Results


class RunSession(Protocol):
    """What the plugin's other parts use of the controller's session (glue/session.py ``BenchmarkSession``,
    which is the one kept under SESSION_KEY): named here, so that its readers need not import the session, which
    imports them."""

    run: RunConfig
    records: dict[Key, Record]
    results: Results | None

    def hand_over(self, nodeid: str, record: Record, text: str) -> None: ...
    def finish(self, session: pytest.Session) -> None: ...
    def write_details(self, terminalreporter: pytest.TerminalReporter) -> None: ...
    def write_table(self, terminalreporter: pytest.TerminalReporter) -> None: ...
    def write_verdict(self, terminalreporter: pytest.TerminalReporter, exitstatus: int) -> None: ...


#: The validated RunConfig of a benchmark run (every process).
RUN_KEY: pytest.StashKey[RunConfig] = pytest.StashKey()
#: The Runner that produces candidates (every process that runs items).
RUNNER_KEY: pytest.StashKey[Runner] = pytest.StashKey()
#: The disk as the up-front checks read it (engine/survey.py), on the controller until the price is stated.
SURVEY_KEY: pytest.StashKey[Survey] = pytest.StashKey()
#: The run's provider Runtime (providers/runtime.py: limits, folders, tier, batch collectors), passed in to the
#: adapters the plugin makes and to the pool's route admissions (every process that runs items).
RUNTIME_KEY: pytest.StashKey[Runtime] = pytest.StashKey()
#: The BenchmarkSession that aggregates records (the controller only).
SESSION_KEY: pytest.StashKey[RunSession] = pytest.StashKey()

#: {flag: where its value came from} for the options whose value came from the ini file (ini.py).
INI_ORIGINS_KEY = pytest.StashKey[dict[str, str]]()

#: The workerinput key under which the controller hands its run id to every xdist worker.
RUN_ID_KEY = "hypeedit_run_id"


def run_id(config: pytest.Config) -> str:
    """The id of this run, the same in the controller and every xdist worker (names the shared state folder)."""
    if hasattr(config, "workerinput"):
        return config.workerinput.get(RUN_ID_KEY) or "worker"
    if _OWN_RUN_ID not in config.stash:
        config.stash[_OWN_RUN_ID] = uuid.uuid4().hex[:12]
    return config.stash[_OWN_RUN_ID]


#: The run id a process without a controller made for itself (run_id).
_OWN_RUN_ID = pytest.StashKey[str]()

#: The CandidatePool of a process that runs items (engine/pool.py), once its run loop started.
POOL_KEY: pytest.StashKey[CandidatePool] = pytest.StashKey()
