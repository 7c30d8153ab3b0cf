"""Bootstrap intervals: hand-checkable cases, then coverage on simulated runs (the paired comparison of
``--baseline``: test_paired_comparison.py)."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from pytest_hypeedit.analysis.metrics import (
    MetricSettings,
    TaskTally,
    compute_metrics,
    expected_attempts_for,
    review_cost,
    success_probability,
)
from pytest_hypeedit.analysis.stats import (
    bca_interval,
    bootstrap_intervals,
    leave_one_out_index,
    resample_index,
)


def tally(task_id: str, passes: int, judged: int = 10, first: bool | None = None) -> TaskTally:
    return TaskTally(task_id, passes, judged, passes > 0 if first is None else first)


def spread_split(tasks: int = 30) -> list[TaskTally]:
    """Tasks whose PASS counts run 0..10 over and over: a mixed, realistic split."""
    return [tally(f"t{i:02d}", (i * 7) % 11, first=i % 3 == 0) for i in range(tasks)]


# --- index matrices and the BCa interval ------------------------------------------------


def test_index_matrices():
    index = resample_index(5, 100, seed=3)
    assert index.shape == (100, 5) and index.min() >= 0 and index.max() <= 4
    assert np.array_equal(index, resample_index(5, 100, seed=3))
    assert leave_one_out_index(3).tolist() == [[1, 2], [0, 2], [0, 1]]


def test_bca_is_the_percentile_interval_when_unbiased_and_symmetric():
    # replicates 0..100 centred on the estimate 50 (z0 = 0), symmetric jackknife (a = 0):
    # the 95% bounds are the 2.5% and 97.5% order statistics, 2.5 -> 2 (lower) and 97.5 -> 98 (higher)
    replicates = np.arange(101, dtype=float)
    assert bca_interval(50.0, replicates, np.array([-1.0, 0.0, 1.0])) == (2.0, 98.0)


def test_bca_corrects_for_replicates_leaning_to_one_side():
    # replicates 0..100, estimate 60: 60 below it plus half of the one tie -> 60.5/101 = 0.599,
    # z0 = inv_cdf(0.599) = 0.2508; with a = 0 the bounds sit at the shares
    #   cdf(2*0.2508 - 1.96) = cdf(-1.4584) = 0.0724 -> 7.24 -> 7 (lower)
    #   cdf(2*0.2508 + 1.96) = cdf(2.4616) = 0.9931 -> 99.3 -> 100 (higher)
    # instead of the percentile (2, 98): the interval follows the estimate up
    replicates = np.arange(101, dtype=float)
    assert bca_interval(60.0, replicates, np.array([-1.0, 0.0, 1.0])) == (7.0, 100.0)


def test_bca_drops_undefined_replicates_and_does_not_accept_unbounded_ones():
    assert bca_interval(1.0, np.array([np.nan, 1.0, 1.0]), np.zeros(3)) == (1.0, 1.0)
    assert bca_interval(1.0, np.full(4, np.nan), np.zeros(3)) is None
    # half the resamples had no success at all: the cost has no upper bound
    assert bca_interval(1.0, np.array([1.0, 1.0, np.inf, np.inf]), np.zeros(3)) is None


# --- bootstrap_intervals -----------------------------------------------------------------------


def test_intervals_of_two_tasks_span_every_possible_resample():
    # tasks p = 1 and p = 0: a resample's pass rate is 0, 0.5 or 1 (chances 1/4, 1/2, 1/4);
    # z0 = 0 (half below 0.5, half of the ties), a = 0 (jackknife 1 and 0): bounds = the 2.5% and
    # 97.5% points = 0 and 1
    intervals = bootstrap_intervals([tally("a", 10), tally("b", 0)], 0.04)
    assert intervals["pass_rate"] == (0.0, 1.0)
    assert intervals["pass_at_10"] == (0.0, 1.0)


def test_pass_rate_interval_of_many_tasks_matches_the_normal_approximation():
    # 400 tasks, half p = 1, half p = 0: mean 0.5, sd 0.5, standard error 0.5 / 20 = 0.025,
    # so about 0.5 -/+ 1.96 * 0.025 = (0.451, 0.549)
    tallies = [tally(f"t{i}", 10 * (i % 2)) for i in range(400)]
    low, high = bootstrap_intervals(tallies, 0.04, n_resamples=4000)["pass_rate"]
    assert low == pytest.approx(0.451, abs=0.006) and high == pytest.approx(0.549, abs=0.006)


def test_intervals_hold_every_metric_and_their_estimates():
    tallies = spread_split()
    point = compute_metrics(tallies, 0.04)
    intervals = bootstrap_intervals(tallies, 0.04)
    assert set(intervals) == set(point) - {"tasks"}
    for name, (low, high) in intervals.items():
        assert low <= point[name] <= high, name
        assert low < high, name


def test_intervals_are_seeded():
    tallies = spread_split()
    assert bootstrap_intervals(tallies, 0.04, seed=1) == bootstrap_intervals(tallies, 0.04, seed=1)
    assert bootstrap_intervals(tallies, 0.04, seed=1) != bootstrap_intervals(tallies, 0.04, seed=2)


def test_a_wider_level_gives_a_wider_interval():
    tallies = spread_split()
    low90, high90 = bootstrap_intervals(tallies, 0.04, level=0.90)["effective_cost"]
    low99, high99 = bootstrap_intervals(tallies, 0.04, level=0.99)["effective_cost"]
    assert low99 < low90 and high90 < high99


def test_no_interval_without_a_value_or_with_one_task():
    # no task ever passes: effective cost is None, so is its interval; one repeat: no unbiased pass@4
    intervals = bootstrap_intervals([tally("a", 0, 1), tally("b", 0, 1)], 0.04)
    assert intervals["effective_cost"] is None and intervals["pass_at_4_unbiased"] is None
    assert intervals["pass_rate"] == (0.0, 0.0)
    assert set(bootstrap_intervals([tally("a", 3)], 0.04).values()) == {None}
    assert set(bootstrap_intervals([], 0.04).values()) == {None}


def test_interval_keys_follow_the_retry_cap():
    intervals = bootstrap_intervals(spread_split(), 0.04, MetricSettings(retry_cap=2))
    assert intervals["pass_at_cap"] is not None


@pytest.mark.parametrize(("kwargs", "message"), [({"level": 95}, "level"), ({"n_resamples": 1}, "n_resamples")])
def test_bad_bootstrap_settings_are_not_accepted(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bootstrap_intervals(spread_split(), 0.04, **kwargs)


# --- coverage on simulated runs (the acceptance test) ----------------------------------------------

REPEATS, TASKS, RUNS, COST = 10, 50, 1000, 0.04


def population_truth(rates: np.ndarray) -> dict[str, float]:
    """Each metric over the whole population of tasks, measured as the benchmark measures it.

    A task's rate p is drawn uniformly from ``rates``; its PASS count k is
    Binomial(10, p).  Pass rate and hype gap are linear, so their truth is the
    formula on p.  Effective cost plugs k/10 into non-linear S and E, so its
    truth is E[E(k/10)] (C + R) / E[S(k/10)] with the expectation over p and
    k: what the benchmark reports on infinitely many tasks.  (The same
    formula on the true p, 1.19 here instead of 1.25, is not what 10 repeats
    estimate, and no resampling of tasks can move an interval onto it.)
    """
    counts = np.arange(REPEATS + 1)
    pmf = np.array([[comb(REPEATS, k) * p**k * (1 - p) ** (REPEATS - k) for k in counts] for p in rates])
    success = (pmf * success_probability(counts / REPEATS)).sum(axis=1).mean()
    attempts = (pmf * expected_attempts_for(counts / REPEATS)).sum(axis=1).mean()
    pass_at_10 = (1 - (1 - rates) ** REPEATS).mean()
    return {
        "pass_rate": rates.mean(),
        "effective_cost": attempts * (COST + review_cost()) / success,
        "hype_gap": pass_at_10 - rates.mean(),  # repeat 1 passes with chance p
    }


def simulated_run(rates: np.ndarray, rng: np.random.Generator) -> list[TaskTally]:
    """50 tasks drawn from the population, 10 independent repeats each."""
    task_rates = rng.choice(rates, TASKS)
    verdicts = rng.random((TASKS, REPEATS)) < task_rates[:, None]
    return [TaskTally(f"t{i}", int(row.sum()), REPEATS, bool(row[0])) for i, row in enumerate(verdicts)]


def coverage(rates: np.ndarray, seed: int) -> dict[str, float]:
    """The share of RUNS simulated runs whose 95% interval holds the truth, per metric."""
    truth = population_truth(rates)
    rng = np.random.default_rng(seed)
    hits = dict.fromkeys(truth, 0)
    for run in range(RUNS):
        intervals = bootstrap_intervals(simulated_run(rates, rng), COST, n_resamples=1000, seed=run)
        for name, value in truth.items():
            low, high = intervals[name]
            hits[name] += low <= value <= high
    return {name: count / RUNS for name, count in hits.items()}


# A mid-table model: some tasks hopeless, some always done, most in between.
MIXED = np.array([0, 0, 0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0])
# A weak model: half the tasks never pass, so effective cost is large and skewed.
WEAK = np.array([0, 0, 0, 0, 0, 0, 0.05, 0.1, 0.1, 0.2, 0.3, 0.5])


@pytest.mark.parametrize(("rates", "seed"), [(MIXED, 20260501), (WEAK, 20260502)], ids=["mixed", "weak"])
def test_nominal_95_percent_intervals_cover_the_truth_93_to_97_percent_of_the_time(rates, seed):
    # 1,000 runs: a true 95% coverage lands in [93%, 97%] but for a ~0.4% chance (2.9 binomial sds)
    for name, share in coverage(rates, seed).items():
        assert 0.93 <= share <= 0.97, f"{name}: {share:.3f}"
