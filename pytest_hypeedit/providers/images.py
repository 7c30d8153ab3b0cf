"""Reference images prepared to a provider's documented limits, once per task x route.

A provider limits how many images it takes, their pixels, sides, bytes and
formats (docs/reference/providers.md).  ``prepare_references`` returns the task's images
within those limits: unchanged when they already fit (no needless
re-encoding), else resized and/or re-encoded.  Results are cached on disk under
``<cache>/<route>/<task_id>/``, keyed by the limits, written atomically under a
file lock, so the ten repeats of a task and every xdist worker share one copy.
"""

from __future__ import annotations

import base64
import hashlib
import io
import math
import os
import re
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Sequence, TypedDict

from PIL import Image, UnidentifiedImageError

from ..engine.limits import exclusive, safe_name
from ..errors import ImageError
from ..files import atomic_write_bytes
from ..text import image_problem
from ..transport.body import InlineImage

#: The most pixels an image may have here, checked from its header before it is decoded.  The benchmark's
#: largest reference is 5504 x 3072 (16.9 MP) and the largest outputs any route documents are 4K images of
#: about 17 MP; 40 MP leaves a margin of more than 2x.  Decoded, 40 MP of RGBA is 160 MB; the 12000 x 12000
#: PNG a model could send in 140 KB would be 430 MB or more.
MAX_IMAGE_PIXELS = 40_000_000
_PILLOW_DEFAULT_LIMIT = 1024 * 1024 * 1024 // 4 // 3  # Image.MAX_IMAGE_PIXELS as Pillow ships it
if Image.MAX_IMAGE_PIXELS == _PILLOW_DEFAULT_LIMIT:
    # Pillow's own guard, for every image this process opens (the report's, the review app's): it warns above
    # the limit (an image of ours that does is not accepted by check_pixels right after) and raises
    # DecompressionBombError above twice the limit.  A value the user set is left alone.
    Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS


class PixelsTooMany(ValueError):
    """An image with more pixels than MAX_IMAGE_PIXELS; it was not decoded."""


def pixels_message(what: str, size: str) -> str:
    return (f"{what} is {size}, more than the {MAX_IMAGE_PIXELS / 1e6:g} MP an image may have here (the "
            "benchmark's largest reference is 5504x3072, 4K outputs about 17 MP); it was not decoded")


def _bomb_size(exc: Exception) -> str:
    """The size Pillow's DecompressionBombError names ("Image size (144000000 pixels) exceeds ...")."""
    match = re.search(r"\((\d+) pixels\)", str(exc))
    return f"{int(match.group(1)) / 1e6:.1f} MP" if match else "larger than Pillow opens"


def check_pixels(image: Image.Image, what: str) -> None:
    """Raise PixelsTooMany when an opened (not yet decoded) image has too many pixels."""
    width, height = image.size
    if width * height > MAX_IMAGE_PIXELS:
        raise PixelsTooMany(pixels_message(what, f"{width}x{height} ({width * height / 1e6:.1f} MP)"))


def open_checked(source: "str | Path | IO[bytes]", what: str) -> Image.Image:
    """``Image.open`` (the header only) of an image within MAX_IMAGE_PIXELS; else PixelsTooMany."""
    try:
        image = Image.open(source)
    except Image.DecompressionBombError as exc:  # Pillow's own guard, above twice its limit
        raise PixelsTooMany(pixels_message(what, _bomb_size(exc))) from None
    try:
        check_pixels(image, what)
    except PixelsTooMany:
        image.close()
        raise
    return image


#: EXIF orientation (tag 0x0112) -> the transposition that shows the image upright, as Pillow's
#: ImageOps.exif_transpose reads it; 1 (or no tag) is upright already.
_UPRIGHT = {2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180, 4: Image.Transpose.FLIP_TOP_BOTTOM,
            5: Image.Transpose.TRANSPOSE, 6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE,
            8: Image.Transpose.ROTATE_90}
_SIDEWAYS = {Image.Transpose.TRANSPOSE, Image.Transpose.TRANSVERSE, Image.Transpose.ROTATE_90,
             Image.Transpose.ROTATE_270}


