"""``--calibrate``, ``--agreement`` and the labels judge (``--judge labels:...``) read the labels of the release the
run measured: a rater's verdicts on a release bought aside (``<model>@<release id>`` in the labels file's
``models`` map, as hypeedit-review writes it) count for that release's run, and another release's verdicts (the
model folder's) never do, even though both carry the same model name."""

from __future__ import annotations

import json

from benchdata import write_labels
from test_calibration_plugin import JUDGE, KEYS, MODEL, TRUTH, bench, row_of, run  # noqa: F401 (bench: a fixture)

from pytest_hypeedit.sample_design import design_path, draw, write_design

FIRST = dict(list(TRUTH.items())[:12])  # labels of the first release's candidates (the model folder's)
#: A run's exit status: its candidates the judge failed are failed items (not a usage error, 4)
FAILED_ITEMS = 1
SECOND = {key: not TRUTH[key] for key in KEYS[12:20]}  # of the second release's, different candidates and verdicts


def two_releases(bench):
    """The first release in ``out/mini/identity``, the second (``--release b``) aside; the aside folder's name.
    The automatic judge's stand-in (judge.json) labels the first release's candidates, then the second's too."""
    assert run(bench).ret == FAILED_ITEMS
    assert run(bench, "--release", "b").ret == FAILED_ITEMS  # nothing judged: judge.json labels no candidate of it
    aside = aside_of(bench)
    write_labels(bench.path / "judge.json", {**JUDGE, **{(t, aside, r): passed for (t, _, r), passed in JUDGE.items()}})
    assert run(bench, "--release", "b").ret == FAILED_ITEMS
    (bench.path / "human.jsonl").unlink()
    return aside


def aside_of(bench):
    """The name of the one release folder bought aside (``<model>@<release id>``)."""
    aside = [p.name for p in (bench.path / "out" / "mini").iterdir() if p.name.startswith(f"{MODEL}@")]
    assert len(aside) == 1, aside
    return aside[0]


def labels_of(aside, first=True, second=True):
    """(task, name, repeat) -> verdict, the names as hypeedit-review writes them: the model folder's release
    under the model's name, the aside release under its folder's."""
    verdicts = dict(FIRST) if first else {}
    if second:
        verdicts.update({(task, aside, repeat): passed for (task, _, repeat), passed in SECOND.items()})
    return verdicts


def humans(bench):
    lines = (bench.path / "human.jsonl").read_text().splitlines()
    return {(t, r): h["verdict"] for t, r, h in map(json.loads, lines) if h is not None}


def test_the_second_release_is_calibrated_with_its_own_labels_only(bench):
    aside = two_releases(bench)
    write_labels(bench.path / "ann.json", labels_of(aside))
    result = run(bench, "--release", "b", "--calibrate", "labels:ann.json")
    assert result.ret == FAILED_ITEMS, result.stdout.str()[-3000:]
    row = row_of(bench)
    assert row["calibration"]["n_human"] == len(SECOND)
    assert humans(bench) == {(t, r): "PASS" if ok else "FAIL" for (t, _, r), ok in SECOND.items()}


def test_the_second_release_s_sample_design_is_its_own(bench):
    """hypeedit-review --sample names the aside release's stratum by its folder: the run of that release finds it
    (design "recorded"), and each label weighs by that stratum's share."""
    aside = two_releases(bench)
    # the first release's stratum over other positions (a part of its candidates), so its sample differs
    drawn = draw("mini", {MODEL: [(t, r) for t, _, r in KEYS[16:]], aside: [(t, r) for t, _, r in KEYS]}, 16, 1)
    positions = {name: {(t, r) for t, m, r in drawn.sampled() if m == name} for name in (MODEL, aside)}
    assert positions[MODEL] != positions[aside]
    folder = bench.mkdir("panel")
    write_design(design_path(folder), drawn)
    sampled = {(t, m, r): not TRUTH[(t, MODEL, r)] for t, m, r in drawn.sampled() if m == aside}
    write_labels(folder / "ann.json", sampled)
    assert run(bench, "--release", "b", "--calibrate", "labels:panel").ret == FAILED_ITEMS
    calibration = row_of(bench)["calibration"]
    assert calibration["design"] == "recorded" and calibration["n_human"] == len(sampled)
    assert f"{len(sampled)} of {len(KEYS)} judged candidates labelled" in calibration["note"]


