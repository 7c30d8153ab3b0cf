"""Shared set-up of the test suite.

pytester's inline runs put sys.modules back as it was after each run, so a
module first imported inside one (the plugin imports numpy lazily, on the
controller only) would be imported again by the next, and numpy's C core
refuses a second load in one process. Importing it here makes it part of the
snapshot.

httpcore is the same case: httpx imports it lazily on the first HTTP call and
caches its exception classes on first use, so when that happens inside an
inline run, the httpcore imported again later raises classes httpx no longer
recognises (a timeout escapes as httpcore.ReadTimeout, not retried); which
tests failed depended on the order they ran in.
"""

import os

import httpcore  # noqa: F401
import numpy  # noqa: F401

import pytest_hypeedit.analysis.metrics  # noqa: F401

# Every pool of the suite (in this process and in the runs it starts) checks its counting invariants after each
# change (engine/pool.py CandidatePool): a slot not given back or a count gone wrong fails the run that did it.
os.environ.setdefault("HYPEEDIT_DEBUG_INVARIANTS", "1")
