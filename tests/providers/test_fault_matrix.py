"""The plugin against loopback servers that misbehave on the wire (issue 14: hangs, memory and disk).

A whole run of ``pytest --model flux-2-max`` in a subprocess, against a BFL fake whose replies are
compression bombs, bodies without end, a trickle and a 12000 x 12000 PNG, one fault per candidate; its peak
memory is the kernel's VmHWM of that very process, which it writes as it exits (PEAK_WRAPPER: not
``os.wait4``'s ru_maxrss, which counts the forking process's peak too).  Each case asserts what was
paid (the fake's ledger), what was kept (the records), and what the rerun pays (nothing more).  Reference
images downloaded at the start face the same faults.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
from benchdata import make_tasks, write_run_folder
from fake_models import fast_retries_conftest
from ledger_view import job
from providers_fakes import FakeServer, Reply, make_image
from providers_fakes.base import gzip_bomb, huge_png
from providers_fakes.bfl import FakeBfl

from pytest_hypeedit import fetch
from pytest_hypeedit.errors import InputError
from pytest_hypeedit.tasks import Task, reference_image_paths

PEAK_RSS_GOAL_MB = 500
CONFTEST = fast_retries_conftest(max_attempts=3)
# The result file cap is lowered from 96 MB so the test writes less to disk; the JSON cap is the default 8 MB.
# The deadline (of every request of the run) is what ends the trickle, never a bomb or an endless body: their
# caps are reached by bytes in milliseconds, far inside it, so a loaded machine cannot make a deadline of them;
# nor of a submit or a download (a submit past its deadline is not sent again: the candidate would be an error).
DEADLINE_S = 10
MODELS = f"""
models:
  flux-2-max: {{options: {{poll_s: 0.01, poll_max_s: 0.05, max_wait_s: 60, deadline_s: {DEADLINE_S},
                          max_image_mb: 16}}}}
routes:
  bfl: {{rpm: 100000, inflight: 24}}
"""
#: Seconds between two bytes of the trickled poll reply: its 150-odd bytes would take over a minute.
TRICKLE_S = 0.5
FAULTS = [  # (kind, path, inject arguments): task-0N meets the N-th, and task-06 none
    ("bomb", "get_result", {"body": 2 * 1024 ** 3}),  # a poll reply: 2 MB of gzip, 2 GB of JSON
    ("endless", "get_result", {}),  # a poll reply without end
    ("bomb", "/delivery/", {"body": 2 * 1024 ** 3, "headers": {"content-type": "image/png"}}),  # the result file
    ("endless", "/delivery/", {"headers": {"content-type": "image/png"}}),  # a result file without end
    ("huge", "/v1/flux", {}),  # a 12000 x 12000 PNG, 140 KB
    ("trickle", "get_result", {"delay": TRICKLE_S}),  # a poll reply at 2 bytes a second: past the deadline
]


class PlannedBfl(FakeBfl):
    """FakeBfl whose faults are matched per task: ``fault_path`` is the path and the task of the request,
    known from its prompt (submit), its job id (polls) or its file's owner (the result download)."""

    def __init__(self, tasks: list[dict], **options):
        super().__init__(**options)
        self.task_of_prompt = {task["instruction"]: task["task_id"] for task in tasks}

    def _task(self, seen) -> str:
        if seen.method == "POST":
            return self.task_of_prompt.get(seen.json().get("prompt"), "?")
        if seen.path.startswith("/delivery/"):
            owner = self.files.owners.get(seen.path.rsplit("/", 1)[-1])
        else:
            task = self.tasks.get(urllib.parse.parse_qs(seen.query).get("id", [""])[0]) or {}
            owner = task.get("candidate")
        return self.task_of_prompt.get(owner[0], "?") if owner else "?"

    def fault_path(self, seen) -> str:
        return f"{seen.path}|{self._task(seen)}"


def prepare(folder: Path, task_list: list[dict]) -> list[str]:
    run = write_run_folder(folder, conftest=CONFTEST, models_file=MODELS, tasks=task_list,
                           labels={(t["task_id"], "flux-2-max", 1): True for t in task_list}, repeats=1)
    return [*run, "--model", "flux-2-max"]


#: Runs pytest and, as it exits, writes its own peak RSS (VmHWM, KB) to the file named first.  Not wait4's
#: ru_maxrss: Linux folds into it the peak of the memory the child had before its exec, which is the forking
#: process's (an xdist worker grown by the tests it ran before: 554-657 MB measured, 83-86 MB for the run).
PEAK_WRAPPER = """
import atexit, sys, pytest
def peak():
    with open("/proc/self/status") as status:
        kb = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(sys.argv[1], "w") as out:
        out.write(kb)
atexit.register(peak)
sys.exit(int(pytest.main(sys.argv[2:])))
"""


