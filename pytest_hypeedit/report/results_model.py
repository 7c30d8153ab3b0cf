"""The results JSON as a typed model: what ``build_results`` returns, what every analysis adds to, what is written.

Its contract is docs/reference/results.md (tests/report/test_results_model.py keeps the two in step: every key
of ``Results`` and ``ResultsRow`` is documented there, and every documented field is a key here).  The model is
``TypedDict``s, so the object is the dict ``json.dumps`` writes, key for key and in the order it was filled: typing
it changes nothing a user reads.  Every key but the few a run always writes is optional (``total=False``): the
analyses add theirs when their option is on, and a later version adds keys (the contract only ever adds).

Sub-objects that several modules read or write by key have a type of their own; those one analysis builds and
only readers look into (``serving``, ``judge_controls``, ``agreement``, ``sequential``, the calibrated figures)
are plain JSON objects here, described by their section of the reference page.

A results file read from outside (``--baseline``, ``hypeedit-leaderboard``) is untrusted: a ``Mapping[str,
Any]`` until report/results_shape.py's ``check_results_shape`` has checked it (report/results_files.py), then it
may be taken as ``Results``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from ..judges.versions import JudgeVersions

#: A JSON object the model does not type further (one analysis writes it; its section of the page describes it).
JsonObject = dict[str, Any]
#: A figure: a count, a fraction or an amount; None where it is undefined (no success: no effective cost).
Figure = int | float | None
#: An interval ``[low, high]`` (a row's ``intervals``).
Bounds = list[float]
#: A row's metrics, by key: what a step that sets or clears them by name may index a row with.
RowMetric = Literal["pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "effective_cost",
                    "first_attempt_pass_rate", "hype_gap", "pass_at_4_unbiased", "pass_at_10_unbiased",
                    "effective_cost_list"]


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
    sensitivity: list[JsonObject]
    baseline: dict[str, JsonObject]
    baseline_model: str | None
    baseline_tasks: list[JsonObject]
    baseline_release: JsonObject | None
    baseline_error: str
    judge_stability: JsonObject
    calibrated: dict[str, JsonObject]
    calibrated_this_run: dict[str, JsonObject]
    human_sample: dict[str, JsonObject]
    judge_error: JsonObject
    calibration: JsonObject
    calibration_evidence: JsonObject
    calibrated_baseline: dict[str, JsonObject]
    calibrated_baseline_note: str
    calibrated_baseline_error: str


class Results(TypedDict, total=False):
    """The results file's top level (the section "The results file: top level").  A run always writes
    ``schema``, ``settings``, ``complete`` and ``rows``; the rest when their option or their data is there
    (``combined_left_out`` and ``pairwise_skipped`` only in a leaderboard merge)."""

    schema: str
    settings: JsonObject
    complete: bool
    coverage: CoverageSummary
    rows: list[ResultsRow]
    judge_versions: dict[str, JudgeVersions]
    judge_controls: JsonObject
    combined_left_out: list[JsonObject]
    agreement: JsonObject
    serving: JsonObject
    pairwise: list[JsonObject]
    pairwise_skipped: list[JsonObject]
    sequential: JsonObject
