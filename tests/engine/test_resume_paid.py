"""Nothing paid is paid for twice, and nothing paid is lost: a paying model and a paying judge over runs.

The model is a conftest provider that logs every call; the judge is the real
``openai:MODEL`` judge talking to a loopback chat-completions fake
(``genai_fakes.FakeChat``) that counts its calls.  When the judge is asked, the
fake looks on disk for the candidate it was shown and for its record.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from fake_models import models_conftest
from genai_fakes import FakeChat
from genai_fakes.chat import verdict_reply
from paid_benches import chat_judged_bench

from pytest_hypeedit.engine.records import Record

TASKS, REPEATS = 3, 2
ITEMS = TASKS * REPEATS

PAID_CONFTEST = models_conftest(image="png", provider_model="paid-v1")  # each candidate a colour of its own: a judge tells them apart


class DiskWitness:
    """The judge fake's reply: FAIL for task-01, PASS otherwise; first it notes what is on disk.

    For every call it records whether the candidate image it was sent exists under
    ``out/`` with its record beside it, naming that image (the paid result is safe
    before the judge is asked).
    """

    def __init__(self, outputs: Path):
        self.outputs = outputs
        self.saw_record: list[bool] = []

    def __call__(self, request):
        images = {data for _, data in request.parsed["images"]}
        self.saw_record.append(any(self._candidate_with_record(path) for path in self._on_disk(images)))
        failing = any("Edit 1." in text for text in request.parsed["texts"])
        return verdict_reply("FAIL" if failing else "PASS", "judged by the fake")

    def _on_disk(self, images: set[bytes]) -> list[Path]:
        return [p for p in self.outputs.rglob("[0-9][0-9][0-9].png") if p.read_bytes() in images]

    @staticmethod
    def _candidate_with_record(image: Path) -> bool:
        record = image.with_suffix(".json")
        return record.is_file() and json.loads(record.read_text()).get("candidate") == image.name


@pytest.fixture
def paid_run(pytester: pytest.Pytester, monkeypatch, tmp_path):
    with chat_judged_bench(pytester, monkeypatch, tmp_path, PAID_CONFTEST, TASKS, DiskWitness(pytester.path / "out")) \
            as judge:
        yield pytester, judge


def model_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def args(judge: FakeChat, *extra: str) -> list[str]:
    return ["-p", "no:cacheprovider", "--model", "paid", "--tasks", "mini.json", "--images-base", "images",
            "--repeats", str(REPEATS), "--outputs", "out", "--judge", "openai-rubric:judge-model",
            "--judge-base-url", judge.base_url, *extra]


def results(pytester) -> dict:
    return json.loads((pytester.path / "out" / "results.json").read_text())


def test_a_rerun_pays_neither_model_nor_judge_and_rejudge_pays_only_the_judge(paid_run, tmp_path):
    pytester, judge = paid_run
    pytester.runpytest(*args(judge)).assert_outcomes(passed=4, failed=2)
    assert (len(model_calls(tmp_path)), len(judge.requests)) == (ITEMS, ITEMS)

    again = pytester.runpytest(*args(judge))
    again.assert_outcomes(passed=4, failed=2)  # the verdicts on disk, FAIL for task-01 included
    assert (len(model_calls(tmp_path)), len(judge.requests)) == (ITEMS, ITEMS)
    assert results(pytester)["rows"][0]["spent_this_run"] == 0

    rejudged = pytester.runpytest(*args(judge, "--rejudge"))
    rejudged.assert_outcomes(passed=4, failed=2)
    assert (len(model_calls(tmp_path)), len(judge.requests)) == (ITEMS, 2 * ITEMS)


def test_the_record_is_on_disk_before_the_judge_is_asked(paid_run):
    pytester, judge = paid_run
    pytester.runpytest(*args(judge)).assert_outcomes(passed=4, failed=2)
    assert judge.default.saw_record == [True] * ITEMS


def test_a_failing_judge_keeps_the_paid_candidates_for_the_next_run(paid_run, tmp_path):
    pytester, judge = paid_run
    witness, judge.default = judge.default, verdict_reply("MAYBE", "unparseable")  # asked twice, then an error
    pytester.runpytest(*args(judge)).assert_outcomes(errors=ITEMS)
    records = [json.loads(p.read_text()) for p in (pytester.path / "out" / "mini").rglob("*.json")]
    assert len(records) == ITEMS and all(r["outcome"] == "error" and Record.from_dict(r).cost == 0.04 for r in records)
    judge.default = witness
    pytester.runpytest(*args(judge)).assert_outcomes(passed=4, failed=2)
    assert len(model_calls(tmp_path)) == ITEMS  # judged now, bought once


def test_a_zero_byte_candidate_is_bought_again(paid_run, tmp_path):
    pytester, judge = paid_run
    pytester.runpytest(*args(judge)).assert_outcomes(passed=4, failed=2)
    empty = pytester.path / "out" / "mini" / "paid" / "task-02" / "002.png"
    empty.write_bytes(b"")  # e.g. a disk that filled up; its record and verdict are still there
    pytester.runpytest(*args(judge)).assert_outcomes(passed=4, failed=2)
    assert model_calls(tmp_path)[ITEMS:] == ["task-02 2"]
    assert empty.stat().st_size > 0


def test_a_record_under_another_candidates_path_is_not_used(paid_run, tmp_path):
    pytester, judge = paid_run
    pytester.runpytest(*args(judge)).assert_outcomes(passed=4, failed=2)
    folder = pytester.path / "out" / "mini" / "paid"
    # task-01 failed; its record copied over task-00's must not make task-00 a FAIL (nor be rewritten there)
    (folder / "task-00" / "001.json").write_bytes((folder / "task-01" / "001.json").read_bytes())
    pytester.runpytest(*args(judge)).assert_outcomes(passed=4, failed=2)
    assert len(model_calls(tmp_path)) == ITEMS  # the image on disk is reused, not bought again
    assert_records_match_their_paths(pytester.path / "out")


def assert_records_match_their_paths(outputs: Path) -> None:
    """Every record lies at <outputs>/<split>/<model>/<task_id>/<NNN>.json of its own key."""
    found = 0
    for path in outputs.rglob("*.json"):
        if re.fullmatch(r"\d{3}\.json", path.name):
            record = json.loads(path.read_text())
            split, model, task_id = path.relative_to(outputs).parts[:3]
            assert (record["split"], record["model"], record["task_id"], f"{record['repeat']:03d}") == \
                (split, model, task_id, path.stem), path
            found += 1
    assert found == ITEMS


def test_a_replay_judged_by_labels_rewrites_no_record_unless_a_label_changed(pytester, tmp_path, monkeypatch):
    """Human labels are read afresh at every run (raters keep adding files), but a record whose verdict did not
    change is not written again: a leaderboard-size replay would spend most of its time rewriting them."""
    from benchdata import make_tasks, write_labels, write_split

    write_split(pytester.path, "mini", make_tasks(2), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    labels = {(f"task-{t:02d}", "identity", r): r == 1 for t in range(2) for r in (1, 2)}
    write_labels(pytester.path / "r.json", labels)
    run = ["-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json", "--images-base", "images",
           "--repeats", "2", "--judge", "labels:r.json", "--outputs", "out"]
    pytester.runpytest(*run).assert_outcomes(passed=2, failed=2)
    records = sorted(pytester.path.glob("out/mini/identity/*/*.json"))
    stamps = {path: path.stat().st_mtime_ns for path in records}
    time.sleep(0.01)
    pytester.runpytest(*run).assert_outcomes(passed=2, failed=2)
    assert {path: path.stat().st_mtime_ns for path in records} == stamps
    write_labels(pytester.path / "r.json", {**labels, ("task-00", "identity", 2): True})  # a rater changed a label
    pytester.runpytest(*run).assert_outcomes(passed=3, failed=1)
    changed = [path for path in records if path.stat().st_mtime_ns != stamps[path]]
    assert changed == [pytester.path / "out/mini/identity/task-00/002.json"]
    assert json.loads(changed[0].read_text())["verdict"] == "PASS"
