"""Pixel diagnostics beside a verdict: what a candidate did, measured cheaply and deterministically.

Never a verdict: they say where to look ("judged PASS but unchanged", "the wrong size"), the judge and people
decide.  Stored once in the record (``signals``), computed where the candidate is judged; a rerun that finds
them does not compute them again.  numpy and Pillow only.

    width, height   the candidate's size as a viewer shows it (its EXIF orientation applied)
    size_match      exactly the task's target width x height
    aspect_match    its aspect ratio within 2% of the target's
    ssim            structural similarity of the luminance of the first reference image and the candidate
                    (Wang, Bovik, Sheikh & Simoncelli 2004, as scikit-image computes it by default: 7 x 7 uniform
                    windows, K1 = 0.01, K2 = 0.03, sample covariances), both at a common size: the reference's
                    aspect ratio, COMMON_SIDE pixels on the long side
    delta_e         mean CIE76 colour difference Delta E*ab between them at that size (sRGB, D65 white, CIE Lab)
    unchanged       (near-)identical to the reference: ssim >= UNCHANGED_SSIM and delta_e <= UNCHANGED_DELTA_E
                    (a Delta E of 2.3 is about one just noticeable difference: Sharma 2003)

Cost: a candidate just bought is not decoded again: the adapter that checks it keeps a preview of at most
SOURCE_SIDE pixels a side (``preview_of``), from which the signals are measured (on a thread of their own while
its judge is asked: engine/measurer.py); a candidate read back from disk
is decoded once, a few at a time (providers.images.IMAGE_WORK), in the same turn as it is compared: a candidate
waiting for its turn holds no pixels, so a batch whose hundreds of lines land together holds a few previews, not
one per line.  The reference is reduced once and kept, in memory and in the cache folder the caller names
(``<cache>/signals/``), since every repeat of every model shares it.  bench/bench_signals.py measures it at
the tasks' real sizes.
"""

from __future__ import annotations

import hashlib
import io
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..files import atomic_write_bytes
from .preview import Preview

if TYPE_CHECKING:
    from PIL import Image

    from ..tasks import Task

#: A reference image as the cache knows it: (resolved path, size, mtime in ns).
RefKey = tuple[str, int, int]

COMMON_SIDE = 256
#: The long side of a candidate's preview: twice the common size, so the last box filter averages real pixels.
SOURCE_SIDE = 2 * COMMON_SIDE
ASPECT_TOLERANCE = 0.02
UNCHANGED_SSIM, UNCHANGED_DELTA_E = 0.98, 2.0
SIGNAL_KEYS = ("width", "height", "size_match", "aspect_match", "unchanged", "ssim", "delta_e")
_WINDOW = 7
_K1, _K2, _RANGE = 0.01, 0.03, 255.0


