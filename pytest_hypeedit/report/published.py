"""The paper's published results (published.yaml), as leaderboard rows marked published.

The figures are kept exactly as printed upstream (percent, attempts, dollars,
with their rounding) in ``published.yaml`` beside this module, with the
repository, commit and file they come from; ``published_rows`` turns them into
rows shaped like a results JSON's (fractions in [0, 1]) so the leaderboard
formats them with its one formatter and they read exactly as published.
``beside_published`` marks a run's own rows "judge" (or "calibrated") for the
tables that set them beside the published ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from ..errors import InputError
from ..finite import finite_number

DATA = Path(__file__).resolve().parent / "published.yaml"
METRICS = ("pass_rate", "pass_at_4", "pass_at_10", "expected_attempts", "effective_cost", "hype_gap")
#: How a figure is printed upstream -> the factor to a results JSON value (percentages are fractions there).
UNIT_SCALE = {"percent": 0.01, "attempts": 1.0, "dollars": 1.0}


@dataclass(frozen=True)
class Published:
    source: Mapping[str, str]  # repository, commit, file, url, generated_at
    settings: Mapping[str, Any]  # repeats, retry_cap, review_cost of every published table
    tasks: Mapping[str, int]  # split -> tasks
    rows: tuple[Mapping[str, Any], ...]  # results-JSON-shaped rows, "published": True

    def rows_of(self, split: str) -> list[Mapping[str, Any]]:
        return [row for row in self.rows if row["split"] == split]

    @property
    def splits(self) -> list[str]:
        return list(self.tasks)

    def citation(self) -> str:
        return (f"{self.source['file']} of {self.source['repository'].removeprefix('https://')} at commit "
                f"{self.source['commit'][:7]} (generated {self.source['generated_at']})")


def load_published(path: Path = DATA) -> Published:
    """Read and check the data file; an error names the file and the row."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: cannot read the published results ({exc})") from None
    units, tasks = data.get("units") or {}, data.get("splits") or {}
    if set(units) != set(METRICS) or not set(units.values()) <= set(UNIT_SCALE):
        raise InputError(f"{path}: 'units' must give one of {sorted(UNIT_SCALE)} for each of {', '.join(METRICS)}")
    rows = tuple(_row(entry, index, units, tasks, data["settings"], path) for index, entry in enumerate(data["rows"]))
    return Published(data["source"], data["settings"], tasks, rows)


def _row(entry: Mapping[str, Any], index: int, units: Mapping[str, str], tasks: Mapping[str, int],
         settings: Mapping[str, Any], path: Path) -> dict[str, Any]:
    where = f"{path}: row {index + 1} ({entry.get('model')}, {entry.get('split')})"
    if entry.get("split") not in tasks:
        raise InputError(f"{where}: split must be one of {', '.join(tasks)}")
    row: dict[str, Any] = {"model": str(entry.get("model")), "split": entry["split"], "published": True,
                           "tasks": tasks[entry["split"]], "candidates": tasks[entry["split"]] * settings["repeats"]}
    for key in METRICS:
        value = entry.get(key)
        if not finite_number(value):
            raise InputError(f"{where}: {key} must be a number as published, got {value!r}")
        row[key] = value * UNIT_SCALE[units[key]]
    return row


def beside_published(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A run's rows as they stand beside the published (human) ones: each judge-only row marked ``figures:
    "judge"``, and a row calibrated with a human sample first as its calibrated figures (``"calibrated"``),
    then its judge figures.  The published figures are human majority labels: a judge's figures beside them
    must say they are the judge's."""
    shown: list[dict[str, Any]] = []
    for row in rows:
        calibrated = row.get("calibrated")
        if isinstance(calibrated, Mapping) and calibrated:
            values = {key: (calibrated.get(key) or {}).get("value") for key in METRICS}
            shown.append({**row, **values, "figures": "calibrated"})
        shown.append({**row, "figures": "judge"})
    return shown
