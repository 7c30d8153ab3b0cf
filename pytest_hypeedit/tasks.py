"""Task files -> validated tasks; reference images and their cache.

A split is one task file (the upstream schema, docs/reference/formats.md).  It comes from a
local path, a URL, or a manifest in ``tasks/`` (source URL + sha256 + images
base).  Everything in a task file is untrusted: a ``task_id`` or an image file
name becomes a path on disk, so anything that is not a plain name is not accepted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeGuard, TypeVar

from .errors import ConfigError, ImageError, InputError, TaskFileError
from .text import image_problem
from .untrusted import MANIFEST_BYTES, TASK_FILE_BYTES, UntrustedInput, load_yaml_file, loads_json, read_bounded

T = TypeVar("T")
#: Downloads a URL's bytes (fetch.http_get unless a test gives its own).
Fetch = Callable[[str], bytes]

#: A plain file or directory name: no separators, no "..", no leading dot.
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}$")
_SPLIT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}$")
IMAGE_SUFFIXES = (".webp", ".png", ".jpg", ".jpeg")
SPLITS_DIR = Path(__file__).resolve().parent / "splits"
DEFAULT_SPLIT = "public"
#: Where a local task file's reference images are when --images-base does not say: beside it, in images/
#: (as examples/tiny-split/ has them).  Never the upstream CDN: a local file's tasks are usually not there.
LOCAL_IMAGES = "images"


@dataclass(frozen=True)
class Task:
    """One validated benchmark task."""

    task_id: str
    input_images: tuple[str, ...]
    task_types: tuple[str, ...]
    instruction: str
    width: int
    height: int
    split: str

    @property
    def aspect_ratio(self) -> float:
        return self.width / self.height


@dataclass(frozen=True)
class SplitSource:
    """Where a split's tasks and images come from."""

    name: str
    location: str  # a path or URL of the task JSON
    sha256: str | None = None  # checked when given
    images_base: str | None = None  # overrides the default images base
    licence: str | None = None
    url_variable: str | None = None  # a manifest's HYPEEDIT_<NAME>_SPLIT_URL, named when the download fails


@dataclass(frozen=True)
class Split:
    source: SplitSource
    tasks: tuple[Task, ...]
    path: Path  # the task file on disk (downloaded into the cache when remote)

    @property
    def name(self) -> str:
        return self.source.name


def is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def is_plain_name(name: Any) -> TypeGuard[str]:
    # fullmatch: "$" would also match before a trailing newline, and "task\n" is no plain folder name
    return isinstance(name, str) and bool(_PLAIN_NAME.fullmatch(name)) and ".." not in name


#: A release id as engine/release.py writes it into the name of a release's folder: 12 hex digits.
_RELEASE_ID = re.compile(r"[0-9a-f]{12}")


def folder_parts(name: Any) -> tuple[str, str | None] | None:
    """A release folder's name as read from disk or a labels file (untrusted): ``<model>`` -> (model, None),
    ``<model>@<release id>`` (engine/release.py ``aside_folder``) -> (model, id); None for any other name."""
    if not isinstance(name, str):
        return None
    model, separator, release_id = name.rpartition("@")
    if not separator:
        return (name, None) if is_plain_name(name) else None
    return (model, release_id) if is_plain_name(model) and _RELEASE_ID.fullmatch(release_id) else None


# --------------------------------------------------------------------------- validation


def parse_tasks(data: Any, *, source: str, split: str) -> tuple[Task, ...]:
    """Validate the decoded JSON of a task file; errors name the file and the task."""
    if not isinstance(data, list):
        raise TaskFileError(f"{source}: a task file is a JSON list of tasks, got {type(data).__name__}")
    tasks, seen = [], set()
    for index, entry in enumerate(data):
        task = _parse_task(entry, where=f"{source}: task #{index + 1}", split=split)
        if task.task_id in seen:
            raise TaskFileError(f"{source}: task {task.task_id!r} appears twice; task ids must be unique")
        seen.add(task.task_id)
        tasks.append(task)
    if not tasks:
        raise TaskFileError(f"{source}: the task list is empty")
    return tuple(tasks)