def test_the_first_release_is_calibrated_with_its_own_labels_only(bench):
    aside = two_releases(bench)
    write_labels(bench.path / "ann.json", labels_of(aside))
    assert run(bench, "--calibrate", "labels:ann.json").ret == FAILED_ITEMS
    assert row_of(bench)["calibration"]["n_human"] == len(FIRST)
    assert humans(bench) == {(t, r): "PASS" if ok else "FAIL" for (t, _, r), ok in FIRST.items()}


def test_another_release_s_labels_never_calibrate_this_one(bench):
    aside = two_releases(bench)
    write_labels(bench.path / "ann.json", labels_of(aside, second=False))  # the model folder's release only
    assert run(bench, "--release", "b", "--calibrate", "labels:ann.json").ret == FAILED_ITEMS
    calibration = row_of(bench)["calibration"]
    assert calibration["n_human"] == 0
    assert any("no human label of this model's own" in p for p in calibration["problems"])
    assert humans(bench) == {}


def test_the_agreement_of_the_second_release_compares_its_own_labels(bench):
    aside = two_releases(bench)
    write_labels(bench.path / "ann.json", labels_of(aside))
    assert run(bench, "--release", "b", "--agreement", "labels:ann.json").ret == FAILED_ITEMS
    report = json.loads((bench.path / "out" / "results.json").read_text())["agreement"]
    assert report["compared"] == len(SECOND)


def test_a_release_name_of_a_model_not_in_the_run_is_still_refused(bench):
    write_labels(bench.path / "ann.json", {("task-00", "nosuchmodel@0123456789ab", 1): True})
    result = run(bench, "--calibrate", "labels:ann.json")
    assert result.ret == 4  # a usage error, before anything is bought
    assert "'nosuchmodel@0123456789ab' is not a known model" in result.stderr.str() + result.stdout.str()


# --------------------------------------------------------------------------- the labels judge (--judge labels:...)


def verdicts_in(bench, folder):
    """(task, repeat) -> the verdict of each record in ``out/mini/<folder>`` that has one."""
    found = {}
    for path in (bench.path / "out" / "mini" / folder).glob("task-*/*.json"):
        record = json.loads(path.read_text())
        if record.get("verdict") is not None:
            found[(path.parent.name, int(path.stem))] = record["verdict"]
    return found


def shown(verdicts):
    return {(t, r): "PASS" if passed else "FAIL" for (t, _, r), passed in verdicts.items()}


def test_the_labels_judge_judges_a_release_with_its_own_labels_only(bench):
    """A verdict belongs to the image people looked at: the second release's run finds no verdict of its own in
    labels of the first release only (the labels judge's usual "no label" error for each candidate, none judged
    with the first release's verdict), and judges with the labels naming its folder once they are given, while
    the first release's run keeps judging with the model folder's labels.  ``record.human`` (no --calibrate,
    no --agreement) is the judge's panel keyed alike."""
    assert run(bench).ret == FAILED_ITEMS
    assert verdicts_in(bench, MODEL) == shown(JUDGE)
    (bench.path / "human.jsonl").unlink()

    second = run(bench, "--release", "b")  # judge.json labels the first release's candidates only
    second.assert_outcomes(errors=len(KEYS))
    second.stdout.fnmatch_lines([f"ERROR x{len(KEYS)}, e.g. task-00 identity r001: judge labels[[]1 rater]: "
                                 "no rater labelled this candidate in"])
    aside = aside_of(bench)
    assert verdicts_in(bench, aside) == {}
    assert humans(bench) == {}
    (bench.path / "human.jsonl").unlink()

    own = {(t, aside, r): t in ("task-00", "task-01") for t, _, r in KEYS}  # 8 PASS: not the first release's 15
    write_labels(bench.path / "judge.json", {**JUDGE, **own})
    labelled = run(bench, "--release", "b")
    labelled.assert_outcomes(passed=sum(own.values()), failed=len(own) - sum(own.values()))
    assert verdicts_in(bench, aside) == shown(own)
    assert humans(bench) == shown(own)
    (bench.path / "human.jsonl").unlink()

    assert run(bench).ret == FAILED_ITEMS  # the first release again: the model folder's labels, not the aside's
    assert verdicts_in(bench, MODEL) == shown(JUDGE)
    assert humans(bench) == shown(JUDGE)
