"""The typed results model (report/results_model.py) and its contract (docs/reference/results.md) name the same
fields: every key of ``Results`` is a field of the page's top-level table and every key of ``ResultsRow`` one of
its row table (``JudgeControls`` and ``Serving``: their sections' tables), and every field those tables document
is a key of the model.  A key added to the model and not to the page (or the other way round) fails here, naming
it.  And what the writers write (the analyses, a run, a leaderboard merge) is the model, key for key."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from benchdata import make_tasks, write_labels, write_split
from calibration_sim import human_sample
from fake_judges import judges_conftest
from fake_models import models_conftest
from results_keys import model_problems

from pytest_hypeedit.analysis.calibration import calibrate, task_evidence
from pytest_hypeedit.analysis.calibration_evidence import this_run_pass_rate
from pytest_hypeedit.analysis.calibration_paired import paired_calibrated
from pytest_hypeedit.analysis.enrich import AnalysisSettings, enrich_results, marked_degenerate, tally_to_json
from pytest_hypeedit.analysis.judge_controls import ControlVerdict, drift, summarize
from pytest_hypeedit.analysis.metrics import MetricSettings, TaskTally
from pytest_hypeedit.analysis.pairwise import Entrant, pairwise
from pytest_hypeedit.analysis.serving import THIS_RUN, Candidate, RouteRow, RunRow, serving
from pytest_hypeedit.report.leaderboard import main as leaderboard
from pytest_hypeedit.report.results_model import (
    BaselineTask,
    BoughtSpan,
    BuyingOrder,
    CalibratedFigure,
    CalibrationEvidence,
    CombinedLeftOut,
    ControlKind,
    ControlShare,
    CoverageSummary,
    DriftEntry,
    DriftThird,
    GateDecision,
    IncompleteReason,
    JudgeControls,
    JudgeDrift,
    JudgeError,
    JudgeOnControls,
    JudgeStability,
    KindDrift,
    PairedDifference,
    PairwiseEntry,
    PairwiseSkipped,
    Results,
    ResultsRow,
    RouteComparison,
    RowCalibration,
    RowRelease,
    RunComparison,
    RunJudge,
    RunSettings,
    SensitivityEntry,
    Sequential,
    Serving,
    SignalsSummary,
    SpentBreakdown,
    SplitFile,
    StatisticsSettings,
    TaskEvidenceEntry,
    TaskTallyEntry,
    WrongControl,
)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "results.md"
TOP_LEVEL = "The results file: top level"
ROW = "A row"


def documented(section: str, page: str | None = None) -> set[str]:
    """The fields a section's table names in its first column (``model``, ``split`` in one cell: both)."""
    text = PAGE.read_text(encoding="utf-8") if page is None else page
    names: set[str] = set()
    heading = ""
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif heading == section and line.startswith("| `"):
            names |= set(re.findall(r"`(\w+)`", line.split("|")[1]))
    return names


def keys(model: Any) -> set[str]:
    return set(model.__required_keys__) | set(model.__optional_keys__)


def disagreement(model_keys: set[str], fields: set[str]) -> dict[str, list[str]]:
    return {"in the model, not on the page": sorted(model_keys - fields),
            "on the page, not in the model": sorted(fields - model_keys)}


AGREED = {"in the model, not on the page": [], "on the page, not in the model": []}


def test_every_top_level_key_is_documented_and_every_documented_one_is_a_key():
    assert disagreement(keys(Results), documented(TOP_LEVEL)) == AGREED


def test_every_row_key_is_documented_and_every_documented_one_is_a_key():
    assert disagreement(keys(ResultsRow), documented(ROW)) == AGREED


def test_the_sections_are_read_whole():
    """The reading itself: both tables are found, a field named with another in one cell counts, and a key the
    page does not name is told apart (as a key added to the model without its row on the page would be)."""
    top, row = documented(TOP_LEVEL), documented(ROW)
    assert {"schema", "rows", "coverage", "sequential"} <= top  # sequential: the table's last row
    assert {"model", "split", "possibly_paid_held", "calibrated_baseline_note"} <= row
    assert disagreement(keys(ResultsRow) | {"undocumented_key"}, row)["in the model, not on the page"] == [
        "undocumented_key"]
    page = "## A row\n\n| field | what |\n|---|---|\n| `model`, `split` | names |\n\n## Next\n| `other` | x |\n"
    assert documented(ROW, page) == {"model", "split"}


