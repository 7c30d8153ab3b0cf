"""``--calibrate labels:PATH[,PATH...]``: every results row's figures corrected with a human sample.

The glue between the run and the pure statistics in analysis/calibration.py: the panel's files and the sampling
designs beside them (sample_design.py) are read once at configure time (a bad file is a usage error before
anything is paid for); at the end of the run each row's candidates are paired with the panel's majority where
the sample has one, each label weighed by its candidate's inclusion probability, and the row gains

    calibrated    {metric: {"value", "low", "high", "level", "target"}}   the judge's figures corrected with the
                  sample (or {"value": None, ..., "reason"}: too few labels of the model's own for that metric)
    human_sample  {metric: {"value", "low", "high", ...}}   the sample alone, the judge ignored
    calibrated_this_run  {"pass_rate": {...}}   what a full human review of this run would give
    judge_error   {"n_human", "sensitivity", "specificity", "pooled", "human_pass", "human_fail", ...}
    calibration   {"method", "design": "recorded" | "assumed-srs", "n_human", "note", "problems", ...}
    calibration_evidence   per-task counts, so that a later run can compare itself with this one (--baseline)

Which candidates count: a row's judged candidates (PASS, FAIL, or refused: a refusal is a FAIL to everyone and
needs no label).  With a design recorded for the row's model and split, only the labels of the candidates it
drew are used, and the inclusion probability is the labelled share of the stratum; without one, every label
of a judged candidate is used and the labels are taken as a simple random sample within the model and split
(``design: "assumed-srs"``, said in the note; flagged when the labelling rate differs between the judge's PASS
and FAIL).  A design stratified by the judge's verdict weighs each label by its verdict stratum.  A tied panel
gives no label.  A row whose calibration fails keeps its judge figures and names the problem: never an abort.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Sequence

from ..engine.records import FAIL, PASS, REFUSED, Record
from ..errors import ConfigError
from ..labels import Panel, PanelVerdict, read_panel
from ..sample_design import Design, designs_beside
from .results_model import Results, ResultsRow
from .tables import COMBINED

if TYPE_CHECKING:
    from ..analysis.calibration import Calibration
    from ..analysis.calibration_evidence import TaskEvidence, Unit
    from ..sample_design import Stratum
    from .results import Key

PREFIX = "labels:"


def parse_calibrate_option(value: str) -> list[Path]:
    """``labels:a.json,b.json`` or ``labels:judgements/public`` (a folder: its rater files and its design)."""
    paths = [p.strip() for p in value[len(PREFIX):].split(",")] if value.startswith(PREFIX) else []
    if not paths or not all(paths):
        raise ConfigError(f"--calibrate {value!r}: expected labels:PATH[,PATH...], the human sample's rater files "
                          "(or their folder, with the sample-design.json hypeedit-review wrote), e.g. "
                          "--calibrate labels:judgements/public")
    return [Path(p) for p in paths]


@dataclass
class HumanSample:
    """The panel's labels and the sampling designs that came with them."""

    paths: list[Path]
    panel: Panel
    designs: list[Design] = field(default_factory=list)

    @classmethod
    def from_option(cls, value: str | None, known_models: Iterable[str]) -> "HumanSample | None":
        if not value:
            return None
        paths = parse_calibrate_option(value)
        return cls(paths, read_panel(paths, known_models), designs_beside(paths))

    def design_for(self, model: str, split: str) -> tuple[tuple[Stratum, ...], Design | None]:
        """The recorded strata of this model and split (one per judge verdict when the sample was stratified by
        it), and their design; ((), None) when none was recorded."""
        for design in self.designs:
            strata = design.strata_of(model, split)
            if strata:
                return strata, design
        return (), None


# --------------------------------------------------------------------------- a row's units


@dataclass
class RowSample:
    """What a row's records and the human sample make: the units, and what the note should say."""

    units: list[Unit]
    judged: int = 0
    labelled: int = 0
    ties: int = 0
    outside_design: int = 0  # labels of candidates the design did not draw: not used
    after_design: int = 0  # judged candidates the design's population lacks (judged after it was drawn)
    designs: list[str] = field(default_factory=list)  # files of the designs used
    assumed: bool = False  # some stratum had no design: its labels taken as a simple random sample
    seeds: list[int] = field(default_factory=list)
    by_verdict: bool = False  # a recorded design stratified by the judge's verdict: weighted per verdict
    # judged and labelled candidates by the judge's verdict where no design was recorded (the rate check)
    unrecorded: dict[str | None, list[int]] = field(default_factory=lambda: {PASS: [0, 0], FAIL: [0, 0]})


