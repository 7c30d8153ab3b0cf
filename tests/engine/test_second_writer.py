"""Every write of a record is under the candidate's claim, and merges what another process wrote meanwhile.

A labels run beside a paid-judge run on the same outputs: the labels run reads every record when it triages
(at once, before its first item), then writes each record when pytest reaches its item (here only once the
paid-judge run has ended: a conftest hook holds its first item, as a long run's late items are).  Meanwhile the
paid-judge run writes its paid verdicts.  Without the claim and
the re-read, the labels run's writes overwrote them (10 and 17 of 50 lost, each bought again by the next run).
Counted at the loopback judge: every candidate judged once, and a rerun asks nothing more.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from benchdata import make_tasks, write_labels, write_split
from fake_models import models_conftest
from genai_fakes import FakeChat
from genai_fakes.chat import verdict_reply

TASKS, REPEATS = 4, 4
ITEMS = TASKS * REPEATS
PAID_JUDGE = "openai-rubric:judge-model"

CONFTEST = models_conftest(image="png") + """
import os, time, pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    # The run's first item waits for another run to end (WAIT_FOR: its results file): this run has read every
    # record by then (its pool triages at the start), and writes them afterwards, as a long run would.
    wait_for = os.environ.get("WAIT_FOR")
    deadline = time.monotonic() + 120
    while wait_for and not os.path.exists(wait_for) and time.monotonic() < deadline:
        time.sleep(0.05)
    yield
"""


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    write_split(folder, "mini", make_tasks(TASKS), folder / "images")
    (folder / "conftest.py").write_text(CONFTEST)
    cells = [(f"task-{t:02d}", "paid", r) for t in range(TASKS) for r in range(1, REPEATS + 1)]
    write_labels(folder / "fail.json", {cell: False for cell in cells})
    write_labels(folder / "pass.json", {cell: True for cell in cells})
    with FakeChat() as judge:
        judge.default = verdict_reply("PASS", "judged by the fake")
        yield folder, judge


def launch(folder, tmp_path, name: str, *judge_args: str, wait_for: str = "") -> subprocess.Popen:
    env = {**os.environ, "HYPEEDIT_CACHE_DIR": str(tmp_path / name / "cache"), "CALL_LOG": str(tmp_path / "calls"),
           "WAIT_FOR": wait_for}
    env.pop("OPENAI_API_KEY", None)
    args = ["--model", "paid", "--tasks", "mini.json", "--images-base", "images", "--repeats", str(REPEATS),
            "--outputs", "out", "--results", f"{name}.json", *judge_args, "-p", "no:cacheprovider"]
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", *args], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finished(*runs: subprocess.Popen) -> list[str]:
    outputs = [run.communicate(timeout=180)[0] for run in runs]
    assert all(run.returncode in (0, 1) for run in runs), "\n".join(text[-2000:] for text in outputs)
    return outputs


def test_a_labels_run_beside_a_paid_judge_run_loses_no_paid_verdict(project, tmp_path):
    folder, judge = project
    # the candidates are bought first, with labels (free) verdicts that the second labels run will change
    finished(launch(folder, tmp_path, "bought", "--judge", "labels:fail.json"))
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == ITEMS
    paid = ["--judge", PAID_JUDGE, "--judge-base-url", judge.base_url, "--rate-limit", "openai-judge=60000/2"]
    labels = launch(folder, tmp_path, "labels", "--judge", "labels:pass.json", wait_for=str(folder / "paid.json"))
    finished(launch(folder, tmp_path, "paid", *paid), labels)
    assert len(judge.requests) == ITEMS
    records = [json.loads(path.read_text()) for path in (folder / "out" / "mini" / "paid").rglob("0*.json")]
    assert len(records) == ITEMS
    kept = [r for r in records if r["judgements"].get(PAID_JUDGE, {}).get("verdict") == "PASS"]
    assert len(kept) == ITEMS, f"{ITEMS - len(kept)} paid verdicts lost"
    assert all(r["judgements"]["labels[1 rater]"]["verdict"] == "PASS" for r in records)  # the labels run's too
    finished(launch(folder, tmp_path, "again", *paid))
    assert len(judge.requests) == ITEMS  # nothing judged, or paid for, twice
    assert (tmp_path / "calls").read_text().splitlines() == calls


# --------------------------------------------------------------------------- the store API, two runners


class _Png:
    """A provider that makes a PNG and counts its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, spec):
        import io

        from PIL import Image

        from pytest_hypeedit.providers.base import Generation, Provider

        outer = self

        class Png(Provider):
            route = "paid"

            def generate(self, request):
                outer.calls += 1
                buffer = io.BytesIO()
                Image.new("RGB", (8, 8), (outer.calls * 40, 0, 0)).save(buffer, format="PNG")
                return Generation(image=buffer.getvalue(), ext="png", cost=0.04, provider_model="paid-v1")

        return Png(spec)


def _runner(tmp_path, make_provider, judge_id: str):
    from pytest_hypeedit.engine.means import Means
    from pytest_hypeedit.engine.runner import Runner
    from pytest_hypeedit.engine.store import Store
    from pytest_hypeedit.judges.base import Judge, Verdict

    class Free(Judge):
        name, routes, needs_images = judge_id, (), False

        @property
        def id(self):
            return judge_id

        def judge(self, request):
            return Verdict(True, f"by {judge_id}", judge_id)

    return Runner(Means(store=Store(tmp_path / "out"), make_provider=make_provider, make_judge=Free,
                        references=lambda task: [], signals=False))


def test_a_stale_plan_never_writes_its_verdicts_over_a_record_bought_again_meanwhile(tmp_path):
    from types import MappingProxyType

    from pytest_hypeedit.registry import ModelSpec
    from pytest_hypeedit.tasks import Task

    task = Task(task_id="t1", input_images=("001.png",), task_types=("object_edit",), instruction="x", width=8,
                height=8, split="mini")
    spec = ModelSpec("paid", "paid", "paid-v1", 0.04, MappingProxyType({}))
    provider = _Png()
    first = _runner(tmp_path, provider, "judge-a")
    first.run(task, spec, 1)
    stale = first.plan(task, spec, 1)  # read now, finished later (a long run's late item)
    assert stale.record.judgements["judge-a"]["verdict"] == "PASS"
    image = tmp_path / "out" / "mini" / "paid" / "t1" / "001.png"
    image.unlink()  # another process finds the image gone, and buys the candidate again
    other = _runner(tmp_path, provider, "judge-b")
    bought = other.run(task, spec, 1)
    assert provider.calls == 2 and bought.judgements.keys() == {"judge-b"}
    record = first.finish(stale)  # the stale plan's verdict was of the earlier image: not written back
    assert record.generated_at == bought.generated_at and "judge-b" in record.judgements
    assert record.judgements["judge-a"]["judged_at"] >= bought.generated_at  # judged again, on the new image
    on_disk = first.store.read_record("mini", "paid", "t1", 1)
    assert on_disk.cost == 0.04  # the second purchase's accounts, kept: the lost image's cost left behind, once
    assert [(c["state"], c["price"]) for c in on_disk.calls if c["kind"] == "generation"] == [
        ("left_behind", 0.04), ("billed", 0.04)] and on_disk.spent == \
        pytest.approx(0.08 + on_disk.spent_breakdown["judge"])
    assert on_disk.judgements.keys() == {"judge-a", "judge-b"}
