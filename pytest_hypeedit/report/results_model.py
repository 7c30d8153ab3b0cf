"""The results JSON as a typed model: what ``build_results`` returns, what every analysis adds to, what is written.

Its contract is docs/reference/results.md (tests/report/test_results_model.py keeps the two in step: every key
of ``Results`` and ``ResultsRow`` is documented there, and every documented field is a key here).  The model is
``TypedDict``s, so the object is the dict ``json.dumps`` writes, key for key and in the order it was filled: typing
it changes nothing a user reads.  Every key but the few a run always writes is optional (``total=False``): the
analyses add theirs when their option is on, and a later version adds keys (the contract only ever adds).

Every sub-object is typed field by field as its writer fills it (``settings``, ``serving``, ``judge_controls``,
``sequential``, ``agreement``, ``pairwise``, the baseline comparison, the calibrated figures...), and the writers
return these types, so that a key renamed in a writer fails the type check.  Where a writer fills keys by name
from a tuple (``compute_metrics``, the leaderboard's pooled row) the type checker cannot see them: the same test
walks what the analyses, two runs through the plugin and a leaderboard merge write against these types
(tests/support/results_keys.py), naming any key the model does not declare, and checks that the page names every
key of each sub-object where it describes its field.  The private ``_`` classes are the required keys of the
public class built on them (``total=False`` adds the optional ones: Python 3.10 has no ``NotRequired``).

A results file read from outside (``--baseline``, ``hypeedit-leaderboard``) is untrusted: a ``Mapping[str,
Any]`` until report/results_shape.py's ``check_results_shape`` has checked it, then taken as ``Results`` in one
place (report/results_files.py's ``load_results``).  Its fields were checked only as far as its readers need
(a newer version's additions pass as they are): the model says what a run writes, not what a file from outside
is proved to hold beyond that.  A leaderboard merge of such files is ``Results`` too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypedDict

if TYPE_CHECKING:
    from ..judges.versions import JudgeVersions
    from ..labels import VoteEntry

#: A figure: a count, a fraction or an amount; None where it is undefined (no success: no effective cost).
Figure = int | float | None
#: An interval ``[low, high]`` (a row's ``intervals``).
Bounds = list[float]
#: A row's metrics, by key: what a step that sets or clears them by name may index a row with.
RowMetric = Literal["pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "effective_cost",
                    "first_attempt_pass_rate", "hype_gap", "pass_at_4_unbiased", "pass_at_10_unbiased",
                    "effective_cost_list"]


class _Statistics(TypedDict):
    bootstrap_resamples: int
    bootstrap_seed: int
    level: float
    interval: str
    target: str


class StatisticsSettings(_Statistics, total=False):
    """``settings.statistics``: how the intervals were made, and the baseline file when one was given."""

    baseline: str


class SplitFile(TypedDict):
    """One of ``settings.splits``: where the split's tasks were read, and their digest when the manifest gives it."""

    location: str
    sha256: str | None


class CalibrationSettings(TypedDict):
    """``settings.calibration`` (``--calibrate``): the labels files, the raters and the sample designs read."""

    labels: list[str]
    raters: int
    designs: list[str]


class RunSettings(TypedDict, total=False):
    """The top level's ``settings``: how the run was set up (config.py's ``settings_json``), with ``statistics``
    and ``calibration`` added by their analyses.  Every key is optional: a leaderboard merge leaves out the
    ``outputs`` and ``review_cost`` its files do not share, and writes ``{}`` with no results file."""

    repeats: int
    retry_cap: int
    review_cost: float
    review_seconds: float
    review_rate: float
    judge: str
    judge_tier: str
    budget: float | None
    splits: dict[str, SplitFile]
    outputs: str
    statistics: StatisticsSettings
    calibration: CalibrationSettings
    tier: str  # read when present (standard otherwise); this version does not write it


class IncompleteReason(TypedDict):
    """One of ``coverage.reasons``: why the run is not complete (top level, ``coverage``)."""

    reason: str
    count: int | None
    detail: str