def row_sample(records: Sequence[Record], sample: HumanSample, pooled_keys: bool) -> RowSample:
    """The calibration units of one row's records (one model; one split, or all of them for ``combined``)."""
    from ..analysis.calibration import Unit

    out = RowSample(units=[])
    for (model, split), members in _strata(records).items():
        labels = _stratum_labels(members, model, split, sample, out)
        judged = [r for r in members if r.outcome in (PASS, FAIL)]
        inclusion = _inclusions(judged, labels, sample.design_for(model, split)[0], out)
        out.judged, out.labelled = out.judged + len(judged), out.labelled + len(labels)
        for record in members:
            task = f"{record.split}/{record.task_id}" if pooled_keys else record.task_id
            judge_pass = None if record.outcome == REFUSED else record.outcome == PASS
            human = labels.get(record.key)
            out.units.append(Unit(task, record.repeat, judge_pass, human,
                                  inclusion[record.key] if human is not None else None))
    return out


def _inclusions(judged: list[Record], labels: dict[Key, bool], strata: Sequence[Stratum],
                out: RowSample) -> dict[Key, float]:
    """record key -> its inclusion probability: the labelled share of its cell.  A cell is the model and split,
    or, when the recorded design drew the judge's PASS and FAIL at different rates, the verdict's stratum."""
    verdict_strata = [s for s in strata if s.verdict]
    out.by_verdict = out.by_verdict or bool(verdict_strata)

    def cell(record: Record) -> str | None:
        if not verdict_strata:
            return ""
        position = (record.task_id, record.repeat)
        return next((s.verdict for s in verdict_strata if position in s.population), record.outcome)

    cells: dict[str | None, list[int]] = {}
    for record in judged:
        counts = cells.setdefault(cell(record), [0, 0])
        counts[0] += 1
        counts[1] += record.key in labels
        if not strata:
            tally = out.unrecorded[record.outcome]
            tally[0], tally[1] = tally[0] + 1, tally[1] + (record.key in labels)
    return {record.key: cells[cell(record)][1] / cells[cell(record)][0] for record in judged}


def _strata(records: Sequence[Record]) -> dict[tuple[str, str], list[Record]]:
    found: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        if record.outcome in (PASS, FAIL, REFUSED):
            found.setdefault((record.model, record.split), []).append(record)
    return found


def _stratum_labels(members: list[Record], model: str, split: str, sample: HumanSample,
                    out: RowSample) -> dict[Key, bool]:
    """record key -> the panel's majority (True = PASS) for the stratum's usable labels."""
    strata, design = sample.design_for(model, split)
    drawn = {p for s in strata for p in s.sample} if strata else None
    if not strata:
        out.assumed = True
    else:
        assert design is not None  # design_for gives strata only with their design
        out.designs.append(str(design.path or design.split))
        out.seeds.append(design.seed)
        population = {p for s in strata for p in s.population}
        out.after_design += sum(1 for r in members if r.outcome in (PASS, FAIL) and (r.task_id, r.repeat) not in population)
    labels: dict[Key, bool] = {}
    for record in members:
        verdict: PanelVerdict | None = sample.panel.verdict(record.task_id, record.model, record.repeat)
        if verdict is None or record.outcome not in (PASS, FAIL):
            continue
        if drawn is not None and (record.task_id, record.repeat) not in drawn:
            out.outside_design += 1
        elif verdict.tie:
            out.ties += 1
        else:
            labels[record.key] = verdict.passed
    return labels


# --------------------------------------------------------------------------- the rows


@dataclass(frozen=True)
class Settings:
    metrics: Any  # analysis.metrics.MetricSettings
    bootstrap: int = 1000
    seed: int = 0
    level: float = 0.95


def add_calibration(results: Results, records: Iterable[Record], sample: HumanSample, settings: Settings,
                    baseline: Mapping[str, Any] | None = None) -> Results:
    """Add the calibration keys to every row of ``results`` (in place); see the module docstring."""
    records = list(records)
    for row in results.get("rows") or []:
        try:
            _calibrate_row(row, [r for r in records if r.model == row["model"]
                                 and (row["split"] == COMBINED or r.split == row["split"])], sample, settings, baseline)
        except Exception as exc:  # noqa: BLE001 -- a calibration problem must never cost the run its results
            _failed_row(row, exc)
    results.setdefault("settings", {})["calibration"] = {"labels": [str(p) for p in sample.paths],
                                                         "raters": len(sample.panel.raters),
                                                         "designs": [str(d.path) for d in sample.designs]}
    return results