def orientation(image: Image.Image) -> "Image.Transpose | None":
    """The transposition that shows an opened image as a viewer does (its EXIF orientation), None when it is
    upright.  The one rule of every reader of a candidate or a reference: the pixel signals (engine/signals.py),
    the report (report/assets.py) and the review app (review/server.py), so a byte-identical copy of a rotated
    reference measures as the same picture everywhere.  An unreadable EXIF block counts as upright."""
    try:
        return _UPRIGHT.get(image.getexif().get(0x0112, 1))
    except Exception:  # noqa: BLE001 (a damaged EXIF block raises anything from SyntaxError to struct.error)
        return None


def upright(image: Image.Image, turn: "Image.Transpose | None") -> Image.Image:
    """``image`` turned by ``turn`` (``orientation`` of the image it came from: read it before ``reduce`` or
    ``convert``, which drop the EXIF block)."""
    return image.transpose(turn) if turn is not None else image


def upright_size(size: tuple[int, int], turn: "Image.Transpose | None") -> tuple[int, int]:
    return (size[1], size[0]) if turn in _SIDEWAYS else (size[0], size[1])


MIME = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp", "bmp": "image/bmp",
        "tiff": "image/tiff", "gif": "image/gif"}
EXT = {"png": "png", "jpeg": "jpg", "webp": "webp", "bmp": "bmp", "tiff": "tiff", "gif": "gif"}


@dataclass(frozen=True)
class ImageLimits:
    max_count: int | None = None
    max_side: int | None = None  # longest side, pixels
    min_side: int | None = None  # shortest side, pixels (small images are upscaled)
    max_pixels: int | None = None  # width x height
    max_bytes: int | None = None  # per encoded file
    formats: tuple[str, ...] = ("png", "jpeg", "webp")  # PIL format names, lower case
    convert_to: str = "png"  # format used when the input's is not accepted or must be re-encoded
    #: Longest side over shortest side at most this (e.g. 3.0: ratios 1/3 to 3); a reference outside is
    #: padded into range (``pad_to_aspect_ratio``), never cropped.
    max_aspect_ratio: float | None = None

    def __post_init__(self) -> None:
        if self.convert_to not in self.formats:
            raise ValueError(f"convert_to {self.convert_to!r} must be one of formats {self.formats}")
        if self.max_aspect_ratio is not None and self.max_aspect_ratio < 1:
            raise ValueError(f"max_aspect_ratio {self.max_aspect_ratio} must be >= 1 (longest over shortest side)")

    def digest(self) -> str:
        return hashlib.sha256(repr(sorted(asdict(self).items())).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class PreparedImage:
    path: Path
    format: str  # PIL name: png, jpeg, webp
    width: int
    height: int

    @property
    def mime(self) -> str:
        return MIME[self.format]

    def read(self) -> bytes:
        return self.path.read_bytes()

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.read()).decode()}"

    def base64(self) -> str:
        return base64.b64encode(self.read()).decode()

    def inline_data_url(self) -> "InlineImage":
        """The data URL for a JSON body, read from disk while the body is sent (transport/body.py)."""
        return InlineImage(self.path, f"data:{self.mime};base64,")

    def inline_base64(self) -> "InlineImage":
        """Plain base64 for a JSON body, read from disk while the body is sent (transport/body.py)."""
        return InlineImage(self.path)


def prepare_references(references: Sequence[Path], limits: ImageLimits, cache_dir: Path, *,
                       task_id: str, route: str) -> tuple[PreparedImage, ...]:
    """The task's reference images within ``limits``, prepared once and cached under ``cache_dir``."""
    if limits.max_count is not None and len(references) > limits.max_count:
        raise ImageError(
            f"task {task_id}: {len(references)} reference images, but route {route} takes at most "
            f"{limits.max_count}; choose another route for this model (--models-file) or skip the task"
        )
    folder = Path(cache_dir) / safe_name(route) / task_id
    folder.mkdir(parents=True, exist_ok=True)
    return tuple(_prepared(Path(source), index, limits, folder, task_id) for index, source in enumerate(references))


