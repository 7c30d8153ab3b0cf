"""What one process (the serial run, or one xdist worker) produces candidates with: the store, the provider of
each model and the judge (each made once, on first use), the references, the --budget, the run id, and the
options the steps read.

The Runner (engine/runner.py) builds one ``Means`` and hands it to each of its collaborators: the paid-call seam
(engine/paidcall.py), the planning (engine/planning.py), the verdicts (engine/verdicts.py) and the purchase
(engine/purchase.py).  They read it when they act (a test may point the runner at another store), and none of
them owns it.  It imports none of them.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..judges.base import Judge
from ..providers.base import Provider
from ..registry import ModelSpec
from ..tasks import Task
from .journal import REBUY
from .measurer import Measurer
from .rejected_keys import RejectedKeys
from .store import Store

if TYPE_CHECKING:
    from .budget import Budget
    from .jobs import Key


@dataclass
class Means:
    """What one process (the serial run, or one xdist worker) needs to produce candidates."""

    store: Store
    make_provider: Callable[[ModelSpec], Provider]
    make_judge: Callable[[], Judge]
    references: Callable[[Task], list[Path]]
    rejudge: bool = False
    budget: Budget | None = None
    #: --possibly-paid: a candidate whose paid call may have been paid without its reply arriving is bought
    #: again (REBUY) or held as an error for review (REVIEW)
    on_possibly_paid: str = REBUY
    signals: bool = True  # pixel diagnostics beside each verdict (engine/signals.py), once per candidate
    #: --signals: also measure candidates read back from disk whose records lack them (a full decode of each;
    #: a replay of thousands of large images would spend minutes on it, so only when asked)
    signals_from_disk: bool = False
    #: the run's cache folder (--cache-dir): the signals keep the references they reduce in its ``signals/``, for
    #: every worker and later run (engine/signals.py); None: in memory only
    cache_dir: Path | None = None
    stability: dict[Key, int] = field(default_factory=dict)  # key -> K re-judgements (--judge-stability, engine/stability.py)
    #: The run this process belongs to (glue/stash.py run_id: the same in the controller and every xdist worker):
    #: every ledger entry its calls write names it (``run``: what the run bought, call_ledger.spent_in_run)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    #: routes, models and judges whose key the provider rejected (401/403) in this process: not called again
    rejected_keys: RejectedKeys = field(default_factory=RejectedKeys)
    #: free bytes on the disk of a folder (engine/room.py; a test gives a nearly full disk)
    free_bytes: Callable[[Path], int] | None = None
    #: the signals of candidates just bought, measured while their verdicts are asked (engine/measurer.py)
    measurer: Measurer = field(default_factory=Measurer)
    _providers: dict[str, Provider] = field(default_factory=dict)
    _judge: Judge | None = None
    #: One provider per model and one judge per process: the pool's threads ask for them at once, and a second
    #: copy of a provider is a second client, limiter view and batch collector (on the batch tier, a batch of its
    #: own: 10-15 batches for 20 candidates under -n 2 before this lock)
    _make_lock: threading.RLock = field(default_factory=threading.RLock)

    def provider(self, spec: ModelSpec) -> Provider:
        made = self._providers.get(spec.name)
        if made is not None:
            return made
        with self._make_lock:  # made once, whichever thread asks first (a failed making is tried again)
            if spec.name not in self._providers:
                self._providers[spec.name] = self.make_provider(spec)
            return self._providers[spec.name]

    @property
    def judge(self) -> Judge:
        if self._judge is not None:
            return self._judge
        with self._make_lock:
            if self._judge is None:
                self._judge = self.make_judge()
            return self._judge

    @property
    def made_judge(self) -> Judge | None:
        """The judge when it was made already (None: nothing asked for it yet, and asking here makes none)."""
        return self._judge

    def close(self) -> None:
        self.measurer.close()
        for provider in self._providers.values():
            provider.close()
        if self._judge is not None:
            self._judge.close()
