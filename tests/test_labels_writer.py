"""The labels writer (used by the review app) and the panel's odd-panel check and counts."""

import json

import pytest

from pytest_hypeedit import labels
from pytest_hypeedit.errors import LabelsError


def test_written_document_reads_back_as_the_upstream_schema(tmp_path):
    doc = labels.new_document({"M01": "model-a", "M02": "model-b"}, dataset="public")
    labels.set_verdict(doc, "task-1", "M01", "001.png", "PASS", ms=1200)
    labels.set_verdict(doc, "task-1", "M02", "003.webp", "FAIL", ms=800)
    path = tmp_path / "judgements" / "public" / "ann.json"
    labels.write_document(path, doc)
    data = json.loads(path.read_text())
    assert data["schema_version"] == 2
    assert data["judgements"]["task-1"]["M01"]["001.png"]["verdict"] == "PASS"
    assert data["judgements"]["task-1"]["M01"]["001.png"]["ms"] == 1200
    rater = labels.read_labels(path)
    assert rater.rater == "ann"
    assert rater.verdicts == {("task-1", "model-a", 1): True, ("task-1", "model-b", 3): False}
    assert [p.name for p in path.parent.iterdir()] == ["ann.json"]  # no temp file left behind


def test_removing_a_verdict_prunes_empty_maps(tmp_path):
    doc = labels.new_document({"M01": "model-a"})
    labels.set_verdict(doc, "t", "M01", "001.png", "PASS")
    labels.set_verdict(doc, "t", "M01", "001.png", None)
    assert doc["judgements"] == {}
    with pytest.raises(LabelsError, match="alias 'M09'"):
        labels.set_verdict(doc, "t", "M09", "001.png", "PASS")
    with pytest.raises(LabelsError, match="PASS"):
        labels.set_verdict(doc, "t", "M01", "001.png", "MAYBE")


def test_load_document_validates(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"schema_version": 1}')
    with pytest.raises(LabelsError, match="x.json"):
        labels.load_document(bad)


def test_even_votes_warn_and_counts_per_rater():
    a, b = ("t1", "m", 1), ("t1", "m", 2)
    panel = labels.Panel([labels.RaterLabels("ann", None, {a: True, b: True}),
                          labels.RaterLabels("bob", None, {a: False}),
                          labels.RaterLabels("cy", None, {a: True})])
    # a has 3 votes (odd, fine); b has 1 vote (odd, fine)
    assert panel.even_vote_warnings() == []
    panel.raters.pop()  # now a has 2 votes, 1 PASS: a tie, counted as FAIL
    warnings = panel.even_vote_warnings()
    assert len(warnings) == 1 and "t1" in warnings[0] and "repeat 001" in warnings[0] and "tie" in warnings[0]
    assert not panel.verdict(*a).passed and panel.verdict(*a).tie
    assert panel.rater_counts() == {"ann": {"labelled": 2, "PASS": 2, "FAIL": 0},
                                    "bob": {"labelled": 1, "PASS": 0, "FAIL": 1}}
