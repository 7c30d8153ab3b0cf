"""The live line of a run: done/total, calls in flight per route, errors, money spent so far, an ETA.

``Progress`` is pure: the pools' states (one per process, as
``glue/pool_plugin.py write_status`` writes them) in, one line of text out.
``LineWriter`` puts a line on the terminal: rewritten in place on a terminal,
plain lines at a slower pace otherwise (a CI log).
"""

from __future__ import annotations

import math
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, TextIO


@dataclass
class Progress:
    """What the live line tracks between two renderings (the rate behind the ETA)."""

    started: float
    total: int = 0

    def line(self, statuses: list[dict[str, Any]], now: float, reported: int | None = None) -> str:
        """``reported``: the items whose reports reached the controller, counted there, under -n.  The pools'
        own counts are not summed then: an item one worker's pool finished ahead and another worker ran
        (``--dist worksteal`` takes queued items back) is done in both, which read "56/50 done"."""
        done = sum(s.get("done", 0) for s in statuses) if reported is None else reported
        parts = [f"hypeedit {done}/{self.total or '?'} done"]
        routes = route_cells(statuses)
        parts.append("in flight " + (", ".join(routes) if routes else "0"))
        batches = batch_cells(statuses)
        if batches:
            parts.append("batches " + ", ".join(batches))
        errors = sum(s.get("errors", 0) for s in statuses)
        if errors:
            parts.append(f"{errors} error{'s' if errors != 1 else ''}")
        skipped = sum(s.get("skipped", 0) for s in statuses)
        if skipped:
            parts.append(f"{skipped} skipped")
        spent = sum(s.get("spent", 0.0) for s in statuses)
        parts.append(f"${spent:.2f} spent" if math.isfinite(spent) else "spent: not a finite figure (see the results)")
        eta = self.eta(done, now)
        if eta:
            parts.append(f"ETA {eta}")
        return " | ".join(parts)

    def eta(self, done: int, now: float) -> str | None:
        elapsed = now - self.started
        if not done or not self.total or done >= self.total or elapsed <= 0:
            return None
        return duration((self.total - done) * elapsed / done)


def route_cells(statuses: list[dict[str, Any]]) -> list[str]:
    """``route n/level`` per route, summed over processes; ``(max C)`` when the level is adaptive."""
    merged: dict[str, dict[str, Any]] = {}
    for status in statuses:
        for gate in status.get("routes", []):
            cell = merged.setdefault(gate["route"], {"in_flight": 0, "level": 0, "ceiling": gate["ceiling"],
                                                     "adaptive": gate["adaptive"], "throttled": 0})
            cell["in_flight"] += gate["in_flight"]
            # every process has the route's full level: the cross-process slots hold the total
            cell["level"] = max(cell["level"], gate["level"])
            cell["throttled"] += gate.get("throttled", 0)
    cells = []
    for route, cell in sorted(merged.items()):
        text = f"{route} {cell['in_flight']}/{cell['level']}"
        if cell["adaptive"]:
            text += f" (max {cell['ceiling']}{', 429 x' + str(cell['throttled']) if cell['throttled'] else ''})"
        cells.append(text)
    return cells


def batch_cells(statuses: list[dict[str, Any]]) -> list[str]:
    """``2 submitted (80)``, ``1 running (40)``, ``3 done (120)``: batches by state and the candidates they hold
    (--tier batch), summed over processes; a value that is not a count is ignored (the files are untrusted)."""
    merged: dict[str, list[int]] = {}
    for status in statuses:
        tally = status.get("batches")
        for state, pair in (tally.items() if isinstance(tally, dict) else ()):
            if isinstance(pair, list) and len(pair) == 2 and all(type(n) is int and n >= 0 for n in pair):
                cell = merged.setdefault(str(state), [0, 0])
                cell[0], cell[1] = cell[0] + pair[0], cell[1] + pair[1]
    return [f"{count} {state} ({candidates})" for state, (count, candidates) in merged.items() if count]


def duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class LineWriter:
    """One line of progress on the terminal, drawn from any thread.

    It writes to its own copy of stdout's file descriptor: pytest captures fd 1 while an item runs, and
    the line is drawn while the main thread waits in an item.  Without a descriptor (pytester, an IDE)
    it writes plain lines to stdout.
    """

    def __init__(self) -> None:
        self.tty, self.out, self._own = _own_terminal()
        self._last = ""
        self._lock = threading.Lock()

    def draw(self, line: str, *, final: bool = False) -> None:
        """On a terminal: rewrite the line (and end it when final); otherwise a plain line when it changed."""
        with self._lock:
            try:
                if self.tty:
                    self.out.write("\r" + line[: max(_width() - 1, 20)] + "\x1b[K" + ("\n" if final else ""))
                elif final or line != self._last:
                    self.out.write(line + "\n")
                self.out.flush()
            except (OSError, ValueError):  # the terminal went away
                return
            self._last = line

    def close(self) -> None:
        if self._own:
            try:
                self.out.close()
            except OSError:  # pragma: no cover
                pass


def _own_terminal() -> tuple[bool, TextIO, bool]:
    """(is a terminal, a stream of our own on it, whether we opened it)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False, sys.stdout, False
    return os.isatty(fd), os.fdopen(os.dup(fd), "w", encoding="utf-8", errors="replace", buffering=1), True


def _width() -> int:
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError):
        return 120
