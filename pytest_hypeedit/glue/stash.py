"""The keys of what the plugin keeps in ``config.stash`` (as pytest-html does), in one place.

Light on purpose: the pytest entry module imports it in every process.
"""

from __future__ import annotations

import uuid

import pytest

#: The validated RunConfig of a benchmark run (every process).
RUN_KEY = pytest.StashKey["object"]()
#: The Runner that produces candidates (every process that runs items).
RUNNER_KEY = pytest.StashKey["object"]()
#: The BenchmarkSession that aggregates records (the controller only).
SESSION_KEY = pytest.StashKey["object"]()

#: {flag: where its value came from} for the options whose value came from the ini file (ini.py).
INI_ORIGINS_KEY = pytest.StashKey[dict]()

#: The workerinput key under which the controller hands its run id to every xdist worker.
RUN_ID_KEY = "hypeedit_run_id"


def run_id(config: pytest.Config) -> str:
    """The id of this run, the same in the controller and every xdist worker (names the shared state folder)."""
    if hasattr(config, "workerinput"):
        return config.workerinput.get(RUN_ID_KEY) or "worker"
    if not hasattr(config, "_hypeedit_run_id"):
        config._hypeedit_run_id = uuid.uuid4().hex[:12]
    return config._hypeedit_run_id

#: The CandidatePool of a process that runs items (engine/pool.py), once its run loop started.
POOL_KEY = pytest.StashKey["object"]()
