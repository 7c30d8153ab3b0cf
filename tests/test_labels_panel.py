"""A panel of human raters decides by majority; a real tie (an even panel split in half) is a FAIL,
and is said to be a tie."""

from __future__ import annotations

import json

import pytest
from benchdata import make_tasks, write_labels, write_split

from pytest_hypeedit.labels import read_panel

TASK, MODEL = "task-00", "identity"


def panel_of(tmp_path, votes: list[bool]):
    paths = [write_labels(tmp_path / f"rater{i}.json", {(TASK, MODEL, 1): vote}) for i, vote in enumerate(votes)]
    return read_panel(paths)


@pytest.mark.parametrize("votes, passed, tie", [
    ([True, False], False, True),
    ([False, True], False, True),
    ([True, False, False, True], False, True),
    ([True, True, True, False], True, False),
    ([True, False, False, False], False, False),
    ([True, True, False], True, False),
    ([True, False, False], False, False),
    ([True, True], True, False),
])
def test_majority_and_ties(tmp_path, votes, passed, tie):
    verdict = panel_of(tmp_path, votes).verdict(TASK, MODEL, 1)
    assert (verdict.passed, verdict.tie, len(verdict.votes)) == (passed, tie, len(votes))


def test_an_even_panel_warns_and_names_a_tie(tmp_path):
    assert panel_of(tmp_path, [True, False, True, False]).even_vote_warnings() == [
        f"task {TASK} model {MODEL} repeat 001: 4 votes, 2 PASS (a tie, counted as FAIL); "
        "use an odd panel so the majority is always defined"]
    assert panel_of(tmp_path, [True, True, True, False]).even_vote_warnings()[0].endswith(
        "4 votes, 3 PASS; use an odd panel so the majority is always defined")
    assert panel_of(tmp_path, [True, False, True]).even_vote_warnings() == []


@pytest.mark.parametrize("raters", [2, 4])
def test_a_tied_panel_fails_the_candidate_and_says_it_was_a_tie(pytester: pytest.Pytester, monkeypatch, tmp_path,
                                                                  raters):
    write_split(pytester.path, "mini", make_tasks(2), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    # task-00: half the panel says PASS (a tie); task-01: everyone says PASS
    for i in range(raters):
        write_labels(pytester.path / f"r{i}.json", {("task-00", MODEL, 1): i % 2 == 0, ("task-01", MODEL, 1): True})
    spec = "labels:" + ",".join(f"r{i}.json" for i in range(raters))
    result = pytester.runpytest("-p", "no:cacheprovider", "--model", MODEL, "--tasks", "mini.json", "--images-base",
                                "images", "--repeats", "1", "--outputs", "out", "--judge", spec,
                                "--tb=short")  # the item's own message in full (by default: a line per task)
    result.assert_outcomes(passed=1, failed=1)
    half = raters // 2
    result.stdout.fnmatch_lines([f"*task-00 identity r001: FAIL (labels[[]{raters} raters]): "
                                 f"human panel: {half} PASS / {half} FAIL (a tie counts as FAIL)*"])
    record = json.loads((pytester.path / "out" / "mini" / MODEL / "task-00" / "001.json").read_text())
    assert record["verdict"] == "FAIL" and record["judgements"][record["judge"]]["extra"] == {"tie": True}
    assert [vote["verdict"] for vote in record["votes"]] == ["PASS", "FAIL"] * half
