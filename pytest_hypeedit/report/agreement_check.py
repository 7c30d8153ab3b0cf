"""``--agreement labels:PATH[,PATH...]``: the judge's verdicts against a human panel's.

The glue between the run and the pure statistics in analysis/agreement.py: it reads
the panel's files once at configure time (a bad file is a usage error before
anything is paid for) and, at the end of the run, pairs each candidate the
judge gave PASS or FAIL with the panel's majority on it.  The result goes
into the results JSON under ``"agreement"`` (the HTML report reads it there).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..analysis import agreement
from ..engine.records import FAIL, PASS, Record
from ..errors import ConfigError
from ..labels import Panel, read_panel
from .results_model import Agreement, DisagreementNote, SignalCounts, SignalsByCell

PREFIX = "labels:"
MAX_WARNINGS = 20


def parse_agreement_option(value: str) -> list[Path]:
    """``labels:a.json,b.json`` or ``labels:judgements/public`` (a folder: every rater file in it)."""
    paths = [p.strip() for p in value[len(PREFIX):].split(",")] if value.startswith(PREFIX) else []
    if not paths or not all(paths):
        raise ConfigError(f"--agreement {value!r}: expected labels:PATH[,PATH...], one labels file per rater "
                          "(or a folder of them), e.g. --agreement labels:judgements/public")
    return [Path(p) for p in paths]


@dataclass
class AgreementCheck:
    paths: list[Path]
    panel: Panel

    @classmethod
    def from_option(cls, value: str | None, known_models: Iterable[str]) -> "AgreementCheck | None":
        if not value:
            return None
        paths = parse_agreement_option(value)
        return cls(paths, read_panel(paths, known_models))

    def results(self, records: Iterable[Record], judge: str) -> Agreement:
        """The JSON-ready agreement report over the candidates of this run."""
        records = list(records)
        in_run = {(r.task_id, r.model, r.repeat) for r in records}
        pairs, judge_only = _pairs(records, self.panel)
        votes = {key: v for key, v in self.panel.votes().items() if key in in_run}
        warnings = self.panel.even_vote_warnings(keys=in_run)
        return {
            "judge": judge,
            "labels": [str(p) for p in self.paths],
            "kappa_method": agreement.KAPPA_METHOD,
            "panel": {"raters": len(self.panel.raters), "labelled": len(votes),
                      "rater_counts": self.panel.rater_counts()},
            "compared": len(pairs),
            "judged_not_labelled": judge_only,
            "by_task_type": agreement.compare_by_task_type(pairs),
            "between_raters": agreement.raters_summary(votes, len(self.panel.raters)),
            "even_votes": len(warnings),
            "warnings": _capped(warnings),
            "signals": signals_by_cell(records, self.panel),
            "notes": disagreement_notes(records, self.panel),
        }


def _pairs(records: list[Record], panel: Panel) -> tuple[list[tuple[bool, bool, tuple[str, ...]]], int]:
    """(judge PASS, panel PASS, task types) for candidates both judged; and how many the panel lacks."""
    pairs: list[tuple[bool, bool, tuple[str, ...]]] = []
    judge_only = 0
    for record in records:
        if record.outcome not in (PASS, FAIL):  # refusals have no image to label; errors no verdict
            continue
        verdict = panel.verdict(record.task_id, record.model, record.repeat)
        if verdict is None:
            judge_only += 1
        else:
            pairs.append((record.outcome == PASS, verdict.passed, tuple(record.task_types)))
    return pairs, judge_only


CELLS = {(True, True): "both_pass", (True, False): "false_pass", (False, True): "false_fail", (False, False): "both_fail"}


def signals_by_cell(records: list[Record], panel: Panel) -> SignalsByCell:
    """How the pixel diagnostics (record.signals) fall in each cell of judge against panel, e.g. how many of
    the judge's PASS that people failed are unchanged copies of the reference."""
    cells: dict[str, list[dict[str, Any]]] = {name: [] for name in CELLS.values()}
    for record in records:
        verdict = panel.verdict(record.task_id, record.model, record.repeat)
        if record.outcome in (PASS, FAIL) and verdict is not None:
            cells[CELLS[(record.outcome == PASS, verdict.passed)]].append(record.signals or {})
    false_pass = _signal_counts(cells["false_pass"])
    return {"both_pass": _signal_counts(cells["both_pass"]), "false_pass": false_pass,
            "false_fail": _signal_counts(cells["false_fail"]), "both_fail": _signal_counts(cells["both_fail"]),
            "disagreements": len(cells["false_pass"]) + len(cells["false_fail"]),
            "judge_pass_unchanged": false_pass["unchanged"]}


