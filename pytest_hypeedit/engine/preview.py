"""A candidate's preview: the small copy of its image the pixel signals are measured from (engine/signals.py,
which makes it with ``preview_of``), carried by the adapter's ``Generation`` (providers/base.py) from where the
image was decoded anyway.  A module of its own, below both: the adapters' types need it, and the signals need
the adapters' image helpers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Preview:
    """What the signals need of a candidate: its size and a copy of at most SOURCE_SIDE pixels a side
    (engine/signals.py ``preview_of``), made where the image is decoded anyway (the adapter checks every image
    it receives), so the signals cost no second decode of a 2K or 4K image."""

    size: tuple[int, int]
    image: Any  # a PIL image in RGB