class CoverageSummary(TypedDict, total=False):
    """The top level's ``coverage``: what the run covered (top level, ``coverage``; "When a run does not
    finish")."""

    planned: int
    selected: int
    deselected: int
    recorded: int
    without_record: int
    bought_unreported: int
    subset: bool
    stopped: str | None
    reasons: list[IncompleteReason]


class RowRelease(TypedDict):
    """A row's ``release``: what answered the model's requests (a row, ``release``; "Releases")."""

    id: str
    label: str | None
    route: str
    provider_model: str


class SignalsSummary(TypedDict):
    """A row's ``signals_summary``: the pixel diagnostics over its candidates (a row, ``signals_summary``)."""

    measured: int
    unmeasured: int
    size_mismatch: int
    unchanged: int
    unchanged_pass: int
    ssim_mean: float | None
    delta_e_mean: float | None


class SpentBreakdown(TypedDict, total=False):
    """A row's ``spent_breakdown``: ``spent`` in its parts, USD (a row, ``spent_breakdown``)."""

    generation: float
    judge: float
    resubmitted: float
    possibly_paid: float
    unreported: float  # only when candidates were bought ahead and not reported


class TaskTallyEntry(TypedDict):
    """One of a row's ``task_tallies``: what a later run's ``--baseline`` pairs on (a row, ``task_tallies``)."""

    task_id: str
    passes: int
    judged: int
    first_passed: bool | None
    task_types: list[str]


class SensitivityEntry(TypedDict):
    """One of a row's ``sensitivity``: the effective cost at one review time and retry cap."""

    review_seconds: float
    retry_cap: int
    effective_cost: Figure
    expected_attempts: Figure
    pass_at_cap: Figure


class _Difference(TypedDict):
    current: float | None
    baseline: float | None
    difference: float | None
    low: float | None
    high: float | None
    tasks: int


class PairedDifference(_Difference, total=False):
    """A metric of a row's ``baseline`` or ``calibrated_baseline``: current minus baseline on the shared tasks,
    its interval ``low``/``high``, null with ``degenerate`` saying why when it has no width."""

    degenerate: str


class BaselineTask(TypedDict):
    """One of a row's ``baseline_tasks``: a task judged in both runs, its passes now and before."""

    task_id: str
    passes: int
    judged: int
    baseline_passes: int
    baseline_judged: int
    difference: float


class JudgeStability(TypedDict):
    """A row's ``judge_stability`` (``--judge-stability``)."""

    candidates: int
    k: int
    flips: int
    flip_rate: float
    rejudgements: int
    cost: float


class CalibratedFigure(TypedDict, total=False):
    """A metric of a row's ``calibrated``, ``human_sample`` or ``calibrated_this_run``: its value and interval,
    or no figure and the ``reason``."""

    value: float | None
    low: float | None
    high: float | None
    level: float
    target: str
    interval_method: str
    high_unbounded: bool
    widened: bool
    caution: str
    reason: str


class JudgeError(TypedDict):
    """A row's ``judge_error`` (``--calibrate``): the judge's sensitivity and specificity as measured."""

    n_human: int
    sensitivity: float | None
    specificity: float | None
    pooled: bool
    human_pass: int
    human_fail: int
    sensitivity_interval: list[float] | None
    specificity_interval: list[float] | None


class RowCalibration(TypedDict, total=False):
    """A row's ``calibration`` (``--calibrate``): how its calibrated figures were made and what to know first;
    only ``problems`` and ``note`` when the calibration failed before it began."""

    method: str
    design: str
    n_human: int
    note: str
    problems: list[str]
    level: float
    target: str
    target_text: str
    sampled_share: float | None
    design_seeds: list[int]
    stratified_by_verdict: bool
    disagreements: int
    few_disagreements: bool


class TaskEvidenceEntry(TypedDict):
    """One task of a row's ``calibration_evidence``: the counts a later run's ``--baseline`` pairs on."""

    task_id: str
    judge_pass: int
    judge_fail: int
    confusion: list[int]
    refused: int
    first: int
    ppi: float
    ht: float
    weighted: list[float]


