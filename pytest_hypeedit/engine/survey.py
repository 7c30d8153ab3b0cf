"""What the disk holds for each of the run's candidates before it starts: read once, asked many times.

Before anything is bought, several up-front questions read the same candidates:

    does a route still need its API key?            glue/startup.py check_keys
    is a model past its shutdown date still needed? glue/startup.py check_retirements
    does the judge need its key and its script?     glue/startup.py check_judge
    may a read-only outputs folder be replayed?     glue/startup.py check_outputs_writable
    what will the run buy, and the most it costs?   engine/estimate.py (the price line, --estimate)

Each used to read every record and look for every image again: five passes over the disk before the first item
of a 7,000-candidate replay ran.  A ``Survey`` reads each candidate once, when first asked (its record, and
whether it still has to be bought: ``Planning.disk_state``), and answers them all.

It is a view of the disk *before the run*, for questions asked before anything is bought, and nothing more:
its records are shared between those who ask and must not be changed, and nothing may use it once the run can
buy (the pool reads each candidate again, and again under its claim before any write, as engine/planning.py
says).  The plugin drops it once the price is stated (glue/price_line.py).  No pytest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .jobs import Key

if TYPE_CHECKING:
    from .planning import Planning
    from .records import Record


@dataclass(frozen=True)
class Seen:
    """One candidate as the disk held it when first asked about."""

    record: Record | None  # its record (None: none, or a file that is no record of it)
    needs_call: bool  # no image on disk, no refusal recorded: it is still to be bought


class Survey:
    """The run's candidates as the disk holds them, each read once (see the module docstring)."""

    def __init__(self, planning: Planning) -> None:
        self._planning = planning
        self._seen: dict[Key, Seen] = {}

    def seen(self, key: Key) -> Seen:
        known = self._seen.get(key)
        if known is None:
            record, needs_call = self._planning.disk_state(*key)
            known = self._seen[key] = Seen(record, needs_call)
        return known

    def needs_call(self, key: Key) -> bool:
        """Whether this candidate still has to be bought (``Planning.needs_call``, as the disk was)."""
        return self.seen(key).needs_call

    def record(self, key: Key) -> Record | None:
        """Its record as the disk held it (shared: read it, never change it)."""
        return self.seen(key).record

    def __len__(self) -> int:
        return len(self._seen)
