"""The judge controls' images (engine/controls.py): the same bytes from run to run, what each kind is, and the
folder they are kept in."""

from __future__ import annotations

import io

import pytest
from benchdata import png_bytes
from PIL import Image, ImageOps

from pytest_hypeedit.engine.controls import CONTROLS_FOLDER, control_image, judge_controls, other_task, place
from pytest_hypeedit.engine.store import Store
from pytest_hypeedit.errors import HypeEditError
from pytest_hypeedit.tasks import Task


@pytest.fixture
def tasks(tmp_path):
    made = []
    for i in range(5):
        buffer = io.BytesIO()
        image = Image.new("RGB", (30, 20), (10 * i, 80, 120))
        image.putpixel((0, 0), (255, 255, 255))  # not left-right symmetric: its mirror differs
        image.save(buffer, format="PNG")
        (tmp_path / f"t{i}.png").write_bytes(buffer.getvalue())
        made.append(Task(f"task-{i}", (f"t{i}.png",), ("edit",), "Edit.", 64, 48, "mini"))
    return made


def references(tmp_path):
    return lambda task: [tmp_path / f"t{task.task_id.rsplit('-', 1)[1]}.png"]


def test_each_kind_is_what_it_says_and_the_same_bytes_every_time(tasks, tmp_path):
    refs, task = references(tmp_path), tasks[1]
    for kind in ("unchanged", "flat", "other_task", "mirrored"):
        assert control_image(kind, task, tasks, refs) == control_image(kind, task, tasks, refs)
    assert control_image("unchanged", task, tasks, refs) == ((tmp_path / "t1.png").read_bytes(), ".png")
    flat = Image.open(io.BytesIO(control_image("flat", task, tasks, refs)[0]))
    assert flat.size == (64, 48) and flat.getcolors() == [(64 * 48, (128, 128, 128))]
    mirrored = Image.open(io.BytesIO(control_image("mirrored", task, tasks, refs)[0])).convert("RGB")
    assert mirrored.tobytes() == ImageOps.mirror(Image.open(tmp_path / "t1.png").convert("RGB")).tobytes()
    assert control_image("other_task", task, tasks, refs)[0] == (tmp_path / "t3.png").read_bytes()


def test_another_task_is_drawn_from_the_task_ids_not_their_order_in_the_file(tasks):
    assert other_task(tasks[0], tasks) == other_task(tasks[0], list(reversed(tasks))) == tasks[2]
    assert all(other_task(task, tasks) != task for task in tasks)
    assert other_task(tasks[0], tasks[:1]) is None


def test_a_control_is_written_only_when_its_bytes_are_not_there(tmp_path):
    store = Store(tmp_path / CONTROLS_FOLDER)
    task = Task("task-0", ("t0.png",), ("edit",), "Edit.", 8, 8, "mini")
    place(store, "flat", task, (png_bytes(), ".png"))
    path = store.task_dir("mini", "flat", "task-0") / "000.png"
    before = path.stat().st_mtime_ns, path.stat().st_ino
    place(store, "flat", task, (png_bytes(), ".png"))
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == before  # the same bytes: left as they are
    path.write_bytes(b"tampered")
    place(store, "flat", task, (png_bytes(), ".png"))
    assert path.read_bytes() == png_bytes()  # other bytes: the control's own put back


def test_a_split_named_like_the_controls_folder_is_not_accepted(tmp_path):
    task = Task("task-0", ("t0.png",), ("edit",), "Edit.", 8, 8, CONTROLS_FOLDER)
    with pytest.raises(HypeEditError, match="shares the controls' folder"):
        judge_controls(None, tmp_path, [task])  # type: ignore[arg-type] - not accepted before the runner is used
