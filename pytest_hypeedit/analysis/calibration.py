"""The judge's figures corrected with a random human sample: calibrated metrics with honest intervals.

Pure: numpy only, no I/O, no pytest.  Input per results row: every judged candidate's judge verdict, and, on
a random sample of them, the human panel's label with the candidate's inclusion probability (the sampling
design: sample_design.py, or a simple random sample within the model and split when none was recorded).

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

  se and sp are estimated from the row's own labelled candidates, each weighted by 1 / pi (a sample drawn more
  often from the judge's FAILs would otherwise bias them), and with fewer than MIN_PER_CLASS human PASS or FAIL
  labels these metrics are withheld, with the reason (other models' error is not borrowed); G is the non-parametric maximum-likelihood mixing
  distribution on a grid (Laird 1978; EM).  Each task's posterior over p_t gives the distribution of its true
  PASS count: the human labels where known (refusals are FAIL to everyone), plus the unlabelled candidates'
  imputed labels.  Every metric is its exact expectation under that distribution: the mean of infinitely many
  imputations, computed without Monte Carlo noise.

**Intervals** (both estimators): analysis/calibration_intervals.py (a cluster t interval for the pass rate,
the task bootstrap for the others, re-estimating se, sp and G in every replicate, so that an interval carries
the task sampling, the human sample's size and the uncertainty of the judge's error; bounds kept in range).

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .calibration_evidence import (
    FIRST_JUDGE_FAIL,
    FIRST_JUDGE_PASS,
    FIRST_NONE,
    FIRST_PASS,
    MIN_PER_CLASS,
    ErrorCounts,
    TaskEvidence,
    Unit,
    error_counts,
    task_evidence,
)
from .calibration_intervals import (
    BOUND_METHOD,
    MIN_DISAGREEMENTS,
    SMALL_SAMPLE,
    TRUSTED_LABELS,
    clipped,
    cost_from_success_rate,
    entry,
    error_bound_interval,
    interval_of,
    withheld,
)
from .calibration_model import (
    GRID,
    ErrorSource,
    fit_mixing,
    imputed_counts,
    judge_error_summary,
    judge_pass_probability,
    per_count_tables,
    task_likelihood,
    task_posterior,
    true_pass_given_verdict,
)
from .metrics import DEFAULT_RETRY_CAP, MetricSettings
from .stats import leave_one_out_index, resample_index

if TYPE_CHECKING:
    from ..report.results_model import CalibratedFigure, JudgeError

#: The metrics reported three ways (judge, human sample, calibrated), in the order tables show them.
CALIBRATED_KEYS = ("pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "effective_cost",
                   "first_attempt_pass_rate", "hype_gap")
METHOD = ("prediction-powered inference (pass rate; cluster t interval over tasks); imputation of unlabelled "
          "candidates from the judge's sensitivity and specificity, in expectation (other metrics; BCa task "
          "bootstrap re-estimating the judge's error in every replicate)")
#: Elements per block of replicates x tasks x grid x counts (memory of one block: 8 bytes each).
BLOCK_ELEMENTS = 1_500_000


# --------------------------------------------------------------------------- columns


@dataclass(frozen=True)
class _Columns:
    """The evidence as numpy columns, one row per task, and the tasks' distinct patterns.

    Two tasks with the same counts and the same repeat 1 have the same posterior whatever the replicate, so
    the imputation works on the P distinct patterns (P <= T) weighted by how often each is drawn."""

    confusion: np.ndarray  # (T, 4)
    weighted: np.ndarray  # (T, 4): the confusion weighted by 1 / pi
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
            weighted=np.array([t.weights for t in evidence], dtype=float).reshape(-1, 4),
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
        result: np.ndarray = self.patterns.sum(axis=1)  # numpy types its arithmetic as Any
        return result

    def multiplicity(self, index: np.ndarray) -> np.ndarray:
        """How many times each pattern is drawn in each row of ``index``: (R, P)."""
        drawn = self.pattern_of[index]
        counts = np.zeros((index.shape[0], len(self.patterns)))
        np.add.at(counts, (np.repeat(np.arange(index.shape[0]), index.shape[1]), drawn.ravel()), 1.0)
        return counts


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


def _block(setup: _Setup, index: np.ndarray, rng: np.random.Generator | None) -> tuple[dict[str, np.ndarray], np.ndarray]:
    columns = setup.columns
    drawn = columns.multiplicity(index)
    se, sp = setup.source.rates(columns, index, rng)
    a1 = judge_pass_probability(se, sp)
    likelihood = task_likelihood(columns.patterns, a1)
    mixing = fit_mixing(likelihood, drawn)
    posterior = task_posterior(likelihood, mixing)  # (R, P, G)
    q1, q0 = true_pass_given_verdict(se, sp, a1)
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
    counts = imputed_counts(patterns, q1[:1] if once else q1, q0[:1] if once else q0, size)  # (size, P, R, G)
    tables = per_count_tables(patterns, size, setup.settings.retry_cap)
    given = {name: np.swapaxes((counts * table.T[:, :, None, None].astype(np.float32)).sum(axis=0), 0, 1)
             for name, table in tables.items()}
    if once:
        given = {name: np.broadcast_to(value, (q1.shape[0], *value.shape[1:])) for name, value in given.items()}
    return given


def _first_shares(first: np.ndarray, drawn: np.ndarray, posterior: np.ndarray, q1: np.ndarray, q0: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
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
        "success_per_attempt": np.where(attempts > 0, success / np.maximum(attempts, 1e-300), 0.0),
        "first_attempt_pass_rate": first_rate,
        "hype_gap": expected["any_pass"] - first_rate,
    }


# --------------------------------------------------------------------------- the public estimate


@dataclass(frozen=True)
class Calibration:
    """A row's calibrated and human-only figures: {metric: {"value", "low", "high", "level", "target"}} each
    (or {"value": None, ..., "reason"} for a metric its sample cannot calibrate), and the judge's error."""

    calibrated: dict[str, CalibratedFigure]
    human_sample: dict[str, CalibratedFigure]
    judge_error: JudgeError
    pass_rate_method: str  # "prediction-powered" or "imputation" (a known error given, no label to correct with)
    problems: tuple[str, ...] = ()  # what a reader must know: withheld metrics, a small sample
    disagreements: int = 0  # labels where the judge and people disagree
    few_disagreements: bool = False  # fewer than MIN_DISAGREEMENTS: the pass rate's interval is widened