class CalibrationEvidence(TypedDict):
    """A row's ``calibration_evidence``."""

    tasks: list[TaskEvidenceEntry]


class ResultsRow(TypedDict, total=False):
    """One row: a model on a split, or its ``combined`` row (the section "A row").  The metrics are None where
    undefined, and after a ``--sequential`` stop where not measured (``not_measured``)."""

    model: str
    split: str
    release: RowRelease
    tasks: int
    candidates: int
    judged: int
    errors: int
    refusals: int
    skipped: int
    complete: bool
    planned: int
    selected: int
    without_record: int
    bought_unreported: int
    bought_unreported_cost: float
    disk_full: int
    disk_full_skipped: int
    implausible_amounts: int
    unknown_tiers: int
    cost_per_candidate: float
    cost_per_candidate_paid: float
    pass_rate: Figure
    pass_at_4: Figure
    pass_at_10: Figure
    expected_attempts: Figure
    effective_cost: Figure
    first_attempt_pass_rate: Figure
    hype_gap: Figure
    pass_at_4_unbiased: Figure
    pass_at_10_unbiased: Figure
    pass_at_cap: Figure  # with a retry cap other than 4
    repeats: int | None
    metric_labels: dict[str, str]
    effective_cost_basis: str
    effective_cost_list: Figure
    not_measured: dict[RowMetric, str]
    by_task_type: dict[str, dict[str, Figure]]
    spent: float
    spent_breakdown: SpentBreakdown
    spent_this_run: float
    spend_by_tier: dict[str, dict[str, float]]
    spend_by_kind: dict[str, float]
    resubmitted: int
    rejudged_stale: int
    rejudged_stale_reasons: dict[str, int]
    possibly_paid: int
    possibly_paid_cost: float
    possibly_paid_open: int
    possibly_paid_held: int
    signals_summary: SignalsSummary
    task_tallies: list[TaskTallyEntry]
    intervals: dict[str, Bounds]
    interval_notes: dict[str, str]
    sensitivity: list[SensitivityEntry]
    baseline: dict[str, PairedDifference]
    baseline_model: str | None
    baseline_tasks: list[BaselineTask]
    baseline_release: RowRelease | None
    baseline_error: str
    judge_stability: JudgeStability
    calibrated: dict[str, CalibratedFigure]
    calibrated_this_run: dict[str, CalibratedFigure]
    human_sample: dict[str, CalibratedFigure]
    judge_error: JudgeError
    calibration: RowCalibration
    calibration_evidence: CalibrationEvidence
    calibrated_baseline: dict[str, PairedDifference | CalibratedFigure]  # CalibratedFigure: not made, and why
    calibrated_baseline_note: str
    calibrated_baseline_error: str
    incomplete: bool  # a leaderboard merge's row of an incomplete run (--allow-incomplete)


class _Tested(TypedDict):
    split: str
    metric: str
    difference: float
    tasks: int
    interval: list[float | None]
    level: float
    p_adjusted: float
    significant: bool


class _Pair(_Tested):
    a: str
    b: str


class PairwiseEntry(_Pair, total=False):
    """One of ``pairwise``: two models of a split on one metric, ``difference`` = a - b over the tasks both judged,
    Holm-adjusted over the split's comparisons; ``degenerate`` when its interval is one value."""

    degenerate: str


class PairwiseSkipped(TypedDict):
    """One of ``pairwise_skipped`` (a leaderboard merge): a row left out of ``pairwise``, and why."""

    split: str
    model: str
    reason: str


class CombinedLeftOut(TypedDict):
    """One of ``combined_left_out`` (a leaderboard merge): a combined row not pooled, and why."""

    model: str
    reason: str


class _Routes(_Pair):
    model: str
    route_a: str
    route_b: str


class RouteComparison(_Routes, total=False):
    """One of ``serving.routes``: two routes of one model on a split, read as ``pairwise``."""

    degenerate: str