def _calibrate_row(row: ResultsRow, records: list[Record], sample: HumanSample, settings: Settings,
                   baseline: Mapping[str, Any] | None) -> None:
    from ..analysis.calibration import METHOD, calibrate, task_evidence
    from ..analysis.calibration_evidence import this_run_pass_rate
    from ..analysis.calibration_intervals import TARGET, TARGET_TEXT
    from ..analysis.enrich import row_price  # numpy: imported once the records are in, as the other analyses

    found = row_sample(records, sample, pooled_keys=row["split"] == COMBINED)
    evidence = task_evidence(found.units)
    cost = row_price(row)
    result = calibrate(evidence, cost, settings.metrics, n_resamples=settings.bootstrap, seed=settings.seed,
                       level=settings.level)
    design = "assumed-srs" if found.assumed or not found.designs else "recorded"
    problems = _problems(found, result, design)
    row["calibration"] = {"method": METHOD, "design": design, "n_human": found.labelled,
                          "note": _note(found, result, design), "problems": problems,
                          "level": settings.level, "target": TARGET, "target_text": TARGET_TEXT,
                          "sampled_share": found.labelled / found.judged if found.judged else None,
                          "design_seeds": sorted(set(found.seeds)), "stratified_by_verdict": found.by_verdict}
    row["calibration_evidence"] = {"tasks": [t.to_json() for t in evidence]}
    if result is None:
        return
    # how often the judge and people disagreed in the sample: below MIN_DISAGREEMENTS its error is barely measured
    row["calibration"].update({"disagreements": result.disagreements, "few_disagreements": result.few_disagreements})
    row["calibrated"], row["human_sample"], row["judge_error"] = result.calibrated, result.human_sample, result.judge_error
    this_run = this_run_pass_rate(found.units, settings.level)
    if this_run is not None:
        row["calibrated_this_run"] = {"pass_rate": this_run}
    if baseline is not None:
        row.update(calibrated_baseline(row, evidence, settings, baseline))


#: What a failed calibration takes out of its row (its ``calibration`` says why).
CALIBRATED_KEYS: tuple[Literal["calibrated", "human_sample", "judge_error", "calibration_evidence",
                               "calibrated_this_run"], ...] = (
    "calibrated", "human_sample", "judge_error", "calibration_evidence", "calibrated_this_run")


def _failed_row(row: ResultsRow, exc: Exception) -> None:
    """The row keeps its judge figures; the calibration says what went wrong instead of aborting the run."""
    for key in CALIBRATED_KEYS:
        row.pop(key, None)
    problem = (f"calibration failed ({type(exc).__name__}: {exc}); the judge's figures stand alone for this row: "
               "please report it with the labels and results files")
    info = row.setdefault("calibration", {})
    info["problems"] = [*info.get("problems", []), problem]
    info["note"] = problem


def _problems(found: RowSample, result: Calibration | None, design: str) -> list[str]:
    """What a reader of the calibrated figures must know first: each is also printed."""
    from ..analysis.calibration_evidence import RATE_CHECK_ALPHA, labelling_rates_differ

    problems = []
    if result is None:
        problems.append("no human label of this model's own: no calibrated figures (another model's judge error "
                        "is not borrowed: it differs by model); label some of its candidates")
    else:
        problems += list(result.problems)
    (judged_pass, labelled_pass), (judged_fail, labelled_fail) = found.unrecorded[PASS], found.unrecorded[FAIL]
    flagged, p_value = labelling_rates_differ(labelled_pass, judged_pass, labelled_fail, judged_fail)
    if design == "assumed-srs" and flagged:
        problems.append(f"the labels are not a simple random sample: {labelled_pass} of {judged_pass} judge PASS "
                        f"but {labelled_fail} of {judged_fail} judge FAIL were labelled (chi-square p = {p_value:.2g} "
                        f"< {RATE_CHECK_ALPHA}); without the sampling design the calibrated figures are biased: "
                        "draw the sample with hypeedit-review --sample, which records it")
    return problems