def calibrate(evidence: Sequence[TaskEvidence], cost: float, settings: MetricSettings = MetricSettings(), *,
              pooled: ErrorCounts | None = None, n_resamples: int = 1000, seed: int = 0,
              level: float = 0.95) -> Calibration | None:
    """Calibrated and human-only figures of one row, with intervals (none when n_resamples is 0).

    The judge's error comes from the row's own labels.  With fewer than MIN_PER_CLASS human PASS or FAIL
    among them the metrics that need it (all but the pass rate) are withheld, with the reason: borrowing other
    models' error was biased in simulation (Pass@4 coverage 47.5% for a 92% model).  ``pooled``: a judge
    error known from elsewhere (tests), used instead of too few own labels.  None when nothing can be said:
    no task, or no label in the row and no error given.
    """
    own = error_counts(evidence)
    columns = _Columns.of(evidence)
    use_pool = not own.enough and pooled is not None and pooled.n > own.n
    if columns.tasks == 0 or (own.n == 0 and not use_pool):
        return None
    setup = _Setup(columns, ErrorSource(pooled=pooled if use_pool else None), cost, settings)
    needs_error = None if own.enough or use_pool else _too_few(own)
    calibrated = _figures(setup, n_resamples, seed, level, prefer_ppi=own.n > 0, withhold=needs_error)
    human = _figures(_Setup(columns, ErrorSource(ignore_judge=True), cost, settings), n_resamples, seed, level,
                     prefer_ppi=True) if own.n else _undefined()
    problems = [needs_error] if needs_error else []
    if 0 < own.n < SMALL_SAMPLE:
        problems.append(f"only {own.n} human labels (fewer than {SMALL_SAMPLE}): the intervals are wide and "
                        "rest on few labels; label more of this model's candidates")
    disagreements = own.false_fail + own.false_pass
    few = 0 < own.n and disagreements < MIN_DISAGREEMENTS
    if few:
        problems.append(_few_disagreements(own, disagreements))
        if n_resamples and columns.tasks >= 2:
            calibrated["pass_rate"] = _widened(calibrated["pass_rate"], evidence, columns, level)
    caution = _caution(calibrated, own.n)
    if caution:
        problems.append(caution)
    return Calibration(calibrated, human, judge_error_summary(evidence, own, pooled if use_pool else None),
                       "prediction-powered" if own.n else "imputation", tuple(problems), disagreements, few)


def _few_disagreements(own: ErrorCounts, disagreements: int) -> str:
    if disagreements == 0:
        found = f"no disagreement between the judge and people in its {own.n} labels"
    else:
        found = f"only {disagreements} disagreements between the judge and people in its {own.n} labels"
    return (f"{found} (fewer than {MIN_DISAGREEMENTS}): the judge's error is barely measured, so the calibrated pass "
            "rate's interval is widened to the error the sample cannot rule out, and the other calibrated figures "
            "rest on it: label more of this model's candidates")


def _caution(calibrated: dict[str, CalibratedFigure], labels: int) -> str | None:
    """Mark the non-linear figures given on fewer than TRUSTED_LABELS labels (each entry's ``caution``): the
    problem line, or None when there is nothing to mark."""
    given = [key for key in CALIBRATED_KEYS if key != "pass_rate" and calibrated[key].get("value") is not None]
    if labels >= TRUSTED_LABELS or not given:
        return None
    reason = (f"the judge's error is measured on {labels} labels (fewer than {TRUSTED_LABELS}): with a critical "
              "judge these intervals covered about 90% of simulated runs with 30 labels and 92.5% with 50, not 95%")
    for key in given:
        calibrated[key] = calibrated[key] | {"caution": reason}
    return (f"{', '.join(given)}: {reason}; read them as indicative and label more of this model's candidates "
            "(the pass rate's interval does not need the judge's error)")