# --- what the writers write is the model, key for key ------------------------------------------------------------
# The model is checked against the page above; here what each writer actually writes is checked against the model
# (tests/support/results_keys.py), so that a key renamed in a writer, or added without its type, fails by name
# even where the type checker cannot see it (a key filled by name from a tuple, a file read back).

SETTINGS = MetricSettings(retry_cap=4, review_cost=0.1)


def tallies(passes: list[int], judged: int = 10) -> tuple[TaskTally, ...]:
    return tuple(TaskTally(f"t{i:02d}", k, judged, bool(k), ("remove",) if i % 2 else ("change",))
                 for i, k in enumerate(passes))


A, B, SAME = tallies([9, 1, 5, 7, 3, 8, 10, 10]), tallies([8, 0, 4, 7, 1, 7, 10, 9]), tallies([10] * 8)


def test_the_checker_names_an_undeclared_key_a_missing_one_and_a_wrong_kind():
    """The check itself: each kind of disagreement is named with its path, and the model's own object passes."""
    entry = {"split": "s", "model": "m", "reason": "why"}
    assert model_problems({"pairwise_skipped": [entry]}, Results) == []
    assert model_problems({"pairwise_skipped": [{**entry, "modle": "m"}]}, Results) == [
        ".pairwise_skipped[0].modle: not a key of PairwiseSkipped"]
    assert model_problems({"pairwise_skipped": [{"split": "s", "reason": "why"}]}, Results) == [
        ".pairwise_skipped[0].model: missing, and PairwiseSkipped requires it"]
    assert model_problems({"rows": [{"tasks": "4"}]}, Results) == [".rows[0].tasks: '4' is not a int"]
    assert model_problems({"rows": [{"pass_rate": None, "incomplete": True}]}, Results) == []  # optional, nullable


def test_what_the_analyses_write_is_the_model():
    """Serving (routes, drift, runs), pairwise, the judge controls and their drift, and every row key the
    intervals and the baseline comparison add, on inputs that reach their optional keys (a degenerate interval, a
    significant change between runs, a judge that drifted, a judge without a verdict)."""
    rows = [RouteRow(Entrant("m@x", A, 0.04), "s", "m", "x", {f"t{i:02d}": 1.0 + i for i in range(8)}),
            RouteRow(Entrant("m@y", B, 0.05), "s", "m", "y", {f"t{i:02d}": 2.0 + i / 2 for i in range(8)}),
            RouteRow(Entrant("m@z", SAME, 0.05), "s2", "m", "z", {}),
            RouteRow(Entrant("m@w", SAME, 0.05), "s2", "m", "w", {})]  # every task the same on both: degenerate
    candidates = {"m@x": [Candidate("s", f"t{i % 8:02d}", i % 3 == 0 or i > 40, 1.7e9 + 60 * i, 1 + i % 5)
                          for i in range(80)]}
    runs = [(RunRow(Entrant("m", A, 0.04), "s", THIS_RUN, THIS_RUN, "j1", ("v1",), "r1"),
             RunRow(Entrant("m", SAME, 0.04), "s", "b.json", "the baseline run", "j2", ("v2",), None))]
    served = serving(rows, candidates, SETTINGS, runs=runs, seed=1, permutations=199, bootstrap=99)
    assert {"degenerate", "sentence"} <= {key for entry in served["routes"] + served["runs"] for key in entry}
    controls = summarize([ControlVerdict("j", kind, "s", f"t{i}", verdict, version, "why", f"t{i}.png")
                          for i, (kind, verdict, version) in enumerate(
                              [("unchanged", "PASS", "v1"), ("flat", None, None), ("human_pass", "FAIL", None)])])
    controls["drift"] = drift(controls, summarize([ControlVerdict("j", "unchanged", "s", "t0", "FAIL", "v0")] * 5))
    controls["drift"] |= drift({"judges": {"k": {}}}, controls)
    results: Results = {
        "schema": "hypeedit-results/1", "settings": {}, "complete": True, "serving": served, "judge_controls": controls,
        "pairwise": pairwise({"s": [Entrant("m", A, 0.04), Entrant("n", B, 0.04), Entrant("o", SAME, 0.04),
                                    Entrant("p", SAME, 0.04)]}, SETTINGS, seed=2),
        "rows": [{"model": "m", "split": "s", "cost_per_candidate": 0.04}, {"model": "n", "split": "s"}]}
    baseline = {"rows": [{"model": "m", "split": "s", "task_tallies": [tally_to_json(t) for t in A]},
                         {"model": "o", "split": "s"}]}  # none for n: its baseline_error
    enrich_results(results, {("m", "s"): A, ("n", "s"): SAME}, AnalysisSettings(SETTINGS, bootstrap=50), baseline)
    assert {"baseline", "baseline_tasks", "baseline_error", "intervals", "sensitivity"} <= {
        key for row in results["rows"] for key in row}
    assert model_problems(results, Results) == []


