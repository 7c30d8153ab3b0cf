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
from typing import Iterable

from ..analysis import agreement
from ..errors import ConfigError
from ..labels import Panel, read_panel
from ..engine.records import FAIL, PASS, Record

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

    def results(self, records: Iterable[Record], judge: str) -> dict:
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
        }


def _pairs(records: list[Record], panel: Panel) -> tuple[list, int]:
    """(judge PASS, panel PASS, task types) for candidates both judged; and how many the panel lacks."""
    pairs, judge_only = [], 0
    for record in records:
        if record.outcome not in (PASS, FAIL):  # refusals have no image to label; errors no verdict
            continue
        verdict = panel.verdict(record.task_id, record.model, record.repeat)
        if verdict is None:
            judge_only += 1
        else:
            pairs.append((record.outcome == PASS, verdict.passed, tuple(record.task_types)))
    return pairs, judge_only


def _capped(warnings: list[str]) -> list[str]:
    if len(warnings) <= MAX_WARNINGS:
        return warnings
    return warnings[:MAX_WARNINGS] + [f"... and {len(warnings) - MAX_WARNINGS} more candidates with an even vote count"]


def terminal_lines(results: dict) -> list[str]:
    report = results.get("agreement")
    if not report:
        return []
    lines = agreement.summary_lines(report)
    counts = ", ".join(f"{name} {c['labelled']} ({c['PASS']} PASS)" for name, c in report["panel"]["rater_counts"].items())
    lines.insert(1, f"compared {report['compared']} candidates; {report['judged_not_labelled']} judged but not "
                    f"labelled by the panel; raters: {counts}")
    return lines
