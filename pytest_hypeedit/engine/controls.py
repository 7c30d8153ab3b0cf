"""Judge controls (``--judge-controls``): candidates whose right verdict is known without a person, judged with the
run's judge and settings through the same paid path as every candidate, and kept apart from the models' figures.

    <outputs>/_judge_controls/<split>/<kind>/<task_id>/000.<ext>   the control image (made here, atomically)
    <outputs>/_judge_controls/<split>/<kind>/<task_id>/000.json    its record, with each judge's verdict

Per task of the split, four negatives (every HYPE-EDIT-1 instruction asks for a change, so each is a FAIL):
the task's first reference unchanged (its bytes as they are), a flat grey image of the target size, another
task's first reference (the task half the split away in task-id order: drawn the same in every run), and the
reference mirrored left to right (a left-right symmetric reference gives its own pixels: still no edit).  With
human labels at hand (``--agreement``, ``--calibrate``), one positive per labelled task: the first candidate (by
model and repeat) the panel passed, its bytes copied from the outputs (``human_pass``; its right verdict PASS).
The images are byte-identical from run to run (a PNG written by the same
Pillow from the same reference), so a judge's controls of two runs can be compared (analysis/judge_controls.py).

The control folder is a store of its own (engine/store.py) and each control a candidate of it with the kind
as its model: the runner (engine/runner.py) adopts the image, binds its SHA-256 and pays its verdict as any
other (journaled first, reserved in --budget, written at once, reused on a rerun: a rerun buys nothing).  The
folder starts with "_", which no model name of the plugin does, and its records never reach the session's:
they are in no model's figures.
"""

from __future__ import annotations

import dataclasses
import io
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Sequence

from ..analysis.judge_controls import NEGATIVE_KINDS, POSITIVE_KINDS, ControlVerdict
from ..errors import HypeEditError
from ..files import atomic_write_bytes
from ..judges.base import JudgeRequest
from ..registry import ModelSpec
from ..tasks import Task
from .records import FAIL, PASS, Record
from .runner import Runner
from .store import Store

#: The folder of the controls inside the outputs folder.
CONTROLS_FOLDER = "_judge_controls"
#: The one repeat of each control.
REPEAT = 0
#: The grey of the flat control.
FLAT_GREY = (128, 128, 128)
#: Controls judged at once (each paid call still takes its route's slots: engine/limits.py).
THREADS = 4


def control_spec(kind: str) -> ModelSpec:
    """The control kind as the model of its store: nothing is ever bought from it (its images are made here)."""
    return ModelSpec(name=kind, route="judge-controls", provider_model=kind, price=0.0)


def controls_store(outputs: Path, claims_dir: Path) -> Store:
    return Store(Path(outputs) / CONTROLS_FOLDER, claims_dir=claims_dir)