def run_measured(folder: Path, args: list[str], env: dict) -> tuple[int, str, float]:
    """(exit status, output, peak RSS in MB) of ``pytest args`` in a subprocess, its peak as the run measured it."""
    peak_file = folder / "peak-rss-kb"
    process = subprocess.run([sys.executable, "-c", PEAK_WRAPPER, str(peak_file), *args], cwd=folder, env=env,
                             text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return process.returncode, process.stdout, int(peak_file.read_text()) / 1024


def records(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((folder / "out").rglob("[0-9][0-9][0-9].json"))]


def test_bombs_endless_bodies_a_trickle_and_a_huge_image_in_one_run(tmp_path):
    folder = tmp_path / "run"
    tasks = make_tasks(len(FAULTS) + 1)
    args = prepare(folder, tasks)
    gzip_bomb(2 * 1024 ** 3), huge_png()  # made now: made inside the fake, they would hold its replies back
    with PlannedBfl(tasks, pending_polls=2) as bfl:
        env = {**os.environ, bfl.env: bfl.base, bfl.key_env: bfl.key, "HYPEEDIT_CACHE_DIR": str(tmp_path / "cache")}
        for number, (kind, path, options) in enumerate(FAULTS):
            bfl.inject(kind, path=rf"{path}.*\|task-{number:02d}$", **options)
        status, output, peak_mb = run_measured(folder, args, env)
        print(f"peak RSS of the faulted run: {peak_mb:.0f} MB")
        assert peak_mb < PEAK_RSS_GOAL_MB, output[-3000:]
        assert bfl.faults == [], bfl.faults  # every fault met a request
        found = {r["task_id"]: r for r in records(folder)}
        said = [found[f"task-{n:02d}"]["error"] or found[f"task-{n:02d}"]["refusal"] for n in range(len(FAULTS))]
        assert [found[f"task-{n:02d}"]["outcome"] for n in range(len(FAULTS) + 1)] == \
            ["error"] * 4 + ["refused", "pass", "pass"], output[-3000:]
        assert "reply passed 8 MB (decoded)" in said[0] and "reply passed 8 MB (decoded)" in said[1]
        assert "download passed 16 MB (decoded)" in said[2] and "download passed 16 MB (decoded)" in said[3]
        assert all("the job stays journaled" in text for text in said[:4])
        assert "144.0 MP, more than the 40 MP" in said[4]
        # The trickled poll (its whole reply would take over a minute) was given up at the deadline, and the job
        # polled again and finished. From that poll's arrival to the next: the deadline, less the time the poll
        # took to arrive, plus the time to poll again (each up to seconds on a loaded machine), never the trickle.
        polls = [seen.at for seen in bfl.seen(r"get_result.*\|task-05$")]
        gaps = [later - earlier for earlier, later in zip(polls, polls[1:])]
        assert any(DEADLINE_S / 2 <= gap < 4 * DEADLINE_S for gap in gaps), gaps
        assert sum(bfl.ledger.submitted.values()) == len(FAULTS) + 1  # one paid job per candidate
        assert all(job(r) for r in found.values() if r["outcome"] == "error")  # kept for the next run
        assert bfl.key not in output
        downloads = list((tmp_path / "cache").rglob(".download-*")) + list(folder.rglob(".download-*"))
        assert downloads == []  # no half file left behind

        bfl.faults.clear()
        status, output, _ = run_measured(folder, args, env)
        assert status == 1 and "1 failed, 6 passed" in output, output[-3000:]  # the refusal is a failed attempt
        assert sorted(r["outcome"] for r in records(folder)) == ["pass"] * 6 + ["refused"]
        assert sum(bfl.ledger.submitted.values()) == len(FAULTS) + 1  # the journaled jobs were resumed


# --------------------------------------------------------------------------- reference images


@pytest.fixture
def images_server():
    fake = FakeServer()
    fake.route("GET", r"/img/.*", lambda seen: Reply(200, make_image(40, 30), {"content-type": "image/png"}))
    with fake:
        yield fake


TASK = Task("task-1", ("001.png",), ("edit",), "Make the mug blue.", 1024, 1024, "public")


#: The download deadline of the cases a size cap must stop: one only a hang reaches (4 MB take milliseconds),
#: so bytes decide them, never a loaded machine; a cap that does not hold still fails them, at this deadline.
HANG_S = 30.0


@pytest.mark.parametrize("kind, options, deadline, words", [
    ("endless", {"headers": {"content-type": "image/png"}}, HANG_S, "passed 4 MB (decoded)"),
    ("bomb", {"body": 512 * 1024 ** 2, "headers": {"content-type": "image/png"}}, HANG_S, "passed 4 MB (decoded)"),
    # 166 bytes at one each 0.05 s: 8 s whole, so the 1 s deadline, and only it, ends the download
    ("trickle", {"delay": 0.05}, 1.0, "not complete within the overall deadline of 1 s"),
], ids=["endless", "bomb", "trickle"])
def test_a_reference_image_that_never_ends_or_trickles_is_an_input_error(images_server, tmp_path, monkeypatch,
                                                                          kind, options, deadline, words):
    monkeypatch.setattr(fetch, "MAX_DOWNLOAD_BYTES", 4 * 1024 ** 2)
    monkeypatch.setattr(fetch, "DEADLINE_S", deadline)
    images_server.inject(kind, path="/img/", **options)
    started = time.monotonic()
    with pytest.raises(InputError) as info:
        reference_image_paths(TASK, f"{images_server.url}/img", tmp_path)
    assert words in str(info.value) and f"{images_server.url}/img/task-1/001.png" in str(info.value)
    assert time.monotonic() - started < 10
    assert not list((tmp_path / "images").rglob("001.png"))  # nothing half-kept in the cache
    reference_image_paths(TASK, f"{images_server.url}/img", tmp_path)  # the fault gone, the download works