def _parse_task(entry: Any, *, where: str, split: str) -> Task:
    if not isinstance(entry, dict):
        raise TaskFileError(f"{where}: expected an object, got {type(entry).__name__}")
    task_id = entry.get("task_id")
    if not is_plain_name(task_id):
        raise TaskFileError(
            f"{where}: task_id {task_id!r} is not a plain name (letters, digits, '.', '_', '-'); "
            "it becomes a folder name, so paths and '..' are not accepted"
        )
    where = f"{where.split(': ')[0]}: task {task_id}"
    return Task(
        task_id=task_id,
        input_images=_parse_images(entry.get("input_images"), where),
        task_types=_parse_task_types(entry.get("task_type"), where),
        instruction=_require(entry, "instruction", str, where),
        width=_positive_int(entry, "width", where),
        height=_positive_int(entry, "height", where),
        split=split,
    )


def _require(entry: Mapping[str, Any], key: str, kind: type[T], where: str) -> T:
    value = entry.get(key)
    if not isinstance(value, kind) or (isinstance(value, str) and not value.strip()):
        raise TaskFileError(f"{where}: {key!r} must be a non-empty {kind.__name__}, got {value!r:.80}")
    return value


def _positive_int(entry: Mapping[str, Any], key: str, where: str) -> int:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise TaskFileError(f"{where}: {key!r} must be a positive integer (pixels), got {value!r:.40}")
    return value


def _parse_images(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise TaskFileError(f"{where}: 'input_images' must be a non-empty list of file names")
    for name in value:
        if not is_plain_name(name) or not name.lower().endswith(IMAGE_SUFFIXES):
            raise TaskFileError(
                f"{where}: input image {name!r} is not a plain image file name "
                f"({', '.join(IMAGE_SUFFIXES)}; no paths, no '..')"
            )
    return tuple(value)


def _parse_task_types(value: Any, where: str) -> tuple[str, ...]:
    # Upstream uses a string in most tasks and a list in a few: accept both.
    types = [value] if isinstance(value, str) else value
    if not isinstance(types, list) or not types:
        raise TaskFileError(f"{where}: 'task_type' must be a string or a non-empty list of strings")
    for name in types:
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,39}", name):
            raise TaskFileError(
                f"{where}: task_type {name!r} must be a word (letters, digits, '_'); it becomes a pytest marker"
            )
    return tuple(dict.fromkeys(types))


# --------------------------------------------------------------------------- split sources


def parse_tasks_option(value: str) -> SplitSource:
    """``--tasks [NAME=]PATH|URL``: the split is named after the file's stem unless NAME= is given."""
    name, location = None, value
    match = re.match(r"^([A-Za-z0-9_][A-Za-z0-9_.\-]*)=(.+)$", value)
    if match and not is_url(value):
        name, location = match.groups()
    manifest = shipped_manifest(location)
    if manifest or (location.endswith((".yaml", ".yml")) and not is_url(location)):
        source = load_manifest(manifest or Path(location))
        name = _checked_split_name(name or source.name, value)  # a manifest's name becomes a folder too
        return SplitSource(name, source.location, source.sha256, source.images_base, source.licence,
                           source.url_variable)
    stem = Path(location.split("?")[0].rstrip("/")).stem
    images = None if is_url(location) else str(Path(location).parent / LOCAL_IMAGES)
    return SplitSource(name=_checked_split_name(name or stem, value), location=location, images_base=images)


def _checked_split_name(name: str, value: str) -> str:
    if not (_SPLIT_NAME.fullmatch(name) and ".." not in name):
        raise ConfigError(f"--tasks {value}: split name {name!r} is not a plain name; use --tasks NAME=PATH")
    return name


def shipped_manifest(value: str) -> Path | None:
    """The manifest a bare split name stands for (``--tasks public``, ``--tasks example``): one shipped in
    ``splits/``.  A file of that name in the folder pytest runs in wins, as a path always did."""
    if not _SPLIT_NAME.fullmatch(value) or "." in value or Path(value).is_file():
        return None
    path = SPLITS_DIR / f"{value}.yaml"
    return path if path.is_file() else None


def shipped_labels(value: str) -> list[Path] | None:
    """The rater files a shipped split lists under ``labels`` (``--judge labels:example``), or None."""
    manifest = shipped_manifest(value)
    if manifest is None:
        return None
    labels = _read_manifest(manifest).get("labels") or []
    return [_beside(manifest, str(name)) for name in labels] or None


