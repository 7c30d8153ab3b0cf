"""A rerun starts quickly: reference images checked once are not decoded again; fetching shows progress."""

from __future__ import annotations

import pytest
from benchdata import make_tasks, write_labels, write_split

from pytest_hypeedit import tasks as tasks_module
from pytest_hypeedit.errors import ImageError
from pytest_hypeedit.tasks import CheckedImages, Task, reference_image_paths


@pytest.fixture
def decodes(monkeypatch):
    seen: list[str] = []
    original = tasks_module.check_image_bytes

    def counting(raw, where, task=None):
        seen.append(where)
        return original(raw, where, task)

    monkeypatch.setattr(tasks_module, "check_image_bytes", counting)
    monkeypatch.setattr(tasks_module, "_verified", {})  # the per-process memo of the old code path
    return seen


def one_task(tmp_path, name="t1") -> Task:
    write_split(tmp_path, "s", [{**make_tasks(1)[0], "task_id": name}], tmp_path / "images")
    return Task(name, ("001.png",), ("remove",), "Remove it.", 64, 48, "s")


def test_an_image_checked_once_is_not_decoded_again(tmp_path, decodes):
    task = one_task(tmp_path)
    for _ in range(2):  # two runs, each with a fresh cache object read from disk
        checked = CheckedImages(tmp_path / "cache" / "checked.json")
        reference_image_paths(task, str(tmp_path / "images"), tmp_path / "cache", checked=checked)
        checked.save()
        tasks_module._verified.clear()
    assert len(decodes) == 1


def test_a_changed_image_is_decoded_again_and_a_corrupt_one_not_accepted(tmp_path, decodes):
    task = one_task(tmp_path)
    image = tmp_path / "images" / "t1" / "001.png"
    checked = CheckedImages(tmp_path / "checked.json")
    reference_image_paths(task, str(tmp_path / "images"), tmp_path, checked=checked)
    checked.save()
    image.write_bytes(image.read_bytes()[:40])  # truncated: another size
    tasks_module._verified.clear()
    with pytest.raises(ImageError, match="t1.*cannot be decoded"):
        reference_image_paths(task, str(tmp_path / "images"), tmp_path, checked=CheckedImages(tmp_path / "checked.json"))
    assert len(decodes) == 2


def test_an_unreadable_memory_means_decoding_again(tmp_path, decodes):
    task = one_task(tmp_path)
    (tmp_path / "checked.json").write_text("{torn")
    reference_image_paths(task, str(tmp_path / "images"), tmp_path, checked=CheckedImages(tmp_path / "checked.json"))
    assert len(decodes) == 1


def test_a_benchmark_rerun_decodes_no_reference_image(pytester, tmp_path, monkeypatch, decodes):
    write_split(pytester.path, "mini", make_tasks(5), pytester.path / "images")
    write_labels(pytester.path / "r.json", {(f"task-{t:02d}", "identity", 1): False for t in range(5)})
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    run = ["-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json", "--images-base", "images",
           "--repeats", "1", "--judge", "labels:r.json", "--outputs", "out"]
    pytester.runpytest(*run).assert_outcomes(failed=5)
    assert len(decodes) == 5
    tasks_module._verified.clear()
    pytester.runpytest(*run).assert_outcomes(failed=5)
    assert len(decodes) == 5  # the second start decoded nothing


def test_fetching_reference_images_shows_progress_and_is_silent_under_q(pytester, tmp_path, monkeypatch):
    from benchdata import FileServer, png_bytes

    task_list = make_tasks(6)
    files = {f"/imgs/{t['task_id']}/001.png": png_bytes() for t in task_list}
    (pytester.path / "mini.json").write_text(__import__("json").dumps(task_list))
    write_labels(pytester.path / "r.json", {(t["task_id"], "identity", 1): False for t in task_list})

    def run(server, cache, *extra):
        monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / cache))  # a fresh cache: every image fetched
        return pytester.runpytest("-p", "no:cacheprovider", *extra, "--model", "identity", "--tasks", "mini.json",
                                  "--images-base", f"{server.url}/imgs", "--repeats", "1",
                                  "--judge", "labels:r.json", "--outputs", f"out-{cache}")

    with FileServer(files, delay=0.6) as server:  # longer than the 0.5 s after which fetching is worth a line
        shown = run(server, "a")
        quiet = run(server, "b", "-q")
    shown.assert_outcomes(failed=6)
    shown.stdout.fnmatch_lines(["hypeedit: reference images of 6/6 tasks ready (*s)"])
    assert quiet.parseoutcomes()["failed"] == 6
    assert "reference images of" not in quiet.stdout.str()
