"""``--calibrate labels:PATH[,PATH...]``: every results row's figures corrected with a human sample.

The glue between the run and the pure statistics in analysis/calibration.py: the panel's files and the sampling
designs beside them (review/design.py) are read once at configure time (a bad file is a usage error before
anything is paid for); at the end of the run each row's candidates are paired with the panel's majority where
the sample has one, each label weighed by its candidate's inclusion probability, and the row gains

    calibrated    {metric: {"value", "low", "high"}}   the judge's figures corrected with the sample
    human_sample  {metric: {"value", "low", "high"}}   the sample alone, the judge ignored
    judge_error   {"n_human", "sensitivity", "specificity", "pooled"}
    calibration   {"method", "design": "recorded" | "assumed-srs", "n_human", "note", ...}
    calibration_evidence   per-task counts, so that a later run can compare itself with this one (--baseline)

Which candidates count: a row's judged candidates (PASS, FAIL, or refused: a refusal is a FAIL to everyone and
needs no label).  With a design recorded for the row's model and split, only the labels of the candidates it
drew are used, and the inclusion probability is the labelled share of the stratum; without one, every label
of a judged candidate is used and the labels are taken as a simple random sample within the model and split
(``design: "assumed-srs"``, said in the note).  A tied panel gives no label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..engine.records import FAIL, PASS, REFUSED, Record
from ..errors import ConfigError
from ..labels import Panel, PanelVerdict, read_panel
from ..review.design import Design, designs_beside
from .tables import COMBINED

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

    def design_for(self, model: str, split: str):
        """The recorded stratum of this model and split, and its design; (None, None) when none was recorded."""
        for design in self.designs:
            stratum = design.stratum(model, split)
            if stratum is not None:
                return stratum, design
        return None, None


# --------------------------------------------------------------------------- a row's units


@dataclass
class RowSample:
    """What a row's records and the human sample make: the units, and what the note should say."""

    units: list
    judged: int = 0
    labelled: int = 0
    ties: int = 0
    outside_design: int = 0  # labels of candidates the design did not draw: not used
    after_design: int = 0  # judged candidates the design's population lacks (judged after it was drawn)
    designs: list[str] = field(default_factory=list)  # files of the designs used
    assumed: bool = False  # some stratum had no design: its labels taken as a simple random sample
    seeds: list[int] = field(default_factory=list)


def row_sample(records: Sequence[Record], sample: HumanSample, pooled_keys: bool) -> RowSample:
    """The calibration units of one row's records (one model; one split, or all of them for ``combined``)."""
    from ..analysis.calibration import Unit

    out = RowSample(units=[])
    for (model, split), members in _strata(records).items():
        labels = _stratum_labels(members, model, split, sample, out)
        judged = [r for r in members if r.outcome in (PASS, FAIL)]
        inclusion = len(labels) / len(judged) if judged else None
        out.judged, out.labelled = out.judged + len(judged), out.labelled + len(labels)
        for record in members:
            task = f"{record.split}/{record.task_id}" if pooled_keys else record.task_id
            judge_pass = None if record.outcome == REFUSED else record.outcome == PASS
            human = labels.get(record.key)
            out.units.append(Unit(task, record.repeat, judge_pass, human, inclusion if human is not None else None))
    return out


def _strata(records: Sequence[Record]) -> dict[tuple[str, str], list[Record]]:
    found: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        if record.outcome in (PASS, FAIL, REFUSED):
            found.setdefault((record.model, record.split), []).append(record)
    return found


def _stratum_labels(members: list[Record], model: str, split: str, sample: HumanSample, out: RowSample) -> dict:
    """record key -> the panel's majority (True = PASS) for the stratum's usable labels."""
    stratum, design = sample.design_for(model, split)
    drawn = None if stratum is None else set(stratum.sample)
    if stratum is None:
        out.assumed = True
    else:
        out.designs.append(str(design.path or design.split))
        out.seeds.append(design.seed)
        population = set(stratum.population)
        out.after_design += sum(1 for r in members if r.outcome in (PASS, FAIL) and (r.task_id, r.repeat) not in population)
    labels = {}
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