def shipped_split_names() -> list[str]:
    return sorted(path.stem for path in SPLITS_DIR.glob("*.yaml"))


def load_manifest(path: Path) -> SplitSource:
    """A split manifest (``splits/public.yaml``): name, source URL, sha256, images base, licence.  A local
    ``source`` or ``images_base`` is read relative to the manifest (the example split ships beside it)."""
    data = _read_manifest(path)
    name = str(data.get("name") or path.stem)
    images = data.get("images_base")
    images = str(_beside(path, images)) if isinstance(images, str) and not is_url(images) else images
    if not is_url(data["source"]):
        return SplitSource(name, str(_beside(path, data["source"])), data.get("sha256"), images, data.get("licence"))
    variable = f"HYPEEDIT_{name.upper()}_SPLIT_URL"
    location = os.environ.get(variable) or data["source"]
    return SplitSource(name, location, data.get("sha256"), images, data.get("licence"), variable)


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        data = load_yaml_file(path, MANIFEST_BYTES)
    except (OSError, UntrustedInput) as exc:
        raise ConfigError(f"{path}: cannot read split manifest: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("source"), str):
        raise ConfigError(f"{path}: a split manifest needs at least 'name' and 'source' keys")
    for key in ("name", "sha256", "images_base", "licence"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise ConfigError(f"{path}: split manifest key {key!r} must be text, got {type(data[key]).__name__}")
    return data


def _beside(manifest: Path, location: str) -> Path:
    return (manifest.parent / location).resolve()


def default_sources() -> list[SplitSource]:
    return [load_manifest(SPLITS_DIR / f"{DEFAULT_SPLIT}.yaml")]


def load_split(source: SplitSource, cache_dir: Path, *, fetch: Fetch | None = None) -> Split:
    """Read (downloading once into the cache if remote) and validate one split."""
    path = _task_file_path(source, cache_dir, fetch)
    try:
        raw = read_bounded(path, TASK_FILE_BYTES)
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot read task file ({exc.strerror}); check the --tasks path") from None
    except UntrustedInput as exc:
        raise TaskFileError(f"{path}: task file not accepted: {exc}") from None
    _check_sha256(raw, source, path)
    try:
        data = loads_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, UntrustedInput) as exc:
        raise TaskFileError(f"{path}: not a JSON task file ({exc}); expected a JSON list of tasks") from None
    return Split(source, parse_tasks(data, source=str(path), split=source.name), path)


def _task_file_path(source: SplitSource, cache_dir: Path, fetch: Fetch | None) -> Path:
    if not is_url(source.location):
        return Path(source.location)
    from .fetch import download_once

    key = source.sha256 or hashlib.sha256(source.location.encode()).hexdigest()
    dest = cache_dir / "splits" / f"{source.name}-{key[:16]}.json"
    try:
        return download_once(source.location, dest, fetch=fetch,
                             validate=lambda raw: _check_sha256(raw, source, dest))
    except TaskFileError:
        raise
    except InputError as exc:  # the download itself failed: say what works without it
        raise TaskFileError(f"split {source.name}: {exc}. {_offline_hint(source)}") from None


def _offline_hint(source: SplitSource) -> str:
    local = (f"--tasks PATH for a local copy of the task file (its images in {LOCAL_IMAGES}/ beside it, "
             "or --images-base DIR)")
    if source.url_variable:
        return f"Offline or behind a proxy? Use {local}, or set {source.url_variable} to a mirror of the file"
    return f"Check the URL given to --tasks, or use {local}"


def _check_sha256(raw: bytes, source: SplitSource, path: Path) -> None:
    if source.sha256 and hashlib.sha256(raw).hexdigest() != source.sha256:
        raise TaskFileError(
            f"{path}: sha256 {hashlib.sha256(raw).hexdigest()} does not match the pinned {source.sha256} "
            f"for split {source.name!r} from {source.location}; the file was not used. "
            "Delete it from the cache and rerun, or check the mirror."
        )


# --------------------------------------------------------------------------- reference images


def reference_image_paths(
    task: Task, images_base: str, cache_dir: Path, *, fetch: Fetch | None = None, verify: bool = True,
    checked: "CheckedImages | None" = None,
) -> list[Path]:
    """Local paths of a task's reference images, downloading them once into the cache.

    A downloaded image was decoded before it was kept; a local one is decoded when ``verify``, unless
    ``checked`` remembers it from an earlier run (same path, size and modification time)."""
    paths = []
    for name in task.input_images:
        if is_url(images_base):
            paths.append(_cached_remote_image(task, name, images_base, cache_dir, fetch))
        else:
            paths.append(_local_image(task, name, Path(images_base), verify, checked))
    return paths


def _local_image(task: Task, name: str, base: Path, verify: bool, checked: "CheckedImages | None") -> Path:
    path = base / task.task_id / name
    if not path.is_file():
        where = f"looked for {path}" if base.is_dir() else f"the folder {base} does not exist"
        raise ImageError(
            f"reference image {name!r} of task {task.task_id} (split {task.split}) is missing: {where}. "
            "--images-base names the folder that holds <task_id>/<image> (or a URL); without it, a local "
            f"task file's images are looked for in {LOCAL_IMAGES}/ beside it"
        )
    if verify and not (checked and checked.known(path)):
        check_image_file(path, task)
        if checked is not None:
            checked.add(path)
    return path


class CheckedImages:
    """Reference images decoded once already, remembered in the cache by path, size and modification
    time, so a rerun does not decode every image again (seconds for the public split's 4K images).
    A file that changed (size or time) is decoded again."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            data = loads_json(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}  # none yet, or unreadable: every image is decoded once more
        self._seen: dict[str, list[int]] = data if isinstance(data, dict) else {}
        self._changed = False

    @staticmethod
    def _stamp(path: Path) -> list[int]:
        stat = path.stat()
        return [stat.st_size, stat.st_mtime_ns]

    def known(self, path: Path) -> bool:
        return self._seen.get(str(Path(path).resolve())) == self._stamp(path)

    def add(self, path: Path) -> None:
        with self._lock:
            self._seen[str(Path(path).resolve())] = self._stamp(path)
            self._changed = True

    def save(self) -> None:
        if self._changed:
            from .files import atomic_write_bytes

            atomic_write_bytes(self.path, json.dumps(self._seen).encode("utf-8"))


def _cached_remote_image(task: Task, name: str, base: str, cache_dir: Path, fetch: Fetch | None) -> Path:
    from .fetch import download_once

    base_key = hashlib.sha256(base.rstrip("/").encode()).hexdigest()[:12]
    dest = cache_dir / "images" / base_key / task.task_id / name
    url = f"{base.rstrip('/')}/{task.task_id}/{name}"
    try:
        return download_once(url, dest, fetch=fetch, validate=lambda raw: check_image_bytes(raw, str(url), task))
    except ImageError:
        raise
    except InputError as exc:  # the download itself failed
        raise ImageError(f"reference image {name!r} of task {task.task_id} (split {task.split}): {exc}. "
                         "Offline? Give a local copy of the images with --images-base DIR") from None


def check_image_bytes(raw: bytes, where: str, task: Task | None = None) -> None:
    """Decode an image fully: a truncated or corrupt file is an ImageError naming it, and so is one of more
    pixels than providers.images.MAX_IMAGE_PIXELS, not accepted from its header before it is decoded."""
    import io

    from .providers.images import IMAGE_WORK, PixelsTooMany, open_checked  # a 4K reference decoded is 50 MB

    whose = f" of task {task.task_id} (split {task.split})" if task else ""
    try:
        with IMAGE_WORK, open_checked(io.BytesIO(raw), f"reference image{whose}") as image:  # a few at a time
            image.load()
    except PixelsTooMany as exc:
        raise ImageError(f"{where}: {exc}; replace the file with a smaller one") from None
    except Exception as exc:  # PIL raises many kinds for corrupt data
        raise ImageError(f"{where}: reference image{whose} cannot be decoded ({image_problem(exc)}); "
                         "replace the file") from None


_verified: dict[tuple[str, int, int], bool] = {}


def check_image_file(path: Path, task: Task | None = None) -> None:
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _verified:  # decode each file once per process, not once per repeat
        check_image_bytes(path.read_bytes(), str(path), task)
        _verified[key] = True


def all_task_types(splits: Iterable[Split]) -> list[str]:
    return sorted({t for split in splits for task in split.tasks for t in task.task_types})
