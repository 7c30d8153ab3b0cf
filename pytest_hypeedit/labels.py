"""Human labels in the upstream human-review tool's format (schema version 2).

    {"schema_version": 2,
     "models": {"M01": "<model name>", ...},
     "judgements": {"<task_id>": {"M01": {"001.webp": {"verdict": "PASS" | "FAIL", "note": "...", ...}}}}}

A model name may be ``<model>@<release id>``: the release of ``<model>`` bought aside in that folder of the
outputs (engine/release.py), which the review app shows as a model of its own.  One file is one rater.  A verdict
entry may carry the rater's ``note`` (a string), an extra field the upstream tool ignores, so a file with notes is
still its schema.  Candidates are matched by task, model and repeat number whatever the file extension.  A panel
of several raters is combined by majority; a tie counts as FAIL and is reported as a tie.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, TypedDict

from .engine.records import now_iso
from .errors import LabelsError
from .files import atomic_write_bytes
from .tasks import folder_parts, shipped_labels
from .text import clean_text
from .untrusted import LABELS_BYTES, UntrustedInput, load_json_file

SCHEMA_VERSION = 2
LabelKey = tuple[str, str, int]  # (task_id, model, repeat)
#: The longest note kept from a labels file (characters): a note explains a verdict, it is not a document.
MAX_NOTE = 2000
_REPEAT_FILE = re.compile(r"^(\d{1,4})(\.[A-Za-z]+)?$")


@dataclass(frozen=True)
class RaterLabels:
    """The verdicts of one rater (one labels file)."""

    rater: str
    path: Path
    verdicts: Mapping[LabelKey, bool]  # True = PASS
    models: tuple[str, ...] = ()
    notes: Mapping[LabelKey, str] = field(default_factory=dict)  # the rater's note on a verdict, where given


class VoteEntry(TypedDict):
    """One rater's vote as records and results carry it."""

    rater: str
    verdict: str  # "PASS" or "FAIL"
    note: str | None


@dataclass(frozen=True)
class PanelVerdict:
    passed: bool
    votes: tuple[tuple[str, bool], ...]  # (rater, passed)
    tie: bool = False
    notes: tuple[str | None, ...] = ()  # each vote's note, in the order of ``votes``

    def vote_entries(self) -> list[VoteEntry]:
        """``[{"rater", "verdict", "note"}]``: the votes as records and results carry them (JSON-ready)."""
        notes = self.notes or (None,) * len(self.votes)
        return [{"rater": rater, "verdict": "PASS" if passed else "FAIL", "note": note}
                for (rater, passed), note in zip(self.votes, notes)]

    def human(self) -> dict[str, Any]:
        """A record's ``human`` field: the majority (None on a tie) and every vote with its note."""
        verdict = None if self.tie else ("PASS" if self.passed else "FAIL")
        return {"verdict": verdict, "votes": self.vote_entries()}


@dataclass
class Panel:
    """Several raters' labels, combined by majority."""

    raters: list[RaterLabels] = field(default_factory=list)

    def verdict(self, task_id: str, model: str, repeat: int) -> PanelVerdict | None:
        key = (task_id, model, repeat)
        voters = [r for r in self.raters if key in r.verdicts]
        if not voters:
            return None
        votes = tuple((r.rater, r.verdicts[key]) for r in voters)
        passes = sum(1 for _, passed in votes if passed)
        fails = len(votes) - passes
        notes = tuple(r.notes.get(key) for r in voters)
        return PanelVerdict(passed=passes > fails, votes=votes, tie=passes == fails, notes=notes)

    def keys(self) -> set[LabelKey]:
        return {key for rater in self.raters for key in rater.verdicts}

    def counts_per_rater(self) -> dict[str, Counter[str]]:
        return {r.rater: Counter("PASS" if v else "FAIL" for v in r.verdicts.values()) for r in self.raters}

    def rater_counts(self) -> dict[str, dict[str, int]]:
        """Per rater: how many candidates labelled, passed and failed (JSON-ready)."""
        counts = self.counts_per_rater()
        return {name: {"labelled": c["PASS"] + c["FAIL"], "PASS": c["PASS"], "FAIL": c["FAIL"]}
                for name, c in counts.items()}

    def votes(self) -> dict[LabelKey, tuple[bool, ...]]:
        """Every labelled candidate with its raters' votes (True = PASS), in rater order."""
        return {key: tuple(r.verdicts[key] for r in self.raters if key in r.verdicts) for key in self.keys()}

    def even_vote_warnings(self, keys: Iterable[LabelKey] | None = None) -> list[str]:
        """One line per candidate whose vote count is even: a tie is possible there and counts as FAIL.

        An odd panel (3, 5) never ties; an even count usually means a rater has
        not finished (or the panel is even), which the user should know.  ``keys``
        limits the check to those candidates (e.g. the ones of a run).
        """
        warnings = []
        wanted = None if keys is None else set(keys)
        for (task_id, model, repeat), votes in sorted(self.votes().items()):
            if wanted is not None and (task_id, model, repeat) not in wanted:
                continue
            if len(votes) % 2 == 0:
                passes = sum(votes)
                tie = " (a tie, counted as FAIL)" if passes * 2 == len(votes) else ""
                warnings.append(f"task {task_id} model {model} repeat {repeat:03d}: {len(votes)} votes, "
                                f"{passes} PASS{tie}; use an odd panel so the majority is always defined")
        return warnings


