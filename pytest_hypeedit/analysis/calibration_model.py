"""The imputation model of the calibrated figures: the distribution of task rates G and, given the judge's
sensitivity and specificity, each task's distribution of true PASS counts (see analysis/calibration.py for the
model and its assumptions), and where each bootstrap replicate's judge error comes from.  Pure numpy, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .metrics import expected_attempts_for, success_probability

if TYPE_CHECKING:
    from ..report.results_model import JudgeError

#: Task pass rates the mixing distribution G may put weight on.
#: Pseudo-counts on each side of se and sp: keeps them inside (0, 1) with few labels, without pulling them
#: towards 1/2 (0.5, Jeffreys, biased Pass@10 by 2 points in the simulation: a false FAIL looked likelier).
SMOOTH = 0.05
#: Task pass rates the mixing distribution G may put weight on.
GRID = np.linspace(0.0, 1.0, 21)
#: SQUAREM iterations (3 EM steps each) for G, and the longest extrapolation one may take.  30 iterations
#: reach the EM fixed point to within 0.1 point of Pass@4 on the simulated runs.
SQUAREM_STEPS, MAX_EXTRAPOLATION = 30, 1e4


# --------------------------------------------------------------------------- the judge's error per replicate


class LabelledCells(Protocol):
    """What the judge's error is estimated from, one row per task (analysis/calibration.py's columns of the
    evidence): the human-labelled candidates' confusion cells (true PASS, false FAIL, false PASS, true FAIL),
    as counts and weighted by 1 / pi."""

    @property
    def confusion(self) -> np.ndarray: ...
    @property
    def weighted(self) -> np.ndarray: ...


@dataclass(frozen=True)
class ErrorSource:
    """Where each replicate's se and sp come from: the replicate's own labels, or a pool's posterior draws."""

    pooled: Any = None  # ErrorCounts  # None: the row's own labels (re-estimated in every replicate)
    ignore_judge: bool = False  # the human sample alone: se = sp = 1/2

    def rates(self, columns: LabelledCells, index: np.ndarray, rng: np.random.Generator | None) -> tuple[np.ndarray, np.ndarray]:
        rows = index.shape[0]
        if self.ignore_judge:
            return np.full(rows, 0.5), np.full(rows, 0.5)
        if self.pooled is not None:
            return self._pooled(rows, rng)
        return weighted_rates(columns.confusion[index].sum(axis=1), columns.weighted[index].sum(axis=1))

    def _pooled(self, rows: int, rng: np.random.Generator | None) -> tuple[np.ndarray, np.ndarray]:
        c = self.pooled
        if rng is None:  # the estimate itself: the posterior means
            return np.full(rows, c.sensitivity), np.full(rows, c.specificity)
        se = rng.beta(c.true_pass + SMOOTH, c.false_fail + SMOOTH, size=rows)
        sp = rng.beta(c.true_fail + SMOOTH, c.false_pass + SMOOTH, size=rows)
        return se, sp


