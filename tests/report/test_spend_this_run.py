"""``spent_this_run`` (the results' rows and the terminal's "spent $X ($Y in this run)", and the live line's "spent")
is what the run bought: every paid call it sent, a judge call that failed after being billed and a verdict given
again included, and nothing an earlier run bought.  Real runs (pytester) of a fake paid model and a paid judge that
bills every call and fails every other one after billing; each run's figure is checked against what was billed
while it ran."""

from __future__ import annotations

import json

import pytest
from benchdata import make_tasks, write_split
from fake_models import PAID, models_conftest

ASK = 0.003
TASKS = 4

JUDGE = f"""
import os
import pytest
from pytest_hypeedit.errors import JudgeError
from pytest_hypeedit.judges.base import Judge, Verdict

class HalfReadJudge(Judge):
    '''Bills every call; every other one's reply is then unreadable (a JudgeError carrying what was paid).'''

    name, routes, needs_images = "halfread", ("halfread-judge",), False

    def worst_case_cost(self, request):
        return {ASK}

    def judge(self, request):
        with open(os.environ["JUDGE_BILL"], "a") as bill:
            bill.write("{ASK}\\n")
        with open(os.environ["JUDGE_BILL"]) as bill:
            calls = len(bill.read().splitlines())
        if calls % 2:
            error = JudgeError("halfread: the reply could not be read as a verdict, twice", retryable=True)
            error.cost = {ASK}
            raise error
        return Verdict(True, "fine", self.id, cost={ASK})

@pytest.hookimpl(optionalhook=True)
def pytest_hypeedit_make_judge(config, name, argument):
    return HalfReadJudge() if name == "halfread" else None
"""


@pytest.fixture
def bench(pytester, monkeypatch, tmp_path):
    pytester.makeconftest(models_conftest(models=(PAID,), key_env=("PAID_API_KEY",), image="png") + JUDGE)
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    monkeypatch.setenv("PAID_API_KEY", "paid-secret-value-123")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JUDGE_BILL", str(tmp_path / "judge.bill"))
    return pytester


def run(pytester, *extra: str):
    return pytester.runpytest("-p", "no:cacheprovider", "--model", "paid", "--tasks", "mini.json", "--images-base",
                              "images", "--repeats", "1", "--outputs", "out", "--judge", "halfread",
                              "--concurrency", "1", *extra)  # one call at a time: every other one fails


def judge_billed(tmp_path) -> float:
    bill = tmp_path / "judge.bill"
    return sum(float(line) for line in bill.read_text().splitlines()) if bill.exists() else 0.0


def row(pytester) -> dict:
    results = pytester.path / "out" / "results.json"
    partial = results.with_name("results.partial.json")
    return json.loads((partial if partial.exists() else results).read_text())["rows"][0]


def test_spent_this_run_is_every_paid_call_the_run_sent(bench, tmp_path):
    first = run(bench)
    first.assert_outcomes(passed=TASKS // 2, errors=TASKS // 2)  # half the verdicts failed after being billed
    generation = TASKS * PAID["price"]
    bought = generation + judge_billed(tmp_path)
    assert row(bench)["spent_this_run"] == pytest.approx(bought) == pytest.approx(row(bench)["spent"])
    first.stdout.fnmatch_lines([f"hypeedit 4/4 done | * | ${bought:.2f} spent | *",  # the live line
                                f"*; spent ${bought:.2f} (${bought:.2f} in this run*"])

    before = judge_billed(tmp_path)
    again = run(bench)  # the two errors are judged again: one more fails after being billed
    again.assert_outcomes(passed=TASKS // 2 + 1, errors=1)
    assert row(bench)["spent_this_run"] == pytest.approx(judge_billed(tmp_path) - before) == pytest.approx(2 * ASK)

    before = judge_billed(tmp_path)
    run(bench, "--rejudge")  # every candidate judged again and paid again, whatever the verdicts on disk
    assert row(bench)["spent_this_run"] == pytest.approx(judge_billed(tmp_path) - before) == \
        pytest.approx(TASKS * ASK)
    assert row(bench)["spent"] == pytest.approx(generation + judge_billed(tmp_path))
