"""Room on the outputs' disk: checked before each purchase, and a full disk stops the buying.

A purchase writes its image (up to the route's size cap, ``transport/bounds.py``: ``options.max_image_mb``,
else 96 MiB, the most the plugin accepts for one result) and its record into the candidate's folder in the
outputs; the image is downloaded straight there, so it never depends on the cache's disk.  So before each
purchase the run asks for that much free space on the outputs' disk plus a margin for the record, and stops
buying when there is less (the cap is the worst case the plugin would accept, not a guess: a route whose images
are smaller can lower it per model).  A write that fails for lack of room anyway (ENOSPC, or EDQUOT: a quota)
stops the buying too, with the folder named, never as "a bug of the plugin".  Nothing here knows pytest.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..transport.bounds import image_cap_of

if TYPE_CHECKING:
    from ..registry import ModelSpec

MiB = 1024 * 1024
#: Room kept beside the image: its record and the temporary copy an atomic write makes of it.
MARGIN = 1 * MiB
#: The errors of a write that found no room: the disk is full, or the user's quota is.
NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT})


def no_room(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in NO_ROOM


def free_bytes(folder: Path) -> int:
    """Free bytes for this user on the disk of ``folder`` (its nearest existing parent: the outputs may not
    exist before the first purchase)."""
    folder = Path(folder)
    existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
    return shutil.disk_usage(existing).free


def room_needed(options: Mapping[str, Any]) -> int:
    """What one purchase may write: the model's image cap, and the margin."""
    return image_cap_of(options) + MARGIN


def no_room_message(folder: Path, why: str) -> str:
    """The one line a full disk ends the buying with: the folder, why, and what to do."""
    return (f"disk full at {folder}: {why}; nothing more is bought in this run, and what was paid is kept. Free "
            "space there (or point --outputs at a disk with room), then rerun: only what is missing is bought")


def short_of_room(folder: Path, free: int, spec: ModelSpec) -> str | None:
    """The line that stops the buying when ``free`` bytes cannot take a purchase of ``spec``; None when they can."""
    needed = room_needed(spec.options)
    if free >= needed:
        return None
    return no_room_message(folder, f"{free / MiB:.1f} MB free, and a {spec.name} image may take up to "
                                   f"{needed / MiB:.0f} MB with its record (options.max_image_mb lowers it)")
