"""The live line of a run: done/total, calls in flight per route, errors, money spent so far, an ETA.

Pure: the pools' states (one per process, as ``pool_plugin.write_status``
writes them) in, one line of text out.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Progress:
    """What the live line tracks between two renderings (the rate behind the ETA)."""

    started: float
    total: int = 0

    def line(self, statuses: list[dict], now: float, *, width: int = 0) -> str:
        done = sum(s.get("done", 0) for s in statuses)
        parts = [f"hypeedit {done}/{self.total or '?'} done"]
        routes = route_cells(statuses)
        parts.append("in flight " + (", ".join(routes) if routes else "0"))
        errors = sum(s.get("errors", 0) for s in statuses)
        if errors:
            parts.append(f"{errors} error{'s' if errors != 1 else ''}")
        skipped = sum(s.get("skipped", 0) for s in statuses)
        if skipped:
            parts.append(f"{skipped} skipped")
        parts.append(f"${sum(s.get('spent', 0.0) for s in statuses):.2f} spent")
        eta = self.eta(done, now)
        if eta:
            parts.append(f"ETA {eta}")
        text = " | ".join(parts)
        return text if not width or len(text) < width else text[: max(width - 4, 10)] + "..."

    def eta(self, done: int, now: float) -> str | None:
        elapsed = now - self.started
        if not done or not self.total or done >= self.total or elapsed <= 0:
            return None
        return duration((self.total - done) * elapsed / done)


def route_cells(statuses: list[dict]) -> list[str]:
    """``route n/level`` per route, summed over processes; ``(max C)`` when the level is adaptive."""
    merged: dict[str, dict] = {}
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


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