def _prepared(source: Path, index: int, limits: ImageLimits, folder: Path, task_id: str) -> PreparedImage:
    stem = f"{index:02d}-{safe_name(source.stem)}-{limits.digest()}"
    # Temporary files of atomic_write_bytes start with a dot, so "{stem}.*" sees only finished ones.
    done = list(folder.glob(f"{stem}.*"))
    if done:
        return describe(done[0])
    with exclusive(folder / ".lock"):
        done = list(folder.glob(f"{stem}.*"))
        if done:  # another worker made it while we waited
            return describe(done[0])
        data, fmt = fit(_read(source, task_id), limits, where=f"task {task_id}: {source.name}")
        target = folder / f"{stem}.{EXT[fmt]}"
        atomic_write_bytes(target, data)
    return describe(target)


class PaddingNote(TypedDict):
    """One reference ``fit`` padded, as the candidate's record names it (``padded_references``)."""

    reference: str  # the file's name
    size: str  # its own "WxH"
    sent: str  # the "WxH" sent
    max_aspect_ratio: float | None


def padding_notes(sources: Sequence[Path], prepared: Sequence[PreparedImage], limits: ImageLimits
                  ) -> list[PaddingNote]:
    """For the candidate's record: which references ``fit`` padded into ``limits.max_aspect_ratio``."""
    notes: list[PaddingNote] = []
    for source, image in zip(sources, prepared):
        try:
            with Image.open(source) as original:  # reads the header only
                size: tuple[int, int] = original.size
        except OSError:
            continue
        if padded_size(*size, limits.max_aspect_ratio) != size:
            notes.append({"reference": Path(source).name, "size": f"{size[0]}x{size[1]}",
                          "sent": f"{image.width}x{image.height}", "max_aspect_ratio": limits.max_aspect_ratio})
    return notes


def _read(source: Path, task_id: str) -> bytes:
    try:
        return source.read_bytes()
    except OSError as exc:
        raise ImageError(f"task {task_id}: cannot read reference image {source} ({exc.strerror})") from None


def describe(path: Path) -> PreparedImage:
    with Image.open(path) as image:
        return PreparedImage(path, image.format.lower(), image.width, image.height)


#: Decoding and re-encoding a 4K image takes a second of CPU and a few hundred MB: more at once than there
#: are cores only multiplies the memory (64 calls in flight would hold gigabytes of pixels), so every
#: process does at most this many at a time.
IMAGE_WORK = threading.BoundedSemaphore(max(1, os.cpu_count() or 1))


def fit(data: bytes, limits: ImageLimits, *, where: str = "image") -> tuple[bytes, str]:
    """``data`` within ``limits``: (bytes, PIL format name).  Pure: no file I/O."""
    with IMAGE_WORK:
        return _fit(data, limits, where)


def _fit(data: bytes, limits: ImageLimits, where: str) -> tuple[bytes, str]:
    image = _decode(data, where)
    assert image.format is not None  # Image.open names the format of every image it reads
    fmt = image.format.lower()
    # The limits apply to the image as sent, padding included.
    padded = padded_size(image.width, image.height, limits.max_aspect_ratio)
    scale = target_scale(*padded, limits)
    if scale == 1.0 and padded == image.size and fmt in limits.formats and _small_enough(len(data), limits):
        return data, fmt
    if scale != 1.0:
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        image = image.resize(size, Image.Resampling.LANCZOS)
    image = pad_to_aspect_ratio(image, limits.max_aspect_ratio)  # after resizing: exact on the final pixels
    out_fmt = fmt if fmt in limits.formats else limits.convert_to
    return _encode_within_bytes(image, out_fmt, limits, where)


def _decode(data: bytes, where: str) -> Image.Image:
    try:
        image = open_checked(io.BytesIO(data), where)
        image.load()
    except PixelsTooMany as exc:
        raise ImageError(f"{exc}; use a smaller image") from None
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ImageError(f"{where}: not a readable image ({image_problem(exc)}); delete it from the cache to download "
                         "it again") from None
    return image


