"""The judge's figures corrected with a random human sample: calibrated metrics with honest intervals.

Pure: numpy only, no I/O, no pytest.  Input per results row: every judged candidate's judge verdict, and, on
a random sample of them, the human panel's label with the candidate's inclusion probability (the sampling
design: review/design.py, or a simple random sample within the model and split when none was recorded).

Two estimators, one per kind of metric:

* **Pass rate: prediction-powered inference** (Angelopoulos et al., Science 2023).  The metric is a weighted
  mean of the candidates' true labels Y, with weight w_i = 1 / (T n_t) (mean over tasks of the task's share).
  Its estimate is the judge's figure plus the Horvitz-Thompson estimate of the judge's error:

      pass_rate = sum_i w_i J_i + sum_{i in sample} w_i (Y_i - J_i) / pi_i

  unbiased under the sampling design whatever the judge does (its expectation over the draws of the sample is
  the all-human figure), and it needs no model of the judge.

* **Every other metric: imputation from the judge's error, in expectation.**  Pass@4, Pass@10, expected
  attempts, effective cost and the hype gap are non-linear in each task's PASS count k_t, so correcting the
  mean is not enough.  The model: within a row (one model), the judge's verdict depends on the candidate only
  through its true label (sensitivity se = P(J=PASS | Y=PASS), specificity sp = P(J=FAIL | Y=FAIL)); a task's
  repeats are exchangeable with a true rate p_t drawn from a distribution G of task rates.  Then

      P(J=PASS | p)        = p se + (1 - p)(1 - sp)
      P(Y=PASS | J=PASS, p) = p se / (p se + (1 - p)(1 - sp))
      P(Y=PASS | J=FAIL, p) = p (1 - se) / (p (1 - se) + (1 - p) sp)

  se and sp are estimated from the labelled candidates (pooled over the run's models when the row's sample has
  fewer than MIN_PER_CLASS human PASS or FAIL labels); G is the non-parametric maximum-likelihood mixing
  distribution on a grid (Laird 1978; EM).  Each task's posterior over p_t gives the distribution of its true
  PASS count: the human labels where known (refusals are FAIL to everyone), plus the unlabelled candidates'
  imputed labels.  Every metric is its exact expectation under that distribution: the mean of infinitely many
  imputations, computed without Monte Carlo noise.

**Intervals** (both estimators): the task bootstrap of stats.py (BCa, tasks resampled with their candidates,
labelled ones included), re-estimating se, sp and G in every replicate, so an interval carries the task
sampling, the human sample's size and the uncertainty of the judge's error (Schomaker & Heumann 2018, "boot
MI").  A pooled error is re-drawn from its Beta posterior in each replicate instead (its labels are not the
row's own tasks).  The level is widened for the number of tasks (``expanded_level``, Hesterberg 2015): the
bootstrap of 50 tasks, with a correction term that is large on the few tasks holding a label, fell ~3 points
short of 95% in the simulation without it.

**Assumptions.**  The human sample is random as its design says (labels of candidates chosen by hand are not a
sample).  The panel's majority is the truth.  For the non-linear metrics: the judge's error on a model depends
only on the true label, not on the task (a judge stricter on some task types than others breaks it; the pass
rate's correction does not need it), and a task's repeats are exchangeable.

**Human sample alone** (``human_sample``): pass rate by Horvitz-Thompson from the labels, the other metrics by
the same imputation with the judge ignored (se = sp = 1/2 makes the verdict carry no information): what the
sample says without the judge, to show what the judge adds.  With one or two labels per task the non-linear
ones rest on G, which so few labels per task barely pin down: read them as indicative.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from .metrics import DEFAULT_RETRY_CAP, MetricSettings, expected_attempts_for, success_probability
from .stats import bca_interval, leave_one_out_index, resample_index

#: The metrics reported three ways (judge, human sample, calibrated), in the order tables show them.
CALIBRATED_KEYS = ("pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "effective_cost",
                   "first_attempt_pass_rate", "hype_gap")
METHOD = ("prediction-powered inference (pass rate); imputation of unlabelled candidates from the judge's "
          "sensitivity and specificity, in expectation (other metrics); BCa task bootstrap re-estimating the "
          "judge's error in every replicate")
#: Fewer human PASS (or FAIL) labels than this in a row's sample: its judge error is pooled over the run's models.
MIN_PER_CLASS = 8
#: Task pass rates the mixing distribution G may put weight on.
GRID = np.linspace(0.0, 1.0, 21)
#: SQUAREM iterations (3 EM steps each) for G, and the longest extrapolation one may take.  30 iterations
#: reach the EM fixed point to within 0.1 point of Pass@4 on the simulated runs.
SQUAREM_STEPS, MAX_EXTRAPOLATION = 30, 1e4
#: Pseudo-counts on each side of se and sp: keeps them inside (0, 1) with few labels, without pulling them
#: towards 1/2 (0.5, Jeffreys, biased Pass@10 by 2 points in the simulation: a false FAIL looked likelier).
SMOOTH = 0.05
#: Elements per block of replicates x tasks x grid x counts (memory of one block: 8 bytes each).
BLOCK_ELEMENTS = 1_500_000

_NORMAL = NormalDist()

# The first candidate (repeat 1) of a task, as the hype gap needs it.
FIRST_NONE, FIRST_PASS, FIRST_FAIL, FIRST_JUDGE_PASS, FIRST_JUDGE_FAIL = range(5)


@dataclass(frozen=True)
class Unit:
    """One judged candidate of a row."""

    task_id: str
    repeat: int
    judge_pass: bool | None  # None: refused (no image): a FAIL for the judge and for people alike
    human_pass: bool | None = None  # the panel's majority, when the candidate is in the human sample
    inclusion: float | None = None  # its inclusion probability in the sample (0 < pi <= 1), when labelled


@dataclass(frozen=True)
class TaskEvidence:
    """What one task contributes: counts, its repeat 1, and its prediction-powered and human-only pass rates."""

    task_id: str
    judge_pass: int  # unlabelled candidates the judge passed
    judge_fail: int  # unlabelled candidates the judge failed
    confusion: tuple[int, int, int, int]  # labelled: (Y PASS J PASS, Y PASS J FAIL, Y FAIL J PASS, Y FAIL J FAIL)
    refused: int
    first: int  # FIRST_* code of repeat 1
    ppi: float  # (sum J + sum over the sample of (Y - J) / pi) / n_t
    ht: float  # (sum over the sample of Y / pi) / n_t

    @property
    def judged(self) -> int:
        return self.judge_pass + self.judge_fail + sum(self.confusion) + self.refused

    def to_json(self) -> dict:
        return {"task_id": self.task_id, "judge_pass": self.judge_pass, "judge_fail": self.judge_fail,
                "confusion": list(self.confusion), "refused": self.refused, "first": self.first,
                "ppi": self.ppi, "ht": self.ht}

    @classmethod
    def from_json(cls, data) -> "TaskEvidence":
        confusion = tuple(int(x) for x in data["confusion"])
        if len(confusion) != 4 or min(confusion) < 0:
            raise ValueError(f"task {data.get('task_id')!r}: 'confusion' must be four counts >= 0")
        return cls(str(data["task_id"]), int(data["judge_pass"]), int(data["judge_fail"]), confusion,  # type: ignore[arg-type]
                   int(data["refused"]), int(data["first"]), float(data["ppi"]), float(data["ht"]))


@dataclass(frozen=True)
class ErrorCounts:
    """Labelled candidates of a row (or a pool of rows) by human label and judge verdict."""

    true_pass: int = 0  # Y PASS, J PASS
    false_fail: int = 0  # Y PASS, J FAIL
    false_pass: int = 0  # Y FAIL, J PASS
    true_fail: int = 0  # Y FAIL, J FAIL

    @property
    def n(self) -> int:
        return self.true_pass + self.false_fail + self.false_pass + self.true_fail

    @property
    def sensitivity(self) -> float:
        return (self.true_pass + SMOOTH) / (self.true_pass + self.false_fail + 2 * SMOOTH)

    @property
    def specificity(self) -> float:
        return (self.true_fail + SMOOTH) / (self.true_fail + self.false_pass + 2 * SMOOTH)

    @property
    def enough(self) -> bool:
        """Enough labels of each kind for an estimate of its own (else the row's error is pooled)."""
        return min(self.true_pass + self.false_fail, self.false_pass + self.true_fail) >= MIN_PER_CLASS

    def __add__(self, other: "ErrorCounts") -> "ErrorCounts":
        return ErrorCounts(*(a + b for a, b in zip(self.astuple(), other.astuple())))

    def astuple(self) -> tuple[int, int, int, int]:
        return (self.true_pass, self.false_fail, self.false_pass, self.true_fail)


# --------------------------------------------------------------------------- evidence from candidates


def task_evidence(units: Iterable[Unit]) -> list[TaskEvidence]:
    """Per-task evidence of a row's judged candidates, sorted by task; bad input is a ValueError naming it."""
    by_task: dict[str, list[Unit]] = {}
    for unit in units:
        _check_unit(unit)
        by_task.setdefault(unit.task_id, []).append(unit)
    return [_evidence(task_id, by_task[task_id]) for task_id in sorted(by_task)]


def _check_unit(unit: Unit) -> None:
    if unit.human_pass is None:
        return
    if unit.judge_pass is None:
        raise ValueError(f"task {unit.task_id!r} repeat {unit.repeat}: a refusal has no image to label")
    if unit.inclusion is None or not 0 < unit.inclusion <= 1 or not math.isfinite(unit.inclusion):
        raise ValueError(f"task {unit.task_id!r} repeat {unit.repeat}: a labelled candidate needs an inclusion "
                         f"probability in (0, 1], got {unit.inclusion!r}")


def _evidence(task_id: str, units: list[Unit]) -> TaskEvidence:
    repeats = [u.repeat for u in units]
    if len(set(repeats)) != len(repeats):
        raise ValueError(f"task {task_id!r}: a repeat is given twice; each candidate counts once")
    labelled = [u for u in units if u.human_pass is not None]
    unlabelled = [u for u in units if u.human_pass is None and u.judge_pass is not None]
    cells = [(bool(u.human_pass), bool(u.judge_pass)) for u in labelled]
    confusion = tuple(cells.count(cell) for cell in ((True, True), (True, False), (False, True), (False, False)))
    n = len(units)
    judged_pass = sum(1 for u in units if u.judge_pass)
    correction = sum((int(u.human_pass) - int(bool(u.judge_pass))) / u.inclusion for u in labelled)
    return TaskEvidence(
        task_id=task_id,
        judge_pass=sum(1 for u in unlabelled if u.judge_pass),
        judge_fail=sum(1 for u in unlabelled if not u.judge_pass),
        confusion=confusion,  # type: ignore[arg-type]
        refused=sum(1 for u in units if u.judge_pass is None),
        first=_first_code(next((u for u in units if u.repeat == 1), None)),
        ppi=(judged_pass + correction) / n,
        ht=sum(int(u.human_pass) / u.inclusion for u in labelled) / n,
    )


def _first_code(unit: Unit | None) -> int:
    if unit is None:
        return FIRST_NONE
    if unit.judge_pass is None:
        return FIRST_FAIL
    if unit.human_pass is not None:
        return FIRST_PASS if unit.human_pass else FIRST_FAIL
    return FIRST_JUDGE_PASS if unit.judge_pass else FIRST_JUDGE_FAIL


def error_counts(evidence: Sequence[TaskEvidence]) -> ErrorCounts:
    return ErrorCounts(*(int(sum(t.confusion[i] for t in evidence)) for i in range(4)))


# --------------------------------------------------------------------------- columns


@dataclass(frozen=True)
class _Columns:
    """The evidence as numpy columns, one row per task, and the tasks' distinct patterns.

    Two tasks with the same counts and the same repeat 1 have the same posterior whatever the replicate, so
    the imputation works on the P distinct patterns (P <= T) weighted by how often each is drawn."""

    confusion: np.ndarray  # (T, 4)
    ppi: np.ndarray  # (T,)
    ht: np.ndarray  # (T,)
    pattern_of: np.ndarray  # (T,) index into the patterns
    patterns: np.ndarray  # (P, 4): judge_pass, judge_fail, human_pass, human_fail (refusals included)
    first: np.ndarray  # (P,) FIRST_* code

    @classmethod
    def of(cls, evidence: Sequence[TaskEvidence]) -> "_Columns":
        keys = [(t.judge_pass, t.judge_fail, t.confusion[0] + t.confusion[1],
                 t.confusion[2] + t.confusion[3] + t.refused, t.first) for t in evidence]
        distinct = sorted(set(keys))
        position = {key: i for i, key in enumerate(distinct)}
        table = np.array(distinct, dtype=int).reshape(-1, 5)
        return cls(
            confusion=np.array([t.confusion for t in evidence], dtype=float).reshape(-1, 4),
            ppi=np.array([t.ppi for t in evidence], dtype=float),
            ht=np.array([t.ht for t in evidence], dtype=float),
            pattern_of=np.array([position[key] for key in keys], dtype=int),
            patterns=table[:, :4],
            first=table[:, 4],
        )

    @property
    def tasks(self) -> int:
        return len(self.pattern_of)

    @property
    def judged(self) -> np.ndarray:
        return self.patterns.sum(axis=1)

    def multiplicity(self, index: np.ndarray) -> np.ndarray:
        """How many times each pattern is drawn in each row of ``index``: (R, P)."""
        drawn = self.pattern_of[index]
        counts = np.zeros((index.shape[0], len(self.patterns)))
        np.add.at(counts, (np.repeat(np.arange(index.shape[0]), index.shape[1]), drawn.ravel()), 1.0)
        return counts


# --------------------------------------------------------------------------- the judge's error per replicate


@dataclass(frozen=True)
class ErrorSource:
    """Where each replicate's se and sp come from: the replicate's own labels, or a pool's posterior draws."""

    pooled: ErrorCounts | None = None  # None: the row's own labels (re-estimated in every replicate)
    ignore_judge: bool = False  # the human sample alone: se = sp = 1/2

    def rates(self, columns: _Columns, index: np.ndarray, rng: np.random.Generator | None) -> tuple[np.ndarray, np.ndarray]:
        rows = index.shape[0]
        if self.ignore_judge:
            return np.full(rows, 0.5), np.full(rows, 0.5)
        if self.pooled is not None:
            return self._pooled(rows, rng)
        counts = columns.confusion[index].sum(axis=1)  # (rows, 4)
        se = (counts[:, 0] + SMOOTH) / (counts[:, 0] + counts[:, 1] + 2 * SMOOTH)
        sp = (counts[:, 3] + SMOOTH) / (counts[:, 3] + counts[:, 2] + 2 * SMOOTH)
        return se, sp

    def _pooled(self, rows: int, rng: np.random.Generator | None) -> tuple[np.ndarray, np.ndarray]:
        c = self.pooled
        if rng is None:  # the estimate itself: the posterior means
            return np.full(rows, c.sensitivity), np.full(rows, c.specificity)
        se = rng.beta(c.true_pass + SMOOTH, c.false_fail + SMOOTH, size=rows)
        sp = rng.beta(c.true_fail + SMOOTH, c.false_pass + SMOOTH, size=rows)
        return se, sp


# --------------------------------------------------------------------------- the imputation model


def _log(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(x)


def _xlogy(count: np.ndarray, logp: np.ndarray) -> np.ndarray:
    """count * log p with 0 * log 0 = 0 (a task with no such candidate says nothing about p)."""
    with np.errstate(invalid="ignore"):
        return np.where(count > 0, count * logp, 0.0)


def _judge_pass_probability(se: np.ndarray, sp: np.ndarray) -> np.ndarray:
    """P(J = PASS | p) on the grid, one row per replicate: (R, G)."""
    return GRID[None, :] * se[:, None] + (1 - GRID[None, :]) * (1 - sp[:, None])


def _likelihood(patterns: np.ndarray, a1: np.ndarray) -> np.ndarray:
    """Each pattern's likelihood of p on the grid, scaled to a maximum of 1: (R, P, G)."""
    counts = patterns.T[:, None, :, None].astype(float)  # (4, 1, P, 1)
    log_l = (_xlogy(counts[0], _log(a1)[:, None, :]) + _xlogy(counts[1], _log(1 - a1)[:, None, :])
             + _xlogy(counts[2], _log(GRID)[None, None, :]) + _xlogy(counts[3], _log(1 - GRID)[None, None, :]))
    return np.exp(log_l - log_l.max(axis=2, keepdims=True))


def _mixing(likelihood: np.ndarray, drawn: np.ndarray, steps: int = SQUAREM_STEPS) -> np.ndarray:
    """The non-parametric ML distribution of task rates on the grid (tasks weighted by how often their pattern
    is drawn): (R, G).  EM from the flat distribution, accelerated by SQUAREM (Varadhan & Roland 2008).

    Always from flat: EM multiplies weights, so a grid point the estimate dropped could hardly come back in a
    replicate started from it, and replicates would vary too little (the simulation's intervals were short).
    """
    share = drawn / drawn.sum(axis=1, keepdims=True)
    weights = np.full((drawn.shape[0], GRID.size), 1.0 / GRID.size)
    for _ in range(steps):
        first = _em_step(likelihood, share, weights)
        second = _em_step(likelihood, share, first)
        r, v = first - weights, second - 2 * first + weights
        alpha = -np.sqrt((r * r).sum(axis=1)) / np.maximum(np.sqrt((v * v).sum(axis=1)), 1e-300)
        alpha = np.clip(alpha, -MAX_EXTRAPOLATION, -1.0)[:, None]
        with np.errstate(over="ignore", invalid="ignore"):
            jumped = np.clip(weights - 2 * alpha * r + alpha * alpha * v, 0.0, None)
            jumped = _em_step(likelihood, share, jumped / jumped.sum(axis=1, keepdims=True))
        better = np.isfinite(jumped).all(axis=1) & (_log_likelihood(likelihood, share, jumped)
                                                    >= _log_likelihood(likelihood, share, second))
        weights = np.where(better[:, None], jumped, second)
    return weights


def _em_step(likelihood: np.ndarray, share: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """One EM step: w_g <- w_g sum_p share_p L_pg / (L w)_p, as matrix products (no posterior array)."""
    marginal = np.matmul(likelihood, weights[:, :, None])[:, :, 0]  # (R, P)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(marginal > 0, share / marginal, 0.0)
    return weights * np.matmul(ratio[:, None, :], likelihood)[:, 0, :]


def _log_likelihood(likelihood: np.ndarray, share: np.ndarray, weights: np.ndarray) -> np.ndarray:
    marginal = np.matmul(likelihood, weights[:, :, None])[:, :, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.nan_to_num((share * np.log(marginal)).sum(axis=1), nan=-np.inf)


def _posterior(likelihood: np.ndarray, weights: np.ndarray) -> np.ndarray:
    posterior = likelihood * weights[:, None, :]
    return posterior / posterior.sum(axis=2, keepdims=True)


def _true_pass_given_verdict(se: np.ndarray, sp: np.ndarray, a1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(Y = PASS | J = PASS, p) and P(Y = PASS | J = FAIL, p) on the grid: (R, G) each."""
    with np.errstate(invalid="ignore", divide="ignore"):
        q1 = np.where(a1 > 0, GRID[None, :] * se[:, None] / a1, 0.0)
        q0 = np.where(a1 < 1, GRID[None, :] * (1 - se[:, None]) / (1 - a1), 0.0)
    return np.clip(q1, 0, 1), np.clip(q0, 0, 1)


def _binomials(q: np.ndarray, most: int) -> np.ndarray:
    """Binomial(u, q) probabilities of 0..most successes for u = 0..most: (R, G, most+1, most+1)."""
    table = np.zeros((*q.shape, most + 1, most + 1), dtype=np.float32)  # half the memory traffic of float64
    table[..., 0, 0] = 1.0
    q = q[..., None].astype(np.float32)
    for u in range(most):
        table[..., u + 1, :] = table[..., u, :] * (1 - q)
        table[..., u + 1, 1:] += table[..., u, :-1] * q
    return table


def _imputed_counts(patterns: np.ndarray, q1: np.ndarray, q0: np.ndarray, size: int) -> np.ndarray:
    """P(the unlabelled candidates hold j true PASS | p) per pattern: (size, R, G, P), j first.

    The judge's PASS are each truly PASS with chance q1, its FAIL with chance q0, independently given p: the
    sum of two binomials, convolved here (j first, so that each step adds contiguous blocks)."""
    most = int(patterns[:, :2].max(initial=0))
    after_pass = np.ascontiguousarray(np.moveaxis(_binomials(q1, most)[:, :, patterns[:, 0], :], -1, 0))
    after_fail = np.ascontiguousarray(np.moveaxis(_binomials(q0, most)[:, :, patterns[:, 1], :], -1, 0))
    padded = np.zeros((size, *after_fail.shape[1:]), dtype=np.float32)
    padded[: most + 1] = after_fail[:size]
    total = np.zeros_like(padded)
    for j in range(min(most + 1, size)):
        total[j:] += after_pass[j] * padded[: size - j]
    return total


def _per_count_tables(patterns: np.ndarray, size: int, retry_cap: int) -> dict[str, np.ndarray]:
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


# --------------------------------------------------------------------------- the metrics of replicates


@dataclass(frozen=True)
class _Setup:
    columns: _Columns
    source: ErrorSource
    cost: float
    settings: MetricSettings


def _replicates(setup: _Setup, index: np.ndarray, rng: np.random.Generator | None) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every calibrated metric for each row of ``index`` (task positions), and the rows' fitted G."""
    columns = setup.columns
    per_block = max(1, BLOCK_ELEMENTS // (len(columns.patterns) * GRID.size * (int(columns.judged.max()) + 1)))
    parts, mixings = [], []
    for begin in range(0, index.shape[0], per_block):
        values, mixing = _block(setup, index[begin:begin + per_block], rng)
        parts.append(values)
        mixings.append(mixing)
    merged = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    return merged, np.concatenate(mixings)


def _block(setup: _Setup, index: np.ndarray, rng) -> tuple[dict[str, np.ndarray], np.ndarray]:
    columns = setup.columns
    drawn = columns.multiplicity(index)
    se, sp = setup.source.rates(columns, index, rng)
    a1 = _judge_pass_probability(se, sp)
    likelihood = _likelihood(columns.patterns, a1)
    mixing = _mixing(likelihood, drawn)
    posterior = _posterior(likelihood, mixing)  # (R, P, G)
    q1, q0 = _true_pass_given_verdict(se, sp, a1)
    share = drawn / drawn.sum(axis=1, keepdims=True)
    expected = {name: np.einsum("rp,rpg,rpg->r", share, posterior, values)
                for name, values in _given_rate(setup, q1, q0).items()}
    values = _aggregate(expected, *_first_shares(columns.first, drawn, posterior, q1, q0), setup)
    values["pass_rate_ppi"] = (columns.ht if setup.source.ignore_judge else columns.ppi)[index].mean(axis=1)
    return values, mixing


def _given_rate(setup: _Setup, q1: np.ndarray, q0: np.ndarray) -> dict[str, np.ndarray]:
    """Each per-task quantity's expectation given the task's rate p, per pattern on the grid: (R, P, G).

    Ignoring the judge (the human sample alone), q1 = q0 = p whatever the replicate: computed once and shared
    by every replicate."""
    patterns = setup.columns.patterns
    size = int(setup.columns.judged.max()) + 1
    once = setup.source.ignore_judge
    counts = _imputed_counts(patterns, q1[:1] if once else q1, q0[:1] if once else q0, size)  # (R, G, P, size)
    tables = _per_count_tables(patterns, size, setup.settings.retry_cap)
    given = {name: np.swapaxes((counts * table.T[:, None, None, :].astype(np.float32)).sum(axis=0), 1, 2)
             for name, table in tables.items()}
    if once:
        given = {name: np.broadcast_to(value, (q1.shape[0], *value.shape[1:])) for name, value in given.items()}
    return given


def _first_shares(first: np.ndarray, drawn: np.ndarray, posterior: np.ndarray, q1: np.ndarray, q0: np.ndarray):
    """Per replicate: the expected number of tasks whose repeat 1 truly passed, and of tasks with a repeat 1."""
    after_pass = np.einsum("rpg,rg->rp", posterior, q1)
    after_fail = np.einsum("rpg,rg->rp", posterior, q0)
    chance = np.select([first == FIRST_PASS, first == FIRST_JUDGE_PASS, first == FIRST_JUDGE_FAIL],
                       [np.ones_like(after_pass), after_pass, after_fail], 0.0)
    known = (first != FIRST_NONE).astype(float)
    return (drawn * chance).sum(axis=1), (drawn * known).sum(axis=1)


def _aggregate(expected: dict[str, np.ndarray], first_passed: np.ndarray, first_known: np.ndarray,
               setup: _Setup) -> dict[str, np.ndarray]:
    """The metrics from the expected task means (the same formulas as metrics.metric_table)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        first_rate = first_passed / first_known
        attempts, success = expected["attempts_at_cap"], expected["success_at_cap"]
        effective = np.where(success > 0, attempts * (setup.cost + setup.settings.review_cost) / success, np.inf)
    return {
        "pass_rate_model": expected["rate"],
        "pass_at_4": expected["success_at_4"],
        "pass_at_10": expected["any_pass"],
        "expected_attempts": attempts,
        "effective_cost": effective,
        "first_attempt_pass_rate": first_rate,
        "hype_gap": expected["any_pass"] - first_rate,
    }


# --------------------------------------------------------------------------- the public estimate


@dataclass(frozen=True)
class Calibration:
    """A row's calibrated and human-only figures: {metric: {"value", "low", "high"}} each, and the judge's error."""

    calibrated: dict[str, dict]
    human_sample: dict[str, dict]
    judge_error: dict
    pass_rate_method: str  # "prediction-powered" or "imputation" (no label in the row: nothing to correct with)


def calibrate(evidence: Sequence[TaskEvidence], cost: float, settings: MetricSettings = MetricSettings(), *,
              pooled: ErrorCounts | None = None, n_resamples: int = 1000, seed: int = 0,
              level: float = 0.95) -> Calibration | None:
    """Calibrated and human-only figures of one row, with BCa intervals (none when n_resamples is 0).

    ``pooled``: the labels of every row of the run, used when this row's own are too few (ErrorCounts.enough).
    None when nothing can be said: no task, or no label in the row and no pool to borrow from.
    """
    own = error_counts(evidence)
    columns = _Columns.of(evidence)
    use_pool = not own.enough and pooled is not None and pooled.n > own.n
    if columns.tasks == 0 or (own.n == 0 and not use_pool):
        return None
    source = ErrorSource(pooled=pooled if use_pool else None)
    setup = _Setup(columns, source, cost, settings)
    calibrated = _figures(setup, n_resamples, seed, level, prefer_ppi=own.n > 0)
    human = _figures(_Setup(columns, ErrorSource(ignore_judge=True), cost, settings), n_resamples, seed, level,
                     prefer_ppi=True) if own.n else _undefined()
    errors = pooled if use_pool else own
    # Shown as measured: with no human PASS (FAIL) among the labels the sensitivity (specificity) is unknown,
    # None, though the imputation still uses its smoothed value.
    judge_error = {"n_human": own.n,
                   "sensitivity": errors.sensitivity if errors.true_pass + errors.false_fail else None,
                   "specificity": errors.specificity if errors.true_fail + errors.false_pass else None,
                   "pooled": use_pool}
    return Calibration(calibrated, human, judge_error, "prediction-powered" if own.n else "imputation")


def _figures(setup: _Setup, n_resamples: int, seed: int, level: float, *, prefer_ppi: bool) -> dict[str, dict]:
    tasks = setup.columns.tasks
    point = _with_pass_rate(_replicates(setup, np.arange(tasks)[None, :], None)[0], prefer_ppi)
    if not n_resamples or tasks < 2:
        return {key: _entry(point[key][0], None) for key in CALIBRATED_KEYS}
    rng = np.random.default_rng([seed, 0xCA11B])
    boot = _with_pass_rate(_replicates(setup, resample_index(tasks, n_resamples, seed), rng)[0], prefer_ppi)
    jack = _with_pass_rate(_replicates(setup, leave_one_out_index(tasks), None)[0], prefer_ppi)
    return {key: _entry(point[key][0], _interval(point[key][0], boot[key], jack[key], level)) for key in CALIBRATED_KEYS}


def _with_pass_rate(values: dict[str, np.ndarray], prefer_ppi: bool) -> dict[str, np.ndarray]:
    values = dict(values)
    values["pass_rate"] = values["pass_rate_ppi"] if prefer_ppi else values["pass_rate_model"]
    return values


def _interval(value: float, boot: np.ndarray, jack: np.ndarray, level: float):
    if not math.isfinite(value):
        return None
    return bca_interval(value, boot, jack, expanded_level(level, jack.size))


def expanded_level(level: float, tasks: int) -> float:
    """The bootstrap's level widened for a small number of tasks (Hesterberg's expanded percentile interval,
    2015): the normal quantile z becomes sqrt(n / (n - 1)) t_{n-1}, since resampling n tasks understates the
    spread by about that.  With 50 tasks, 95% becomes 95.8%: the simulated coverage of the calibrated intervals
    rose from about 92% to the nominal band."""
    if tasks < 3:
        return level
    z = _NORMAL.inv_cdf(0.5 + level / 2)
    dof = tasks - 1
    # Cornish-Fisher expansion of Student's t quantile (Abramowitz & Stegun 26.7.5), accurate to 1e-3 for dof >= 10
    t = z + (z**3 + z) / (4 * dof) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * dof**2)
    return 2 * _NORMAL.cdf(math.sqrt(tasks / dof) * t) - 1


def _entry(value: float, interval) -> dict:
    value = float(value)
    finite = value if math.isfinite(value) else None
    low, high = interval if interval else (None, None)
    return {"value": finite, "low": low, "high": high}


def _undefined() -> dict[str, dict]:
    return {key: {"value": None, "low": None, "high": None} for key in CALIBRATED_KEYS}


# --------------------------------------------------------------------------- paired comparison of two releases


def paired_calibrated(current: Sequence[TaskEvidence], baseline: Sequence[TaskEvidence], cost_current: float,
                      cost_baseline: float, settings: MetricSettings = MetricSettings(), *,
                      pooled_current: ErrorCounts | None = None, pooled_baseline: ErrorCounts | None = None,
                      n_resamples: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, dict]:
    """Calibrated current minus calibrated baseline per metric, on the tasks both have: each resample draws one
    set of tasks for both releases, and each re-estimates its own judge error from its own labels in it."""
    before = {t.task_id: t for t in baseline}
    shared = [t.task_id for t in current if t.task_id in before]
    if not shared:
        raise ValueError("no task has calibration evidence in both runs: a paired comparison needs the same tasks")
    now_evidence = [t for t in current if t.task_id in before]
    sides = [_side(now_evidence, cost_current, settings, pooled_current),
             _side([before[i] for i in shared], cost_baseline, settings, pooled_baseline)]
    index_sets = (np.arange(len(shared))[None, :], resample_index(len(shared), n_resamples or 1000, seed),
                  leave_one_out_index(len(shared)) if len(shared) > 1 else None)
    tables = [_paired_tables(side, index_sets, seed) for side in sides]
    return {key: _paired_entry(tables, key, level, len(shared)) for key in CALIBRATED_KEYS}


def _side(evidence, cost, settings, pooled) -> _Setup:
    own = error_counts(evidence)
    use_pool = not own.enough and pooled is not None and pooled.n > own.n
    return _Setup(_Columns.of(evidence), ErrorSource(pooled=pooled if use_pool else None), cost, settings)


def _paired_tables(setup: _Setup, index_sets, seed: int) -> list[dict[str, np.ndarray] | None]:
    point = _replicates(setup, index_sets[0], None)[0]
    prefer_ppi = error_counts_of(setup.columns).n > 0
    rng = np.random.default_rng([seed, 0xCA11B])
    boot = _replicates(setup, index_sets[1], rng)[0]
    jack = _replicates(setup, index_sets[2], None)[0] if index_sets[2] is not None else None
    return [_with_pass_rate(t, prefer_ppi) if t is not None else None for t in (point, boot, jack)]


def error_counts_of(columns: _Columns) -> ErrorCounts:
    return ErrorCounts(*(int(x) for x in columns.confusion.sum(axis=0)))  # type: ignore[arg-type]


def _paired_entry(tables, key: str, level: float, tasks: int) -> dict:
    (now, now_boot, now_jack), (before, before_boot, before_jack) = tables
    current, baseline = float(now[key][0]), float(before[key][0])
    entry = {"current": _finite(current), "baseline": _finite(baseline), "difference": None, "low": None,
             "high": None, "tasks": tasks}
    if not (math.isfinite(current) and math.isfinite(baseline)):
        return entry
    entry["difference"] = current - baseline
    if now_jack is not None:
        with np.errstate(invalid="ignore"):
            interval = bca_interval(current - baseline, now_boot[key] - before_boot[key],
                                    now_jack[key] - before_jack[key], expanded_level(level, tasks))
        if interval:
            entry["low"], entry["high"] = interval
    return entry


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


__all__ = ["CALIBRATED_KEYS", "METHOD", "MIN_PER_CLASS", "Unit", "TaskEvidence", "ErrorCounts", "Calibration",
           "task_evidence", "error_counts", "calibrate", "paired_calibrated", "DEFAULT_RETRY_CAP"]
