"""A task id, an image file name, a split or a model name becomes a path on disk: anything but a plain
name is not accepted.

The error names the task file and the task (or the option, or the models file), and says what is allowed.
"""

from __future__ import annotations

import json

import pytest
from benchdata import make_tasks

from pytest_hypeedit.errors import ConfigError, TaskFileError
from pytest_hypeedit.registry import build_registry
from pytest_hypeedit.tasks import SplitSource, is_plain_name, load_split, parse_tasks_option

HOSTILE_IDS = [
    "../escape",  # ".." at the start
    "a/../b",  # in the middle
    "a/..",  # at the end
    "a..b",  # ".." inside a name
    "ab..",
    "..",
    ".",
    "a/b",
    "a\\b",
    "..\\a",
    "/etc",  # absolute
    "C:\\temp",
    "a\x00b",
    "task-01\n",  # "$" in a regex matches before a trailing newline
    "",
    ".hidden",
    pytest.param("x" * 201, id="201-characters"),
]
HOSTILE_IMAGES = [
    "../001.png",
    "sub/../001.png",
    "a..b.png",
    "..png",
    "sub/001.png",
    "sub\\001.png",
    "..\\001.png",
    "/etc/001.png",
    "C:\\001.png",
    ".png",
    "001.png\x00.txt",
]


def load(tmp_path, tasks: list[dict]):
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(tasks))
    return path, load_split(SplitSource("mini", str(path)), tmp_path / "cache")


@pytest.mark.parametrize("task_id", HOSTILE_IDS)
def test_a_task_id_that_is_not_a_plain_name_is_not_accepted_naming_file_and_task(tmp_path, task_id):
    tasks = make_tasks(3)
    tasks[1]["task_id"] = task_id
    with pytest.raises(TaskFileError) as info:
        load(tmp_path, tasks)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'mini.json'}: task #2: task_id {task_id!r} is not a plain name")
    assert "paths and '..' are not accepted" in message


@pytest.mark.parametrize("name", HOSTILE_IMAGES)
def test_an_image_name_that_is_not_a_plain_name_is_not_accepted_naming_file_and_task(tmp_path, name):
    tasks = make_tasks(3)
    tasks[2]["input_images"] = ["001.png", name]
    with pytest.raises(TaskFileError) as info:
        load(tmp_path, tasks)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'mini.json'}: task task-02: input image {name!r}")
    assert "no paths, no '..'" in message


@pytest.mark.parametrize("name", ["9c564c44-1226-40b7-808f-a21c809acd44", "task_01", "v1.2-final", "A"])
def test_plain_names_are_accepted(tmp_path, name):
    tasks = make_tasks(1)
    tasks[0]["task_id"] = name
    tasks[0]["input_images"] = [f"{name}.webp", "002.jpeg"]
    _, split = load(tmp_path, tasks)
    assert split.tasks[0].task_id == name and split.tasks[0].input_images == (f"{name}.webp", "002.jpeg")


@pytest.mark.parametrize("value", [None, 7, ["a"], {"a": 1}])
def test_a_task_id_that_is_not_a_string_is_not_a_plain_name(value):
    assert not is_plain_name(value)


@pytest.mark.parametrize("task_type", ["remove\n", "re move", "1remove", ""])
def test_a_task_type_that_is_not_a_word_is_not_accepted(tmp_path, task_type):
    tasks = make_tasks(2)
    tasks[1]["task_type"] = [task_type]
    with pytest.raises(TaskFileError, match=r"task task-01: task_type .* must be a word"):
        load(tmp_path, tasks)


@pytest.mark.parametrize("name", ["../escape", "a/b", "/abs", "a..b", "mini\n"])
def test_a_split_manifest_whose_name_is_not_a_plain_name_is_not_accepted(tmp_path, name):
    manifest = tmp_path / "evil.yaml"
    manifest.write_text(json.dumps({"name": name, "source": str(tmp_path / "mini.json")}))  # JSON is YAML
    with pytest.raises(ConfigError, match=r"--tasks .*evil.yaml: split name .* is not a plain name"):
        parse_tasks_option(str(manifest))


def test_a_manifest_renamed_with_name_equals_is_accepted(tmp_path):
    manifest = tmp_path / "evil.yaml"
    manifest.write_text(json.dumps({"name": "../escape", "source": str(tmp_path / "mini.json")}))
    assert parse_tasks_option(f"private={manifest}").name == "private"


@pytest.mark.parametrize("name", ["../escape", "a/b", "m1\n", ".hidden", ""])
def test_a_model_name_that_is_not_a_plain_name_is_not_accepted(name):
    entry = {"route": "identity", "provider_model": "identity", "price": 0.0}
    with pytest.raises(ConfigError, match=r"models.yaml: model name .* is not a plain name; it becomes a folder name"):
        build_registry([("models.yaml", {"models": {name: entry}})])
