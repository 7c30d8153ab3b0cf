"""The baseline release's candidates for the HTML report (``--baseline OLD.json``): where they are, and which.

The results file says where its outputs were (``settings.outputs``, absolute, or relative to the file); a
run given it as ``--baseline`` looks there, then in the results file's own folder (the default layout keeps
``results.json`` inside the outputs), unless ``--baseline-outputs DIR`` says where.  A baseline whose
outputs cannot be found is said once in the report, which builds without its images.

Each row of this run (model x split) is set against the baseline row ``analysis/enrich.py`` chose
(``baseline_model``: the same model, else the only model of the split), so the candidates read are
``<outputs>/<split>/<baseline_model>/<task_id>/<NNN>.<ext>`` with their records, or the folder of the release the
baseline row measured when that release was not the model folder's (``<baseline_model>@<id>``, engine/release.py).  Everything read is
untrusted (the baseline file may come from anywhere): names that are not plain are never made into paths,
and a record that cannot be read leaves that candidate out.  Imports no pytest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..engine.records import Record
from ..engine.release import folder_for
from ..engine.store import Store
from ..tasks import is_plain_name

#: Repeats looked for when the baseline's settings do not say (or say something implausible).
MAX_REPEATS = 1000


@dataclass(frozen=True)
class BaselineCandidate:
    """One candidate of the baseline release: its record (for the outcome) and its image, when on disk."""

    record: Record
    image: Path | None


@dataclass(frozen=True)
class BaselineOutputs:
    """Where the baseline's outputs are (``root``, None when not found), and what was tried."""

    root: Path | None
    tried: tuple[str, ...] = ()

    def missing_note(self, source: str) -> str:
        places = ", ".join(self.tried) or "nowhere (its settings name no outputs folder)"
        return (f"The baseline's images were not found: {source} names no outputs folder that exists here "
                f"(looked in {places}). The comparison of the figures stands; to see its candidates beside "
                "this run's, pass --baseline-outputs DIR (the folder that holds its <split>/<model>/ folders).")


def locate_outputs(results_path: Path, settings: Any, given: str | None, splits: Iterable[str]) -> BaselineOutputs:
    """The baseline's outputs folder: ``given`` (--baseline-outputs), else its settings' ``outputs`` (relative to
    the results file when not absolute), else the results file's folder; the first that holds one of
    ``splits``' folders."""
    places = [Path(given)] if given else _recorded_places(results_path, settings)
    wanted = [name for name in splits if is_plain_name(name)]
    for place in places:
        if place.is_dir() and any((place / split).is_dir() for split in wanted):
            return BaselineOutputs(place)
    return BaselineOutputs(None, tuple(dict.fromkeys(str(place) for place in places)))


def _recorded_places(results_path: Path, settings: Any) -> list[Path]:
    folder = Path(results_path).parent
    recorded = settings.get("outputs") if isinstance(settings, Mapping) else None
    places = [folder / recorded] if isinstance(recorded, str) and recorded else []  # an absolute one stays as is
    return places + [folder]


def baseline_models(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """(model, split) of this run -> the baseline model its row was compared with (plain names only)."""
    found = {}
    for row in rows:
        model, split, old = row.get("model"), row.get("split"), row.get("baseline_model")
        if row.get("baseline") and all(isinstance(v, str) and is_plain_name(v) for v in (model, split, old)):
            found[(str(model), str(split))] = str(old)
    return found


def baseline_releases(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """(model, split) of this run -> the id of the release its baseline row measured (``baseline_release``)."""
    found = {}
    for row in rows:
        release = row.get("baseline_release")
        value = release.get("id") if isinstance(release, Mapping) else None
        if isinstance(value, str):
            found[(str(row.get("model")), str(row.get("split")))] = value
    return found


def worse_tasks(rows: Iterable[Mapping[str, Any]]) -> set[tuple[str, str, str]]:
    """(model, split, task id) whose pass rate fell against the baseline (``baseline_tasks``)."""
    worse = set()
    for row in rows:
        for task in row.get("baseline_tasks") or []:
            if isinstance(task, Mapping) and isinstance(task.get("difference"), (int, float)) and task["difference"] < 0:
                worse.add((str(row.get("model")), str(row.get("split")), str(task.get("task_id"))))
    return worse


def read_candidates(root: Path, split: str, model: str, task_id: str, repeats: int,
                    release: str | None = None) -> list[BaselineCandidate]:
    """The baseline candidates of one task and model, by repeat: those with a readable record; ``release``: the
    id of the release the baseline measured (its folder, ``release.folder_for``)."""
    if not all(is_plain_name(name) for name in (split, model, task_id)):
        return []
    folders = {(split, model): folder_for(root / split, model, release)}
    store = Store(root, claims_dir=root, folders=folders)  # read only: nothing is claimed
    found = []
    for repeat in range(1, repeats + 1):
        record = store.read_record(split, model, task_id, repeat)
        if record is None:
            continue
        image = store.find_candidate(split, model, task_id, repeat, named=record.candidate)
        found.append(BaselineCandidate(record, image if image is not None and _inside(image, root) else None))
    return found


def _inside(path: Path, root: Path) -> bool:
    """A regular file inside the baseline's outputs: a link (to a key file, to /etc) is never read."""
    try:
        return not path.is_symlink() and path.resolve().is_relative_to(Path(root).resolve())
    except OSError:
        return False


def counterpart(entries: list[tuple[int, Any]], repeat: int) -> Any:
    """The baseline entry a candidate is compared with: the same repeat where the baseline has it, else its
    first; None when it has none.  ``entries``: (repeat, entry) in repeat order.  The page picks the same."""
    same = [entry for number, entry in entries if number == repeat]
    return same[0] if same else entries[0][1] if entries else None


def repeats_of(settings: Any, fallback: int) -> int:
    value = settings.get("repeats") if isinstance(settings, Mapping) else None
    return value if isinstance(value, int) and 0 < value <= MAX_REPEATS else fallback
