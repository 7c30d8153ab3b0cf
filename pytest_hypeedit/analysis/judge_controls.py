"""Judge controls in figures: how often the judge was wrong on candidates whose right verdict is known without a
person, and whether that changed since a baseline run (results: ``judge_controls``).

A control's right verdict is FAIL for every negative kind (the reference unchanged, a flat image, another task's
reference, the reference mirrored: none of them is the edit asked for).  Per judge and kind: the number judged, the
judge's wrong verdicts (a false PASS on a negative), the exact (Clopper-Pearson) 95% interval of their share, and
the tasks where it was wrong; pooled over the negative kinds, ``false_pass`` (what ``--gate judge_false_pass``
reads).  With human labels at hand, a positive kind too: a candidate the panel passed, whose right verdict is
PASS (``false_fail``, ``--gate judge_false_fail``).  The pooled interval counts every control as its own trial: the four controls of one task are not
independent draws, so it is narrower than one over tasks would be.

Drift against a baseline: per kind, the two runs' wrong counts compared with Fisher's exact test (two-sided), each
at alpha / the number of kinds compared (Bonferroni: at most alpha over the kinds when nothing changed); a served
model version the baseline's controls did not see is drift too, whatever the counts.

Pure: control verdicts in, dicts out.  No I/O, no pytest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from .task_intervals import clopper_pearson

if TYPE_CHECKING:
    from ..report.results_model import ControlKind, ControlShare, JudgeControls, JudgeDrift, JudgeOnControls, KindDrift

#: The negative control kinds, in the order they are made and printed (engine/controls.py makes them).
NEGATIVE_KINDS = ("unchanged", "flat", "other_task", "mirrored")
#: The positive control kind: a candidate the human panel passed (with labels at hand), whose right verdict is PASS.
POSITIVE_KINDS = ("human_pass",)
KINDS = NEGATIVE_KINDS + POSITIVE_KINDS
#: What each kind is, for the docs, the terminal and the report.
KIND_TEXT = {
    "unchanged": "the reference unchanged",
    "flat": "a flat grey image of the target size",
    "other_task": "another task's reference",
    "mirrored": "the reference mirrored",
    "human_pass": "a candidate people passed",
}
LEVEL = 0.95
DRIFT_ALPHA = 0.05
#: How many wrong controls of each kind the results keep with their reasoning (the report shows them).
WRONG_KEPT = 20
METHOD = ("per judge and control kind: wrong verdicts (a PASS on a negative control, a FAIL on a positive) with their exact "
          "Clopper-Pearson 95% interval; drift: Fisher's exact test (two-sided) per kind at 0.05 / kinds compared, "
          "or a served model version the baseline's controls did not see")


#: What the figures can and cannot show, said with them (results, terminal).
LIMITS = ("not a model's score: the judge on candidates whose right verdict is known (obviously wrong ones, and with "
          "labels ones people passed); a lower bound of its errors on real edits, not its accuracy on them; the "
          "pooled share counts each control as its own trial, though a task's controls are not independent")


@dataclass(frozen=True)
class ControlVerdict:
    """One control and what the judge said of it (None: no verdict, an error)."""

    judge: str
    kind: str
    split: str
    task_id: str
    verdict: str | None  # "PASS" / "FAIL"
    version: str | None = None  # the served model version the reply named
    reasoning: str = ""
    image: str = ""  # the control's file, relative to the outputs folder

    @property
    def right(self) -> str:
        return "PASS" if self.kind in POSITIVE_KINDS else "FAIL"

    @property
    def wrong(self) -> bool:
        return self.verdict is not None and self.verdict != self.right


def _share(wrong: int, judged: int) -> ControlShare:
    if not judged:
        return {"judged": judged, "wrong": wrong, "rate": None, "interval": None}
    low, high = clopper_pearson(wrong / judged, judged, LEVEL)
    return {"judged": judged, "wrong": wrong, "rate": wrong / judged, "interval": [low, high]}


def summarize(verdicts: Iterable[ControlVerdict]) -> JudgeControls:
    """``judge_controls`` of one run: {"method", "judges": {judge: {"versions", "kinds", "false_pass",
    "false_fail"}}}."""
    by_judge: dict[str, list[ControlVerdict]] = {}
    for verdict in verdicts:
        by_judge.setdefault(verdict.judge, []).append(verdict)
    return {"method": METHOD, "limits": LIMITS,
            "judges": {judge: _judge_entry(rows) for judge, rows in sorted(by_judge.items())}}


def _judge_entry(rows: list[ControlVerdict]) -> JudgeOnControls:
    kinds: dict[str, ControlKind] = {}
    for kind in KINDS:
        of_kind = [row for row in rows if row.kind == kind]
        if not of_kind:
            continue
        judged = [row for row in of_kind if row.verdict is not None]
        wrong = sorted((row for row in judged if row.wrong), key=lambda row: (row.split, row.task_id))
        kinds[kind] = {"right": of_kind[0].right, **_share(len(wrong), len(judged)),
                       "errors": len(of_kind) - len(judged),
                       "wrong_tasks": [f"{row.split}/{row.task_id}" for row in wrong],
                       "wrong_controls": [{"task": f"{row.split}/{row.task_id}", "image": row.image,
                                           "reasoning": row.reasoning, "version": row.version}
                                          for row in wrong[:WRONG_KEPT]]}
    versions: dict[str, int] = {}
    for row in rows:
        if row.verdict is not None:
            name = row.version or "unnamed"
            versions[name] = versions.get(name, 0) + 1
    failed = next((row for row in rows if row.verdict is None), None)
    return {"versions": dict(sorted(versions.items())), "kinds": kinds,
            "false_pass": _pooled(kinds, NEGATIVE_KINDS), "false_fail": _pooled(kinds, POSITIVE_KINDS),
            "errors": sum(entry["errors"] for entry in kinds.values()),
            "first_error": f"{failed.split}/{failed.task_id} {failed.kind}: {failed.reasoning}" if failed else None}


def _pooled(kinds: Mapping[str, ControlKind], of: tuple[str, ...]) -> ControlShare | None:
    """The wrong verdicts over the kinds ``of`` (None when the run has none of them)."""
    present = [entry for kind, entry in kinds.items() if kind in of]
    if not present:
        return None
    return _share(sum(entry["wrong"] for entry in present), sum(entry["judged"] for entry in present))


# --------------------------------------------------------------------------- drift between runs


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """The two-sided p-value of Fisher's exact test of the 2x2 table [[a, b], [c, d]]: the probability, with the
    margins fixed, of every table no likelier than the one seen (as scipy.stats.fisher_exact, relative tolerance
    1e-7 for ties)."""
    row1, col1, total = a + b, a + c, a + b + c + d
    low, high = max(0, col1 - (total - row1)), min(row1, col1)

    def log_p(x: int) -> float:
        return (_log_comb(col1, x) + _log_comb(total - col1, row1 - x) - _log_comb(total, row1))

    seen = log_p(a)
    logs = [log_p(x) for x in range(low, high + 1)]
    # no likelier: within a relative 1e-7 of the table seen counts as a tie (scipy's tolerance)
    return min(1.0, sum(math.exp(value) for value in logs if value <= seen + 1e-7))


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def drift(current: Mapping[str, Any], baseline: Mapping[str, Any] | None,
          alpha: float = DRIFT_ALPHA) -> dict[str, JudgeDrift]:
    """Per judge of ``current`` (a ``judge_controls``) that the baseline's controls saw too: per kind the two
    runs' counts and Fisher's p-value, whether it changed beyond chance, and whether a served version is new.
    {judge: {"drifted", "reasons", "kinds", "versions", "baseline_versions"}}; a judge the baseline lacks is
    {"drifted": False, "reasons": [], "compared": False}."""
    old_judges = (baseline or {}).get("judges") if isinstance(baseline, Mapping) else None
    old_judges = old_judges if isinstance(old_judges, Mapping) else {}
    out: dict[str, JudgeDrift] = {}
    for judge, entry in (current.get("judges") or {}).items():
        old = old_judges.get(judge)
        out[judge] = _judge_drift(judge, entry, old, alpha) if isinstance(old, Mapping) else {
            "drifted": False, "compared": False, "reasons": [f"the baseline has no controls of judge {judge}"]}
    return out


def _counts(entry: Any) -> tuple[int, int] | None:
    if not isinstance(entry, Mapping):
        return None
    judged, wrong = _count(entry.get("judged")), _count(entry.get("wrong"))
    if judged is None or wrong is None or wrong > judged:  # a baseline file is untrusted
        return None
    return wrong, judged


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _judge_drift(judge: str, entry: Mapping[str, Any], old: Mapping[str, Any], alpha: float) -> JudgeDrift:
    kinds: dict[str, KindDrift] = {}
    found = old.get("kinds")
    old_kinds: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    for kind, now in (entry.get("kinds") or {}).items():
        mine, theirs = _counts(now), _counts(old_kinds.get(kind))
        if mine is None or theirs is None or not mine[1] or not theirs[1]:
            continue
        p = fisher_exact(mine[0], mine[1] - mine[0], theirs[0], theirs[1] - theirs[0])
        kinds[kind] = {"current": list(mine), "baseline": list(theirs), "p_value": p}
    for item in kinds.values():
        item["significant"] = item["p_value"] < alpha / len(kinds)
    versions, before = _named_versions(entry), _named_versions(old)
    reasons = [f"{kind}: wrong on {k['current'][0]} of {k['current'][1]} against {k['baseline'][0]} of "
               f"{k['baseline'][1]} in the baseline (Fisher p = {k['p_value']:.3g})"
               for kind, k in kinds.items() if k["significant"]]
    new = [v for v in versions if v not in before]
    if new and before:
        reasons.append(f"served model version {', '.join(new)} now, {', '.join(before)} in the baseline")
    return {"drifted": bool(reasons), "compared": True, "reasons": reasons, "kinds": kinds,
            "versions": versions, "baseline_versions": before}


def _named_versions(entry: Mapping[str, Any]) -> list[str]:
    """The served versions the controls' replies named ("unnamed" is no version: a reply that names none)."""
    versions = entry.get("versions")
    return sorted(str(v) for v in versions if v != "unnamed") if isinstance(versions, Mapping) else []


