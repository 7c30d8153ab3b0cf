"""Spend by price tier, as the terminal summary and the HTML report's "What ran" say it (results rows'
``spend_by_tier``: the generation and judge spend by the tier that served each call).  Pure: no I/O; the rows
are untrusted (a results file from disk), so what is not a mapping of numbers is left out."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from .tables import COMBINED

STANDARD = "standard"


def tier_totals(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """{"generation": {tier: USD}, "judge": {...}} summed over the rows of the splits (not ``combined``, which
    pools them again), tiers in first-seen order."""
    totals: dict[str, dict[str, float]] = {}
    for row in rows:
        parts = row.get("spend_by_tier")
        if str(row.get("split")) == COMBINED or not isinstance(parts, Mapping):
            continue
        for part, tiers in parts.items():
            into = totals.setdefault(str(part), {})
            for tier, value in (tiers.items() if isinstance(tiers, Mapping) else ()):
                into[str(tier)] = into.get(str(tier), 0.0) + _amount(value)
    return totals


def tiered(row: Mapping[str, Any]) -> bool:
    """Whether some of the row's spend was at a tier other than standard (batch, Flex, or unknown)."""
    return any(tier != STANDARD and amount for tiers in tier_totals([{**row, "split": ""}]).values()
               for tier, amount in tiers.items())


def tiers_text(rows: Sequence[Mapping[str, Any]], default: str = STANDARD) -> str:
    """The tiers the run actually used, e.g. "generation batch; judge flex"; ``default`` when every call was at
    standard or the results name no tiers (written before tiers were recorded)."""
    used = {part: list(tiers) for part, tiers in tier_totals(rows).items() if tiers}
    if all(tiers == [STANDARD] for tiers in used.values()):
        return default
    return "; ".join(f"{part} {', '.join(tiers)}" for part, tiers in used.items())


def spend_by_tier_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """What the rows spent at each tier, e.g. "generation standard $1.00; judge flex $0.02", when some was not at
    standard; "" otherwise (nothing to add to "standard")."""
    totals = tier_totals(rows)
    if all(set(tiers) <= {STANDARD} for tiers in totals.values()):
        return ""
    return "; ".join(f"{part} " + ", ".join(f"{tier} ${amount:.2f}" for tier, amount in tiers.items() if amount)
                     for part, tiers in totals.items() if any(tiers.values()))


def _amount(value: Any) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else 0.0


def paid_price_note(rows: Sequence[Mapping[str, Any]]) -> str:
    """A note beside a table of effective costs when some row's spend was not at standard: its effective cost is
    at the price paid, and at list price (``effective_cost_list``) it is ...; "" otherwise."""
    shown = [row for row in rows if tiered(row)]
    if not shown:
        return ""
    at_list = ", ".join(f"{row.get('model')} ({row.get('split')}) {_dollars(row.get('effective_cost_list'))}"
                        for row in shown)
    return (f"Effective cost is at the price paid (spend by tier: {spend_by_tier_text(shown)}); at list price, to "
            f"compare with runs at other tiers: {at_list}.")


def _dollars(value: Any) -> str:
    return f"${value:.2f}" if isinstance(value, (int, float)) and math.isfinite(value) else "n/a"
