"""A replay reads each candidate once before it starts, and each record file once in all: the up-front checks
(keys, retirements, the judge, the outputs folder, the price line) share one survey of the disk
(engine/survey.py), and the store keeps a record it read while its file stays the same (engine/store.py).  The
pool is handed each item once, however often its dispatcher asks for new ones (glue/pool_plugin.py).

A free judge (human labels) that says what the records hold writes nothing, so nothing is claimed either
(engine/runner.py ``finish``); a label that changed is written under the candidate's claim.

The conftest counts, per candidate, the survey's reads (``Planning.disk_state``), the opens of its record
file and its claims, and the entries handed to the pool, and writes the counts when the session ends.  Each item takes a
little longer than the dispatcher's tick, so that it asks for new items several times during the run.
"""

from __future__ import annotations

import json

import pytest
from benchdata import make_tasks, write_labels, write_split

TASKS, REPEATS = 3, 2
ITEMS = TASKS * REPEATS

COUNTING_CONFTEST = """
import collections, json, os, time
import pytest
from pytest_hypeedit.engine import board, dispatch, planning, store

COUNTS = {"disk_state": collections.Counter(), "record_opens": collections.Counter(), "handed": 0,
          "claims": collections.Counter()}
_disk_state, _open_regular, _add = planning.Planning.disk_state, store.open_regular, board.JobBoard.add_entries
_claim = store.Store.claim

def claim(self, split, model, task_id, repeat):
    COUNTS["claims"][f"{task_id}/{repeat}"] += 1
    return _claim(self, split, model, task_id, repeat)

def add(self, entries):
    entries = list(entries)
    COUNTS["handed"] += len(entries)
    return _add(self, entries)

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    time.sleep(2 * dispatch.TICK)  # the dispatcher asks for new items between any two items

def disk_state(self, split, model, task_id, repeat):
    COUNTS["disk_state"][f"{task_id}/{repeat}"] += 1
    return _disk_state(self, split, model, task_id, repeat)

def open_regular(path, root):
    if str(path).endswith(".json"):
        COUNTS["record_opens"][f"{path.parent.name}/{int(path.stem)}"] += 1
    return _open_regular(path, root)

planning.Planning.disk_state = disk_state
store.open_regular = open_regular
board.JobBoard.add_entries = add
store.Store.claim = claim

def pytest_sessionfinish(session):
    with open(os.environ["COUNTS_FILE"], "w") as out:
        json.dump(COUNTS, out)
"""


@pytest.fixture
def replay(pytester: pytest.Pytester, monkeypatch, tmp_path):
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    verdicts = {(f"task-{t:02d}", "identity", r): r == 1 for t in range(TASKS) for r in range(1, REPEATS + 1)}
    write_labels(pytester.path / "labels.json", verdicts)
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COUNTS_FILE", str(tmp_path / "counts.json"))
    args = ["-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json", "--images-base", "images",
            "--repeats", str(REPEATS), "--outputs", "out", "--judge", "labels:labels.json"]
    # the first run writes; in-process: the counting conftest, which patches the package's modules in the process
    # that loads it, comes after it and runs in subprocesses
    pytester.runpytest(*args).assert_outcomes(passed=TASKS, failed=TASKS)
    pytester.makeconftest(COUNTING_CONFTEST)
    return pytester, args, tmp_path / "counts.json"


def test_a_replay_reads_each_candidate_once_before_it_starts_and_each_record_file_once_and_hands_it_once(replay):
    pytester, args, counts_file = replay
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=TASKS, failed=TASKS)
    counts = json.loads(counts_file.read_text())
    every = {f"task-{t:02d}/{r}" for t in range(TASKS) for r in range(1, REPEATS + 1)}
    assert counts["disk_state"] == dict.fromkeys(every, 1)  # keys, judge, outputs, price: one survey
    assert counts["record_opens"] == dict.fromkeys(every, 1)  # survey, triage, merge: read once, kept
    assert counts["handed"] == ITEMS  # not all of them again at each of the dispatcher's ticks
    assert counts["claims"] == {}  # the labels say what the records hold: nothing written, nothing claimed


def test_a_label_that_changed_is_written_under_its_candidates_claim_and_only_it(replay):
    pytester, args, counts_file = replay
    verdicts = {(f"task-{t:02d}", "identity", r): r == 1 for t in range(TASKS) for r in range(1, REPEATS + 1)}
    verdicts[("task-01", "identity", 2)] = True  # a rater changed their mind
    write_labels(pytester.path / "labels.json", verdicts)
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=TASKS + 1, failed=TASKS - 1)
    assert json.loads(counts_file.read_text())["claims"] == {"task-01/2": 1}
    record = json.loads((pytester.path / "out" / "mini" / "identity" / "task-01" / "002.json").read_text())
    assert (record["outcome"], record["verdict"]) == ("pass", "PASS")  # written, not only reported