def drift_count(judge_controls: Mapping[str, Any] | None) -> int | None:
    """How many judges drifted since the baseline (``--gate judge_drift<=0``); None without a comparison."""
    entries = (judge_controls or {}).get("drift")
    if not isinstance(entries, Mapping):
        return None
    return sum(1 for entry in entries.values() if isinstance(entry, Mapping) and entry.get("drifted"))


def drift_warnings(judge_controls: Mapping[str, Any] | None) -> list[str]:
    """One warning line per judge that drifted since the baseline, naming it, its versions and why."""
    lines = []
    for judge, entry in ((judge_controls or {}).get("drift") or {}).items():
        if isinstance(entry, Mapping) and entry.get("drifted"):
            lines.append(f"judge {judge} drifted since the baseline (served {', '.join(entry['versions']) or '?'}; "
                         f"baseline {', '.join(entry['baseline_versions']) or '?'}): {'; '.join(entry['reasons'])}. "
                         "Its verdicts of the two runs are not comparable as they are: compare models within one "
                         "run, or calibrate each run with human labels")
    return lines


def table_lines(judge_controls: Mapping[str, Any] | None) -> list[str]:
    """The terminal's short table: per judge and kind, wrong of judged, the share and its interval."""
    lines = []
    judges = (judge_controls or {}).get("judges") or {}
    for judge, entry in judges.items():
        versions = ", ".join(f"{v} ({n})" for v, n in entry.get("versions", {}).items()) or "none named"
        lines.append(f"judge {judge} (served: {versions})")
        pooled = [("all negatives", {**(entry.get("false_pass") or {}), "right": "FAIL"}),
                  ("all positives", {**(entry.get("false_fail") or {}), "right": "PASS"})]
        for kind, item in [*entry.get("kinds", {}).items(), *pooled]:
            if not item or not item.get("judged"):
                continue
            low, high = item["interval"]
            errors = f", {item['errors']} without a verdict" if item.get("errors") else ""
            wrong = "false FAIL" if item.get("right") == "PASS" else "false PASS"
            lines.append(f"  {kind:<14} {wrong} {item['wrong']:>4} of {item['judged']:<4} "
                         f"{item['rate'] * 100:5.1f}% [{low * 100:.1f}, {high * 100:.1f}]{errors}")
        if len(_named_versions(entry)) > 1:  # never pooled without saying so
            lines.append(f"  its controls were answered by {len(_named_versions(entry))} served versions: the shares "
                         "above pool them")
        if entry.get("errors"):
            lines.append(f"  {entry['errors']} control(s) without a verdict, first: {entry.get('first_error')}")
    return lines + ([f"({LIMITS})"] if judges else [])
