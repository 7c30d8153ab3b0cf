"""The keys of what the plugin keeps in ``config.stash`` (as pytest-html does), in one place.

Light on purpose: the pytest entry module imports it in every process.
"""

from __future__ import annotations

import pytest

#: The validated RunConfig of a benchmark run (every process).
RUN_KEY = pytest.StashKey["object"]()
#: The Runner that produces candidates (every process that runs items).
RUNNER_KEY = pytest.StashKey["object"]()
#: The BenchmarkSession that aggregates records (the controller only).
SESSION_KEY = pytest.StashKey["object"]()