class RunJudge(TypedDict):
    """One side of a ``serving.runs`` entry's ``judges``: the judge its settings name and the versions that
    answered."""

    judge: str | None
    versions: list[str]


class _Runs(_Tested):
    model: str
    run_a: str
    run_b: str
    judged_a: int
    judged_b: int


class RunComparison(_Runs, total=False):
    """One of ``serving.runs``: one model on one split in two runs, PASS rate a - b over the tasks both judged;
    ``sentence`` when significant.  ``judges``, ``judge_changed`` and ``releases`` are always there (filled after
    ``degenerate``, whose place in the object they follow)."""

    degenerate: str
    judges: dict[str, RunJudge]
    judge_changed: bool
    releases: dict[str, str | None]
    sentence: str


#: One third of a ``serving.drift`` entry (``from`` is a Python keyword: hence this spelling).
DriftThird = TypedDict("DriftThird", {"third": str, "candidates": int, "pass_rate": float, "from": float,
                                      "to": float})


class _Drift(TypedDict):
    model: str
    by: str
    candidates: int
    tasks: int
    limits: str


class DriftEntry(_Drift, total=False):
    """One of ``serving.drift``: a model's PASS rate against purchase time or latency; ``note`` when not
    tested, the thirds and the test otherwise."""

    note: str
    thirds: list[DriftThird]
    difference: float
    interval: list[float | None]
    p_value: float
    permutations: int
    p_adjusted: float
    significant: bool
    sentence: str


class BoughtSpan(TypedDict):
    """``serving.bought``: when the run's judged candidates were bought (UTC, ISO)."""

    first: str
    last: str


class Serving(TypedDict, total=False):
    """The top level's ``serving`` (the section "Serving"); a leaderboard merge writes ``routes``, ``runs`` and
    ``limits`` only."""

    routes: list[RouteComparison]
    drift: list[DriftEntry]
    runs: list[RunComparison]
    bought: BoughtSpan | None
    limits: dict[str, str]


class ControlShare(TypedDict):
    """Wrong verdicts of judged controls, their rate and its Clopper-Pearson interval (null when none judged)."""

    judged: int
    wrong: int
    rate: float | None
    interval: list[float] | None


class WrongControl(TypedDict):
    """One of a control kind's ``wrong_controls``."""

    task: str
    image: str
    reasoning: str
    version: str | None


class ControlKind(ControlShare):
    """``judge_controls.judges.<id>.kinds.<kind>``."""

    right: str
    errors: int
    wrong_tasks: list[str]
    wrong_controls: list[WrongControl]


class JudgeOnControls(TypedDict):
    """``judge_controls.judges.<id>``: one judge on the controls."""

    versions: dict[str, int]
    kinds: dict[str, ControlKind]
    false_pass: ControlShare | None
    false_fail: ControlShare | None
    errors: int
    first_error: str | None


class _KindDrift(TypedDict):
    current: list[int]
    baseline: list[int]
    p_value: float


class KindDrift(_KindDrift, total=False):
    """A kind of ``judge_controls.drift.<id>.kinds``: both runs' ``[wrong, judged]`` and Fisher's test."""

    significant: bool


class _JudgeDrift(TypedDict):
    drifted: bool
    compared: bool
    reasons: list[str]


class JudgeDrift(_JudgeDrift, total=False):
    """``judge_controls.drift.<id>``: whether the judge changed since the baseline; only the first three keys when
    the baseline has no controls of it."""

    kinds: dict[str, KindDrift]
    versions: list[str]
    baseline_versions: list[str]


class JudgeControls(TypedDict, total=False):
    """The top level's ``judge_controls`` (the section "Judge controls"): ``judges`` only when the run has no
    judge to run them with."""

    method: str
    limits: str
    judges: dict[str, JudgeOnControls]
    problem: str
    drift: dict[str, JudgeDrift]