def _widened(found: CalibratedFigure, evidence: Sequence[TaskEvidence], columns: _Columns, level: float
             ) -> CalibratedFigure:
    """The pass rate's entry with its interval widened to the error bound (calibration_intervals.py)."""
    judged = columns.judged[columns.pattern_of].astype(float)
    shares = np.array([t.judge_pass + t.confusion[0] + t.confusion[2] for t in evidence], dtype=float) / judged
    weights = columns.weighted.sum(axis=0)
    total = float(weights.sum())
    labels = int(columns.confusion.sum())
    low, high = error_bound_interval(shares, int(judged.sum()), float(weights[1]) / total,
                                     float(weights[2]) / total, labels, level)
    known_low, known_high = found.get("low"), found.get("high")
    if known_low is not None:  # an interval has both bounds (calibration_intervals.entry)
        low, high = min(low, known_low), high if known_high is None else max(high, known_high)
    return found | {"low": max(0.0, low), "high": min(1.0, high), "interval_method": BOUND_METHOD, "widened": True}


def _too_few(own: ErrorCounts) -> str:
    return (f"needs at least {MIN_PER_CLASS} human PASS and {MIN_PER_CLASS} human FAIL labels of this model's own, "
            f"and {SMALL_SAMPLE} in all, to estimate the judge's error; the sample holds "
            f"{own.true_pass + own.false_fail} PASS and {own.false_pass + own.true_fail} FAIL (other models' judge "
            "error is not borrowed: it differs by model)")


def _figures(setup: _Setup, n_resamples: int, seed: int, level: float, *, prefer_ppi: bool,
             withhold: str | None = None) -> dict[str, CalibratedFigure]:
    """Each metric's entry.  ``withhold``: why the metrics needing the judge's error are not given (the pass
    rate, prediction-powered, needs none)."""
    tasks, labels = setup.columns.tasks, int(setup.columns.confusion.sum())
    point = _with_pass_rate(_replicates(setup, np.arange(tasks)[None, :], None)[0], prefer_ppi)
    if not n_resamples or tasks < 2:
        boot = jack = None
    else:
        rng = np.random.default_rng([seed, 0xCA11B])
        boot = _with_pass_rate(_replicates(setup, resample_index(tasks, n_resamples, seed), rng)[0], prefer_ppi)
        jack = _with_pass_rate(_replicates(setup, leave_one_out_index(tasks), None)[0], prefer_ppi)
    figures: dict[str, CalibratedFigure] = {}
    for key in CALIBRATED_KEYS:
        if withhold and not (key == "pass_rate" and prefer_ppi):
            figures[key] = withheld(withhold)
        else:
            figures[key] = _metric_entry(key, point, boot, jack, level, labels, setup,
                                         linear=key == "pass_rate" and prefer_ppi)
    return figures


def _metric_entry(key: str, point: dict[str, np.ndarray], boot: dict[str, np.ndarray] | None,
                  jack: dict[str, np.ndarray] | None, level: float, labels: int, setup: _Setup, *, linear: bool
                  ) -> CalibratedFigure:
    cap, tasks = setup.settings.retry_cap, setup.columns.tasks
    scale = "success_per_attempt" if key == "effective_cost" else key  # cost: bounded scale, inverted after
    if boot is None or jack is None or not math.isfinite(float(point[key][0])):  # both come, or neither
        return entry(point[key][0], None, level, None, key=key, retry_cap=cap)
    with np.errstate(invalid="ignore", over="ignore"):
        interval, method = interval_of(scale, float(point[scale][0]), boot[scale], jack[scale], level,
                                       tasks=tasks, linear=linear)
    if key != "effective_cost":
        return entry(point[key][0], clipped(interval, key, cap), level, method, key=key, retry_cap=cap)
    bounds, unbounded = cost_from_success_rate(interval, setup.cost + setup.settings.review_cost, cap)
    return entry(point[key][0], bounds, level, method, key=key, retry_cap=cap, high_unbounded=unbounded)


def _with_pass_rate(values: dict[str, np.ndarray], prefer_ppi: bool) -> dict[str, np.ndarray]:
    values = dict(values)
    values["pass_rate"] = values["pass_rate_ppi"] if prefer_ppi else values["pass_rate_model"]
    return values


def _undefined() -> dict[str, CalibratedFigure]:
    return {key: {"value": None, "low": None, "high": None} for key in CALIBRATED_KEYS}


__all__ = ["CALIBRATED_KEYS", "METHOD", "MIN_PER_CLASS", "Unit", "TaskEvidence", "ErrorCounts", "Calibration",
           "task_evidence", "error_counts", "calibrate", "DEFAULT_RETRY_CAP"]
