"""``--sequential``'s buying order: drawn at random once per outputs folder and run identity, kept in a file in
the model's outputs folder, and reused by every later run of that identity (a resume, a rerun).

Why drawn: the early decisions agree with the full run's in at least 1 - alpha of runs for any fixed task set
only over the randomness of the order (analysis/sequential.py).  An order from a constant seed was the same for
every model, run and team: a task set whose hardest tasks it happened to buy first was decided wrong every time.
Why kept: a resumed run must go on in the order it started in, and a rerun of a decided run must decide as it
did; an order drawn afresh at each rerun would let a team rerun, for free from the candidates on disk, until the
decision it wants.

The file (``sequential-order-<identity digest>.json``): ``{"format", "identity", "seed", "order_sha256"}``.  The
order is ``interleaving`` of the identity's tasks sorted by split and id (the task file's order plays no part)
by the seed.  Read back, it must be this identity's, carry a seed of the form drawn, and give the order it
gave when written (a Python whose shuffle changed would give another): otherwise the run says why and draws
afresh.  It is written whole or not at all (a complete file linked into place): of two processes drawing at
once, the first's is kept and the other reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis.sequential import interleaving
from ..engine.release import release_of

if TYPE_CHECKING:
    from ..config import RunConfig
    from ..registry import ModelSpec

FORMAT = 1
#: A kept order is a few hundred bytes; a larger file there is not one (and is not read whole).
MOST_BYTES = 65536
_SEED = re.compile(r"^[0-9a-f]{32}$")


def order_identity(run: RunConfig, spec: ModelSpec) -> dict[str, Any]:
    """What one kept order belongs to: the run's splits, the model and its release (engine/release.py), the repeats
    and the task set.  Another value of any of them is another run, with an order of its own."""
    tasks = task_keys(run)
    listed = "\n".join(f"{split}/{task_id}" for split, task_id in tasks)
    return {"splits": sorted(split.name for split in run.splits), "model": spec.name,
            "release": release_of(spec).id, "repeats": run.repeats, "tasks": len(tasks),
            "task_set_sha256": hashlib.sha256(listed.encode("utf-8")).hexdigest()}


def task_keys(run: RunConfig) -> list[tuple[str, str]]:
    """The run's tasks, (split, task_id), sorted: the order ``interleaving`` permutes."""
    return sorted((split.name, task.task_id) for split in run.splits for task in split.tasks)


def order_path(run: RunConfig, spec: ModelSpec, identity: dict[str, Any]) -> Path:
    """The file in the outputs folder of the model's release (of its first split, by name: ``<model>`` or
    ``<model>@<release id>``, glue/releases.py) that keeps the identity's order."""
    digest = hashlib.sha256(_canonical(identity)).hexdigest()[:16]
    split = str(identity["splits"][0])
    folder = run.folders.get((split, spec.name), spec.name)
    return Path(run.outputs) / split / folder / f"sequential-order-{digest}.json"


def new_seed() -> str:
    """A seed no one chose: 128 bits from the operating system."""
    return secrets.token_hex(16)


@dataclass(frozen=True)
class KeptOrder:
    """A model's order for this run: its seed, its file, and what the run says of it (None: nothing to say)."""

    model: str
    seed: str
    path: Path
    drawn: bool  # drawn by this run (else: read back from the file)
    warning: str | None = None


def kept_order(run: RunConfig, spec: ModelSpec) -> KeptOrder:
    """The model's order: read back from its file, or drawn and kept there."""
    identity = order_identity(run, spec)
    path = order_path(run, spec, identity)
    seed, why = read_seed(path, identity)
    if seed is not None:
        return KeptOrder(spec.name, seed, path, drawn=False)
    warning = (f"{path} is not this run's buying order ({why}): a new one was drawn at random" if why else None)
    seed = new_seed()
    try:
        kept = keep_seed(path, identity, seed, replace=why is not None)
    except OSError as exc:
        return KeptOrder(spec.name, seed, path, True, _joined(warning, f"the buying order of {spec.name} could not "
                                                                       f"be kept in {path} ({exc.strerror or exc}): "
                                                                       "a rerun will draw another"))
    return KeptOrder(spec.name, kept, path, drawn=kept == seed, warning=warning)


def read_seed(path: Path, identity: dict[str, Any]) -> tuple[str | None, str | None]:
    """(the kept seed, None) when the file holds this identity's order; (None, why not) when it holds something
    else; (None, None) when there is no file."""
    try:
        with path.open("rb") as handle:
            text = handle.read(MOST_BYTES + 1)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or exc}"
    if len(text) > MOST_BYTES:
        return None, f"larger than {MOST_BYTES} bytes"
    try:
        kept = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None, "not JSON"
    if not isinstance(kept, dict) or kept.get("format") != FORMAT:
        return None, f"not a buying order of format {FORMAT}"
    if kept.get("identity") != identity:
        return None, "it is another run's: another model, splits, repeats or task set"
    seed = kept.get("seed")
    if not isinstance(seed, str) or not _SEED.match(seed):
        return None, "its seed is not 32 hexadecimal digits"
    if kept.get("order_sha256") != order_digest(identity, seed):
        return None, "its seed does not give the order it was kept with"
    return seed, None


def keep_seed(path: Path, identity: dict[str, Any], seed: str, *, replace: bool) -> str:
    """Write the file whole; returns the seed kept (another process's, when it linked its file first)."""
    body = _canonical({"format": FORMAT, "identity": identity, "seed": seed,
                       "order_sha256": order_digest(identity, seed)})
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    temporary.write_bytes(body)
    try:
        if replace:
            os.replace(temporary, path)
            return seed
        try:
            os.link(temporary, path)  # fails when the file exists: never a half-written file, never two orders
        except FileExistsError:
            other, _ = read_seed(path, identity)
            if other is not None:
                return other
            os.replace(temporary, path)
        except OSError:  # a file system without hard links: put in place whole all the same (the last writer's)
            os.replace(temporary, path)
        return seed
    finally:
        temporary.unlink(missing_ok=True)


def order_digest(identity: dict[str, Any], seed: str) -> str:
    order = interleaving(range(identity["tasks"]), identity["repeats"], seed)
    return hashlib.sha256(_canonical(order)).hexdigest()


def model_orders(run: RunConfig, seeds: dict[str, str]) -> list[list[tuple[str, str, str, int]]]:
    """Per model of the run, its items (split, model, task_id, repeat) in its own buying order."""
    tasks = task_keys(run)
    return [[(tasks[index][0], spec.name, tasks[index][1], repeat)
             for index, repeat in interleaving(tasks, run.repeats, seeds[spec.name])] for spec in run.models]


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _joined(first: str | None, second: str) -> str:
    return f"{first}; {second}" if first else second
