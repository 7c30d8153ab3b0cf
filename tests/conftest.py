"""Shared set-up of the test suite.

pytester's inline runs put sys.modules back as it was after each run, so a
module first imported inside one (the plugin imports numpy lazily, on the
controller only) would be imported again by the next, and numpy's C core
refuses a second load in one process. Importing it here makes it part of the
snapshot.
"""

import numpy  # noqa: F401

import pytest_hypeedit.analysis.metrics  # noqa: F401
