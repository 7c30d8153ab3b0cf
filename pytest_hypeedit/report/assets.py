"""The HTML report's image files: thumbnails and full-size views, built in parallel and cached
across reruns by content hash.  Imports no pytest.

Everything the page shows lives under ``<report dir>/hypeedit-assets/``, so the report's
folder (the HTML file, pytest-html's ``assets/`` and this folder) is a CI artifact on its own:

    <split>/<model>/<task_id>/<NNN>.thumb.webp   every candidate's thumbnail (the failure browser's rows)
    <split>/<model>/<task_id>/<NNN>.full.<ext>   a failed candidate's full-size view (opened by a click)
    <split>/<model>/<task_id>/<NNN>.diff.webp    with a baseline: its difference from the baseline's candidate
    <split>/references/<task_id>/<name>.thumb.webp, .full.<ext>   the same for a reference image
    baseline/<split>/<model>/<task_id>/<NNN>.*   the baseline release's candidates (--baseline), copied in
    cache.json                                    what each file was built from (the cache)

**Thumbnails** are WebP, 160 px on their long side (the browser shows them about 88 px wide,
so they stay sharp on a high-density screen): about 1.7 KB for a 1024 px photo-like image,
against 2.4 KB as a JPEG of the same size (measured with bench/bench_report.py's pictures).  A
picture full of fine detail weighs more (6 KB at quality 70 for bench/bench_report.py's hard
photos): a thumbnail over ``THUMB_MAX_BYTES`` is encoded again at lower qualities, so that the
thumbnails, which every candidate has, weigh at most 6 KB for 1024 px photos or noise (a picture
with noise at the thumbnail's own scale stays at 9 KB at quality 30).
Views are WebP too (quality 80, method 2): 9% lighter than JPEG quality 85 at 1280 px on a noisy
picture, for about three times the encoding time, which the views' count (the failures) bounds.

**The full-size view rule**: a candidate that is already a JPEG or WebP of at most
``view_side`` pixels on its long side, and within its share of the folder's budget, is
copied byte for byte (it *is* the original); anything else (PNG, larger images, heavier
files) is scaled down (never up) and re-encoded as WebP.  ``view_side`` is 1280 by default
(``--html-views``); ``--html-full-resolution`` keeps every view at its original's size (the
original itself when a browser shows its format) and sets no budget.  The views are built last, once the run knows how many
there are and what the thumbnails and the page weigh: each gets an even share of what is
left of the folder's budget (``--html-max-mb``), and its side is chosen to fit that share
(judged from its thumbnail's weight per pixel, then encoded smaller again until it fits), down
to ``VIEW_FLOOR`` pixels: a view is always twice its thumbnail's side at least.  A view that
still overruns its share at that side steps down through ``VIEW_QUALITIES`` (a detailed or
noisy picture: 28 KB at 320 px and quality 80, 12 KB at quality 20); only a view over its share
at the lowest quality overruns the budget.

**The cache**: each file's key is a hash of its recipe and of the bytes of every image it is
made from.  A rerun whose key matches the one in ``cache.json`` (and whose file is still
there) writes nothing.  Files the previous run made and this one does not need (a
candidate that passes now) are deleted, so the folder holds what the page shows.

The work runs on a thread pool: Pillow releases the GIL while it decodes, resizes and
encodes, so threads use every core without the start-up and pickling of processes, and
jobs are submitted as records arrive, overlapping the run itself.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypedDict, TypeVar

from ..files import atomic_write_bytes, read_regular, sha256_bytes

if TYPE_CHECKING:
    from PIL import Image

T = TypeVar("T")

ASSETS_DIR = "hypeedit-assets"
CACHE_FILE = "cache.json"
THUMB_SIZE = 160  # the browser shows thumbnails about 88 px wide: sharp at twice that density
THUMB_QUALITY = 70
#: A thumbnail heavier than this is encoded again at the next of THUMB_QUALITIES: every candidate has one, so
#: their weight is what the views cannot share (7,000 candidates of 1024 px photos or noise: at most 42 MB).
THUMB_MAX_BYTES = 6000
THUMB_QUALITIES = (THUMB_QUALITY, 50, 30)
THUMB_SUFFIX = ".thumb.webp"
VIEW_SIDE = 1280  # default long side of a full-size view (--html-views): a person can judge an edit at it
VIEW_QUALITY = 80
#: The qualities a view at its floor steps down through until it fits its share (the last one even when not).
VIEW_QUALITIES = (VIEW_QUALITY, 65, 50, 35, 20)
#: The difference image (against the baseline's candidate) is brightened this many times: most edits are subtle.
DIFF_GAIN = 3
DIFF_QUALITY = 70
#: The smallest view side a budget may force: below this a view would show little more than its thumbnail.
VIEW_FLOOR = 320
#: A view's byte share is rounded down to this step, so a rerun whose other files moved by a few bytes reuses
#: the views it made.
SHARE_STEP = 4096
#: Formats a browser shows that are already compact: copied as they are when small enough.
COPYABLE_FORMATS = {"JPEG": "jpg", "WEBP": "webp"}
#: What --html-full-resolution copies as it is: every format a browser shows.
FULL_FORMATS = {**COPYABLE_FORMATS, "PNG": "png"}
#: Bumped whenever a recipe below changes, so a rerun rebuilds instead of reusing stale files.
RECIPE_VERSION = "4"


@dataclass(frozen=True)
class Built:
    """What one asset became: its path under the assets folder, pixel size, or why it failed."""

    name: str
    size: tuple[int, int] | None = None
    error: str | None = None
    key: str | None = None
    written: bool = False


@dataclass(frozen=True)
class ImagePair:
    """A thumbnail and a full-size view of one source image."""

    thumb: Built
    view: Built | None  # None when views are off (``--html-views 0``) or not built yet
    source: Path | None = None  # the original, and its content hash: what the view is built from
    source_hash: str = ""
    root: Path | None = None  # the folder the original must lie in as a regular file (the outputs), if any


# --------------------------------------------------------------------------- recipes (pure image work)


def content_key(*parts: str) -> str:
    """The cache key of a file: the recipe version and its parts (settings, the inputs' content hashes)."""
    return hashlib.sha256("\0".join((RECIPE_VERSION, *parts)).encode()).hexdigest()


digest = sha256_bytes


def thumbnail_bytes(data: bytes, size: int = THUMB_SIZE) -> tuple[bytes, tuple[int, int]]:
    """A WebP thumbnail fitting size x size, decoded at reduced scale where the format allows."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        image.draft("RGB", _fitted(image.size, size))  # JPEG: decode at 1/2..1/8 scale, a few times faster
        rgb = _upright_rgb(image)
    rgb.thumbnail((size, size))
    return _lightest_within(rgb, THUMB_QUALITIES, THUMB_MAX_BYTES), rgb.size


def view_bytes(data: bytes, side: int, share: int | None = None,
               density: float | None = None) -> tuple[bytes, str, tuple[int, int]]:
    """The full-size view: the original when it is a small JPEG/WebP (within ``share`` bytes), else a WebP
    fitting side x side, smaller when ``share`` asks: sized from ``density`` (the thumbnail's bytes per pixel,
    how hard the picture is to compress) and re-encoded once more if it came out well over.  ``side`` 0: full
    resolution (--html-full-resolution), the original as it is when a browser shows it."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        fmt, size = image.format, image.size
        if not side and fmt in FULL_FORMATS and not _rotated(image):
            return data, FULL_FORMATS[fmt], size
        side = side or max(size)
        if (fmt in COPYABLE_FORMATS and max(size) <= side and not _rotated(image)
                and (share is None or len(data) <= share)):
            return data, COPYABLE_FORMATS[fmt], size
        target = min(side, max(size)) if share is None else _side_for(share, density, side, max(size))
        image.draft("RGB", _fitted(size, target))  # JPEG: decode at a reduced scale when the view is small
        rgb = _upright_rgb(image)
    rgb.thumbnail((target, target))
    encoded = _webp(rgb, VIEW_QUALITY) if share is None else _fitted_to(rgb, share)
    return encoded, "webp", rgb.size


def _fitted_to(rgb: Image.Image, share: int) -> bytes:
    """``rgb`` encoded within ``share`` bytes: scaled down (in place) while over it, to VIEW_FLOOR at the least,
    then at lower qualities (VIEW_QUALITIES); the lowest quality's bytes when even that is over."""
    encoded = _webp(rgb, VIEW_QUALITY)
    while len(encoded) > share and max(rgb.size) > VIEW_FLOOR:
        # bytes go with the pixels, so the side with the square root; a little under, so one step mostly suffices
        smaller = int(max(rgb.size) * 0.95 * (share / len(encoded)) ** 0.5)
        rgb.thumbnail((max(VIEW_FLOOR, min(smaller, max(rgb.size) - 1)),) * 2)
        encoded = _webp(rgb, VIEW_QUALITY)
    return encoded if len(encoded) <= share else _lightest_within(rgb, VIEW_QUALITIES[1:], share)


def _lightest_within(image: Image.Image, qualities: Sequence[int], limit: int) -> bytes:
    """``image`` at the first of ``qualities`` (highest first) whose WebP weighs at most ``limit`` bytes, else at
    the last."""
    for quality in qualities:
        encoded = _webp(image, quality)
        if len(encoded) <= limit:
            break
    return encoded


def difference_bytes(current: bytes, baseline: bytes) -> tuple[bytes, tuple[int, int]]:
    """The pixel difference of two views (the baseline's scaled to the current one's size), brightened
    DIFF_GAIN times, as a WebP: black where the two releases' candidates agree."""
    from PIL import Image, ImageChops

    with Image.open(io.BytesIO(current)) as a, Image.open(io.BytesIO(baseline)) as b:
        ours = _upright_rgb(a)
        theirs = _upright_rgb(b).resize(ours.size, Image.Resampling.BILINEAR)
    difference = ImageChops.difference(ours, theirs).point(lambda v: min(255, v * DIFF_GAIN))
    return _webp(difference, DIFF_QUALITY), ours.size


def _side_for(share: int, density: float | None, side: int, original: int) -> int:
    """The long side whose JPEG should weigh about ``share`` bytes: a square's pixels at ``density``."""
    if not density:
        return min(side, original)
    fitting = int((share / density) ** 0.5)
    return max(min(VIEW_FLOOR, original), min(side, original, fitting))


def _fitted(size: tuple[int, int], box: int) -> tuple[int, int]:
    """The size an image of ``size`` takes when scaled to fit a box x box square."""
    scale = box / max(size)
    return max(1, round(size[0] * scale)), max(1, round(size[1] * scale))


def _upright_rgb(image: Image.Image) -> Image.Image:
    from ..providers.images import orientation, upright

    return upright(image.convert("RGB"), orientation(image))  # the one orientation rule (signals, review app)


def _rotated(image: Image.Image) -> bool:
    """An EXIF orientation other than 1: copied as is, some viewers would show it on its side."""
    try:
        return image.getexif().get(0x0112, 1) not in (0, 1)
    except Exception:  # an unreadable EXIF block: re-encode rather than guess
        return True


def _webp(image: Image.Image, quality: int) -> bytes:
    out = io.BytesIO()
    # method 2: a fifth of the default's (4) time at a thumbnail's size, for 1% more bytes (measured)
    image.save(out, format="WEBP", quality=quality, method=2)
    return out.getvalue()


# --------------------------------------------------------------------------- the cache


class CacheEntry(TypedDict):
    """What ``cache.json`` keeps of one file this run needs."""

    key: str  # what it was built from (``content_key``)
    size: list[int] | None  # its pixel size, [width, height]


class AssetCache:
    """``cache.json``: for each file, the key it was built from and its pixel size."""

    def __init__(self, root: Path):
        self.path = root / CACHE_FILE
        self.previous = self._read()
        # a view's suffix follows its format, so it is looked up by name without the suffix
        self.by_stem = {name.rsplit(".", 1)[0]: name for name in self.previous}
        self.current: dict[str, CacheEntry] = {}

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # no cache yet, or a damaged one: everything is rebuilt
        if not isinstance(data, dict) or data.get("recipe") != RECIPE_VERSION:
            return {}
        files = data.get("files")
        return files if isinstance(files, dict) else {}

    def hit(self, root: Path, name: str, key: str) -> Built | None:
        entry = self.previous.get(name)
        if isinstance(entry, dict) and entry.get("key") == key and (root / name).is_file():
            size = entry.get("size")
            return Built(name, tuple(size) if size else None, key=key)
        return None

    def find(self, stem: str, key: str) -> str | None:
        """The name of a cached file ``stem.*`` built from ``key`` (a view's suffix follows its format)."""
        name = self.by_stem.get(stem)
        entry = self.previous.get(name) if name else None
        return name if isinstance(entry, dict) and entry.get("key") == key else None

    def keep(self, built: Built) -> None:
        if built.key and not built.error:
            self.current[built.name] = {"key": built.key, "size": list(built.size) if built.size else None}

    def save_and_prune(self, root: Path) -> None:
        """Write the cache and delete the files an earlier run made that this run did not need."""
        for name in set(self.previous) - set(self.current):
            if _plain_relative(name):
                try:
                    (root / name).unlink(missing_ok=True)
                except OSError:  # a folder under that name, or no permission: leave it
                    pass
        document = {"recipe": RECIPE_VERSION, "files": dict(sorted(self.current.items()))}
        atomic_write_bytes(self.path, json.dumps(document, separators=(",", ":")).encode("utf-8"))


def _plain_relative(name: str) -> bool:
    """Only names this module makes are deleted: relative, no '..' (cache.json is untrusted input)."""
    parts = Path(name).parts
    return bool(parts) and not Path(name).is_absolute() and ".." not in parts


# --------------------------------------------------------------------------- the builder


@dataclass
class AssetBuilder:
    """Builds the report's images on a thread pool, reusing what the cache says is current."""

    root: Path
    view_side: int = VIEW_SIDE
    use_cache: bool = True
    full_resolution: bool = False  # --html-full-resolution: views are the originals, at their own size
    workers: int = field(default_factory=lambda: os.cpu_count() or 2)

    def __post_init__(self) -> None:
        self.cache = AssetCache(self.root) if self.use_cache else None
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[str, Future[Any]] = {}  # a Future[ImagePair] or Future[Built] by the job's kind

    # ---- submitting

    def image_pair(self, source: Path, stem: str, root: Path | None = None) -> Future[ImagePair]:
        """The thumbnail of ``source`` as ``<stem>.thumb.webp``; its full-size view ``<stem>.full.<ext>`` comes
        from ``views`` once every thumbnail is made.  ``root``: ``source`` is read only as a regular file inside
        it, never through a symbolic link (files.open_regular); the thumbnail's error says why otherwise."""
        return self._submit(f"pair:{stem}", self._build_pair, Path(source), stem, root)

    def views(self, pairs: Sequence[ImagePair], budget: int | None) -> dict[str, Future[Built]]:
        """Start the full-size views of ``pairs`` (thumbnail name -> Future[Built]), each within an even share
        of ``budget`` bytes (None: no budget, each at ``view_side``)."""
        wanted = [pair for pair in pairs if pair.source is not None and not pair.thumb.error]
        share = None
        if budget is not None and wanted and not self.full_resolution:
            share = max(SHARE_STEP, budget // len(wanted) // SHARE_STEP * SHARE_STEP)
        return {pair.thumb.name: self._submit(f"view:{pair.thumb.name}", self._view, pair, share)
                for pair in wanted}

    def difference(self, current: Built, baseline: Built, stem: str) -> Future[Built]:
        """``<stem>.diff.webp``: the difference of two built views (``difference_bytes``) -> Future[Built]."""
        return self._submit(f"diff:{stem}", self._difference, current, baseline, stem)

    def used_bytes(self) -> int:
        """What the files built so far weigh (the views' budget is what is left)."""
        total = 0
        for future in self._futures.values():
            if future.done() and not future.exception():
                for entry in _built_of(future.result()):
                    if not entry.error:
                        total += _size_of(self.root / entry.name)
        return total

    def _submit(self, job_id: str, function: Callable[..., T], *args: Any) -> Future[T]:
        if job_id not in self._futures:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="hypeedit-assets")
            self._futures[job_id] = self._pool.submit(function, *args)
        return self._futures[job_id]

    def finish(self) -> tuple[int, int]:
        """Wait for every job, write the cache, prune what is no longer shown.

        Returns how many files were written and how many were reused from an earlier run."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        built = [b for future in self._futures.values() for b in _built_of(future.result())]
        if self.cache is not None:
            for entry in built:
                self.cache.keep(entry)
            self.cache.save_and_prune(self.root)
        written = sum(entry.written for entry in built)
        return written, sum(1 for entry in built if not entry.error) - written

    def cancel(self) -> None:
        """Drop the jobs not started (a run that ends without its session finish): exit does not wait for them."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    # ---- jobs (run on the pool)

    def _build_pair(self, source: Path, stem: str, root: Path | None) -> ImagePair:
        try:
            data = _read(source, root)
        except OSError as exc:
            error = f"cannot read {source.name}: {exc.strerror or exc}"
            return ImagePair(Built(f"{stem}{THUMB_SUFFIX}", error=error), None)
        source_hash = digest(data)
        thumb = self._cached_or_built(f"{stem}{THUMB_SUFFIX}", content_key("thumb", str(THUMB_SIZE), source_hash),
                                      lambda: thumbnail_bytes(data))
        return ImagePair(thumb, None, source if self.view_side else None, source_hash, root)

    def _view(self, pair: ImagePair, share: int | None) -> Built:
        assert pair.source is not None  # views() asks only for pairs with a source
        stem = pair.thumb.name.removesuffix(THUMB_SUFFIX)
        side = 0 if self.full_resolution else self.view_side
        key = content_key("view", str(side), str(share), pair.source_hash)
        name = self.cache.find(stem + ".full", key) if self.cache else None
        cached = self.cache.hit(self.root, name, key) if self.cache and name else None
        if cached:
            return cached
        try:
            data = _read(pair.source, pair.root)
            encoded, ext, size = view_bytes(data, side, share, self._density(pair.thumb))
        except OSError as exc:
            return Built(f"{stem}.full.webp", error=f"cannot read {pair.source.name}: {exc.strerror or exc}")
        except Exception as exc:  # PIL raises many kinds for a corrupt file
            return Built(f"{stem}.full.webp", error=_image_error(exc))
        return self._write(f"{stem}.full.{ext}", encoded, size, key)

    def _difference(self, current: Built, baseline: Built, stem: str) -> Built:
        key = content_key("diff", str(DIFF_GAIN), current.key or current.name, baseline.key or baseline.name)
        return self._cached_or_built(f"{stem}.diff.webp", key, lambda: difference_bytes(
            (self.root / current.name).read_bytes(), (self.root / baseline.name).read_bytes()))

    def _density(self, thumb: Built) -> float | None:
        """The thumbnail's bytes per pixel: how much a view of the same picture will weigh per pixel."""
        if not thumb.size:
            return None
        return _size_of(self.root / thumb.name) / max(1, thumb.size[0] * thumb.size[1]) or None

    def _cached_or_built(self, name: str, key: str, make: Callable[[], tuple[bytes, tuple[int, int]]]) -> Built:
        cached = self.cache.hit(self.root, name, key) if self.cache else None
        if cached:
            return cached
        try:
            encoded, size = make()
        except Exception as exc:  # a corrupt image must not cost the whole report: the page shows the gap
            return Built(name, error=_image_error(exc))
        return self._write(name, encoded, size, key)

    def _write(self, name: str, data: bytes, size: tuple[int, int], key: str) -> Built:
        atomic_write_bytes(self.root / name, data)
        return Built(name, size, key=key, written=True)


def _read(source: Path, root: Path | None) -> bytes:
    return read_regular(source, root) if root is not None else source.read_bytes()


def _built_of(result: object) -> list[Built]:
    if isinstance(result, ImagePair):
        return [result.thumb] + ([result.view] if result.view else [])
    return [result] if isinstance(result, Built) else []


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _image_error(exc: Exception) -> str:
    return f"unreadable image ({type(exc).__name__}: {exc})"


def clear_folder(root: Path) -> None:
    """Remove a scratch assets folder (the self-contained report inlines its images)."""
    shutil.rmtree(root, ignore_errors=True)