def _signal_counts(found: list[dict[str, Any]]) -> SignalCounts:
    measured = [s for s in found if s]
    ssim = [s["ssim"] for s in measured if isinstance(s.get("ssim"), (int, float))]
    delta_e = [s["delta_e"] for s in measured if isinstance(s.get("delta_e"), (int, float))]
    return {"n": len(found), "measured": len(measured),
            "unchanged": sum(1 for s in measured if s.get("unchanged") is True),
            "size_mismatch": sum(1 for s in measured if s.get("size_match") is False),
            "aspect_mismatch": sum(1 for s in measured if s.get("aspect_match") is False),
            "ssim_mean": sum(ssim) / len(ssim) if ssim else None,
            "delta_e_mean": sum(delta_e) / len(delta_e) if delta_e else None}


def disagreement_notes(records: list[Record], panel: Panel, limit: int = MAX_WARNINGS) -> list[DisagreementNote]:
    """The candidates where judge and panel disagree and a rater left a note: what people saw that the judge
    did not (or the reverse), for the terminal and the report."""
    found: list[DisagreementNote] = []
    for record in sorted(records, key=lambda r: r.key):
        verdict = panel.verdict(record.task_id, record.model, record.repeat)
        if record.outcome not in (PASS, FAIL) or verdict is None or (record.outcome == PASS) == verdict.passed:
            continue
        notes = [v for v in verdict.vote_entries() if v["note"]]
        if notes:
            found.append({"split": record.split, "model": record.model, "task_id": record.task_id,
                          "repeat": record.repeat, "judge": record.outcome.upper(), "votes": notes})
    return found[:limit]


def _capped(warnings: list[str]) -> list[str]:
    if len(warnings) <= MAX_WARNINGS:
        return warnings
    return warnings[:MAX_WARNINGS] + [f"... and {len(warnings) - MAX_WARNINGS} more candidates with an even vote count"]


def terminal_lines(results: Mapping[str, Any]) -> list[str]:
    report = results.get("agreement")
    if not report:
        return []
    lines = agreement.summary_lines(report)
    counts = ", ".join(f"{name} {c['labelled']} ({c['PASS']} PASS)" for name, c in report["panel"]["rater_counts"].items())
    lines.insert(1, f"compared {report['compared']} candidates; {report['judged_not_labelled']} judged but not "
                    f"labelled by the panel; raters: {counts}")
    return lines + signal_lines(report) + note_lines(report)


def signal_lines(report: dict[str, Any]) -> list[str]:
    cells = report.get("signals") or {}
    parts = []
    for name, title in (("false_pass", "judge PASS / panel FAIL"), ("false_fail", "judge FAIL / panel PASS")):
        cell = cells.get(name)
        if cell and cell["measured"]:
            parts.append(f"{title} {cell['n']} ({cell['unchanged']} unchanged, {cell['size_mismatch']} wrong size)")
    return [f"signals among disagreements: {'; '.join(parts)}"] if parts else []


def note_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for entry in report.get("notes") or []:
        said = "; ".join(f'{v["rater"]} ({v["verdict"]}): "{v["note"]}"' for v in entry["votes"])
        lines.append(f"judge {entry['judge']}, panel disagrees: {entry['task_id']} {entry['model']} "
                     f"r{entry['repeat']:03d}: {said}")
    return lines
