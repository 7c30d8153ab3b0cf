"""The sampling design of a calibration sample: which candidates could have been drawn, with what probability.

``hypeedit-review --sample N --sample-seed S`` draws a random sample of a split's judged candidates (those whose
record holds a PASS or FAIL verdict) and writes its design beside the labels, as ``sample-design.json``::

    {"schema": "hypeedit-sample-design/1", "split": "public", "seed": 3, "requested": 150,
     "created_at": "...", "method": "...",
     "strata": [{"model": "seedream-4.5", "split": "public",
                 "population": [["<task_id>", 1], ...],     every candidate that could have been drawn
                 "sample": [["<task_id>", 7], ...]}]}        the ones that were

A stratum is one model on one split (or, in a design written by other means, one judge verdict of it:
``"verdict": "PASS"`` or ``"FAIL"``, a sample stratified by the judge's verdict; --calibrate weighs each label by
its verdict stratum).  The sample is stratified: each stratum gets its share of the requested
size in proportion to its population (largest remainders; at least two where it has two, so the judge's error
can be estimated per model), drawn without replacement, so every candidate of a stratum had the same inclusion
probability ``len(sample) / len(population)``.  Within a split one seeded permutation of the (task, repeat)
positions serves every model: a stratum takes the first positions of it that are in its population (a simple
random sample of it), so two models, or two releases drawn with the same seed, are labelled on the same
positions as far as they both have them.  The plugin's ``--calibrate`` reads this file (analysis/calibration.py
weighs each label by its inclusion probability).

Read back from disk the file is untrusted: every field is checked and an error names the file and the field.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .engine.records import now_iso
from .errors import InputError
from .files import atomic_write_bytes
from .labels import DESIGN_FILE
from .tasks import folder_parts, is_plain_name
from .untrusted import DESIGN_BYTES, UntrustedInput, load_json_file

DESIGN_SCHEMA = "hypeedit-sample-design/1"
#: The fewest a stratum is given when it has that many: a model's judge error needs labels of its own.
MIN_PER_STRATUM = 2
METHOD = ("stratified by model and split; proportional allocation by largest remainders, at least "
          f"{MIN_PER_STRATUM} per stratum; within a stratum a simple random sample without replacement: the first "
          "positions of one seeded permutation of the split's (task, repeat) positions")

Position = tuple[str, int]  # (task_id, repeat)


@dataclass(frozen=True)
class Stratum:
    model: str
    split: str
    population: tuple[Position, ...]
    sample: tuple[Position, ...]
    # "PASS" or "FAIL": a stratum of the model's candidates the judge gave that verdict (a sample stratified by
    # the judge's verdict, each with its own inclusion probability); None: the model's candidates whatever it said
    verdict: str | None = None

    @property
    def inclusion(self) -> float:
        """Every candidate's chance of being drawn: n_h / N_h."""
        return len(self.sample) / len(self.population) if self.population else 0.0


@dataclass(frozen=True)
class Design:
    split: str
    seed: int
    requested: int
    strata: tuple[Stratum, ...]
    created_at: str = ""
    path: Path | None = None  # the file it was read from

    def stratum(self, model: str, split: str) -> Stratum | None:
        return next((s for s in self.strata if s.model == model and s.split == split), None)

    def strata_of(self, model: str, split: str) -> tuple[Stratum, ...]:
        """Every stratum of a model and split: one, or one per judge verdict when the sample was stratified by it."""
        return tuple(s for s in self.strata if s.model == model and s.split == split)

    @property
    def size(self) -> int:
        return sum(len(s.sample) for s in self.strata)

    def sampled(self) -> set[tuple[str, str, int]]:
        """(task_id, model, repeat) of every drawn candidate, the key labels files use."""
        return {(task, s.model, repeat) for s in self.strata for task, repeat in s.sample}

    def to_json(self) -> dict[str, Any]:
        return {"schema": DESIGN_SCHEMA, "split": self.split, "seed": self.seed, "requested": self.requested,
                "created_at": self.created_at, "method": METHOD,
                "strata": [{"model": s.model, "split": s.split, **({"verdict": s.verdict} if s.verdict else {}),
                            "population_size": len(s.population),
                            "sample_size": len(s.sample), "inclusion_probability": s.inclusion,
                            "population": [list(p) for p in s.population], "sample": [list(p) for p in s.sample]}
                           for s in self.strata]}


# --------------------------------------------------------------------------- drawing


def allocate(sizes: Mapping[str, int], requested: int) -> dict[str, int]:
    """Each stratum's share of ``requested`` in proportion to its size, by largest remainders, then raised to
    min(MIN_PER_STRATUM, size); never more than a stratum holds."""
    total = sum(sizes.values())
    if total == 0:
        return {key: 0 for key in sizes}
    requested = min(requested, total)
    exact = {key: requested * size / total for key, size in sizes.items()}
    shares = {key: math.floor(value) for key, value in exact.items()}
    by_remainder = sorted(sizes, key=lambda key: (-(exact[key] - shares[key]), key))
    for key in by_remainder[: requested - sum(shares.values())]:
        shares[key] += 1
    return {key: min(sizes[key], max(shares[key], min(MIN_PER_STRATUM, sizes[key]))) for key in sizes}


