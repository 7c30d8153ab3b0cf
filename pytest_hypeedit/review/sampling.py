"""The review app on a calibration sample: draw it (``--sample``), or review the one drawn already.

The population is the split's judged candidates: the images the catalog found whose record beside them holds a
PASS or FAIL verdict (records are read as untrusted input: a record that does not name its own candidate, or
says anything else, leaves the candidate out).  The verdict itself is never shown: only whether there is one.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from ..engine.records import FAIL, PASS
from ..errors import InputError
from ..sample_design import Design, design_path, draw, parse_size, read_design, write_design
from .catalog import Catalog, store_of


def judged_populations(catalog: Catalog, outputs: Path) -> dict[str, list[tuple[str, int]]]:
    """model (a release's folder) -> the (task, repeat) of its candidates that hold a PASS or FAIL verdict."""
    found: dict[str, list[tuple[str, int]]] = {}
    stores = {folder: store_of(outputs, catalog.split, folder) for folder in {c.model for c in catalog.candidates}}
    for candidate in catalog.candidates:
        store, model = stores[candidate.model]  # a release's folder (<model>@<id>) holds its model's records
        record = store.read_record(catalog.split, model, candidate.task_id, candidate.repeat)
        if record is not None and record.outcome in (PASS, FAIL) and record.candidate == candidate.file_name:
            found.setdefault(candidate.model, []).append((candidate.task_id, candidate.repeat))
    return found


def restrict_to_sample(catalog: Catalog, args: argparse.Namespace, labels_folder: Path) -> tuple[Catalog, Design | None]:
    """The catalog limited to the sample: the design beside the labels, else a new one when ``--sample`` asks."""
    path = design_path(labels_folder)
    if path.is_file():
        design = read_design(path)
        _check_same_request(design, args, catalog)
    elif args.sample:
        populations = judged_populations(catalog, args.outputs)
        judged = sum(len(p) for p in populations.values())
        if not judged:
            raise InputError(f"--sample {args.sample}: no candidate under {args.outputs / catalog.split} has a verdict "
                             "in its record yet; run the benchmark (pytest --model ...) first")
        design = draw(catalog.split, populations, parse_size(args.sample, judged), args.sample_seed)
        write_design(path, design)
        design = dataclasses.replace(design, path=path)
    else:
        return catalog, None
    return _limited(catalog, design), design


def _check_same_request(design: Design, args: argparse.Namespace, catalog: Catalog) -> None:
    if design.split != catalog.split:
        raise InputError(f"{design.path}: a sample of split {design.split!r}, but this review is of split "
                         f"{catalog.split!r}; give another --labels folder")
    if args.sample is None:
        return
    requested = parse_size(args.sample, sum(len(s.population) for s in design.strata))
    if (requested, args.sample_seed) != (design.requested, design.seed):
        raise InputError(f"{design.path}: a sample of {design.requested} (seed {design.seed}) was drawn already, and "
                         f"its raters label it; drop --sample to review it, or give another --labels folder for a "
                         "new sample (deleting the file would leave the labels already given without their design)")


def _limited(catalog: Catalog, design: Design) -> Catalog:
    wanted = design.sampled()
    kept = tuple(c for c in catalog.candidates if (c.task_id, c.model, c.repeat) in wanted)
    missing = len(wanted) - len(kept)
    warnings = catalog.warnings + ((f"{missing} candidates of the sample ({design.path}) are no longer in the "
                                    "outputs; they are left out",) if missing else ())
    return dataclasses.replace(catalog, candidates=kept, warnings=warnings)
