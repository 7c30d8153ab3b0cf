"""A candidate belongs to the release that made it.

A model's *release* is what answered its requests: the route, the provider's model id, the base URL the requests
went to (origin and path: never a user, a password, a query or a fragment, where a key could hide), the model's
options that may change the image, and a label the team sets (``release:`` in a models file, ``--release``).
Its id is the first 12 hex digits of the SHA-256 of these, as canonical JSON: the same release gives the same id
on every machine, and a change to any of them gives another.

Every record carries its release (``Record.release``), and a candidate of one release is never counted for
another.  Each release has a folder of its own under the outputs:

    <outputs>/<split>/<model>/                 the model's folder: the release that wrote there first
    <outputs>/<split>/<model>@<id>/            every other release of the model, each in its own folder
    <outputs>/.hypeedit-releases/<split>/<folder>.json   which release each folder holds (its *marker*)

so a new release buys its own candidates in its own place and nothing of the old one is moved or overwritten (it
was paid for; ``--baseline`` reads it).  A model folder without a marker was written by an earlier version of
the plugin, whose records name no release: it is the current release's (and marked so) only when that is proved:
no label is set, and every record there that holds a candidate names the route and provider model id of the
current release (those versions recorded nothing else of it).  Otherwise the folder is another release's: kept,
never counted, and said once (``Placement.note``).

The options that only govern how a call is made, not what it asks for (timeouts, polling, waits, download caps,
how a reply is delivered, a price) are left out of the id: changing them keeps the release.  Every other option
is in it, an adapter's own ones included: an option the plugin does not know may change the image.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Protocol
from urllib.parse import urlsplit, urlunsplit

from ..errors import ConfigError
from ..files import atomic_write_bytes
from ..secrets import base_url
from ..untrusted import RECORD_BYTES, UntrustedInput, loads_json_bytes

#: A release label: a plain word of letters, digits and ``_.+-:``, at most 64 characters (it is printed in the
#: terminal, the report and CI logs, and recorded in every record).
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+:\-]{0,63}$")
#: Model options that change how a call is made, never what it asks for: left out of the release id.
TRANSPORT_OPTIONS = frozenset({"timeout_s", "deadline_s", "max_image_mb", "poll_s", "poll_max_s", "max_wait_s",
                               "wait_s", "delivery", "reference_fee", "batch_poll_s", "batch_poll_max_s",
                               "batch_max_wait_s", "batch_linger_s", "batch_inline_max_bytes",
                               "batch_inline_max_lines"})
#: The folder of the markers naming the release each model folder holds (hidden, beside the claims: no split is
#: named so, and the layout under each split stays the upstream review tool's).
MARKERS = ".hypeedit-releases"
#: Between a model's name and a release id in the folder of a release that is not the model folder's.
SEPARATOR = "@"
_ID = re.compile(r"^[0-9a-f]{12}$")


def check_label(value: Any, where: str) -> str | None:
    """A release label as given (``where``: the option or the models file entry), or None for no label; a label
    that is not a plain word is a ConfigError naming ``where``."""
    if value is None or value == "":
        return None
    if isinstance(value, date):  # YAML reads release: 2026-11-28 as a date
        value = value.isoformat()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):  # release: 3, release: 1.4
        value = str(value)
    if not isinstance(value, str) or not _LABEL.fullmatch(value):
        shown = repr(value)[:80]
        raise ConfigError(f"{where}: release label {shown} is not a plain label: give 1 to 64 letters, digits or "
                          "_ . + - : starting with a letter or digit (e.g. 2026-11-28 or v1.4.0-rc1)")
    return value


def parse_release_options(values: Iterable[str], models: Iterable[str]) -> dict[str, str]:
    """``--release LABEL`` (every model of the run) and ``--release MODEL=LABEL`` (one) -> model -> label."""
    names = list(models)
    labels: dict[str, str] = {}
    for text in values:
        model, sep, label = str(text).rpartition("=")
        where = f"--release {str(text)[:80]!r}"
        if sep and model not in names:
            raise ConfigError(f"{where}: {model[:64]!r} is not a model of this run ({', '.join(names) or 'none'}); "
                              "give --release LABEL for every model, or --release MODEL=LABEL with a --model")
        checked = check_label(label, where)
        if checked is None:
            raise ConfigError(f"{where}: no label given; give --release LABEL or --release MODEL=LABEL")
        for name in ([model] if sep else names):
            labels[name] = checked
    return labels


class ReleaseParts(Protocol):
    """What a release is made of, as a models file entry gives it (registry.py ``ModelSpec``, which imports this
    module to check its labels): the route, the provider's model id, the options and the label."""

    @property
    def route(self) -> str: ...
    @property
    def provider_model(self) -> str: ...
    @property
    def options(self) -> Mapping[str, Any]: ...
    @property
    def release(self) -> str | None: ...


