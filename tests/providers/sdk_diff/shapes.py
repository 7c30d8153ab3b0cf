"""The task shapes every differential case is run with: the task's target size and its references' sizes.

Each shape is one way a task can look to an adapter's size or aspect-ratio rule (the adapters read the
task's ``width`` x ``height``, the size of its first input in the public split): a landscape 4:3 task as most
of the public split, a portrait one (a size rule that swaps width and height gives itself away here and in
the landscape shape, not in the square one), a square one, an extreme one (4:1, past every model's widest
ratio, so clamping rules show), and one with three references of different shapes.  The references are
small stand-ins of the same shape (within 1:3..3:1, see harness.reference_files): what is compared is how
each side sends them, not their pixels.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    name: str
    width: int  # the task's target size
    height: int
    references: tuple[tuple[int, int], ...]  # (width, height) of each reference file, in task order


SHAPES = {shape.name: shape for shape in (
    Shape("landscape", 4800, 3584, ((640, 480), (512, 448))),
    Shape("portrait", 3072, 4096, ((480, 640), (448, 512))),
    Shape("square", 2048, 2048, ((512, 512), (448, 448))),
    Shape("extreme", 6144, 1536, ((1152, 384), (512, 448))),
    Shape("multi", 1920, 1080, ((960, 540), (448, 512), (512, 512))),
)}