def _note(found: RowSample, result: Calibration | None, design: str) -> str:
    share = f"{100 * found.labelled / found.judged:.1f}%" if found.judged else "n/a"
    parts = [f"{found.labelled} of {found.judged} judged candidates labelled ({share})"]
    if design == "recorded":
        parts.append(f"sample drawn as recorded in {', '.join(sorted(set(found.designs)))}"
                     + (", stratified by the judge's verdict (each label weighted by its stratum)" if found.by_verdict else ""))
    else:
        parts.append("no sampling design recorded: the labels are taken as a simple random sample within each "
                     "model and split")
    if found.ties:
        parts.append(f"{found.ties} tied panels left out")
    if found.outside_design:
        parts.append(f"{found.outside_design} labels of candidates the design did not draw left out")
    if found.after_design:
        parts.append(f"{found.after_design} candidates judged after the sample was drawn are counted in its strata")
    if result is None:
        parts.append("no label of this model's own: not calibrated")
    else:
        parts.append("judge error estimated from this row's own labels")
    return "; ".join(parts)


# --------------------------------------------------------------------------- baseline


def calibrated_baseline(row: Mapping[str, Any], evidence: list[TaskEvidence], settings: Settings, baseline: Mapping[str, Any]) -> ResultsRow:
    """The paired comparison of calibrated figures with the baseline's row, when it was calibrated too."""
    from ..analysis.calibration import TaskEvidence
    from ..analysis.calibration_paired import paired_calibrated
    from ..analysis.enrich import baseline_row, marked_degenerate, row_price

    old = baseline_row(row, baseline)
    if old is None or not (old.get("calibration_evidence") or {}).get("tasks"):
        return {"calibrated_baseline_error": "the baseline has no calibrated row to compare with (run it with "
                                             "--calibrate on a sample drawn with the same design)"}
    try:
        before = [TaskEvidence.from_json(t) for t in old["calibration_evidence"]["tasks"]]
        comparison = paired_calibrated(evidence, before, row_price(row), row_price(old), settings.metrics,
                                       n_resamples=settings.bootstrap or 1000, seed=settings.seed, level=settings.level)
    except (ValueError, KeyError, TypeError) as exc:
        return {"calibrated_baseline_error": f"the baseline's calibration evidence cannot be used ({exc})"}
    # the same rule as the judge's own baseline comparison (analysis/enrich.py): a zero-width interval is none
    return {"calibrated_baseline": marked_degenerate(comparison), "calibrated_baseline_note": _same_design(row, old)}


def _same_design(row: Mapping[str, Any], old: Mapping[str, Any]) -> str:
    now, before = row.get("calibration") or {}, old.get("calibration") or {}
    if now.get("design") == before.get("design") == "recorded" and now.get("design_seeds") == before.get("design_seeds"):
        return "both releases' human samples follow the same recorded design (same seed, so the same positions)"
    return (f"the releases' human samples follow different designs ({before.get('design')} seed "
            f"{before.get('design_seeds')} before, {now.get('design')} seed {now.get('design_seeds')} now): draw both "
            "with the same --sample-seed and share so that the difference is not partly the samples'")


# --------------------------------------------------------------------------- record.human


def human_of(panel: Panel | None, record: Record) -> dict[str, Any] | None:
    """A record's ``human`` field from a panel: None when the panel did not label it."""
    verdict = panel.verdict(record.task_id, record.model, record.repeat) if panel is not None else None
    return verdict.human() if verdict is not None else None


# --------------------------------------------------------------------------- terminal