class _GateDecision(TypedDict):
    gate: str
    model: str | None
    split: str | None
    decided: bool
    decision: str | None


class GateDecision(_GateDecision, total=False):
    """One of ``sequential.gates``: a gate on a row, decided early or not; ``not_decidable`` instead of
    ``after``/``planned`` for a gate the test cannot decide."""

    after: int | None
    planned: int
    not_decidable: str


class BuyingOrder(TypedDict):
    """One of ``sequential.orders``: the file that keeps a model's buying order, and whether this run drew it."""

    model: str
    file: str
    drawn: bool


class Sequential(TypedDict):
    """The top level's ``sequential`` (``--sequential``)."""

    candidates_bought: int
    candidates_planned: int
    alpha: float
    alpha_per_gate: float
    method: str
    stopped: bool
    saved_candidates: int
    saved_usd: float
    gates: list[GateDecision]
    orders: list[BuyingOrder]


class JudgeAgreement(TypedDict):
    """One of ``agreement.by_task_type`` (``all`` and each task type): the judge against the panel."""

    n: int
    agreement: float | None
    kappa: float | None
    kappa_ci95: list[float] | None
    confusion: dict[str, int]
    false_fail_rate: float | None
    false_pass_rate: float | None


class RaterAgreement(TypedDict):
    """``agreement.between_raters``: the raters with each other."""

    raters: int
    units: int
    krippendorff_alpha: float | None
    fleiss_kappa: float | None
    fleiss_units: int


class SignalCounts(TypedDict):
    """One cell of ``agreement.signals``: the pixel signals of its candidates."""

    n: int
    measured: int
    unchanged: int
    size_mismatch: int
    aspect_mismatch: int
    ssim_mean: float | None
    delta_e_mean: float | None


class SignalsByCell(TypedDict):
    """``agreement.signals``: the pixel signals in each cell of judge against panel."""

    both_pass: SignalCounts
    false_pass: SignalCounts
    false_fail: SignalCounts
    both_fail: SignalCounts
    disagreements: int
    judge_pass_unchanged: int


class DisagreementNote(TypedDict):
    """One of ``agreement.notes``: a candidate judge and panel disagree on, with the raters' notes."""

    split: str
    model: str
    task_id: str
    repeat: int
    judge: str
    votes: list[VoteEntry]


class AgreementPanel(TypedDict):
    """``agreement.panel``: the human panel's raters and the candidates they labelled."""

    raters: int
    labelled: int
    rater_counts: dict[str, dict[str, int]]


class Agreement(TypedDict):
    """The top level's ``agreement`` (``--agreement``): the judge against the human panel."""

    judge: str
    labels: list[str]
    kappa_method: str
    panel: AgreementPanel
    compared: int
    judged_not_labelled: int
    by_task_type: dict[str, JudgeAgreement]
    between_raters: RaterAgreement
    even_votes: int
    warnings: list[str]
    signals: SignalsByCell
    notes: list[DisagreementNote]


class Results(TypedDict, total=False):
    """The results file's top level (the section "The results file: top level").  A run always writes
    ``schema``, ``settings``, ``complete`` and ``rows``; the rest when their option or their data is there
    (``combined_left_out``, ``pairwise_skipped``, ``runs`` and ``generated_at`` only in a leaderboard merge:
    ``hypeedit-leaderboard`` merges results files into this same model, and writes it)."""

    schema: str
    settings: RunSettings
    complete: bool
    coverage: CoverageSummary
    rows: list[ResultsRow]
    judge_versions: dict[str, JudgeVersions]
    judge_controls: JudgeControls
    combined_left_out: list[CombinedLeftOut]
    agreement: Agreement
    serving: Serving
    pairwise: list[PairwiseEntry]
    pairwise_skipped: list[PairwiseSkipped]
    sequential: Sequential
    runs: list[str]
    generated_at: str


class Baseline(Results, total=False):
    """The results given as ``--baseline``, as read (report/results_files.py's ``load_results``), with the file
    they came from (``source``: in memory only, never written)."""

    source: str