@dataclass(frozen=True)
class Release:
    """What answered a model's requests (see the module docstring)."""

    route: str
    provider_model: str
    base_url: str | None  # None: the route's own default
    options: Mapping[str, Any]
    label: str | None = None

    @property
    def id(self) -> str:
        text = json.dumps({"route": self.route, "provider_model": self.provider_model, "base_url": self.base_url,
                           "options": dict(self.options), "label": self.label}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def as_record(self) -> dict[str, Any]:
        """What a record keeps of it: everything, and its id."""
        return {"id": self.id, "label": self.label, "route": self.route, "provider_model": self.provider_model,
                "base_url": self.base_url, "options": dict(self.options)}

    def as_row(self) -> dict[str, Any]:
        """What a results row names (``row["release"]``)."""
        return {"id": self.id, "label": self.label, "route": self.route, "provider_model": self.provider_model}

    def describe(self) -> str:
        """``ep-rel-b (release 2026-11-28, id 0a1b2c3d4e5f)``: the model id, the label, the id."""
        label = f"release {self.label}, " if self.label else ""
        return f"{self.provider_model} via {self.route} ({label}id {self.id})"


def release_of(spec: ReleaseParts) -> Release:
    """The release a run of ``spec`` buys from, with this process's environment (the base URL variables)."""
    options = {key: spec.options[key] for key in sorted(spec.options) if key not in TRANSPORT_OPTIONS}
    return Release(route=spec.route, provider_model=spec.provider_model, base_url=_public_url(spec.route),
                   options=options, label=spec.release)


def _public_url(route: str) -> str | None:
    """The route's base URL when moved (``HYPEEDIT_<PROVIDER>_BASE_URL``), scheme, host, port and path only."""
    moved = base_url(route, "")
    if not moved:
        return None
    parts = urlsplit(moved)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def record_release_id(record_release: Any) -> str | None:
    """The id a record's ``release`` names (a record is untrusted: anything but a 12-hex id is None)."""
    value = record_release.get("id") if isinstance(record_release, dict) else None
    return value if isinstance(value, str) and _ID.fullmatch(value) else None


def belongs(record: Any, release: Release) -> bool:
    """Whether a record (``engine.records.Record``) may be counted for ``release``: it names this release, or it
    names none (an earlier version's) and what it recorded (route, provider model id) is this release's, which
    carries no label."""
    if record.release is not None:
        return record_release_id(record.release) == release.id
    return proves_current(record, release)


def proves_current(record: Any, release: Release) -> bool:
    """An earlier version's record (no release) is this release's: no label is set, and the route and provider
    model id it recorded are this release's (a record that holds no candidate recorded none: it proves nothing
    against it)."""
    if release.label is not None:
        return False
    if not _has_content(record):
        return True
    return (record.route, record.provider_model) == (release.route, release.provider_model)


def _has_content(record: Any) -> bool:
    return bool(record.candidate or record.route or record.provider_model or record.verdict or record.judgements)


# --------------------------------------------------------------------------- where a release's candidates are


@dataclass(frozen=True)
class Placement:
    """The folder (under ``<outputs>/<split>/``) a release's candidates go to, and what to say about it once."""

    folder: str
    note: str | None = None


def aside_folder(model: str, release: Release) -> str:
    return f"{model}{SEPARATOR}{release.id}"


def marker_path(split_dir: Path, folder: str) -> Path:
    """Where the marker of ``<split_dir>/<folder>`` is: ``<outputs>/.hypeedit-releases/<split>/<folder>.json``."""
    return split_dir.parent / MARKERS / split_dir.name / f"{folder}.json"


def read_marker(marker: Path) -> str | None:
    """The release id a marker names; None when there is none (or it is unreadable: a file that is no marker of
    ours names no release)."""
    try:
        with open(marker, "rb") as handle:
            data = loads_json_bytes(handle.read(RECORD_BYTES + 1))
    except (OSError, UntrustedInput, ValueError):
        return None
    return record_release_id(data)


def write_marker(marker: Path, release: Release) -> str | None:
    """Mark a folder as ``release``'s, unless another process marked it first; the id the marker names after
    (None: it cannot be written, a read-only outputs folder: nothing is bought there either)."""
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        temporary = marker.parent / f".{marker.name}.{os.getpid()}.part"
        atomic_write_bytes(temporary, (json.dumps(release.as_record(), sort_keys=True, indent=2) + "\n").encode())
        try:
            os.link(temporary, marker)  # fails when a marker is there: the first writer's stands
        except FileExistsError:
            pass
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                raise
            if not marker.exists():  # a filesystem without hard links: a rename, checked first
                os.replace(temporary, marker)
        temporary.unlink(missing_ok=True)
    except OSError:
        return None
    return read_marker(marker)


def place(split_dir: Path, model: str, release: Release, records: Iterable[Any]) -> Placement:
    """The folder of ``release``'s candidates of ``model`` under ``split_dir`` (see the module docstring), as the
    disk says now; nothing is written (``claim`` marks it once the run may buy).  ``records``: the records in the
    model folder, read only when it has no marker."""
    plain = split_dir / model
    marked = read_marker(marker_path(split_dir, model))
    if marked is None and plain.is_dir() and not _unmarked(release, records):
        return Placement(aside_folder(model, release), _earlier_note(plain, model, release))
    if marked in (None, release.id):
        return Placement(model)
    aside = aside_folder(model, release)
    return Placement(aside, _other_note(plain, aside, model, release))


def claim(split_dir: Path, folder: str, release: Release) -> bool:
    """Mark ``folder`` (``place``'s choice) as ``release``'s; False when another release's marker got there first
    (another run meanwhile): nothing may be bought into it.  A marker that cannot be written (a read-only outputs
    folder, where nothing is bought either) is no obstacle."""
    marker = marker_path(split_dir, folder)
    marked = read_marker(marker)
    if marked is None:
        marked = write_marker(marker, release)
    return marked in (None, release.id)


def _unmarked(release: Release, records: Iterable[Any]) -> bool:
    """Whether an unmarked model folder is ``release``'s: every record there belongs to it (or there is none)."""
    return all(belongs(record, release) for record in records)


def _earlier_note(plain: Path, model: str, release: Release) -> str:
    return (f"hypeedit: {plain} holds records of another release of {model} (written by an earlier version, which "
            f"recorded no release, or naming another provider model): kept, not counted; this run's release, "
            f"{release.describe()}, buys its own in {plain.parent / aside_folder(model, release)}")


def _other_note(plain: Path, aside: str, model: str, release: Release) -> str:
    return (f"hypeedit: {model}: release {release.describe()} is in {plain.parent / aside}; {plain} holds another "
            "release's candidates (kept, not counted)")


def records_in(plain: Path) -> Iterator[Path]:
    """The record files of an unmarked model folder (``<task>/<NNN>.json``), links never followed."""
    try:
        tasks = sorted((entry for entry in os.scandir(plain) if entry.is_dir(follow_symlinks=False)),
                       key=lambda entry: entry.name)
    except OSError:
        return
    for task in tasks:
        try:
            names = sorted(entry.name for entry in os.scandir(task.path) if entry.is_file(follow_symlinks=False))
        except OSError:
            continue
        for name in names:
            if re.fullmatch(r"\d{3,}\.json", name):
                yield Path(task.path, name)


def folder_for(split_dir: Path, model: str, release_id: str | None) -> str:
    """The folder of a release named by id (a baseline's row), as ``place`` left it: the model folder when its
    marker names it (or it has none, an earlier version's), else ``<model>@<id>`` when that folder exists."""
    if release_id is None or not _ID.fullmatch(release_id):
        return model
    marked = read_marker(marker_path(split_dir, model))
    aside = f"{model}{SEPARATOR}{release_id}"
    if marked != release_id and (split_dir / aside).is_dir():
        return aside
    return model