def terminal_lines(results: Mapping[str, Any], every_interval: bool = True) -> list[str]:
    """Per calibrated row: the judge's error and the sample, then its calibrated figures with their intervals
    (the pass rate's alone unless ``every_interval``: -v, as for the judge's own intervals)."""
    from ..analysis.gates import METRIC_KINDS, format_value
    from .tables import COLUMNS, metric_labels

    shown = [key for key, _, _ in COLUMNS][:None if every_interval else 1]  # the table's metrics, pass rate first
    lines = []
    for row in results.get("rows") or []:
        info, error = row.get("calibration"), row.get("judge_error")
        if not info:
            continue
        where = f"{row['model']} ({row['split']})"
        if error:
            lines.append(f"{where}: judge {_measured('sensitivity', error, 'human_pass', 'PASS')}, "
                         f"{_measured('specificity', error, 'human_fail', 'FAIL')}; {info['note']}")
        else:
            lines.append(f"{where}: {info['note']}")
        lines += [f"  ! {problem}" for problem in info.get("problems") or ()]
        cells = []
        labels, plain = metric_labels(row.get("repeats")), metric_labels(None)
        for key in shown:
            # pass_at_10 at 2 repeats is a Pass@2: named so, as in the table and the judge's interval lines
            name = f"{key} ({labels[key]})" if key in labels and labels[key] != plain[key] else key
            entry = (row.get("calibrated") or {}).get(key) or {}
            kind = METRIC_KINDS[key]
            high = "unbounded" if entry.get("high_unbounded") else format_value(entry.get("high"), kind)
            ci = f" [{format_value(entry['low'], kind)}, {high}]" if entry.get("low") is not None else ""
            ci += " (widened: few disagreements)" if entry.get("widened") and ci else ""
            ci += " (indicative: see above)" if entry.get("caution") and ci else ""
            cells.append(f"{name} {format_value(entry.get('value'), kind)}{ci}" if entry.get("value") is not None
                         else f"{name} n/a" + (" (too few labels: see above)" if entry.get("reason") else ""))
        if row.get("calibrated"):
            level = f"{100 * info['level']:g}% intervals" if info.get("level") else "intervals"
            lines.append(f"  calibrated ({level} for the population of tasks): " + "; ".join(cells))
        this_run = (row.get("calibrated_this_run") or {}).get("pass_rate")
        if this_run and this_run.get("low") is not None:
            lines.append(f"  this run, all human (what a full review of these candidates would give): pass_rate "
                         f"{format_value(this_run['value'], 'percent')} [{format_value(this_run['low'], 'percent')}, "
                         f"{format_value(this_run['high'], 'percent')}]"
                         + (" (widened: few disagreements)" if this_run.get("widened") else ""))
        lines += _baseline_lines(row)
    return lines


def _baseline_lines(row: Mapping[str, Any]) -> list[str]:
    from ..analysis.gates import METRIC_KINDS, format_value

    if row.get("calibrated_baseline_error"):
        return [f"  calibrated vs baseline: {row['calibrated_baseline_error']}"]
    lines = []
    for key, entry in (row.get("calibrated_baseline") or {}).items():
        if key not in METRIC_KINDS or entry.get("difference") is None or key not in ("pass_rate", "pass_at_4", "effective_cost"):
            continue
        kind = METRIC_KINDS[key]
        ci = f" [{format_value(entry['low'], kind)}, {format_value(entry['high'], kind)}]" if entry.get("low") is not None else ""
        ci = ci or (" (no interval: every shared task changed by the same amount)" if entry.get("degenerate") else "")
        lines.append(f"  calibrated vs baseline: {key} {format_value(entry['current'], kind)} vs "
                     f"{format_value(entry['baseline'], kind)}, difference {format_value(entry['difference'], kind)}{ci}")
    if lines and row.get("calibrated_baseline_note"):
        lines.append(f"  ({row['calibrated_baseline_note']})")
    return lines


def stability_lines(results: Mapping[str, Any]) -> list[str]:
    """One line per row whose candidates were re-judged, with the flip rate's 95% (Wilson) interval."""
    from ..analysis.agreement import Z_95

    lines = []
    for row in results.get("rows") or []:
        found = row.get("judge_stability")
        if not found or row.get("split") == COMBINED:
            continue
        n, rate = found["rejudgements"], found["flip_rate"]
        centre = (rate + Z_95**2 / (2 * n)) / (1 + Z_95**2 / n)
        half = Z_95 / (1 + Z_95**2 / n) * (rate * (1 - rate) / n + Z_95**2 / (4 * n * n)) ** 0.5
        lines.append(f"{row['model']} ({row['split']}): {found['flips']} of {n} re-judgements flipped the verdict "
                     f"({100 * rate:.1f}%, 95% CI {100 * max(0.0, centre - half):.1f}-{100 * min(1.0, centre + half):.1f}%) "
                     f"on {found['candidates']} candidates asked {found['k']} more times (${found['cost']:.2f})")
    if lines:
        lines.append("a verdict that flips is noise every metric carries; the intervals over tasks do not show it")
    return lines


def _measured(name: str, error: Mapping[str, Any], count_key: str, kind: str) -> str:
    """"sensitivity 0.93 [0.80, 0.98] from 14 human PASS": a figure measured on few labels shows how few."""
    value, interval, count = error.get(name), error.get(f"{name}_interval"), error.get(count_key)
    if not isinstance(value, (int, float)):
        return f"{name} n/a (no human {kind} label)"
    bounds = f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else ""
    source = f" from {count} human {kind}" if count is not None else ""
    return f"{name} {value:.2f}{bounds}{source}{' (pooled)' if error.get('pooled') else ''}"
