"""``--budget USD``: a hard spending cap for one run, shared by all xdist workers.

Before a paid call (a generation, a judge's verdict) the runner reserves the
most that call can cost (``Provider.worst_case_cost``, ``Judge.worst_case_cost``:
the size requested, per-reference fees, tokens at their max), so a call the
rest of the budget cannot cover never starts; the reservation is committed
with the cost the provider reported when the call returns (at most the worst
case that was held for it, so the total stays under the cap), or released
when it failed without a charge.  The ledger is a small JSON file in a per-run
directory, read and written under an OS file lock, so reservations by
concurrent workers never add up past the cap.  Amounts are kept in integer
micro-dollars: 25 x 0.04 must fit in a budget of 1 exactly, which floats do
not promise.

A reservation held by a process that died is counted as spent: we cannot
know whether the provider charged it, and the cap must hold.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BudgetExceeded
from ..files import atomic_write_bytes
from .limits import exclusive

MICRO = 1_000_000


def to_micro(usd: float) -> int:
    return round(usd * MICRO)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Budget:
    """The run's ledger; ``cap_usd=None`` tracks spend without a cap."""

    def __init__(self, ledger_dir: Path, cap_usd: float | None):
        if cap_usd is not None and not (math.isfinite(cap_usd) and cap_usd >= 0):
            raise ValueError(f"--budget must be a finite number >= 0 USD, got {cap_usd}")
        self.cap_usd = cap_usd
        self.dir = Path(ledger_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._file = self.dir / "budget.json"
        self._lock = self.dir / "budget.lock"
        self._log = self.dir / "budget.log.jsonl"

    # ------------------------------------------------------------------ public
    def reserve(self, amount: float, what: str) -> "Reservation":
        """Reserve ``amount`` USD for ``what``, or raise BudgetExceeded when it could pass the cap."""
        micro, token = to_micro(amount), uuid.uuid4().hex
        with exclusive(self._lock):
            state = self._read()
            if self.cap_usd is not None:
                committed = state["spent"] + sum(r["micro"] for r in state["reservations"].values())
                if committed + micro > to_micro(self.cap_usd):
                    raise BudgetExceeded(self._exceeded_message(what, amount, state))
            state["reservations"][token] = {"micro": micro, "pid": os.getpid(), "what": what}
            self._write(state)
        return Reservation(self, token, amount, what)

    def spent(self) -> float:
        """USD committed so far (including reservations of dead processes)."""
        with exclusive(self._lock):
            spent: int = self._read()["spent"]
            return spent / MICRO

    def reserved(self) -> float:
        """USD held by calls in flight."""
        with exclusive(self._lock):
            held: int = sum(r["micro"] for r in self._read()["reservations"].values())
            return held / MICRO

    # ------------------------------------------------------------------ settling
    def _settle(self, token: str, actual: float | None, what: str) -> None:
        with exclusive(self._lock):
            state = self._read()
            held = state["reservations"].pop(token, None)
            if held is None:
                return  # already settled (or counted as spent after a crash)
            if actual is not None:
                state["spent"] += to_micro(actual)
            self._write(state)
        if actual is not None:
            with open(self._log, "a", encoding="utf-8") as log:
                log.write(json.dumps({"what": what, "usd": actual, "pid": os.getpid()}) + "\n")

    # ------------------------------------------------------------------ file
    def _read(self) -> dict[str, Any]:
        state: dict[str, Any]
        try:
            state = json.loads(self._file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            state = {"spent": 0, "reservations": {}}
        except (OSError, ValueError) as exc:
            # Never silently reset a ledger: that would let the run spend the cap twice.
            raise BudgetExceeded(f"budget ledger {self._file} is unreadable ({exc}); delete it only if "
                                 "you know what was spent") from None
        self._reap_dead(state)
        return state

    def _reap_dead(self, state: dict[str, Any]) -> None:
        for token, held in list(state["reservations"].items()):
            if not _alive(held["pid"]):
                state["spent"] += held["micro"]
                del state["reservations"][token]

    def _write(self, state: dict[str, Any]) -> None:
        atomic_write_bytes(self._file, json.dumps(state).encode("utf-8"))

    def _exceeded_message(self, what: str, amount: float, state: dict[str, Any]) -> str:
        spent = state["spent"] / MICRO
        held = sum(r["micro"] for r in state["reservations"].values()) / MICRO
        return (f"--budget {self.cap_usd:g} USD reached: {what} could cost up to {amount:.4f} USD, with "
                f"{spent:.4f} spent and {held:.4f} held by calls in flight. Skipped; rerun with a larger "
                "--budget to finish (candidates already paid for are reused, not bought again).")


@dataclass
class Reservation:
    budget: Budget
    token: str
    amount: float
    what: str

    def commit(self, actual: float) -> None:
        """The call was paid: count ``actual`` USD (which may differ from the reserved amount)."""
        self.budget._settle(self.token, actual, self.what)

    def release(self) -> None:
        """The call was not charged (e.g. a 5xx before any work): give the reservation back."""
        self.budget._settle(self.token, None, self.what)
