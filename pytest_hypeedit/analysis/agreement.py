"""How far the automatic judge agrees with the human panel, and the panel with itself.

Pure statistics: no I/O, no pytest.  Verdicts are booleans (True = PASS).

Judge against panel, on the candidates both have verdicts for:

                      panel PASS      panel FAIL
        judge PASS    both_pass       false_pass
        judge FAIL    false_fail      both_fail

* agreement = (both_pass + both_fail) / n
* Cohen's kappa = (p_o - p_e) / (1 - p_e), with p_e the agreement expected from
  the two sides' PASS shares alone.  Its 95% interval is the normal interval
  around kappa with the large-sample standard error of Fleiss, Cohen & Everitt
  (1969, Psychological Bulletin 72:323), the one SPSS and statsmodels report,
  clipped to [-1, 1].  With a handful of candidates it is only indicative.
* false-fail rate = false_fail / (panel PASS): good images the judge rejects;
* false-pass rate = false_pass / (panel FAIL): bad images the judge lets through.

Between raters: Krippendorff's alpha (nominal), which copes with raters who
did not label every candidate, and Fleiss' kappa over the candidates that every
rater of the panel labelled (Fleiss needs the same number of votes per unit).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    from ..report.results_model import JudgeAgreement, RaterAgreement

Z_95 = 1.959963984540054
ALL_TYPES = "all"
KAPPA_METHOD = "normal interval, Fleiss-Cohen-Everitt (1969) large-sample standard error"


@dataclass(frozen=True)
class Confusion:
    """Counts of judge verdicts against panel verdicts."""

    both_pass: int = 0
    false_pass: int = 0  # judge PASS, panel FAIL
    false_fail: int = 0  # judge FAIL, panel PASS
    both_fail: int = 0

    @property
    def n(self) -> int:
        return self.both_pass + self.false_pass + self.false_fail + self.both_fail

    def add(self, judge_pass: bool, panel_pass: bool) -> "Confusion":
        field = {(True, True): "both_pass", (True, False): "false_pass",
                 (False, True): "false_fail", (False, False): "both_fail"}[(judge_pass, panel_pass)]
        return Confusion(**{**self.__dict__, field: getattr(self, field) + 1})

    def cells(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """Proportions [judge][panel], index 0 = PASS, 1 = FAIL."""
        n = self.n
        return ((self.both_pass / n, self.false_pass / n), (self.false_fail / n, self.both_fail / n))


def confusion(pairs: Iterable[tuple[bool, bool]]) -> Confusion:
    """Count (judge_pass, panel_pass) pairs."""
    table = Confusion()
    for judge_pass, panel_pass in pairs:
        table = table.add(bool(judge_pass), bool(panel_pass))
    return table


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def agreement_rate(table: Confusion) -> float | None:
    return _ratio(table.both_pass + table.both_fail, table.n)


def false_fail_rate(table: Confusion) -> float | None:
    """Judge FAIL among the candidates the panel passed."""
    return _ratio(table.false_fail, table.both_pass + table.false_fail)


def false_pass_rate(table: Confusion) -> float | None:
    """Judge PASS among the candidates the panel failed."""
    return _ratio(table.false_pass, table.false_pass + table.both_fail)


def _marginals(table: Confusion) -> tuple[list[float], list[float], float, float]:
    p = table.cells()
    rows = [p[0][0] + p[0][1], p[1][0] + p[1][1]]  # judge PASS, judge FAIL
    cols = [p[0][0] + p[1][0], p[0][1] + p[1][1]]  # panel PASS, panel FAIL
    p_o = p[0][0] + p[1][1]
    p_e = rows[0] * cols[0] + rows[1] * cols[1]
    return rows, cols, p_o, p_e


def cohen_kappa(table: Confusion) -> float | None:
    """None when undefined: no pairs, or both sides gave one verdict only (p_e = 1)."""
    if not table.n:
        return None
    _, _, p_o, p_e = _marginals(table)
    return None if math.isclose(p_e, 1.0) else (p_o - p_e) / (1 - p_e)


def kappa_standard_error(table: Confusion) -> float | None:
    """Fleiss, Cohen & Everitt (1969), equation 13: the SE of kappa when kappa is not 0."""
    kappa = cohen_kappa(table)
    if kappa is None:
        return None
    p = table.cells()
    rows, cols, p_o, p_e = _marginals(table)
    diagonal = sum(p[i][i] * ((1 - p_e) - (rows[i] + cols[i]) * (1 - p_o)) ** 2 for i in range(2))
    off = (1 - p_o) ** 2 * sum(p[i][j] * (cols[i] + rows[j]) ** 2 for i in range(2) for j in range(2) if i != j)
    correction = (p_o * p_e - 2 * p_e + p_o) ** 2
    variance = max(diagonal + off - correction, 0.0) / (table.n * (1 - p_e) ** 4)
    return math.sqrt(variance)


def kappa_interval(table: Confusion, z: float = Z_95) -> tuple[float, float] | None:
    kappa, se = cohen_kappa(table), kappa_standard_error(table)
    if kappa is None or se is None:
        return None
    return (max(-1.0, kappa - z * se), min(1.0, kappa + z * se))


# --------------------------------------------------------------------------- between raters


def krippendorff_alpha(units: Iterable[Sequence[bool]]) -> float | None:
    """Nominal alpha over units (candidates), each the list of its raters' verdicts.

    Units with fewer than two votes carry no pairable value and are dropped.
    With two categories: alpha = 1 - (n - 1) * o_PF / (n_P * n_F), where o_PF is
    the coincidence count of PASS-FAIL pairs, each unit's pairs weighted 1/(m_u - 1).
    """
    o_pf, n_pass, n_fail = 0.0, 0, 0
    for votes in units:
        m = len(votes)
        if m < 2:
            continue
        passes = sum(1 for v in votes if v)
        o_pf += passes * (m - passes) / (m - 1)
        n_pass, n_fail = n_pass + passes, n_fail + m - passes
    n = n_pass + n_fail
    if not n or not n_pass or not n_fail:
        return None  # every pairable vote the same: no variation to agree on
    return 1 - (n - 1) * o_pf / (n_pass * n_fail)


def fleiss_kappa(units: Iterable[Sequence[bool]]) -> float | None:
    """Fleiss' kappa over units that all have the same number (>= 2) of votes."""
    units = [list(u) for u in units]
    if not units:
        return None
    m = len(units[0])
    if m < 2 or any(len(u) != m for u in units):
        raise ValueError("Fleiss' kappa needs the same number (>= 2) of votes on every unit")
    passes = [sum(1 for v in u if v) for u in units]
    p_pass = sum(passes) / (len(units) * m)
    p_bar = sum((k * k + (m - k) ** 2 - m) / (m * (m - 1)) for k in passes) / len(units)
    p_e = p_pass ** 2 + (1 - p_pass) ** 2
    return None if math.isclose(p_e, 1.0) else (p_bar - p_e) / (1 - p_e)


