"""Which model differences are real: Holm by hand and against statsmodels, the sign-flip p-value against scipy, its
interval (the test inverted), pairs that are equal, clearly different, or different only before the correction for
multiple comparisons, and families of equal models (a bounded simulation; bench/bench_pairwise.py has the figures)."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from pairwise_sim import Regime, equal_family, null_p_values

from pytest_hypeedit.analysis.metrics import MetricSettings, TaskTally, compute_metrics
from pytest_hypeedit.analysis.pairwise import (
    Entrant,
    compare_pair,
    flips_for,
    holm,
    holm_exact,
    holm_factors,
    indistinguishable,
    pairwise,
    sign_flip,
    sign_flip_p,
    sign_flips,
)


def tallies(passes: list[int], judged: int = 10) -> tuple[TaskTally, ...]:
    return tuple(TaskTally(f"t{i:02d}", k, judged, k > 0) for i, k in enumerate(passes))


def excludes_zero(interval: list[float | None]) -> bool:
    low, high = interval
    return (low is not None and low > 0) or (high is not None and high < 0)


# --- Holm ------------------------------------------------------------------------------------


def test_holm_by_hand():
    # sorted: 0.005 x4 = 0.02, 0.01 x3 = 0.03, 0.03 x2 = 0.06, 0.04 x1 = 0.04 -> kept monotone: 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # capped at 1
    assert holm([0.02]) == [0.02]  # a family of one is not adjusted
    assert holm([]) == []


def test_holm_agrees_with_statsmodels(monkeypatch):
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    # multipletests ends its Holm branch with gc.collect(): over a test worker's heap that was ~55 ms a call
    # (~8 s of CPU for the 120 calls here, 130 s of a loaded suite); a collection changes none of its figures
    import gc

    monkeypatch.setattr(gc, "collect", lambda generation=2: 0)
    rng = np.random.default_rng(7)
    for size in (1, 2, 5, 18, 126, 270):
        for _ in range(20):
            p = rng.uniform(0, 0.2, size) ** 2
            p[rng.random(size) < 0.2] = p[0]  # ties
            rejected, adjusted, _, _ = multipletests(p, alpha=0.05, method="holm")
            assert holm(list(p)) == pytest.approx(list(adjusted), rel=1e-12, abs=1e-15)
            # significant when Holm-adjusted p < alpha is what statsmodels rejects (it rejects p <= alpha;
            # no p here is exactly on it)
            assert [a < 0.05 for a in holm(list(p))] == list(rejected)


def test_holm_factors_say_at_which_level_each_test_was_made():
    alpha = Fraction(1, 20)
    rng = np.random.default_rng(3)
    for size in (1, 3, 18, 270):
        for _ in range(30):
            p = [Fraction(int(k), 10000) for k in rng.integers(1, 60, size)]
            factors = holm_factors(p, alpha)
            significant = [Fraction(a) < alpha for a in holm([float(x) for x in p])]
            assert [x < alpha / k for x, k in zip(p, factors)] == significant
            assert all(1 <= k <= size for k in factors)


def test_holm_is_decided_in_exact_arithmetic():
    # 10 models: 270 tests, 10,800 sign vectors per test. p = 2/10800 at Holm's first step: 270 x p is exactly
    # 0.05, not below it, but 270 * (2/10800) in floating point is 0.049999999999999996
    p = [Fraction(2, 10800)] + [Fraction(1)] * 269
    assert 270 * (2 / 10800) < 0.05  # what a float comparison would have called significant
    # Holm stops at the first step: every test is made at 0.05 / 270 (a float comparison would go on to 0.05 / 269)
    assert holm_factors(p, Fraction(1, 20)) == [270] * 270
    assert not p[0] < Fraction(1, 20) / 270
    assert holm_exact(p)[0] == Fraction(1, 20)  # and the adjusted p: 0.05, not below it
    assert flips_for(270) == 10799  # such a p happens: 2 / (1 + 10,799)


# --- the sign-flip test --------------------------------------------------------------------------


def test_sign_flip_p():
    # 10 tasks all +1: every sign vector is enumerated (1,024 <= 9,999); exactly 2 are as extreme
    assert sign_flip_p(np.ones(10)) == 2 / 1024
    assert sign_flip_p(np.zeros(10)) == 1.0  # no difference at all
    assert sign_flip_p(np.array([1.0, -1.0] * 5)) == 1.0  # mean 0: every flip is as extreme
    assert sign_flip_p(np.full(6, 0.5)) == 2 / 64
    # 40 tasks all +1: random flips, none as extreme, and still not 0: 1 / (1 + resamples)
    assert sign_flip_p(np.ones(40)) == 1 / 10000
    assert sign_flip_p(np.ones(40), n_resamples=999) == 1 / 1000


def test_sign_flip_p_agrees_with_scipy_on_small_cases():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(11)
    for tasks in (2, 5, 8, 12):
        for _ in range(15):
            # per-task differences as the benchmark makes them: multiples of 0.1, many ties and zeros
            differences = rng.integers(-4, 6, tasks) / 10
            ours = sign_flip_p(differences)
            theirs = stats.permutation_test((differences, np.zeros(tasks)), lambda x, y, axis: np.mean(x - y, axis=axis),
                                            permutation_type="samples", n_resamples=10_000, vectorized=True).pvalue
            assert ours == pytest.approx(theirs, abs=1e-12), differences


def test_no_p_value_is_ever_0():
    # the clearest difference the tests can see: a passes everything, b nothing, on 50 tasks; every metric is
    # tested by sign flips now (effective cost and hype gap too: their bootstrap p was 0 here)
    a = Entrant("a", tallies([9 + i % 2 for i in range(50)]), 0.04)
    b = Entrant("b", tuple(TaskTally(f"t{i:02d}", int(i % 3 == 0), 10, i % 6 == 0) for i in range(50)), 0.04)
    found = pairwise({"public": [a, b]}, MetricSettings())
    assert {e["metric"] for e in found} == {"pass_rate", "pass_at_4", "pass_at_10", "expected_attempts",
                                            "effective_cost", "hype_gap"}
    for entry in found:
        assert entry["p_adjusted"] >= 1 / 10000
        assert entry["significant"] is True


def test_the_interval_is_the_test_inverted():
    rng = np.random.default_rng(5)
    for tasks in (6, 12, 30, 50):
        for _ in range(6):
            values = rng.integers(-3, 5, tasks) / 10
            test = sign_flip(values, 999)
            for alpha in (Fraction(1, 20), Fraction(1, 200), Fraction(1, 10)):
                low, high = test.interval(alpha)
                # 0 is outside exactly when the test rejects 0 at that level
                assert excludes_zero([low, high]) == (test.p_value() < alpha)
                # a bound is kept (p >= alpha) and a step beyond it is rejected: the same test, shifted by hand
                for bound, outward in ((low, -1e-6), (high, 1e-6)):
                    if bound is None:
                        continue
                    assert sign_flip_p(values - bound, 999) >= alpha - 1e-12
                    assert sign_flip_p(values - bound - outward, 999) < alpha


def test_sign_flips_of_several_columns_are_each_column_alone():
    rng = np.random.default_rng(2)
    values = rng.integers(-3, 5, (40, 4)) / 10
    together = sign_flips(values, 999, seed=4)
    for column, test in enumerate(together):
        alone = sign_flip(values[:, column], 999, seed=4)
        assert test.p_value() == alone.p_value()
        assert test.interval(Fraction(1, 20)) == pytest.approx(alone.interval(Fraction(1, 20)), rel=1e-12)


def test_per_task_values_average_to_the_metrics_difference():
    # effective cost (a ratio) and hype gap (a mean minus a ratio) are tested on linearised per-task values: their
    # mean must be the difference of the figures the table prints, or the test is about something else
    a = tuple(TaskTally(f"t{i:02d}", (i * 7) % 11, 10, None if i == 3 else i % 4 == 0) for i in range(30))
    b = tallies([(i * 5) % 9 for i in range(30)])
    settings = MetricSettings()
    figures_a, figures_b = compute_metrics(a, 0.04, settings), compute_metrics(b, 0.12, settings)
    for entry in compare_pair(Entrant("a", a, 0.04), Entrant("b", b, 0.12), settings):
        expected = figures_a[entry["metric"]] - figures_b[entry["metric"]]
        assert entry["difference"] == pytest.approx(expected, rel=1e-12, abs=1e-12), entry["metric"]
        assert float(np.mean(entry["values"])) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_swapping_two_models_outcomes_on_a_task_only_flips_that_tasks_value():
    # what makes a sign flip a swap of the models on a task, so the test exact for equal models: the swap flips that
    # task's value and leaves the others as they were, up to one positive factor for all (which changes no p).
    # Effective cost's values are centred on the pooled cost per success (each model's own would move with the
    # swap); the hype gap's are a mean when every first candidate was judged
    a = tallies([(i * 7) % 11 for i in range(30)])
    b = tuple(TaskTally(f"t{i:02d}", (i * 5) % 9, 10, i % 3 == 0) for i in range(30))
    swapped_a, swapped_b = list(a), list(b)
    for task in (4, 17):
        swapped_a[task], swapped_b[task] = b[task], a[task]
    settings = MetricSettings()
    before = {e["metric"]: e["values"] for e in compare_pair(Entrant("a", a, 0.04), Entrant("b", b, 0.04), settings)}
    after = {e["metric"]: e["values"] for e in compare_pair(Entrant("a", tuple(swapped_a), 0.04),
                                                           Entrant("b", tuple(swapped_b), 0.04), settings)}
    assert set(before) == set(after) == {"pass_rate", "pass_at_4", "pass_at_10", "expected_attempts",
                                         "effective_cost", "hype_gap"}
    signs = np.ones(30)
    signs[[4, 17]] = -1
    for metric, values in before.items():
        expected = signs * values
        factor = float(after[metric] @ expected / (expected @ expected))
        assert factor > 0 and after[metric] == pytest.approx(factor * expected, rel=1e-12, abs=1e-12), metric
        if metric != "effective_cost":
            assert factor == pytest.approx(1.0)


# --- the family ----------------------------------------------------------------------------------


def test_identical_models_differ_by_nothing_and_are_not_significant():
    same = tallies([(i * 7) % 11 for i in range(30)])
    found = pairwise({"public": [Entrant("a", same, 0.04), Entrant("b", same, 0.04)]}, MetricSettings())
    assert {e["metric"] for e in found} == {"pass_rate", "pass_at_4", "pass_at_10", "expected_attempts",
                                            "effective_cost", "hype_gap"}
    for entry in found:
        assert entry["difference"] == 0.0
        assert entry["interval"] == [0.0, 0.0]
        assert entry["degenerate"]  # a single point is said to be one, not left to read as certainty
        assert entry["p_adjusted"] == 1.0
        assert entry["significant"] is False
    assert indistinguishable(found, "public") == [("a", "b")]


def test_a_clearly_different_pair_is_significant():
    good, bad = tallies([8 + i % 3 for i in range(30)]), tallies([i % 3 for i in range(30)])
    found = pairwise({"public": [Entrant("good", good, 0.04), Entrant("bad", bad, 0.04)]}, MetricSettings())
    rate = next(e for e in found if e["metric"] == "pass_rate")
    assert rate["a"] == "good" and rate["b"] == "bad"
    assert rate["difference"] == pytest.approx(0.8)
    assert rate["interval"][0] - 1e-9 <= 0.8 <= rate["interval"][1] + 1e-9
    assert rate["significant"] is True and rate["p_adjusted"] < 0.01
    assert rate["level"] == pytest.approx(1 - 0.05 / 6)  # the first of 6 tests: Holm tested it at 0.05 / 6
    cost = next(e for e in found if e["metric"] == "effective_cost")
    assert cost["difference"] < 0 and cost["significant"] is True  # the good model costs less per success
    assert cost["interval"][1] < 0
    assert "degenerate" not in rate and "degenerate" not in cost  # a range is not marked
    assert indistinguishable(found, "public") == []


def test_holm_turns_a_raw_5_percent_into_not_significant_and_the_interval_agrees():
    # 6 tasks, a passes everything, b nothing: raw p = 2/64 = 0.031 on each of the 4 task-mean metrics and on the
    # hype gap (effective cost of b is infinite, so not tested): 5 x 0.031 > 0.05.  The 95% interval would exclude
    # 0 (only 2 of 64 sign vectors are as extreme); at Holm's level, 1 - 0.05/5, nothing can be rejected
    a, b = Entrant("a", tallies([4] * 6, 4), 0.04), Entrant("b", tallies([0] * 6, 4), 0.04)
    found = pairwise({"public": [a, b]}, MetricSettings())
    assert [e["metric"] for e in found] == ["pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "hype_gap"]
    raw = sign_flip_p(np.ones(6))
    assert raw < 0.05 and excludes_zero(list(sign_flip(np.ones(6)).interval(Fraction(1, 20))))
    rate = found[0]
    assert rate["p_adjusted"] == pytest.approx(min(1.0, 5 * raw))
    assert rate["significant"] is False
    assert rate["level"] == pytest.approx(0.99) and rate["interval"] == [None, None]
    assert indistinguishable(found, "public") == [("a", "b")]


def test_significant_exactly_when_the_interval_excludes_0():
    # models from equal to clearly different, on tasks of every difficulty: whatever Holm decides, the interval
    # shown with it says the same
    rng = np.random.default_rng(9)
    rates = rng.beta(0.6, 0.6, 40)
    entrants = [Entrant(f"m{shift}", tuple(TaskTally(f"t{t:02d}", int(k), 10, bool(f)) for t, (k, f) in enumerate(
        zip(rng.binomial(10, np.clip(rates + shift / 20, 0, 1)), rng.random(40) < 0.5))), 0.04 + shift / 100)
        for shift in (0, 0, 1, 2, 4, 8)]
    found = pairwise({"public": entrants}, MetricSettings())
    assert len(found) == 15 * 6
    assert any(e["significant"] for e in found) and not all(e["significant"] for e in found)
    for entry in found:
        assert excludes_zero(entry["interval"]) == entry["significant"], entry
        assert entry["level"] >= 1 - 0.05 / 1 and entry["level"] <= 1 - 0.05 / (15 * 6)


def test_each_split_is_its_own_family_and_pairs_without_shared_tasks_are_left_out():
    good, bad = tallies([9] * 30), tallies([1] * 30)
    other = tuple(TaskTally(f"x{i}", 5, 10, True) for i in range(5))
    found = pairwise({"public": [Entrant("good", good, 0.04), Entrant("bad", bad, 0.04)],
                      "private": [Entrant("good", good, 0.04), Entrant("lonely", other, 0.04)]}, MetricSettings())
    assert {e["split"] for e in found} == {"public"}
    keys = {"split", "a", "b", "metric", "difference", "interval", "level", "p_adjusted", "significant", "tasks"}
    assert all(set(e) - {"degenerate"} == keys for e in found)  # 'degenerate' where an interval is one value
    assert all(("degenerate" in e) == (e["interval"][0] is not None and e["interval"][0] == e["interval"][1])
               for e in found)


def test_compare_pair_uses_the_shared_tasks_only():
    a = Entrant("a", tallies([10, 10, 0]), 0.04)
    b = Entrant("b", tallies([0, 0]), 0.04)
    rate = next(e for e in compare_pair(a, b, MetricSettings()) if e["metric"] == "pass_rate")
    assert rate["difference"] == pytest.approx(1.0) and rate["tasks"] == 2


# --- equal models, simulated (bounded; bench/bench_pairwise.py prints the family-wise error) ----------------


def test_null_p_values_of_every_metric_are_never_0_and_not_too_small():
    # 300 pairs of equal models per regime: no p is 0 (the bootstrap p of effective cost and hype gap was 0 in
    # about 0.6% of such tests), and no metric's p falls at or below 0.05 much more often than 5% of the time
    rng = np.random.default_rng(2026)
    for rate in (0.1, 0.9):
        p_values = null_p_values(rng, 300, Regime(rate, 2.0), flips=999)
        assert set(p_values) == {"pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "effective_cost",
                                 "hype_gap"}
        for metric, found in p_values.items():
            assert found.min() >= 1 / 1000, (rate, metric)
            # 300 tests at a true 5%: 15 expected, more than 26 has a chance under 0.3%
            assert np.count_nonzero(found <= 0.05) <= 26, (rate, metric, np.sort(found)[:30])


def test_ten_equal_models_call_no_pair_different():
    # three families of 10 equal models at a 10% pass rate (270 tests each): the earlier bootstrap p-values made a
    # false discovery in about a quarter of such families
    rng = np.random.default_rng(33)
    for family in range(3):
        found = pairwise({"sim": equal_family(rng, 10, Regime(0.1, 2.0))}, MetricSettings(), seed=family)
        assert len(found) == 45 * 6
        assert min(e["p_adjusted"] for e in found) > 0
        assert not any(e["significant"] for e in found)
        assert not any(excludes_zero(e["interval"]) for e in found)


# --- the leaderboard: merged runs ------------------------------------------------------------


def results_file(tmp_path, name: str, model: str, passes: list[int] | None, split: str = "public"):
    """One run's results JSON of one model: per-task tallies from ``passes`` (10 judged each), or none at all
    (a file written before the tallies were kept)."""
    rate = sum(passes or [5]) / (10 * len(passes or [5]))
    row = {"model": model, "split": split, "tasks": len(passes or [5]), "candidates": 10 * len(passes or [5]),
           "judged": 10 * len(passes or [5]), "errors": 0, "refusals": 0, "cost_per_candidate": 0.04, "spent": 1.0,
           "pass_rate": rate, "complete": True}
    if passes is not None:
        row["task_tallies"] = [{"task_id": f"t{i:02d}", "passes": k, "judged": 10, "first_passed": k > 0,
                                "task_types": []} for i, k in enumerate(passes)]
    data = {"schema": "hypeedit-results/1", "settings": {"repeats": 10, "retry_cap": 4, "review_cost": 0.2778},
            "complete": True, "rows": [row]}
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_the_leaderboard_groups_models_that_cannot_be_told_apart(tmp_path):
    from pytest_hypeedit.report.leaderboard import main

    spread = [(i * 7) % 11 for i in range(30)]
    files = [results_file(tmp_path, "a.json", "twin-a", spread), results_file(tmp_path, "b.json", "twin-b", spread),
             results_file(tmp_path, "c.json", "weaker", [max(0, k - 6) for k in spread])]
    out, merged = tmp_path / "RESULTS.md", tmp_path / "merged.json"
    assert main([*map(str, files), "-o", str(out), "--json", str(merged)]) == 0
    data = json.loads(merged.read_text(), parse_constant=lambda name: pytest.fail(f"not strict JSON: {name}"))
    rates = {(e["a"], e["b"]): e for e in data["pairwise"] if e["metric"] == "pass_rate"}
    assert rates[("twin-a", "twin-b")]["significant"] is False
    assert rates[("twin-a", "weaker")]["significant"] is True and rates[("twin-b", "weaker")]["significant"] is True
    text = out.read_text()
    assert "Cannot be told apart on pass rate (paired over tasks, Holm-adjusted" in text
    assert "twin-a ~ twin-b." in text and "~ weaker" not in text


def test_the_leaderboard_says_when_older_files_lack_tallies_and_skips_them(tmp_path):
    from pytest_hypeedit.report.leaderboard import main

    spread = [(i * 7) % 11 for i in range(30)]
    files = [results_file(tmp_path, "a.json", "new", spread), results_file(tmp_path, "old.json", "old", None)]
    out, merged = tmp_path / "RESULTS.md", tmp_path / "merged.json"
    assert main([*map(str, files), "-o", str(out), "--json", str(merged)]) == 0
    data = json.loads(merged.read_text())
    assert "pairwise" not in data
    assert data["pairwise_skipped"] == [{"split": "public", "model": "old", "reason":
                                         "no per-task tallies (results written by an older version), so not in "
                                         "the pairwise comparison; rerun it to compare"}]
    assert "- old: no per-task tallies (results written by an older version)" in out.read_text()


def test_a_combined_row_rebuilt_from_several_files_is_compared_on_its_pooled_tasks(tmp_path):
    from pytest_hypeedit.report.leaderboard import main

    spread = [(i * 7) % 11 for i in range(30)]
    worse = [max(0, k - 6) for k in spread]
    files = [results_file(tmp_path, f"{model}-{split}.json", model, passes, split)
             for model, passes in (("good", spread), ("bad", worse)) for split in ("public", "private")]
    merged = tmp_path / "merged.json"
    assert main([*map(str, files), "-o", str(tmp_path / "RESULTS.md"), "--json", str(merged)]) == 0
    data = json.loads(merged.read_text())
    combined = next(r for r in data["rows"] if r["split"] == "combined" and r["model"] == "good")
    assert len(combined["task_tallies"]) == 60 and combined["task_tallies"][0]["task_id"] == "public/t00"
    rate = next(e for e in data["pairwise"] if e["split"] == "combined" and e["metric"] == "pass_rate")
    assert rate["tasks"] == 60 and rate["significant"] is True


def test_a_malformed_tally_in_a_merged_file_is_a_clear_error(tmp_path, capsys):
    from pytest_hypeedit.report.leaderboard import main

    spread = [(i * 7) % 11 for i in range(30)]
    broken = results_file(tmp_path, "b.json", "broken", spread)
    data = json.loads(broken.read_text())
    data["rows"][0]["task_tallies"][3]["passes"] = 99  # more PASS than judged candidates
    broken.write_text(json.dumps(data))
    assert main([str(results_file(tmp_path, "a.json", "fine", spread)), str(broken)]) == 2
    error = capsys.readouterr().err
    assert "hypeedit-leaderboard: error: the per-task tallies or settings of the results files cannot be compared" in error
    assert "t03" in error and "Traceback" not in error