def read_labels(path: Path, known_models: Iterable[str] | None = None) -> RaterLabels:
    """Read and validate one rater's file; every error names the file and the entry."""
    path = Path(path)
    data = _load_json(path)
    aliases = _aliases(data, path, None if known_models is None else set(known_models))
    verdicts: dict[LabelKey, bool] = {}
    notes: dict[LabelKey, str] = {}
    judgements = data.get("judgements", {})
    if not isinstance(judgements, dict):
        raise LabelsError(f"{path}: 'judgements' must map task_id -> alias -> file -> verdict")
    for task_id, by_alias in judgements.items():
        if not isinstance(by_alias, dict):
            raise LabelsError(f"{path}: judgements[{task_id!r}] must map model alias -> file -> verdict")
        for alias, by_file in by_alias.items():
            where = f"{path}: judgements[{task_id!r}][{alias!r}]"
            if alias not in aliases:
                raise LabelsError(f"{where}: alias {alias!r} is not in the file's 'models' map")
            found, found_notes = _file_verdicts(by_file, task_id, aliases[alias], where)
            verdicts.update(found)
            notes.update(found_notes)
    return RaterLabels(rater=path.stem, path=path, verdicts=verdicts, models=tuple(sorted(set(aliases.values()))),
                       notes=notes)


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = load_json_file(path, LABELS_BYTES)
    except OSError as exc:
        raise LabelsError(f"{path}: cannot read labels file ({exc.strerror})") from None
    except UntrustedInput as exc:
        raise LabelsError(f"{path}: not a JSON labels file ({exc})") from None
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        found = data.get("schema_version") if isinstance(data, dict) else type(data).__name__
        raise LabelsError(
            f"{path}: expected the human-review tool's labels, schema_version {SCHEMA_VERSION}, found {found!r}"
        )
    return data


def _aliases(data: Mapping[str, Any], path: Path, known: set[str] | None) -> dict[str, str]:
    models = data.get("models")
    if not isinstance(models, dict) or not all(isinstance(v, str) for v in models.values()):
        raise LabelsError(f"{path}: 'models' must map alias (e.g. M01) -> model name")
    for alias, name in models.items():
        if known is not None and _model_of(name) not in known:
            raise LabelsError(
                f"{path}: models[{alias!r}] = {name!r} is not a known model ({', '.join(sorted(known))}); "
                "fix the name in the file, or add the model with --models-file"
            )
    return dict(models)


def _model_of(name: str) -> str:
    """The model a labels file's model name is of: itself, or ``<model>`` of a release bought aside
    (``<model>@<release id>``, the folder hypeedit-review found it in)."""
    parts = folder_parts(name)
    return parts[0] if parts is not None and parts[1] is not None else name


def _file_verdicts(by_file: object, task_id: str, model: str, where: str) -> tuple[dict[LabelKey, bool], dict[LabelKey, str]]:
    if not isinstance(by_file, dict):
        raise LabelsError(f"{where}: must map candidate file (e.g. 001.webp) -> {{'verdict': 'PASS'|'FAIL'}}")
    out: dict[LabelKey, bool] = {}
    notes: dict[LabelKey, str] = {}
    for name, entry in by_file.items():
        match = _REPEAT_FILE.match(str(name))
        verdict = entry.get("verdict") if isinstance(entry, dict) else None
        if not match or int(match.group(1)) < 1:
            raise LabelsError(f"{where}[{name!r}]: not a candidate file name like 001.webp")
        if not isinstance(verdict, str) or verdict.upper() not in ("PASS", "FAIL"):
            raise LabelsError(f"{where}[{name!r}]: verdict must be 'PASS' or 'FAIL', got {verdict!r}")
        key = (task_id, model, int(match.group(1)))
        out[key] = verdict.upper() == "PASS"
        note = _note(entry.get("note"), f"{where}[{name!r}]")
        if note:
            notes[key] = note
    return out, notes


