"""Two runs that share an outputs folder share its claims, whatever their temp folders: each candidate is
bought once and judged once.  Counted at the fakes: a slow ModelArk (the real adapter) and a chat-completions
judge, while two pytest processes with different TMPDIR and cache folders work on the same outputs at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest
from benchdata import make_tasks, write_split
from genai_fakes import FakeChat
from genai_fakes.chat import verdict_reply
from providers_fakes.ark import FakeArk

TASKS, REPEATS = 3, 2
ITEMS = TASKS * REPEATS


@pytest.fixture
def shared(tmp_path):
    folder = tmp_path / "project"
    write_split(folder, "mini", make_tasks(TASKS), folder / "images")
    with FakeArk() as ark, FakeChat() as judge:
        judge.default = verdict_reply("PASS", "judged by the fake")
        # slow enough that the two runs overlap on every candidate
        ark.inject("slow", path="/images/generations", delay=0.4, count=10 * ITEMS)
        yield folder, ark, judge


def launch(folder, ark, judge, tmp_path, name: str) -> subprocess.Popen:
    own = tmp_path / name
    (own / "tmp").mkdir(parents=True)
    env = {**os.environ, "TMPDIR": str(own / "tmp"), "HYPEEDIT_CACHE_DIR": str(own / "cache"),
           "HYPEEDIT_ARK_BASE_URL": ark.base, "ARK_API_KEY": ark.key}
    env.pop("OPENAI_API_KEY", None)
    args = ["--model", "seedream-4.5", "--tasks", "mini.json", "--images-base", "images", "--repeats", str(REPEATS),
            "--outputs", "out", "--results", f"{name}.json", "--judge", "openai-rubric:judge-model",
            "--judge-base-url", judge.base_url, "-p", "no:cacheprovider"]
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", *args], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_two_runs_with_different_temp_folders_buy_and_judge_each_candidate_once(shared, tmp_path):
    folder, ark, judge = shared
    runs = [launch(folder, ark, judge, tmp_path, name) for name in ("first", "second")]
    outputs = [run.communicate(timeout=120)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], "\n".join(text[-2000:] for text in outputs)
    generations = Counter(json.loads(seen.body)["seed"] for seen in ark.seen("/images/generations"))
    assert len(generations) == ITEMS and set(generations.values()) == {1}  # every candidate, once
    assert len(judge.requests) == ITEMS
    for name in ("first", "second"):  # and each run reports all of them, judged
        row = json.loads((folder / f"{name}.json").read_text())["rows"][0]
        assert (row["judged"], row["errors"]) == (ITEMS, 0)
    claims = folder / "out" / ".hypeedit-claims"
    assert claims.is_dir() and not [lock for name in ("first", "second") for lock in (tmp_path / name / "tmp").rglob("*")]
