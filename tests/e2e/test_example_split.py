"""The example split ships in the package: ``pytest --model identity --tasks example --judge labels:example``
runs from any folder, no clone (splits/example.yaml; tests/e2e/test_install.py runs it from an installed wheel)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_hypeedit.errors import LabelsError
from pytest_hypeedit.labels import expand_label_paths
from pytest_hypeedit.tasks import SPLITS_DIR, parse_tasks_option, shipped_split_names

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "tiny-split"
SHIPPED = SPLITS_DIR / "example"


def files_of(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts}


def test_the_shipped_copy_is_the_examples_folder_byte_for_byte():
    """examples/tiny-split/ (what make_tiny_split.py writes, tests/e2e/test_first_run.py) and the package's copy
    cannot drift apart."""
    shipped = files_of(SHIPPED)
    assert shipped == files_of(EXAMPLES)
    assert {"tiny.json", "rater1.json"} <= set(shipped) and sum(name.startswith("images/") for name in shipped) == 6


def test_a_bare_split_name_is_the_shipped_manifest(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an empty folder
    source = parse_tasks_option("example")
    assert (source.name, Path(source.location)) == ("example", SHIPPED / "tiny.json")
    assert Path(source.images_base) == SHIPPED / "images"
    assert source.url_variable is None  # a local file: no mirror variable to name
    public = parse_tasks_option("public")
    assert (public.name, public.sha256) == ("public", parse_tasks_option(str(SPLITS_DIR / "public.yaml")).sha256)
    assert public.location.startswith("https://")
    assert shipped_split_names() == ["example", "public"]


def test_a_file_of_that_name_in_the_folder_still_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "example").write_text("[]")
    source = parse_tasks_option("example")
    assert (source.location, source.images_base) == ("example", "images")


def test_a_folder_of_that_name_does_not_hide_the_shipped_split(tmp_path, monkeypatch):
    """A project's own public/ folder (web assets, say) is no task file: --tasks public is still the split."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "public").mkdir()
    assert parse_tasks_option("public").location.startswith("https://")


def test_labels_example_is_the_shipped_rater_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert expand_label_paths(["example"]) == [SHIPPED / "rater1.json"]
    with pytest.raises(LabelsError):  # the public split ships no labels: the name stays a (missing) path
        from pytest_hypeedit.labels import read_panel

        read_panel(["public"])


def test_the_tryout_runs_from_an_empty_folder(pytester):
    """No task file, image or labels file in the folder: everything comes from the package."""
    result = pytester.runpytest("--model", "identity", "--tasks", "example", "--judge", "labels:example",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(failed=50)
    result.stdout.re_match_lines([r"^identity\s+example\s+0\.0%\s+0\.0%\s+0\.0%\s+4\.00\s"])
    # pytester's HOME is its folder: .cache is the user cache dir; nothing else was needed or written
    assert sorted(p.name for p in pytester.path.iterdir()) == [".cache", "hypeedit-outputs"]
    assert len(list((pytester.path / "hypeedit-outputs" / "example" / "identity").glob("*/0*.png"))) == 50