def weighted_rates(counts: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sensitivity and specificity from the labelled cells weighted by 1 / pi (rows x 4 each), rescaled to the
    labels' count so that SMOOTH keeps its meaning: with equal inclusion probabilities the plain counts'."""
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(weights.sum(axis=1) > 0, counts.sum(axis=1) / weights.sum(axis=1), 0.0)[:, None]
    cells = weights * scale
    se = (cells[:, 0] + SMOOTH) / (cells[:, 0] + cells[:, 1] + 2 * SMOOTH)
    sp = (cells[:, 3] + SMOOTH) / (cells[:, 3] + cells[:, 2] + 2 * SMOOTH)
    return se, sp


def judge_error_summary(evidence: Sequence[Any], own: Any, pooled: Any) -> JudgeError:
    """Sensitivity and specificity as measured (weighted by the design), with their label counts and Wilson
    intervals; None for one with no human label of its kind (the imputation still uses its smoothed value)."""
    if pooled is not None:
        counts = weights = np.array([pooled.astuple()], dtype=float)
    else:
        counts = np.array([own.astuple()], dtype=float)
        weights = np.array([[sum(t.weights[i] for t in evidence) for i in range(4)]], dtype=float)
    se, sp = (float(x[0]) for x in weighted_rates(counts, weights))
    positives, negatives = int(counts[0, 0] + counts[0, 1]), int(counts[0, 2] + counts[0, 3])
    return {"n_human": own.n, "sensitivity": se if positives else None, "specificity": sp if negatives else None,
            "pooled": pooled is not None, "human_pass": positives, "human_fail": negatives,
            "sensitivity_interval": wilson_interval(se, positives) if positives else None,
            "specificity_interval": wilson_interval(sp, negatives) if negatives else None}


def wilson_interval(rate: float, n: int, z: float = 1.959964) -> list[float]:
    """The 95% Wilson interval of a proportion estimated from n labels."""
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


# --------------------------------------------------------------------------- the imputation model


def _log(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        result: np.ndarray = np.log(x)  # numpy types its arithmetic as Any
        return result


def _xlogy(count: np.ndarray, logp: np.ndarray) -> np.ndarray:
    """count * log p with 0 * log 0 = 0 (a task with no such candidate says nothing about p)."""
    with np.errstate(invalid="ignore"):
        return np.where(count > 0, count * logp, 0.0)


def judge_pass_probability(se: np.ndarray, sp: np.ndarray) -> np.ndarray:
    """P(J = PASS | p) on the grid, one row per replicate: (R, G)."""
    result: np.ndarray = GRID[None, :] * se[:, None] + (1 - GRID[None, :]) * (1 - sp[:, None])  # numpy types its arithmetic as Any
    return result


def task_likelihood(patterns: np.ndarray, a1: np.ndarray) -> np.ndarray:
    """Each pattern's likelihood of p on the grid, scaled to a maximum of 1: (R, P, G)."""
    counts = patterns.T[:, None, :, None].astype(float)  # (4, 1, P, 1)
    log_l = (_xlogy(counts[0], _log(a1)[:, None, :]) + _xlogy(counts[1], _log(1 - a1)[:, None, :])
             + _xlogy(counts[2], _log(GRID)[None, None, :]) + _xlogy(counts[3], _log(1 - GRID)[None, None, :]))
    result: np.ndarray = np.exp(log_l - log_l.max(axis=2, keepdims=True))  # numpy types its arithmetic as Any
    return result


def fit_mixing(likelihood: np.ndarray, drawn: np.ndarray, steps: int = SQUAREM_STEPS) -> np.ndarray:
    """The non-parametric ML distribution of task rates on the grid (tasks weighted by how often their pattern
    is drawn): (R, G).  EM from the flat distribution, accelerated by SQUAREM (Varadhan & Roland 2008).

    Always from flat: EM multiplies weights, so a grid point the estimate dropped could hardly come back in a
    replicate started from it, and replicates would vary too little (the simulation's intervals were short).
    Each weights' marginal (L w) is computed once and shared by its EM step and its log-likelihood.
    """
    share = drawn / drawn.sum(axis=1, keepdims=True)
    weights = np.full((drawn.shape[0], GRID.size), 1.0 / GRID.size)
    at_weights = marginal_of(likelihood, weights)
    for _ in range(steps):
        first = em_step(likelihood, share, weights, at_weights)
        second = em_step(likelihood, share, first)
        at_second = marginal_of(likelihood, second)
        r, v = first - weights, second - 2 * first + weights
        alpha = -np.sqrt((r * r).sum(axis=1)) / np.maximum(np.sqrt((v * v).sum(axis=1)), 1e-300)
        alpha = np.clip(alpha, -MAX_EXTRAPOLATION, -1.0)[:, None]
        with np.errstate(over="ignore", invalid="ignore"):
            jumped = np.clip(weights - 2 * alpha * r + alpha * alpha * v, 0.0, None)
            jumped = em_step(likelihood, share, jumped / jumped.sum(axis=1, keepdims=True))
        at_jumped = marginal_of(likelihood, jumped)
        better = np.isfinite(jumped).all(axis=1) & (log_likelihood_at(share, at_jumped)
                                                    >= log_likelihood_at(share, at_second))
        weights = np.where(better[:, None], jumped, second)
        at_weights = np.where(better[:, None], at_jumped, at_second)
    return weights


def marginal_of(likelihood: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each pattern's likelihood under the weights, (L w)_p: (R, P)."""
    result: np.ndarray = np.matmul(likelihood, weights[:, :, None])[:, :, 0]  # numpy types its arithmetic as Any
    return result


def em_step(likelihood: np.ndarray, share: np.ndarray, weights: np.ndarray,
            marginal: np.ndarray | None = None) -> np.ndarray:
    """One EM step: w_g <- w_g sum_p share_p L_pg / (L w)_p, as matrix products (no posterior array).
    ``marginal``: (L w), when already known."""
    if marginal is None:
        marginal = marginal_of(likelihood, weights)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(marginal > 0, share / marginal, 0.0)
    result: np.ndarray = weights * np.matmul(ratio[:, None, :], likelihood)[:, 0, :]  # numpy types its arithmetic as Any
    return result


_LOWEST = np.finfo(float).min


def log_likelihood_at(share: np.ndarray, marginal: np.ndarray) -> np.ndarray:
    """sum_p share_p log (L w)_p, ranked for SQUAREM's comparison as np.nan_to_num(..., nan=-inf) ranks it: NaN
    lowest, then -inf (as the lowest float)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        total = (share * np.log(marginal)).sum(axis=1)
    result: np.ndarray = np.where(np.isnan(total), -np.inf, np.where(total == -np.inf, _LOWEST, total))
    return result


def task_posterior(likelihood: np.ndarray, weights: np.ndarray) -> np.ndarray:
    posterior = likelihood * weights[:, None, :]
    result: np.ndarray = posterior / posterior.sum(axis=2, keepdims=True)  # numpy types its arithmetic as Any
    return result


def true_pass_given_verdict(se: np.ndarray, sp: np.ndarray, a1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(Y = PASS | J = PASS, p) and P(Y = PASS | J = FAIL, p) on the grid: (R, G) each."""
    with np.errstate(invalid="ignore", divide="ignore"):
        q1 = np.where(a1 > 0, GRID[None, :] * se[:, None] / a1, 0.0)
        q0 = np.where(a1 < 1, GRID[None, :] * (1 - se[:, None]) / (1 - a1), 0.0)
    return np.clip(q1, 0, 1), np.clip(q0, 0, 1)


def binomials(q: np.ndarray, most: int) -> np.ndarray:
    """Binomial(u, q) probabilities of j = 0..most successes for u = 0..most: (most+1 [j], most+1 [u], R, G).

    j and u first, so that picking each pattern's u (``table[:, u]``) copies whole (R, G) blocks."""
    table = np.zeros((most + 1, most + 1, *q.shape), dtype=np.float32)  # half the memory traffic of float64
    table[0, 0] = 1.0
    q = q.astype(np.float32)
    for u in range(most):
        table[:, u + 1] = table[:, u] * (1 - q)
        table[1:, u + 1] += table[:-1, u] * q
    return table


def imputed_counts(patterns: np.ndarray, q1: np.ndarray, q0: np.ndarray, size: int) -> np.ndarray:
    """P(the unlabelled candidates hold j true PASS | p) per pattern: (size, P, R, G), j first.

    The judge's PASS are each truly PASS with chance q1, its FAIL with chance q0, independently given p: the
    sum of two binomials, convolved here (j first, so that each step adds contiguous blocks)."""
    most = int(patterns[:, :2].max(initial=0))
    after_pass = binomials(q1, most)[:, patterns[:, 0]]  # (most+1, P, R, G)
    after_fail = binomials(q0, most)[:, patterns[:, 1]]
    total = np.zeros((size, *after_fail.shape[1:]), dtype=np.float32)
    product = np.empty_like(total)  # one buffer for every step's products
    for j in range(min(most + 1, size)):
        i = min(most + 1, size - j)  # after_fail holds 0 past most
        np.multiply(after_pass[j], after_fail[:i], out=product[:i])
        total[j:j + i] += product[:i]
    return total


def per_count_tables(patterns: np.ndarray, size: int, retry_cap: int) -> dict[str, np.ndarray]:
    """Each per-task quantity as a function of j, the unlabelled candidates' true PASS: (P, size) tables.

    The task's true PASS count is k = j + its labelled PASS, out of n_t judged."""
    n = patterns.sum(axis=1)[:, None].astype(float)
    k = np.arange(size)[None, :] + patterns[:, 2:3]
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(k <= n, k / n, 0.0)
    return {
        "rate": rate,
        "success_at_4": success_probability(rate, 4),
        "success_at_cap": success_probability(rate, retry_cap),
        "attempts_at_cap": expected_attempts_for(rate, retry_cap),
        "any_pass": (k >= 1).astype(float),
    }