def test_what_the_calibration_writes_is_the_model():
    """The calibrated, human-sample and this-run figures (refused ones, a widened pass rate, an unbounded cost's
    high end, a caution), the judge's error, the evidence, and the calibrated baseline comparison."""
    rng = np.random.default_rng(4)
    truth = rng.random((40, 10)) < rng.beta(0.6, 0.8, 40)[:, None]
    judge = np.where(truth, rng.random((40, 10)) < 0.75, rng.random((40, 10)) > 0.9)
    reached = set()
    for units in (human_sample(np.random.default_rng(1), truth, judge, 80),
                  human_sample(np.random.default_rng(1), truth, judge, 12)):
        evidence = task_evidence(units)
        found = calibrate(evidence, 0.04, n_resamples=60, seed=1)
        this_run = this_run_pass_rate(units)
        row: ResultsRow = {"calibrated": found.calibrated, "human_sample": found.human_sample,
                           "judge_error": found.judge_error, "calibration_evidence": {
                               "tasks": [t.to_json() for t in evidence]},
                           "calibrated_baseline": marked_degenerate(
                               paired_calibrated(evidence, evidence, 0.04, 0.04, n_resamples=30, seed=1))}
        if this_run is not None:
            row["calibrated_this_run"] = {"pass_rate": this_run}
        assert model_problems(row, ResultsRow) == []
        reached |= {key for figures in (found.calibrated, found.human_sample) for entry in figures.values()
                    for key in entry}
    assert {"caution", "high_unbounded", "reason", "widened"} <= reached