def add_calibration(results: dict, records: Iterable[Record], sample: HumanSample, settings: Settings,
                    baseline: Mapping[str, Any] | None = None) -> dict:
    """Add the calibration keys to every row of ``results`` (in place); see the module docstring."""
    from ..analysis.calibration import error_counts, task_evidence

    records = list(records)
    prepared = []
    for row in results.get("rows") or []:
        mine = [r for r in records if r.model == row["model"] and (row["split"] == COMBINED or r.split == row["split"])]
        found = row_sample(mine, sample, pooled_keys=row["split"] == COMBINED)
        prepared.append((row, found, task_evidence(found.units)))
    pools = _pools([(row, error_counts(evidence)) for row, _, evidence in prepared])
    for row, found, evidence in prepared:
        _calibrate_row(row, found, evidence, pools[_pool_key(row)], settings, baseline)
    results.setdefault("settings", {})["calibration"] = {"labels": [str(p) for p in sample.paths],
                                                         "raters": len(sample.panel.raters),
                                                         "designs": [str(d.path) for d in sample.designs]}
    return results


def _pool_key(row: Mapping[str, Any]) -> str:
    return str(row["split"])


def _pools(counted) -> dict[str, Any]:
    """Per split (and for ``combined``): the labels of every model's row together."""
    from ..analysis.calibration import ErrorCounts

    pools: dict[str, Any] = {}
    for row, counts in counted:
        pools[_pool_key(row)] = pools.get(_pool_key(row), ErrorCounts()) + counts
    return pools


def _calibrate_row(row: dict, found: RowSample, evidence, pooled, settings: Settings, baseline) -> None:
    from ..analysis.calibration import METHOD, calibrate, error_counts

    cost = float(row.get("cost_per_candidate") or 0.0)
    result = calibrate(evidence, cost, settings.metrics, pooled=pooled, n_resamples=settings.bootstrap,
                       seed=settings.seed, level=settings.level)
    design = "assumed-srs" if found.assumed or not found.designs else "recorded"
    row["calibration"] = {"method": METHOD, "design": design, "n_human": found.labelled,
                          "note": _note(found, result, row, error_counts(evidence), pooled, design),
                          "sampled_share": found.labelled / found.judged if found.judged else None,
                          "design_seeds": sorted(set(found.seeds))}
    row["calibration_evidence"] = {"tasks": [t.to_json() for t in evidence], "pooled_counts": list(pooled.astuple())}
    if result is None:
        return
    row["calibrated"], row["human_sample"], row["judge_error"] = result.calibrated, result.human_sample, result.judge_error
    if baseline is not None:
        row.update(calibrated_baseline(row, evidence, pooled, settings, baseline))


def _note(found: RowSample, result, row, own, pooled, design: str) -> str:
    from ..analysis.calibration import MIN_PER_CLASS

    share = f"{100 * found.labelled / found.judged:.1f}%" if found.judged else "n/a"
    parts = [f"{found.labelled} of {found.judged} judged candidates labelled ({share})"]
    if design == "recorded":
        parts.append(f"sample drawn as recorded in {', '.join(sorted(set(found.designs)))}")
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
        parts.append("no label in this row and none to borrow: not calibrated")
    elif result.judge_error["pooled"]:
        parts.append(f"judge error pooled over every model of split {row['split']} ({pooled.n} labels): this "
                     f"row's sample holds {own.true_pass + own.false_fail} human PASS and "
                     f"{own.false_pass + own.true_fail} human FAIL (at least {MIN_PER_CLASS} of each for its own)")
    else:
        parts.append("judge error estimated from this row's own labels")
    if result is not None and result.pass_rate_method == "imputation":
        parts.append("pass rate by imputation (no label to correct it with)")
    return "; ".join(parts)


# --------------------------------------------------------------------------- baseline


