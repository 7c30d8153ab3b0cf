"""What the review app shows: the candidates of one split, blinded and shuffled.

Model names never leave this module's ``Catalog`` except through the labels
file's ``models`` map: the browser sees aliases (M01, M02, ...) and opaque
ids.  Aliases are stable for a given (outputs, seed) and are kept from an
existing labels file, so a rater's file never changes meaning on a restart.
The order is shuffled with the seed and the rater's name, so panel members do
not all see the same sequence (order effects average out over the panel).
Each release of a model is its own entry: the release bought aside in
``<model>@<release id>`` (engine/release.py) gets an alias of its own, which the
labels file maps to that folder's name, so a run's ``--calibrate`` reads the
verdicts on the release it measured (glue/human_labels.py).
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from ..engine.store import Store
from ..tasks import Task, folder_parts

CANDIDATE_FILE = re.compile(r"^(\d{3,4})\.(webp|png|jpg|jpeg)$", re.IGNORECASE)


@dataclass(frozen=True)
class Candidate:
    item_id: str
    model: str  # server side only: never serialised to the browser
    alias: str
    task_id: str
    repeat: int
    path: Path

    @property
    def file_name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class Catalog:
    split: str
    tasks: Mapping[str, Task]
    candidates: tuple[Candidate, ...]  # in review order
    aliases: Mapping[str, str]  # alias -> model name
    warnings: tuple[str, ...] = ()

    def by_id(self) -> dict[str, Candidate]:
        return {c.item_id: c for c in self.candidates}


def opaque_id(*parts: object) -> str:
    """A short id that names a thing without revealing anything about it."""
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:16]


def scan_outputs(split_dir: Path, task_ids: set[str]) -> tuple[dict[str, list[tuple[str, int, Path]]], list[str]]:
    """model -> [(task_id, repeat, path)] under ``<outputs>/<split>``, and warnings on what was skipped.  A
    model here is a release's folder: ``<model>``, or ``<model>@<release id>`` for a release bought aside, a
    model of its own to the rater and in the labels file's ``models`` map.  The
    candidate of a repeat is the one the run judged (engine/store.py ``Store.find``: the file its record names,
    never a stray beside it), so a rater's verdict lands on the file the run counted; a symbolic link (file or
    folder) is skipped, never followed."""
    found: dict[str, list[tuple[str, int, Path]]] = {}
    warnings: list[str] = []
    split = split_dir.name
    for model_dir in _model_folders(split_dir, warnings):
        store, model = store_of(split_dir.parent, split, model_dir.name)
        for task_dir in sorted(p for p in model_dir.iterdir() if p.is_dir()):
            if task_dir.name not in task_ids:
                warnings.append(f"{task_dir}: not a task of the split; skipped")
                continue
            found.setdefault(model_dir.name, []).extend(_task_candidates(store, split, model, task_dir, warnings))
    return found, warnings


def store_of(outputs: Path, split: str, folder: str) -> tuple[Store, str]:
    """The store that reads a release's folder (``<model>`` or ``<model>@<id>``, a name ``_model_folders``
    accepted) as the run that wrote it did, and the model its records name: the model, never the folder."""
    parts = folder_parts(folder)
    model = parts[0] if parts is not None else folder
    return Store(outputs, folders={(split, model): folder}), model


def _model_folders(split_dir: Path, warnings: list[str]) -> list[Path]:
    """The folders of ``split_dir`` that hold a release's candidates: ``<model>`` (the release that wrote there
    first) and ``<model>@<release id>`` (every other release, engine/release.py), each its own entry; a folder
    named otherwise (a name from disk is untrusted) is skipped with a warning, a hidden one without a word."""
    chosen = []
    for path in sorted(p for p in split_dir.iterdir() if p.is_dir()):
        if folder_parts(path.name) is not None:
            chosen.append(path)
        elif not path.name.startswith("."):
            warnings.append(f"{path}: not a model folder (<model> or <model>@<release id>); skipped")
    return chosen


def _task_candidates(store: Store, split: str, model: str, task_dir: Path,
                     warnings: list[str]) -> list[tuple[str, int, Path]]:
    repeats = sorted({int(m.group(1)) for m in map(CANDIDATE_FILE.match, (p.name for p in task_dir.iterdir()))
                      if m and int(m.group(1)) >= 1})
    chosen = []
    for repeat in repeats:
        record = store.read_record(split, model, task_dir.name, repeat)
        found = store.find(split, model, task_dir.name, repeat, named=record.candidate if record else None)
        if found.unusable:
            warnings.append(f"{found.unusable}; skipped")
            continue
        for stray in found.strays:
            named = (f"the candidate is {found.candidate.name}" if found.candidate
                     else f"its record names {found.missing}, which is gone")
            warnings.append(f"{stray}: not the file its record names ({named}); skipped")
        if found.candidate is not None:
            chosen.append((task_dir.name, repeat, found.candidate))
    return chosen


def assign_aliases(models: Iterable[str], seed: int, existing: Mapping[str, str] | None = None) -> dict[str, str]:
    """alias -> model: keep the aliases of an existing file, give new models the next free ones in seeded order."""
    aliases = dict(existing or {})
    known = set(aliases.values())
    order = sorted(set(models) - known)
    random.Random(f"aliases:{seed}").shuffle(order)
    width = max(2, len(str(len(known) + len(order))))
    number = 1
    for model in order:
        while f"M{number:0{width}d}" in aliases:
            number += 1
        aliases[f"M{number:0{width}d}"] = model
    return aliases


def build_catalog(outputs: Path, split: str, tasks: Iterable[Task], *, seed: int, rater: str,
                  existing_aliases: Mapping[str, str] | None = None) -> Catalog:
    tasks_by_id = {t.task_id: t for t in tasks}
    split_dir = outputs / split
    found, warnings = scan_outputs(split_dir, set(tasks_by_id)) if split_dir.is_dir() else ({}, [])
    aliases = assign_aliases(found, seed, existing_aliases)
    alias_of = {model: alias for alias, model in aliases.items()}
    candidates = [
        Candidate(opaque_id(split, alias_of[m], t, r), m, alias_of[m], t, r, path)
        for m, entries in sorted(found.items()) for t, r, path in entries
    ]
    random.Random(f"order:{seed}:{rater}").shuffle(candidates)
    return Catalog(split, tasks_by_id, tuple(candidates), aliases, tuple(warnings))
