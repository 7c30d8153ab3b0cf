"""Shared set-up of the test suite.

pytester's inline runs put sys.modules back as it was after each run, so a
module first imported inside one (the plugin imports numpy lazily, on the
controller only) would be imported again by the next, and numpy's C core
does not accept a second load in one process. Importing it here makes it part of the
snapshot.

httpcore is the same case: httpx imports it lazily on the first HTTP call and
caches its exception classes on first use, so when that happens inside an
inline run, the httpcore imported again later raises classes httpx no longer
recognises (a timeout escapes as httpcore.ReadTimeout, not retried); which
tests failed depended on the order they ran in.

Layout: tests/<folder>/ mirrors pytest_hypeedit/<folder>/ (engine, providers,
judges, analysis, report, review, glue), tests/e2e holds whole runs,
tests/project the checks of the repository as shipped (docs, pins), and the
tests of the package's top-level modules (tasks, secrets, labels, ...) stay
here. Shared helpers and fakes live in tests/support/, which this file puts
first on sys.path: a test anywhere imports them as top-level modules
(``from loopback import FileServer``, ``from providers_fakes import ...``).
pytest's default "prepend" import mode is kept, so test folders have no
__init__.py and a test file's name must be unique across the whole tree.
"""

import importlib
import os
import pkgutil
import shutil
import sys
import tempfile
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

import httpcore  # noqa: F401, E402
import numpy  # noqa: F401, E402

import pytest_hypeedit  # noqa: E402


def _import_the_whole_package() -> None:
    """Every module of the plugin, once per test process.  An inline run imports the modules the plugin loads
    lazily (the pool, the report, the glue of each option), and the snapshot drops them after the run, so
    each run imported them again, assertion rewriting included (pytest rewrites an installed plugin's
    modules, and a machine with PYTHONDONTWRITEBYTECODE keeps no rewritten copy): ~0.2 s an inline run."""
    for module in pkgutil.walk_packages(pytest_hypeedit.__path__, "pytest_hypeedit."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)


_import_the_whole_package()
# google-genai too (~1.3 s an import, with pydantic, aiohttp and websockets): the Gemini judge and adapters import
# it lazily, so each inline run of theirs imported it again
import google.genai  # noqa: E402
import google.genai.batches  # noqa: F401, E402

#: The test files that take longest (seconds of one worker in a full run on two cores, 2026-11-28), run first.
#: Under ``--dist loadfile`` xdist hands a worker the next file when it runs short of work: a long file left for
#: the end runs alone while the other worker waits.  pyproject's ``--no-loadscope-reorder`` keeps this order
#: (xdist would otherwise start the files with the most tests first, and these have few).
LONGEST_FIRST = (
    "glue/test_stopping.py",  # 95
    "engine/test_pool.py",  # 75
    "report/test_report_browser.py",  # 47
    "report/test_html_report.py",  # 45
    "e2e/test_batch_tier_openai.py",  # 42
    "e2e/test_batch_hostile_gemini.py",  # ~36 (76 s in a loaded run of 2026-11-29, where test_stopping took 200)
    "providers/sdk_diff/test_differential.py",  # 40
    "e2e/test_batch_hostile_openai.py",  # ~26 (54 s loaded)
    "report/test_terminal_layout.py",  # 34
    "e2e/test_sequential_gate.py",  # 31
    "e2e/test_batch_tier_gemini.py",  # 28
    # 116 s on 2026-11-28; 24.6 s of CPU alone on 2026-11-29, since its cases skip the human-only figures
    "analysis/test_calibration_simulation.py",
    "engine/test_job_journal.py",  # 28
    "e2e/test_install.py",  # 27
    "glue/test_calibration_plugin.py",  # 27
    "e2e/test_models_end_to_end.py",  # 26
    "report/test_run_truth.py",  # 26
    "e2e/test_ci_workflow.py",  # 21
    "e2e/test_batch_tier_workers.py",  # ~18 (39 s loaded)
    "review/test_review_app.py",  # 18
)
TESTS = Path(__file__).resolve().parent


def pytest_configure(config) -> None:
    """The Python processes the suite starts (xdist's workers, runpytest_subprocess, the stopping and resume runs,
    each ``-n 2`` run's workers: a few hundred a run) keep their compiled bytecode where a later one finds it.  A
    machine with PYTHONDONTWRITEBYTECODE (this one) had each of them compile the plugin's modules again, and
    assertion-rewrite them: ~0.35 s of CPU a process (an identity run 1.2 -> 0.87 s user, a ``-n 2`` one
    3.4 -> 2.2 s).  The copies go to the cache's own folder (PYTHONPYCACHEPREFIX), never beside a run's
    conftest.py, whose folders the tests list; the copies of those conftest files, in temporary folders, are of
    no use to a later session and go at its start.  Set before xdist starts its workers, so they inherit it."""
    cache = getattr(config, "cache", None)  # None under -p no:cacheprovider: nothing is kept
    if cache is None or not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    prefix = cache.mkdir("pycache")
    temporary = Path(tempfile.gettempdir()).resolve()
    shutil.rmtree(prefix / temporary.relative_to(temporary.anchor), ignore_errors=True)
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
    del os.environ["PYTHONDONTWRITEBYTECODE"]


def pytest_collection_modifyitems(config, items) -> None:
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}

    def place(item) -> int:
        try:
            return rank.get(Path(item.fspath).resolve().relative_to(TESTS).as_posix(), len(rank))
        except ValueError:  # not under tests/
            return len(rank)

    items.sort(key=place)  # stable: each file's tests stay together and in order, the others in theirs


# Every pool of the suite (in this process and in the runs it starts) checks its counting invariants after each
# change (engine/board.py JobBoard): a slot not given back or a count gone wrong fails the run that did it.
os.environ.setdefault("HYPEEDIT_DEBUG_INVARIANTS", "1")
