"""Which folder each model's release buys into (engine/release.py): chosen once, on the controller, before
anything is bought, and handed to every xdist worker, so that every process of the run reads and writes the same
folders whatever another run does to the outputs meanwhile.  What it finds worth saying (another release's
candidates kept beside this one's) is said once, under pytest's header, before the first item."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Iterator

import pytest

from ..config import RunConfig
from ..engine.records import Record
from ..engine.release import claim, place, records_in, release_of
from ..engine.store import Store
from ..errors import ConfigError

#: The workerinput key under which the controller hands the folders to every xdist worker.
FOLDERS_KEY = "hypeedit_release_folders"
#: The folders as the controller chose them, for ``pytest_configure_node``.
FOLDERS_STASH = pytest.StashKey[list[list[str]]]()


def place_releases(config: pytest.Config, run: RunConfig) -> RunConfig:
    """``run`` with the folder of each model's release (``RunConfig.folders``): a worker takes the controller's;
    the controller looks at the outputs (nothing written: ``claim_folders`` marks them once the checks hold)."""
    given = getattr(config, "workerinput", {}).get(FOLDERS_KEY)
    if given is not None:
        return dataclasses.replace(run, folders={(split, model): folder for split, model, folder in given})
    folders: dict[tuple[str, str], str] = {}
    notes = []
    for split in run.splits:
        for spec in run.models:
            split_dir = run.outputs / split.name
            placement = place(split_dir, spec.name, release_of(spec), _records(split_dir / spec.name, split.name))
            if placement.folder != spec.name:
                folders[(split.name, spec.name)] = placement.folder
            if placement.note:
                notes.append(placement.note)
    config.stash[FOLDERS_STASH] = [[split, model, folder] for (split, model), folder in folders.items()]
    run = dataclasses.replace(run, folders=folders)
    if not hasattr(config, "workerinput") and not config.pluginmanager.has_plugin("hypeedit-releases"):
        config.pluginmanager.register(ReleaseNotice(header_lines(run), notes), "hypeedit-releases")
    return run


def header_lines(run: RunConfig) -> list[str]:
    """The release of each model the run measures, and where its candidates are."""
    lines = []
    for spec in run.models:
        where = sorted({f"{split.name}/{run.folders.get((split.name, spec.name), spec.name)}" for split in run.splits})
        lines.append(f"hypeedit release of {spec.name}: {release_of(spec).describe()}"
                     + (f"; candidates in {', '.join(where)}" if where else ""))
    return lines


def claim_folders(run: RunConfig) -> None:
    """Mark each folder the run buys into as its release's, before anything is bought: a run of another release
    started meanwhile that marked it first is a usage error (nothing bought), never two releases in one folder."""
    for split in run.splits:
        for spec in run.models:
            folder = run.folders.get((split.name, spec.name), spec.name)
            release = release_of(spec)
            if not claim(run.outputs / split.name, folder, release):
                raise ConfigError(f"--outputs {run.outputs}: {split.name}/{folder} was taken by another release of "
                                  f"{spec.name} while this run started ({release.describe()} was to go there); "
                                  "nothing was bought: run again")


def _records(plain: Path, split: str) -> Iterator[Record]:
    """The readable records of a model folder (read only as ``place`` needs them); a file that is no record is
    left out, as the run leaves it out (engine/store.py)."""
    store = Store(plain.parent.parent)
    for path in records_in(plain):
        record, _ = store.load_record(split, plain.name, path.parent.name, int(path.stem))
        if record is not None:
            yield record


def worker_folders(config: pytest.Config) -> Any:
    """What the controller hands to a worker: the folders it chose (JSON-able lists)."""
    return config.stash.get(FOLDERS_STASH, [])


class ReleaseNotice:
    """Under pytest's header, before the first item, also under ``-q`` (which hides the header): the release of
    each model (``header_lines``; ``--estimate`` prints them too, so a CI workflow can key its cache by the id),
    then what is worth saying about the outputs (candidates of another release kept, not counted: ``notes``)."""

    def __init__(self, header: list[str], notes: list[str]):
        self.header, self.notes = header, notes

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        for line in self.header:
            reporter.write_line(line)
        for line in self.notes:
            reporter.write_line(line, yellow=True, bold=True)