def test_what_a_run_writes_is_the_model(pytester, monkeypatch, tmp_path):
    """A run through the plugin with the options that add objects (the judge's controls, compared with a
    baseline's; intervals and the baseline comparison; serving; the judge against a human panel), then its
    results merged by
    ``hypeedit-leaderboard --json`` with another run's: both files are the model, key for key."""
    pytester.makeconftest(models_conftest(image="png") + judges_conftest("ControlJudge", unchanged_every=4))
    write_split(pytester.path, "mini", make_tasks(4), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    labels = {(f"task-{t:02d}", "paid", r): t % 2 == 0 for t in range(4) for r in (1, 2)}
    write_labels(pytester.path / "panel.json", labels, notes={key: "a seam" for key, ok in labels.items() if not ok})
    command = ("-p", "no:randomly", "--model", "paid", "--tasks", "mini.json", "--images-base", "images",
               "--repeats", "2", "--judge", "controljudge", "--judge-controls", "--bootstrap", "50",
               "--retry-cap", "3")  # not the default 4: its pass_at_cap too
    pytester.runpytest(*command, "--outputs", "before")
    pytester.runpytest(*command, "--outputs", "out", "--baseline", "before/results.json",
                       "--agreement", "labels:panel.json")
    written = json.loads((pytester.path / "out" / "results.json").read_text())
    assert {"judge_controls", "serving", "agreement"} <= set(written) and "drift" in written["judge_controls"]
    assert "baseline" in written["rows"][0] and written["serving"]["runs"] and written["agreement"]["notes"]
    assert model_problems(written, Results) == []
    assert leaderboard(["before/results.json", "out/results.json", "--prefer", "last", "--json", "merged.json",
                        "-o", "merged.md"]) == 0
    merged = json.loads((pytester.path / "merged.json").read_text())
    assert merged["runs"] and merged["serving"]["runs"]
    assert model_problems(merged, Results) == []


def test_what_a_run_of_two_splits_calibrated_and_decided_early_writes_is_the_model(pytester, monkeypatch, tmp_path):
    """Two splits (their combined rows), --calibrate with a human panel, --judge-stability, and --sequential with
    a gate it decides early (the run stops: coverage's reasons, not_measured, sequential): the model, key for key.
    Every candidate is in the stability sample: the buying order is random, and a sample of a few may all be
    among those a gate decided early leaves unbought (then no row has ``judge_stability``)."""
    pytester.makeconftest(models_conftest(image="png") + judges_conftest("ControlJudge", unchanged_every=4))
    for name in ("mini", "more"):
        write_split(pytester.path, name, make_tasks(6, prefix=name), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    labels = {(f"{split}-{t:02d}", "paid", r): (t + r) % 3 != 0 for split in ("mini", "more") for t in range(6)
              for r in (1, 2, 3)}
    write_labels(pytester.path / "panel.json", labels)
    pytester.runpytest("-p", "no:randomly", "--model", "paid", "--tasks", "mini.json", "--tasks", "more.json",
                       "--images-base", "images", "--repeats", "3", "--judge", "controljudge", "--bootstrap", "50",
                       "--calibrate", "labels:panel.json", "--judge-stability", "36", "--sequential",
                       "--gate", "pass_rate>=0.01", "--outputs", "out")
    written = json.loads((pytester.path / "out" / "results.json").read_text())
    assert {"sequential", "coverage"} <= set(written)
    assert {"combined", "mini", "more"} == {row["split"] for row in written["rows"]}
    assert {"calibrated", "judge_stability", "not_measured"} <= {key for row in written["rows"] for key in row}
    assert model_problems(written, Results) == []


@pytest.mark.parametrize(("section", "model"), [("Judge controls", JudgeControls), ("Serving", Serving)])
def test_the_objects_with_a_table_of_their_own_are_documented_key_for_key(section, model):
    assert disagreement(keys(model), documented(section)) == AGREED


def described(section: str, field: str) -> set[str]:
    """The names a section's table gives in the description of ``field`` (the row whose first cell names it, as
    ``judges.<id>.kinds.<kind>`` too): the keys of the object it holds, as the page spells them."""
    names: set[str] = set()
    heading = ""
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif heading == section and line.startswith("| `"):
            first, text = re.split(r"(?<!\\)\|", line)[1:3]  # a cell may hold an escaped \|
            if f"`{field}`" in first:  # the key itself (``false_fail`` of ``judges.<id>.false_fail``) and those named
                names |= set(re.findall(r"(\w+)`", first)) | set(re.findall(r"`\{?\"?(\w+)", text))
                names |= set(re.findall(r"\"(\w+)\"", text))
    return names


#: Each sub-object, and the fields of the page whose descriptions name its keys.
SUB_OBJECTS = [
    (TOP_LEVEL, ("settings",), RunSettings), (TOP_LEVEL, ("settings",), StatisticsSettings),
    (TOP_LEVEL, ("settings",), SplitFile), (TOP_LEVEL, ("coverage",), CoverageSummary),
    (TOP_LEVEL, ("coverage",), IncompleteReason), (TOP_LEVEL, ("combined_left_out",), CombinedLeftOut),
    (TOP_LEVEL, ("pairwise",), PairwiseEntry), (TOP_LEVEL, ("pairwise_skipped",), PairwiseSkipped),
    (TOP_LEVEL, ("sequential",), Sequential), (TOP_LEVEL, ("sequential",), GateDecision),
    (TOP_LEVEL, ("sequential",), BuyingOrder),
    (ROW, ("release",), RowRelease), (ROW, ("spent_breakdown",), SpentBreakdown),
    (ROW, ("signals_summary",), SignalsSummary), (ROW, ("task_tallies",), TaskTallyEntry),
    (ROW, ("sensitivity",), SensitivityEntry), (ROW, ("baseline",), PairedDifference),
    (ROW, ("baseline_tasks",), BaselineTask), (ROW, ("judge_stability",), JudgeStability),
    (ROW, ("calibrated",), CalibratedFigure), (ROW, ("judge_error",), JudgeError),
    (ROW, ("calibration",), RowCalibration), (ROW, ("calibration_evidence",), CalibrationEvidence),
    (ROW, ("calibration_evidence",), TaskEvidenceEntry),
    ("Judge controls", ("judges", "judges.<id>.false_fail"), JudgeOnControls),
    ("Judge controls", ("judges.<id>.kinds.<kind>",), ControlKind),
    ("Judge controls", ("judges.<id>.kinds.<kind>",), WrongControl),
    ("Judge controls", ("judges.<id>.false_pass",), ControlShare), ("Judge controls", ("drift",), JudgeDrift),
    ("Judge controls", ("drift",), KindDrift),
    ("Serving", ("routes",), RouteComparison), ("Serving", ("runs",), RunComparison), ("Serving", ("runs",), RunJudge),
    ("Serving", ("drift",), DriftEntry), ("Serving", ("drift",), DriftThird), ("Serving", ("bought",), BoughtSpan),
]


@pytest.mark.parametrize(("section", "fields", "model"), SUB_OBJECTS, ids=[m.__name__ for _, _, m in SUB_OBJECTS])
def test_every_key_of_a_sub_object_is_named_where_the_page_describes_it(section, fields, model):
    names = set().union(*(described(section, field) for field in fields))
    assert sorted(keys(model) - names) == []