def target_scale(width: int, height: int, limits: ImageLimits) -> float:
    """The factor that brings width x height inside the side and pixel limits (1.0 when it fits)."""
    scale = 1.0
    if limits.max_side:
        scale = min(scale, limits.max_side / max(width, height))
    if limits.max_pixels:
        scale = min(scale, math.sqrt(limits.max_pixels / (width * height)))
    if limits.min_side and min(width, height) * scale < limits.min_side:
        # Upscale a small image, unless that would break the upper limits (they win).
        scale = max(scale, limits.min_side / min(width, height))
        if limits.max_side:
            scale = min(scale, limits.max_side / max(width, height))
    # Rounding to whole pixels must not push the result past max_pixels.
    return 1.0 if abs(scale - 1.0) < 1e-9 else scale * 0.999 if scale < 1 else scale


def padded_size(width: int, height: int, max_ratio: float | None) -> tuple[int, int]:
    """(width, height) with the short side grown until long/short <= ``max_ratio``; unchanged when it fits."""
    if max_ratio is None or max(width, height) <= max_ratio * min(width, height):
        return width, height
    if width > height:
        return width, math.ceil(width / max_ratio)
    return math.ceil(height / max_ratio), height


def pad_to_aspect_ratio(image: Image.Image, max_ratio: float | None) -> Image.Image:
    """``image`` centred on a canvas grown along its short side into ``max_ratio``: nothing of the picture
    is cropped or scaled.  The margin is transparent where the image has alpha, else white (as JPEG
    flattening does)."""
    size = padded_size(image.width, image.height, max_ratio)
    if size == image.size:
        return image
    has_alpha = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
    mode = "RGBA" if has_alpha else "RGB"
    canvas = Image.new(mode, size, (255, 255, 255, 0) if has_alpha else (255, 255, 255))
    canvas.paste(image.convert(mode), ((size[0] - image.width) // 2, (size[1] - image.height) // 2))
    return canvas


def _small_enough(size: int, limits: ImageLimits) -> bool:
    return limits.max_bytes is None or size <= limits.max_bytes


def _encode_within_bytes(image: Image.Image, fmt: str, limits: ImageLimits, where: str) -> tuple[bytes, str]:
    """Encode; when over max_bytes, lower the quality (lossy formats), then shrink, until it fits."""
    for _ in range(12):
        for quality in (95, 88, 80, 70):
            data = _encode(image, fmt, quality)
            if _small_enough(len(data), limits) or fmt == "png":
                break
        if _small_enough(len(data), limits):
            return data, fmt
        if fmt == "png" and "jpeg" in limits.formats:
            fmt = "jpeg"  # photos compress far better as JPEG than by shrinking a PNG
            continue
        image = image.resize((max(1, int(image.width * 0.85)), max(1, int(image.height * 0.85))),
                             Image.Resampling.LANCZOS)
        image = pad_to_aspect_ratio(image, limits.max_aspect_ratio)  # rounding down must not leave the range
    raise ImageError(f"{where}: cannot be brought under {limits.max_bytes} bytes")


def _encode(image: Image.Image, fmt: str, quality: int) -> bytes:
    if fmt == "jpeg" and image.mode not in ("RGB", "L"):
        image = _flatten(image)
    elif image.mode not in ("RGB", "RGBA", "L", "LA"):
        image = image.convert("RGBA" if "transparency" in image.info or "A" in image.mode else "RGB")
    buffer = io.BytesIO()
    # zlib's default level: "optimize" (level 9 and a search of filters) takes twice as long for ~1% less
    options = {"compress_level": 6} if fmt == "png" else {"quality": quality}
    image.save(buffer, format=fmt.upper(), **options)
    return buffer.getvalue()


def _flatten(image: Image.Image) -> Image.Image:
    """JPEG has no alpha: composite on white rather than on black."""
    rgba = image.convert("RGBA")
    background = Image.new("RGB", rgba.size, (255, 255, 255))
    background.paste(rgba, mask=rgba.getchannel("A"))
    return background