def preview_of(image: Image.Image) -> Preview:
    """The preview of a loaded PIL image: reduced by a whole factor, alpha flattened on white, then box-filtered
    into SOURCE_SIDE x SOURCE_SIDE (never up), and turned upright by its EXIF orientation (providers.images
    .orientation: the report and the review app show it so too).  The same steps for every candidate and
    reference, fresh or read from disk, so a candidate's signals do not depend on where it was measured."""
    from PIL import Image

    from ..providers.images import orientation, upright, upright_size

    turn = orientation(image)  # read from the original: reduce and convert drop the EXIF block
    factor = max(1, min(image.size) // (2 * SOURCE_SIDE))
    small = image.reduce(factor) if factor > 1 else image
    if small.mode in ("RGBA", "LA", "PA") or "transparency" in small.info:
        rgba = small.convert("RGBA")
        flat = Image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        small = flat
    small = small.convert("RGB")
    if max(small.size) > SOURCE_SIDE:
        small.thumbnail((SOURCE_SIDE, SOURCE_SIDE), Image.Resampling.BOX)
    return Preview(upright_size(image.size, turn), upright(small, turn))


def compute_signals(candidate: Path | Preview, target: tuple[int, int], reference: Path | None,
                    cache: Path | None = None) -> dict[str, Any]:
    """The signals of one candidate, from its file or its ``Preview`` (see the module docstring); pixel
    comparisons None when they cannot be made.  ``cache``: the folder whose ``signals/`` keeps reduced
    references across processes (None: in memory only)."""
    from ..providers.images import IMAGE_WORK

    # reduced before the turn below: reducing takes a turn of its own, and IMAGE_WORK is not reentrant
    small = REFERENCES.get(reference, cache) if reference is not None else None
    # One turn, a few at a time: a candidate from disk is decoded, compared and dropped in it, so none waits
    # holding its preview; and dozens of calls in flight must not each hold their arrays (and the GIL).
    with IMAGE_WORK:
        preview = candidate if isinstance(candidate, Preview) else _preview_from_file(candidate)
        return _measured(preview, target, small)


def _measured(preview: Preview, target: tuple[int, int], small: SmallReference | None) -> dict[str, Any]:
    width, height = preview.size
    signals: dict[str, Any] = {"width": width, "height": height, "size_match": (width, height) == tuple(target),
                               "aspect_match": aspect_matches((width, height), target),
                               "unchanged": False, "ssim": None, "delta_e": None}
    if small is None:
        return signals
    ours = _at_common_size(preview, small.rgb.shape[1::-1])
    signals["ssim"] = round(ssim_against(small.window, luminance(ours)), 4)
    signals["delta_e"] = round(mean_distance(small.lab, lab(ours)), 3)
    signals["unchanged"] = signals["ssim"] >= UNCHANGED_SSIM and signals["delta_e"] <= UNCHANGED_DELTA_E
    return signals


def _preview_from_file(candidate: Path) -> Preview:
    """A candidate read back from disk (reused, or from an adapter that made no preview): decoded once more,
    by a caller that holds an IMAGE_WORK turn."""
    from PIL import Image

    with Image.open(candidate) as image:
        image.load()
        return preview_of(image)


def aspect_matches(size: tuple[int, int], target: tuple[int, int]) -> bool:
    return abs(math.log((size[0] / size[1]) / (target[0] / target[1]))) <= math.log1p(ASPECT_TOLERANCE)


def common_size(width: int, height: int) -> tuple[int, int]:
    scale = COMMON_SIDE / max(width, height)
    return max(8, round(width * scale)), max(8, round(height * scale))


def _at_common_size(preview: "Preview", size: tuple[int, int]) -> np.ndarray:
    """A preview at ``size`` (the reference's common size): (height, width, 3) uint8.  References and
    candidates take exactly the same path here, so an unchanged copy measures as unchanged."""
    from PIL import Image

    return np.asarray(preview.image.resize(size, Image.Resampling.BOX), dtype=np.uint8)


@dataclass(frozen=True)
class SmallReference:
    """A reference image at the common size, with what every comparison needs of it computed once."""

    rgb: np.ndarray
    #: the reference's side of SSIM: every candidate of the task is compared with the same windows, so their
    #: means and variances are computed once here rather than for each candidate (two of SSIM's five box
    #: filters, CPU that 64 generations coming back together each spent while the others waited for it)
    window: "Window"
    lab: np.ndarray

    @classmethod
    def of(cls, rgb: np.ndarray) -> "SmallReference":
        # float32 in the cache (a reference is kept for every repeat of every model), exact in the float64 the SSIM
        # sums in; its window means and variances in float64, as SSIM computes them
        luma = luminance(rgb).astype(np.float32)
        measured = Window.of(luma.astype(np.float64))
        return cls(rgb, Window(luma, measured.means, measured.variances), lab(rgb))


class _ReferenceCache:
    """Small copies of reference images, by path, size and modification time (a changed file is read again),
    in memory and, when the caller names a cache folder, on disk (``<cache>/signals/``): a 5504 x 3072 WebP takes
    over half a second to decode, and each xdist worker would otherwise pay it once per task."""

    def __init__(self, capacity: int = 16):  # the pool works a task's repeats (and models) together
        self._items: OrderedDict[RefKey, SmallReference] = OrderedDict()
        self._capacity, self._lock = capacity, threading.Lock()
        self._making: dict[RefKey, threading.Lock] = {}  # one lock per reference being reduced

    def get(self, path: Path, cache: Path | None = None) -> SmallReference:
        stat = Path(path).stat()
        key = (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
        small = self._cached(key)
        if small is not None:
            return small
        with self._lock:
            making = self._making.setdefault(key, threading.Lock())
        # A task's ten repeats finish together: one thread reduces the reference, the others wait for it
        # instead of each decoding the same 4K image.
        with making:
            small = self._cached(key)
            if small is None:
                stored = _disk_path(key, cache)
                rgb = self._from_disk(stored)
                small = SmallReference.of(rgb if rgb is not None else self._reduce(path, stored))
                with self._lock:
                    self._items[key] = small
                    while len(self._items) > self._capacity:
                        self._items.popitem(last=False)
        with self._lock:
            self._making.pop(key, None)
        return small

    def _cached(self, key: RefKey) -> SmallReference | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def _reduce(self, path: Path, stored: Path | None) -> np.ndarray:
        from PIL import Image

        from ..providers.images import IMAGE_WORK

        with IMAGE_WORK, Image.open(path) as image:
            image.load()
            preview = preview_of(image)
        rgb = _at_common_size(preview, common_size(*preview.size))
        if stored is not None:
            try:
                buffer = io.BytesIO()
                np.save(buffer, rgb, allow_pickle=False)
                atomic_write_bytes(stored, buffer.getvalue())
            except OSError:
                pass  # a cache that cannot be written is no cache, not an error
        return rgb

    @staticmethod
    def _from_disk(stored: Path | None) -> np.ndarray | None:
        try:
            rgb = np.load(stored, allow_pickle=False) if stored is not None and stored.is_file() else None
        except (OSError, ValueError):
            return None  # unreadable or doctored: reduce the image again
        ok = rgb is not None and rgb.dtype == np.uint8 and rgb.ndim == 3 and rgb.shape[2] == 3 and max(rgb.shape[:2]) <= COMMON_SIDE
        return rgb if ok else None


def _disk_path(key: RefKey, cache: Path | None) -> Path | None:
    """Where a reduced reference is kept in the cache folder ``cache`` (None: nowhere)."""
    if cache is None:
        return None
    digest = hashlib.sha256(f"{key}:{COMMON_SIDE}:preview-{SOURCE_SIDE}".encode()).hexdigest()[:32]
    return Path(cache) / "signals" / f"{digest}.npy"


REFERENCES = _ReferenceCache()


# --------------------------------------------------------------------------- the measures


def luminance(rgb: np.ndarray) -> np.ndarray:
    """ITU-R BT.601 luma, as Pillow's convert("L"), as floats."""
    luma: np.ndarray = rgb[..., :3].astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    return luma


def _box_means(x: np.ndarray, size: int) -> np.ndarray:
    """Means over every size x size window lying inside the image (an integral image: one pass).  ``x`` may hold
    several images along its first axis, each filtered as if alone: a cumulative sum adds along its axis in order,
    so one call over the stack gives the very bits of one call per image, at a third of the calls and temporaries."""
    height, width = x.shape[-2:]
    integral = np.zeros((*x.shape[:-2], height + 1, width + 1))  # zeros above and left: the padded image's sums
    inner = integral[..., 1:, 1:]
    np.cumsum(x, axis=-2, out=inner)
    np.cumsum(inner, axis=-1, out=inner)
    # (A - B - C + D) / size^2, left to right as written, in place
    total = np.subtract(integral[..., size:, size:], integral[..., :-size, size:])
    total -= integral[..., size:, :-size]
    total += integral[..., :-size, :-size]
    total /= size * size
    return total


#: sample, not population, (co)variances over a window: scikit-image's default
_CORRECTION = _WINDOW * _WINDOW / (_WINDOW * _WINDOW - 1)


@dataclass(frozen=True)
class Window:
    """One image's side of SSIM (grey, 0..255): its pixels (float64, or float32 that widen to it exactly), their
    means and sample variances over every 7 x 7 window (float64)."""

    pixels: np.ndarray
    means: np.ndarray
    variances: np.ndarray

    @cached_property
    def squared_means(self) -> np.ndarray:
        """``means ** 2``, kept: every candidate of a task is compared with its reference's window."""
        squared: np.ndarray = self.means**2
        return squared

    @classmethod
    def of(cls, a: np.ndarray) -> "Window":
        if min(a.shape) < _WINDOW:
            raise ValueError(f"SSIM needs two images of the same size, at least {_WINDOW} px a side")
        means = _box_means(a, _WINDOW)
        return cls(a, means, (_box_means(a * a, _WINDOW) - means**2) * _CORRECTION)


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    """Mean SSIM of two equal-sized grey images (0..255), 7 x 7 uniform windows, sample covariances."""
    if a.shape != b.shape:
        raise ValueError(f"SSIM needs two images of the same size, at least {_WINDOW} px a side")
    return ssim_against(Window.of(a), b)


def ssim_against(window: Window, b: np.ndarray) -> float:
    """``ssim(window.pixels, b)``, the first image's side computed already.

    The same floating-point operations on the same operands as SSIM's formula written out (the test keeps it), so
    the same bits, with fewer passes over the arrays: the candidate's three box filters in one call, the
    temporaries reused in place, mu_a * mu_b taken once (``2 * mu_a * mu_b`` is twice it exactly: doubling is
    exact in binary floating point) and the reference's squared means kept with its window."""
    a = window.pixels.astype(np.float64, copy=False)
    if a.shape != b.shape or min(a.shape) < _WINDOW:
        raise ValueError(f"SSIM needs two images of the same size, at least {_WINDOW} px a side")
    b = b.astype(np.float64, copy=False)
    mu_b, var_b, cov = _box_means(np.stack([b, b * b, a * b]), _WINDOW)  # views of one array, each overwritten
    product = window.means * mu_b
    var_b -= np.square(mu_b, out=mu_b)  # mu_b is needed no more but squared, below
    var_b *= _CORRECTION
    cov -= product
    cov *= _CORRECTION
    c1, c2 = (_K1 * _RANGE) ** 2, (_K2 * _RANGE) ** 2
    numerator = product  # (2 mu_a mu_b + C1)(2 cov + C2)
    numerator *= 2
    numerator += c1
    cov *= 2
    cov += c2
    numerator *= cov
    denominator = mu_b  # (mu_a^2 + mu_b^2 + C1)(var_a + var_b + C2); a sum of two is the same either way round
    denominator += window.squared_means
    denominator += c1
    var_b += window.variances
    var_b += c2
    denominator *= var_b
    numerator /= denominator
    return float(numerator.mean())


_SRGB_TO_XYZ = np.array([[0.4124564, 0.3575761, 0.1804375],
                         [0.2126729, 0.7151522, 0.0721750],
                         [0.0193339, 0.1191920, 0.9503041]])
_D65 = np.array([0.95047, 1.0, 1.08883])


#: sRGB's transfer curve (IEC 61966-2-1) as a table of the 256 byte values: a lookup, not a power per pixel
_LINEAR = np.array([c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in np.arange(256) / 255.0],
                   dtype=np.float32)  # float32 throughout Lab: a mean Delta E is printed to 3 decimals, half the work


#: sRGB to XYZ scaled by the white point, in the float32 Lab is computed in
_TO_XYZ = (_SRGB_TO_XYZ.T / _D65).astype(np.float32)


def lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB (0..255) -> CIE L*a*b* under D65 (IEC 61966-2-1 transfer curve, CIE 1976 formulas)."""
    xyz = _LINEAR[rgb[..., :3]] @ _TO_XYZ
    delta = 6 / 29
    # the cube root everywhere, the linear segment only where it applies (dark pixels, often none): the same
    # values as choosing between the two computed everywhere
    f = np.cbrt(xyz)
    dark = xyz <= delta**3
    if dark.any():
        f[dark] = xyz[dark] / (3 * delta**2) + 4 / 29
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def mean_delta_e(a: np.ndarray, b: np.ndarray) -> float:
    """Mean CIE76 Delta E*ab: the Euclidean distance in Lab, pixel by pixel."""
    return mean_distance(lab(a), lab(b))


def mean_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The mean Euclidean distance between two Lab images, pixel by pixel.  The three squares are added as
    ``sum(axis=-1)`` adds them (left to right: the same bits), about twenty times faster than numpy's reduction
    over an axis of three."""
    squares = (a - b) ** 2
    return float(np.sqrt(squares[..., 0] + squares[..., 1] + squares[..., 2]).mean())


def candidate_signals(task: Task, candidate: Path | Preview, references: Callable[[Task], Sequence[Path]],
                      cache: Path | None = None) -> dict[str, Any]:
    """The signals of a task's candidate, from its file or its preview (``references(task)`` gives the local
    reference images; ``cache``: as ``compute_signals``); {} when the images cannot be read: a diagnostic never
    fails an item."""
    try:
        found = references(task)
        return compute_signals(candidate, (task.width, task.height), found[0] if found else None, cache)
    except Exception:  # noqa: BLE001 (Pillow raises OSError, ValueError, SyntaxError, DecompressionBombError...)
        return {}