def calibrated_baseline(row, evidence, pooled, settings: Settings, baseline: Mapping[str, Any]) -> dict:
    """The paired comparison of calibrated figures with the baseline's row, when it was calibrated too."""
    from ..analysis.calibration import ErrorCounts, TaskEvidence, paired_calibrated
    from ..analysis.enrich import baseline_row

    old = baseline_row(row, baseline)
    if old is None or not (old.get("calibration_evidence") or {}).get("tasks"):
        return {"calibrated_baseline_error": "the baseline has no calibrated row to compare with (run it with "
                                             "--calibrate on a sample drawn with the same design)"}
    try:
        before = [TaskEvidence.from_json(t) for t in old["calibration_evidence"]["tasks"]]
        old_pool = ErrorCounts(*(int(x) for x in old["calibration_evidence"].get("pooled_counts") or (0, 0, 0, 0)))
        comparison = paired_calibrated(evidence, before, float(row.get("cost_per_candidate") or 0.0),
                                       float(old.get("cost_per_candidate") or 0.0), settings.metrics,
                                       pooled_current=pooled, pooled_baseline=old_pool,
                                       n_resamples=settings.bootstrap or 1000, seed=settings.seed, level=settings.level)
    except (ValueError, KeyError, TypeError) as exc:
        return {"calibrated_baseline_error": f"the baseline's calibration evidence cannot be used ({exc})"}
    return {"calibrated_baseline": comparison, "calibrated_baseline_note": _same_design(row, old)}


def _same_design(row: Mapping[str, Any], old: Mapping[str, Any]) -> str:
    now, before = row.get("calibration") or {}, old.get("calibration") or {}
    if now.get("design") == before.get("design") == "recorded" and now.get("design_seeds") == before.get("design_seeds"):
        return "both releases' human samples follow the same recorded design (same seed, so the same positions)"
    return (f"the releases' human samples follow different designs ({before.get('design')} seed "
            f"{before.get('design_seeds')} before, {now.get('design')} seed {now.get('design_seeds')} now): draw both "
            "with the same --sample-seed and share so that the difference is not partly the samples'")


# --------------------------------------------------------------------------- record.human


def human_of(panel: Panel | None, record: Record) -> dict | None:
    """A record's ``human`` field from a panel: None when the panel did not label it."""
    verdict = panel.verdict(record.task_id, record.model, record.repeat) if panel is not None else None
    return verdict.human() if verdict is not None else None


# --------------------------------------------------------------------------- terminal


def terminal_lines(results: Mapping[str, Any], every_interval: bool = True) -> list[str]:
    """Per calibrated row: the judge's error and the sample, then its calibrated figures with their intervals
    (the pass rate's alone unless ``every_interval``: -v, as for the judge's own intervals)."""
    from ..analysis.gates import METRIC_KINDS, format_value
    from .tables import COLUMNS

    shown = [key for key, _, _ in COLUMNS][:None if every_interval else 1]  # the table's metrics, pass rate first
    lines = []
    for row in results.get("rows") or []:
        info, error = row.get("calibration"), row.get("judge_error")
        if not info:
            continue
        where = f"{row['model']} ({row['split']})"
        if error:
            lines.append(f"{where}: judge sensitivity {_rate(error['sensitivity'])}, specificity {_rate(error['specificity'])}"
                         f"{' (pooled)' if error['pooled'] else ''}; {info['note']}")
        else:
            lines.append(f"{where}: {info['note']}")
        cells = []
        for key in shown:
            entry = (row.get("calibrated") or {}).get(key) or {}
            kind = METRIC_KINDS[key]
            ci = f" [{format_value(entry['low'], kind)}, {format_value(entry['high'], kind)}]" if entry.get("low") is not None else ""
            cells.append(f"{key} {format_value(entry.get('value'), kind)}{ci}")
        if row.get("calibrated"):
            lines.append("  calibrated: " + "; ".join(cells))
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


def _rate(value) -> str:
    """A sensitivity or specificity, or why there is none (no human label of that kind in the sample)."""
    return f"{value:.2f}" if isinstance(value, (int, float)) else "n/a (no human label of that kind)"
