"""``--judge-stability N[xK]``: re-judging a sample reports how often the same judge flips, pays each call once,
and counts it in the budget."""

from __future__ import annotations

import json
import math

import pytest
from benchdata import make_tasks, write_split
from fake_judges import judges_conftest

from pytest_hypeedit.engine.records import Record
from pytest_hypeedit.engine.stability import parse_stability_option, stability_of, stability_sample
from pytest_hypeedit.errors import ConfigError

PASS_CHANCE = 0.8  # the fake judge says PASS with this chance on every call, whatever the image

CONFTEST = judges_conftest("CoinJudge", pass_chance=PASS_CHANCE)  # a cent a call, each written to calls.log


@pytest.fixture
def bench(pytester, monkeypatch, tmp_path):
    pytester.makeconftest(CONFTEST)
    write_split(pytester.path, "mini", make_tasks(10), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    return pytester


def run(pytester, *extra):
    return pytester.runpytest("-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json",
                              "--images-base", "images", "--repeats", "10", "--outputs", "out",
                              "--judge", "coinjudge", *extra)


def calls(pytester) -> int:
    path = pytester.path / "calls.log"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_the_flip_rate_matches_a_judge_of_known_noise_and_nothing_is_paid_twice(bench):
    result = run(bench, "--judge-stability", "60x5")
    row = json.loads((bench.path / "out" / "results.json").read_text())["rows"][0]
    found = row["judge_stability"]
    assert (found["candidates"], found["k"], found["rejudgements"]) == (60, 5, 300)
    assert calls(bench) == 100 + 300  # every verdict, then 5 calls of their own for each of the 60
    # A re-judgement differs from the first verdict with chance 2 p (1 - p) = 0.32.  Flips of one candidate are
    # not independent (they all differ from the same first verdict): per candidate the count has variance
    # K p q (within) + p q (K (p - q))^2 (between the two first verdicts) = 0.8 + 0.16 * 9 = 2.24.
    p, q, k = PASS_CHANCE, 1 - PASS_CHANCE, 5
    expected = 2 * p * q
    sd = math.sqrt(60 * (k * p * q + p * q * (k * (p - q)) ** 2)) / 300
    assert abs(found["flip_rate"] - expected) < 3.5 * sd, (found["flip_rate"], expected, sd)
    assert found["flips"] == round(found["flip_rate"] * 300)
    assert row["spent"] == pytest.approx(0.01 * 400)  # the re-judgements are judge spend
    result.stdout.fnmatch_lines(["*judge stability (--judge-stability)*",
                                 f"identity (mini): {found['flips']} of 300 re-judgements flipped the verdict*",
                                 "a verdict that flips is noise every metric carries*"])
    run(bench, "--judge-stability", "60x5")  # a rerun: everything is on disk, nothing is asked again
    assert calls(bench) == 400
    again = json.loads((bench.path / "out" / "results.json").read_text())["rows"][0]["judge_stability"]
    assert again == found


def test_a_larger_k_later_asks_only_for_the_missing_ones(bench):
    run(bench, "--judge-stability", "20x2")
    assert calls(bench) == 100 + 40
    run(bench, "--judge-stability", "20x3")
    assert calls(bench) == 100 + 60


def test_re_judgements_stop_at_the_budget(bench):
    run(bench, "--judge-stability", "60x5", "--budget", "1.5")
    # Every judge call, first verdict or re-judgement, reserves the judge's worst case ($0.01) before it starts
    # and commits what it cost: no more than $1.50 of them (150 calls) can start, however many run at once, and
    # the 100 first verdicts leave room for some of the 300 re-judgements asked for, not all.
    row = json.loads((bench.path / "out" / "results.json").read_text())["rows"][0]
    rejudged = row["judge_stability"]["rejudgements"]
    assert calls(bench) == row["judged"] + rejudged
    assert 140 <= row["judged"] + rejudged <= 150 and 0 < rejudged < 300


def test_a_bad_option_is_a_usage_error_naming_it(bench):
    result = run(bench, "--judge-stability", "3y2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--judge-stability '3y2': give N or NxK*"])


def test_option_and_sample_by_hand():
    assert parse_stability_option("40") == (40, 2) and parse_stability_option("40x3") == (40, 3)
    for bad in ("0", "4x0", "x3", "-1"):
        with pytest.raises(ConfigError):
            parse_stability_option(bad)
    keys = [(split, model, f"t{t}", r) for split in ("a", "b") for model in ("m1", "m2")
            for t in range(5) for r in (1, 2)]  # 4 strata of 10
    chosen = stability_sample(keys, 8, 3, seed=1)
    assert len(chosen) == 8 and set(chosen.values()) == {3}
    assert {(k[0], k[1]) for k in chosen} == {("a", "m1"), ("a", "m2"), ("b", "m1"), ("b", "m2")}
    positions = lambda split, model: {(k[2], k[3]) for k in chosen if k[:2] == (split, model)}  # noqa: E731
    assert positions("a", "m1") == positions("a", "m2")  # one permutation per split for every model
    assert stability_sample(keys, 8, 3, seed=1) == chosen != stability_sample(keys, 8, 3, seed=2)


def test_flips_are_counted_against_the_first_verdict():
    def record(original, verdicts, judge="j"):
        return Record("s", "m", "t", 1, outcome=original.lower(), verdict=original, judge=judge, candidate="001.png",
                      extra={"stability": {"judge": "j", "candidate": "001.png", "original": original,
                                           "verdicts": verdicts, "cost": 0.02}})

    found = stability_of([record("PASS", ["PASS", "FAIL", "FAIL"]), record("FAIL", ["FAIL", "FAIL"]),
                          record("PASS", ["FAIL"], judge="another judge's verdict now")])
    assert found == {"candidates": 2, "k": 3, "flips": 2, "flip_rate": 2 / 5, "rejudgements": 5, "cost": 0.04}
