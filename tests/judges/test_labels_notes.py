"""A rater's note travels with the verdict: labels file -> panel -> labels judge -> record -> terminal."""

from __future__ import annotations

import json

import pytest
from benchdata import make_tasks, write_labels, write_split

from pytest_hypeedit.errors import LabelsError
from pytest_hypeedit.judges.labels_judge import LabelsJudge
from pytest_hypeedit.labels import MAX_NOTE, read_labels, read_panel

MODEL = "identity"
A, B = ("task-00", MODEL, 1), ("task-01", MODEL, 1)


def test_notes_are_read_cleaned_and_kept_per_verdict(tmp_path):
    path = write_labels(tmp_path / "ann.json", {A: False, B: True},
                        notes={A: "logo\nmissing\tat the top\x07", B: "   "})
    rater = read_labels(path)
    assert rater.notes == {A: "logo missing at the top"}  # one line, control characters gone, blank dropped
    long = write_labels(tmp_path / "bob.json", {A: False}, notes={A: "x" * (MAX_NOTE + 50)})
    assert len(read_labels(long).notes[A]) == MAX_NOTE


def test_a_note_that_is_not_text_names_the_file_and_the_entry(tmp_path):
    path = write_labels(tmp_path / "ann.json", {A: False}, notes={A: {"oops": 1}})
    with pytest.raises(LabelsError, match=r"ann.json: judgements\['task-00'\]\['M01'\]\['001.png'\]: 'note' must be text"):
        read_labels(path)


def test_the_panel_keeps_each_raters_note_beside_the_vote(tmp_path):
    paths = [write_labels(tmp_path / "ann.json", {A: False}, notes={A: "text is cut off"}),
             write_labels(tmp_path / "bob.json", {A: True})]
    verdict = read_panel(paths).verdict(*A)
    assert verdict.human() == {"verdict": None, "votes": [  # a tie: no majority
        {"rater": "ann", "verdict": "FAIL", "note": "text is cut off"},
        {"rater": "bob", "verdict": "PASS", "note": None}]}


def test_the_labels_judge_puts_notes_in_its_votes_and_its_reasoning(tmp_path):
    from pytest_hypeedit.judges.base import JudgeRequest
    from pytest_hypeedit.tasks import Task

    paths = [write_labels(tmp_path / "ann.json", {A: False}, notes={A: "the cat is still there"}),
             write_labels(tmp_path / "bob.json", {A: False}),
             write_labels(tmp_path / "cy.json", {A: True}, notes={A: "fine by me"})]
    task = Task(task_id="task-00", input_images=("001.png",), task_types=("remove",), instruction="x",
                width=8, height=8, split="mini")
    verdict = LabelsJudge(paths).judge(JudgeRequest(task, MODEL, 1, tmp_path / "001.png", ()))
    assert verdict.votes == [{"judge": "ann", "verdict": "FAIL", "note": "the cat is still there"},
                             {"judge": "bob", "verdict": "FAIL", "note": None},
                             {"judge": "cy", "verdict": "PASS", "note": "fine by me"}]
    assert verdict.reasoning == ('human panel: 1 PASS / 2 FAIL; ann (FAIL): "the cat is still there"; '
                                 'cy (PASS): "fine by me"')


def test_raters_of_the_same_name_in_two_split_folders_are_told_apart(tmp_path):
    (tmp_path / "public").mkdir()
    (tmp_path / "private").mkdir()
    write_labels(tmp_path / "public" / "ann.json", {A: True})
    write_labels(tmp_path / "private" / "ann.json", {B: False})
    panel = read_panel([tmp_path / "public", tmp_path / "private"])
    assert sorted(r.rater for r in panel.raters) == ["private/ann", "public/ann"]


def test_a_note_reaches_the_record_and_the_fail_line(pytester: pytest.Pytester, monkeypatch, tmp_path):
    write_split(pytester.path, "mini", make_tasks(2), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    write_labels(pytester.path / "ann.json", {A: False, B: True}, notes={A: "the sign still reads OPEN"})
    result = pytester.runpytest("-p", "no:cacheprovider", "--model", MODEL, "--tasks", "mini.json", "--images-base",
                                "images", "--repeats", "1", "--outputs", "out", "--judge", "labels:ann.json",
                                "--tb=short")  # the item's own message in full (by default: a line per task)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(['*task-00 identity r001: FAIL (labels[[]1 rater]): human panel: 0 PASS / 1 FAIL; '
                                 'ann (FAIL): "the sign still reads OPEN"*'])
    record = json.loads((pytester.path / "out" / "mini" / MODEL / "task-00" / "001.json").read_text())
    assert record["votes"] == [{"judge": "ann", "verdict": "FAIL", "note": "the sign still reads OPEN"}]