def _note(value: object, where: str) -> str | None:
    """A rater's note as kept: a string without control characters, at most MAX_NOTE long; None when empty."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise LabelsError(f"{where}: 'note' must be text, got {type(value).__name__}; fix or remove it")
    return clean_note(value)


def clean_note(text: str) -> str | None:
    """Whitespace (newlines, tabs) made single spaces and other control characters dropped, so a note is one
    line in a terminal and a table; cut at MAX_NOTE characters.  None when nothing is left."""
    text = clean_text(text, MAX_NOTE, multiline=False)  # escapes dropped whole; a CI command line is marked
    text = "".join(ch for ch in " ".join(text.split()) if ch.isprintable())
    return text[:MAX_NOTE] or None


#: The sampling design the review app writes beside a sample's labels (sample_design.py): not a rater's file.
DESIGN_FILE = "sample-design.json"


def expand_label_paths(paths: Iterable[Path]) -> list[Path]:
    """Files as given; a folder stands for every rater file in it (``*.json``, hidden and temp files and the
    sampling design left out); the name of a shipped split that has labels (``example``) for its rater files."""
    expanded: list[Path] = []
    for path in map(Path, paths):
        shipped = None if path.exists() else shipped_labels(str(path))
        if shipped:  # a shipped split's name: its labels (labels:example)
            expanded.extend(shipped)
            continue
        if not path.is_dir():
            expanded.append(path)
            continue
        files = sorted(p for p in path.glob("*.json") if not p.name.startswith(".") and p.name != DESIGN_FILE)
        if not files:
            raise LabelsError(f"{path}: a labels folder with no rater file (*.json) in it")
        expanded.extend(files)
    return expanded


def read_panel(paths: Iterable[Path], known_models: Iterable[str] | None = None) -> Panel:
    known = None if known_models is None else list(known_models)
    raters = _distinct_names([read_labels(p, known) for p in expand_label_paths(paths)])
    names = [r.rater for r in raters]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise LabelsError(f"two labels files share the rater name(s) {duplicates} (the file stem); rename one")
    return Panel(raters)


def _distinct_names(raters: list[RaterLabels]) -> list[RaterLabels]:
    """Raters of the same stem in different folders (``public/ann.json``, ``private/ann.json``: one folder per
    split) are told apart by their folder: ``public/ann``."""
    stems = [r.rater for r in raters]
    renamed = []
    for rater in raters:
        if stems.count(rater.rater) > 1 and rater.path is not None:
            renamed.append(dataclasses.replace(rater, rater=f"{rater.path.parent.name}/{rater.rater}"))
        else:
            renamed.append(rater)
    return renamed


# --------------------------------------------------------------------------- writing (the review app)


def new_document(models: Mapping[str, str], **meta: Any) -> dict[str, Any]:
    """An empty labels document: ``models`` maps alias (M01) -> model name; meta keys go on top."""
    stamp = now_iso()
    return {"schema_version": SCHEMA_VERSION, **meta, "created_at": stamp, "updated_at": stamp,
            "models": dict(models), "judgements": {}}


def load_document(path: Path) -> dict[str, Any]:
    """The raw document of an existing labels file, validated like read_labels (errors name the file)."""
    read_labels(path)
    return _load_json(Path(path))


def set_verdict(doc: dict[str, Any], task_id: str, alias: str, candidate_file: str, verdict: str | None,
                **extra: Any) -> None:
    """Record (or, with verdict None, remove) one verdict, the upstream way: task -> alias -> file."""
    if alias not in doc.get("models", {}):
        raise LabelsError(f"alias {alias!r} is not in the labels document's 'models' map")
    by_alias = doc.setdefault("judgements", {}).setdefault(task_id, {})
    by_file = by_alias.setdefault(alias, {})
    if verdict is None:
        by_file.pop(candidate_file, None)
        if not by_file:
            del by_alias[alias]
        if not by_alias:
            del doc["judgements"][task_id]
        return
    if verdict not in ("PASS", "FAIL"):
        raise LabelsError(f"verdict must be 'PASS' or 'FAIL', got {verdict!r}")
    by_file[candidate_file] = {"verdict": verdict, "judged_at": now_iso(), **extra}


def get_verdict(doc: Mapping[str, Any], task_id: str, alias: str, candidate_file: str) -> dict[str, Any] | None:
    entry: dict[str, Any] | None = doc.get("judgements", {}).get(task_id, {}).get(alias, {}).get(candidate_file)
    return entry


def write_document(path: Path, doc: dict[str, Any]) -> None:
    """Write atomically and durably: temp file in the same folder, fsync, rename, fsync the folder.

    A crash at any point leaves either the previous file or the new one, never
    a half-written file.
    """
    doc["updated_at"] = now_iso()
    text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    atomic_write_bytes(Path(path), text.encode("utf-8"), durable=True)