def other_task(task: Task, tasks: Sequence[Task]) -> Task | None:
    """The task half the split away from ``task`` in task-id order (None in a split of one task)."""
    ordered = sorted(tasks, key=lambda t: t.task_id)
    if len(ordered) < 2:
        return None
    index = next(i for i, t in enumerate(ordered) if t.task_id == task.task_id)
    return ordered[(index + max(1, len(ordered) // 2)) % len(ordered)]


def control_image(kind: str, task: Task, tasks: Sequence[Task],
                  references: Callable[[Task], list[Path]]) -> tuple[bytes, str] | None:
    """(the control's bytes, its file suffix); None when the kind has no control for this task."""
    if kind == "unchanged":
        source = references(task)[0]
        return source.read_bytes(), source.suffix.lower()
    if kind == "other_task":
        other = other_task(task, tasks)
        if other is None:
            return None
        source = references(other)[0]
        return source.read_bytes(), source.suffix.lower()
    from PIL import Image, ImageOps

    if kind == "flat":
        return _png(Image.new("RGB", (task.width, task.height), FLAT_GREY)), ".png"
    with Image.open(references(task)[0]) as image:
        return _png(ImageOps.mirror(image.convert("RGB"))), ".png"


def _png(image: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")  # type: ignore[attr-defined]
    return buffer.getvalue()


def place(store: Store, kind: str, task: Task, made: tuple[bytes, str]) -> None:
    """The control's image in its folder, written (atomically) only when it is not there with these bytes."""
    data, suffix = made
    path = store.task_dir(task.split, kind, task.task_id) / f"{REPEAT:03d}{suffix}"
    try:
        if path.is_file() and not path.is_symlink() and path.read_bytes() == data:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data)


def control_runner(runner: Runner, outputs: Path) -> Runner:
    """The run's runner (its judge, budget, settings, run id) writing into the controls' store; no pixel signals
    and no stability re-judgements (controls are no model's candidates)."""
    return Runner(dataclasses.replace(runner.means, store=controls_store(outputs, runner.store.claims_dir),
                                      signals=False, stability={}))


#: Where a task's positive control comes from: the candidate people passed (None: the task has none).
PassedBy = Callable[[Task], "Path | None"]
POSITIVE = POSITIVE_KINDS[0]


def judge_controls(runner: Runner, outputs: Path, tasks: Sequence[Task], passed: PassedBy | None = None
                   ) -> list[Record]:
    """Every control of ``tasks`` placed and judged (a verdict on disk is reused); their records."""
    if any(task.split == CONTROLS_FOLDER for task in tasks):  # its folder would be the controls'
        raise HypeEditError(f"--judge-controls: a split named {CONTROLS_FOLDER!r} shares the controls' folder in "
                            "the outputs; rename the split's task file")
    controls = control_runner(runner, outputs)
    jobs: list[tuple[Task, ModelSpec]] = []
    for task in tasks:
        source = passed(task) if passed else None
        if source is not None:
            try:
                place(controls.store, POSITIVE, task, (source.read_bytes(), source.suffix.lower()))
            except OSError as exc:
                raise HypeEditError(f"--judge-controls: the candidate people passed for {task.split}/"
                                    f"{task.task_id} ({source}) could not be read ({exc})") from None
            jobs.append((task, control_spec(POSITIVE)))
        same_split = [t for t in tasks if t.split == task.split]
        for kind in NEGATIVE_KINDS:
            try:
                made = control_image(kind, task, same_split, controls.references)
            except (HypeEditError, OSError) as exc:
                raise HypeEditError(f"--judge-controls: the {kind} control of {task.split}/{task.task_id} could "
                                    f"not be made ({exc}); check its reference images") from None
            if made is not None:
                place(controls.store, kind, task, made)
                jobs.append((task, control_spec(kind)))
    with ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="hypeedit-controls") as pool:
        return list(pool.map(lambda job: controls.run(job[0], job[1], REPEAT), jobs))


def controls_price(runner: Runner, outputs: Path, tasks: Sequence[Task], passed: PassedBy | None = None
                   ) -> tuple[int, float]:
    """(verdicts the controls still need, the most they can cost): a control is judged again unless its record
    holds a verdict of this judge that can be reused (``Runner.reusable_verdict``); each is priced at its worst
    case, what --budget reserves for it.  Reads the disk only (no call, no image made)."""
    controls = control_runner(runner, outputs)
    judge = controls.judge
    if not judge.routes:
        return 0, 0.0
    calls, usd = 0, 0.0
    for task in tasks:
        same_split = [t for t in tasks if t.split == task.split]
        positive = (POSITIVE,) if passed is not None and passed(task) is not None else ()
        for kind in NEGATIVE_KINDS + positive:
            if kind == "other_task" and other_task(task, same_split) is None:
                continue
            record = controls.store.read_record(task.split, kind, task.task_id, REPEAT)
            if record is not None and record.candidate and controls.reusable_verdict(record) is not None:
                continue
            references = tuple(controls.references(task)) if judge.needs_images else ()
            to_be = controls.store.task_dir(task.split, kind, task.task_id) / f"{REPEAT:03d}.png"
            calls += 1
            usd += judge.worst_case_cost(JudgeRequest(task, kind, REPEAT, to_be, references))
    return calls, usd


def price_line(calls: int, usd: float) -> str:
    return (f"hypeedit: --judge-controls: {calls} control verdict{'s' if calls != 1 else ''} to pay, at most "
            f"${usd:.2f} (judge calls only; in no model's figures)")


def verdicts_of(records: Sequence[Record], judge: str, outputs: Path) -> list[ControlVerdict]:
    """The control records as the statistics read them (the judge's own verdict, else none)."""
    out = []
    for record in records:
        entry = record.judgements.get(judge) if isinstance(record.judgements, dict) else None
        judged = isinstance(entry, dict) and record.outcome in (PASS, FAIL) and record.judge == judge
        extra = entry.get("extra") if judged and isinstance(entry, dict) else None
        version = extra.get("model_version") if isinstance(extra, dict) else None
        image = (Path(CONTROLS_FOLDER) / record.split / record.model / record.task_id / record.candidate).as_posix() \
            if record.candidate else ""
        out.append(ControlVerdict(judge=judge, kind=record.model, split=record.split, task_id=record.task_id,
                                  verdict=record.verdict if judged else None,
                                  version=version if isinstance(version, str) else None,
                                  reasoning=(record.reasoning or "") if judged else (record.error or ""),
                                  image=image))
    return out
