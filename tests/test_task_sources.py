"""Task files and reference images from loopback servers: pinned sha256, one download shared by workers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from benchdata import FileServer, make_tasks, png_bytes, write_labels

from pytest_hypeedit.errors import ConfigError, TaskFileError
from pytest_hypeedit.tasks import SplitSource, load_split, parse_tasks_option, reference_image_paths

PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "hype-edit-1" / "public.json"
PINNED = "3bcf2b001e13f987f09f9e0999149f0c7c29b924e975411b6b67826f5ef72aa7"


def served_split(n=3):
    tasks = make_tasks(n)
    files = {"/split.json": json.dumps(tasks).encode()}
    files.update({f"/img/{t['task_id']}/001.png": png_bytes((i * 40, 9, 9)) for i, t in enumerate(tasks)})
    return tasks, files


def test_tasks_option_names_the_split_after_the_file_or_explicitly():
    assert parse_tasks_option("data/private.json").name == "private"
    assert parse_tasks_option("holdout=data/private.json").name == "holdout"
    assert parse_tasks_option("http://h/x/public.json?raw=1").name == "public"
    with pytest.raises(ConfigError, match="not a plain name"):
        parse_tasks_option("data/we ird.json")


def test_shipped_manifest_pins_the_upstream_commit_and_sha256():
    manifest = Path(__file__).resolve().parents[1] / "pytest_hypeedit" / "splits" / "public.yaml"
    source = parse_tasks_option(str(manifest))
    assert source.name == "public" and source.sha256 == PINNED
    assert "268591e7f7e73435cecb1dc5308aa4c1da27d478" in source.location


@pytest.mark.skipif(not PUBLIC.exists(), reason="the shared copy of public.json is not beside the repo")
def test_public_split_downloads_once_and_is_checked_against_its_sha256(tmp_path):
    with FileServer({"/public.json": PUBLIC.read_bytes()}) as server:
        source = SplitSource("public", f"{server.url}/public.json", sha256=PINNED)
        split = load_split(source, tmp_path)
        load_split(source, tmp_path)
        assert server.hits["/public.json"] == 1
    assert len(split.tasks) == 50
    assert sum(1 for t in split.tasks if len(t.task_types) == 1) == 50  # list and string forms both parsed


def test_a_mismatching_download_is_not_accepted_and_not_kept(tmp_path):
    with FileServer({"/public.json": b"[]"}) as server:
        source = SplitSource("public", f"{server.url}/public.json", sha256=PINNED)
        with pytest.raises(TaskFileError, match="does not match the pinned 3bcf2b00"):
            load_split(source, tmp_path)
    assert not list((tmp_path / "splits").glob("*.json"))


def test_remote_images_are_cached_and_a_corrupt_one_is_not_accepted(tmp_path):
    tasks, files = served_split(2)
    files[f"/img/{tasks[1]['task_id']}/001.png"] = b"\x89PNG\r\n\x1a\n broken"
    with FileServer(files) as server:
        split = load_split(SplitSource("s", f"{server.url}/split.json"), tmp_path)
        first = reference_image_paths(split.tasks[0], f"{server.url}/img", tmp_path)
        again = reference_image_paths(split.tasks[0], f"{server.url}/img", tmp_path)
        assert first == again and server.hits[f"/img/{tasks[0]['task_id']}/001.png"] == 1
        with pytest.raises(Exception, match="cannot be decoded"):
            reference_image_paths(split.tasks[1], f"{server.url}/img", tmp_path)
    assert first[0].read_bytes() == files[f"/img/{tasks[0]['task_id']}/001.png"]


def test_xdist_workers_share_one_download_of_tasks_and_images(pytester, tmp_path, monkeypatch):
    tasks, files = served_split(3)
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    verdicts = {(t["task_id"], "identity", r): r == 1 for t in tasks for r in (1, 2)}
    write_labels(pytester.path / "r1.json", verdicts)
    with FileServer(files) as server:
        args = ["--model", "identity", "--tasks", f"{server.url}/split.json", "--images-base", f"{server.url}/img"]
        result = pytester.runpytest(*args, "--repeats", "2", "--judge", "labels:r1.json", "--outputs", "out", "-n", "2")
        result.assert_outcomes(passed=3, failed=3)
        assert server.hits["/split.json"] == 1
        assert all(server.hits[f"/img/{t['task_id']}/001.png"] == 1 for t in tasks)
    row = json.loads((pytester.path / "out" / "results.json").read_text())["rows"][0]
    assert row["split"] == "split" and row["first_attempt_pass_rate"] == 1.0


def test_task_file_sha_is_recorded_in_results_settings(pytester, tmp_path, monkeypatch):
    tasks, files = served_split(1)
    digest = hashlib.sha256(files["/split.json"]).hexdigest()
    manifest = pytester.path / "mine.yaml"
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    write_labels(pytester.path / "r1.json", {(tasks[0]["task_id"], "identity", 1): False})
    with FileServer(files) as server:
        manifest.write_text(f"name: mine\nsource: {server.url}/split.json\nsha256: {digest}\nimages_base: {server.url}/img\n")
        result = pytester.runpytest("--model", "identity", "--tasks", str(manifest), "--repeats", "1",
                                    "--judge", "labels:r1.json", "--outputs", "out")
    result.assert_outcomes(failed=1)
    settings = json.loads((pytester.path / "out" / "results.json").read_text())["settings"]
    assert settings["splits"]["mine"]["sha256"] == digest