# --------------------------------------------------------------------------- summaries (JSON-ready)


def judge_summary(table: Confusion) -> JudgeAgreement:
    """The figures of one confusion table, as JSON values."""
    interval = kappa_interval(table)
    return {
        "n": table.n,
        "agreement": agreement_rate(table),
        "kappa": cohen_kappa(table),
        "kappa_ci95": list(interval) if interval else None,
        "confusion": {"both_pass": table.both_pass, "false_pass": table.false_pass,
                      "false_fail": table.false_fail, "both_fail": table.both_fail},
        "false_fail_rate": false_fail_rate(table),
        "false_pass_rate": false_pass_rate(table),
    }


def compare_by_task_type(pairs: Iterable[tuple[bool, bool, Sequence[str]]]) -> dict[str, JudgeAgreement]:
    """Summaries over all pairs ("all") and per task type; a multi-type candidate counts in each."""
    tables: dict[str, Confusion] = defaultdict(Confusion)
    tables[ALL_TYPES] = Confusion()
    for judge_pass, panel_pass, task_types in pairs:
        for name in (ALL_TYPES, *dict.fromkeys(task_types)):
            tables[name] = tables[name].add(bool(judge_pass), bool(panel_pass))
    ordered = [ALL_TYPES, *sorted(k for k in tables if k != ALL_TYPES)]
    return {name: judge_summary(tables[name]) for name in ordered}


def raters_summary(votes: Mapping[Any, Sequence[bool]], panel_size: int) -> RaterAgreement:
    """Agreement between raters: alpha over all units, Fleiss over units every rater labelled."""
    full = [v for v in votes.values() if len(v) == panel_size]
    return {
        "raters": panel_size,
        "units": sum(1 for v in votes.values() if len(v) >= 2),
        "krippendorff_alpha": krippendorff_alpha(votes.values()),
        "fleiss_kappa": fleiss_kappa(full) if panel_size >= 2 and full else None,
        "fleiss_units": len(full) if panel_size >= 2 else 0,
    }


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def summary_lines(report: Mapping[str, Any]) -> list[str]:
    """Terminal lines for an agreement report built by the plugin (see report/agreement_check.py)."""
    lines = [f"judge {report.get('judge', '?')} vs human panel ({report.get('panel', {}).get('raters', 0)} raters); "
             f"kappa interval: {KAPPA_METHOD}"]
    header = f"{'task type':<24}{'n':>6}{'agree':>8}{'kappa':>8}{'95% CI':>16}{'false-fail':>12}{'false-pass':>12}"
    lines.append(header)
    for name, row in report.get("by_task_type", {}).items():
        ci = row["kappa_ci95"]
        ci_text = f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "n/a"
        lines.append(f"{name:<24}{row['n']:>6}{_pct(row['agreement']):>8}{_num(row['kappa']):>8}"
                     f"{ci_text:>16}{_pct(row['false_fail_rate']):>12}{_pct(row['false_pass_rate']):>12}")
    overall = report.get("by_task_type", {}).get(ALL_TYPES)
    if overall:
        c = overall["confusion"]
        lines.append(f"confusion (judge/panel): PASS/PASS {c['both_pass']}, PASS/FAIL {c['false_pass']}, "
                     f"FAIL/PASS {c['false_fail']}, FAIL/FAIL {c['both_fail']}")
    between = report.get("between_raters", {})
    lines.append(f"between raters: Krippendorff's alpha {_num(between.get('krippendorff_alpha'))} "
                 f"over {between.get('units', 0)} candidates; Fleiss' kappa {_num(between.get('fleiss_kappa'))} "
                 f"over {between.get('fleiss_units', 0)} fully labelled")
    lines.extend(f"warning: {w}" for w in report.get("warnings", []))
    return lines