def draw(split: str, populations: Mapping[str, Iterable[Position]], requested: int, seed: int) -> Design:
    """A stratified sample of ``requested`` candidates of one split, ``populations`` by model."""
    by_model = {model: sorted(set(positions)) for model, positions in sorted(populations.items())}
    shares = allocate({model: len(p) for model, p in by_model.items()}, requested)
    order = shared_order(split, by_model, seed)
    strata = []
    for model, population in by_model.items():
        members = set(population)
        chosen = [position for position in order if position in members][: shares[model]]
        strata.append(Stratum(model, split, tuple(population), tuple(sorted(chosen))))
    return Design(split, seed, requested, tuple(strata), created_at=now_iso())


def shared_order(split: str, populations: Mapping[str, Sequence[Position]], seed: int) -> list[Position]:
    """One seeded permutation of every (task, repeat) position of the split, the same for every model."""
    positions = sorted({p for population in populations.values() for p in population})
    random.Random(f"hypeedit-sample:{seed}:{split}").shuffle(positions)
    return positions


def parse_size(text: str, population: int) -> int:
    """``--sample 150`` (candidates) or ``--sample 15%`` (of the judged candidates) -> a number of candidates."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100 * population if raw.endswith("%") else float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0 or (not raw.endswith("%") and value != int(value)):
        raise InputError(f"--sample {text!r}: give a number of candidates (e.g. 150) or a share of the judged "
                         "candidates (e.g. 15%)")
    return max(1, round(value))


# --------------------------------------------------------------------------- the file


def design_path(labels_folder: Path) -> Path:
    return Path(labels_folder) / DESIGN_FILE


def write_design(path: Path, design: Design) -> None:
    text = json.dumps(design.to_json(), indent=1) + "\n"
    atomic_write_bytes(Path(path), text.encode("utf-8"), durable=True)


def read_design(path: Path) -> Design:
    """The design in ``path``, checked field by field (a doctored or foreign file is not accepted, by name)."""
    path = Path(path)
    try:
        data = load_json_file(path, DESIGN_BYTES)  # a few KB: the sample's keys and its seed
    except OSError as exc:
        raise InputError(f"{path}: cannot read the sampling design ({exc.strerror})") from None
    except UntrustedInput as exc:
        raise InputError(f"{path}: the sampling design is not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != DESIGN_SCHEMA:
        raise InputError(f"{path}: not a sampling design (expected schema {DESIGN_SCHEMA!r}); it is read because "
                         f"it is named {DESIGN_FILE} beside the labels: rename it or remove it")
    split = _name(data.get("split"), path, "split")
    strata = data.get("strata")
    if not isinstance(strata, list):
        raise InputError(f"{path}: 'strata' must be a list of strata")
    return Design(split, _int(data.get("seed"), path, "seed"), _int(data.get("requested"), path, "requested"),
                  tuple(_stratum(entry, path, i) for i, entry in enumerate(strata)),
                  created_at=str(data.get("created_at") or ""), path=path)


def _stratum(entry: object, path: Path, i: int) -> Stratum:
    where = f"strata[{i}]"
    if not isinstance(entry, dict):
        raise InputError(f"{path}: {where} must be an object with model, split, population and sample")
    stratum = Stratum(_name(entry.get("model"), path, f"{where}.model", release=True),
                      _name(entry.get("split"), path, f"{where}.split"),
                      _positions(entry.get("population"), path, f"{where}.population"),
                      _positions(entry.get("sample"), path, f"{where}.sample"), _verdict(entry.get("verdict"), path, where))
    if not set(stratum.sample) <= set(stratum.population):
        raise InputError(f"{path}: {where}: the sample holds candidates outside the stratum's population")
    return stratum


def _verdict(value: object, path: Path, where: str) -> str | None:
    if value is None or (isinstance(value, str) and value in ("PASS", "FAIL")):
        return value
    raise InputError(f"{path}: {where}.verdict must be \"PASS\" or \"FAIL\" (the judge's verdict the stratum holds), "
                     f"got {value!r}")


def _positions(value: object, path: Path, where: str) -> tuple[Position, ...]:
    if not isinstance(value, list):
        raise InputError(f"{path}: {where} must be a list of [task_id, repeat] pairs")
    found = []
    for item in value:
        if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str) or not is_plain_name(item[0])
                or isinstance(item[1], bool) or not isinstance(item[1], int) or item[1] < 1):
            raise InputError(f"{path}: {where}: {item!r} is not a [task_id, repeat] pair")
        found.append((item[0], item[1]))
    if len(set(found)) != len(found):
        raise InputError(f"{path}: {where} names a candidate twice")
    return tuple(found)


def _name(value: object, path: Path, where: str, release: bool = False) -> str:
    """A plain name; with ``release``, also a release bought aside (``<model>@<release id>``, its folder)."""
    if isinstance(value, str) and (is_plain_name(value) or (release and folder_parts(value) is not None)):
        return value
    wanted = "a plain name or <model>@<release id> (12 hex digits)" if release else "a plain name"
    raise InputError(f"{path}: {where} must be {wanted}, got {value!r}")


def _int(value: object, path: Path, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{path}: {where} must be a whole number, got {value!r}")
    return value


def designs_beside(label_paths: Iterable[Path]) -> list[Design]:
    """The designs beside the labels given to the plugin: in each folder, or beside each file (once each)."""
    found: dict[Path, Design] = {}
    for path in map(Path, label_paths):
        candidate = design_path(path if path.is_dir() else path.parent)
        key = candidate.resolve()
        if key not in found and candidate.is_file():
            found[key] = read_design(candidate)
    return list(found.values())
