"""pytest's rootdir trap (glue/rootdir_guard.py): ``--tasks /elsewhere/private.json`` with a space.

pytest chooses the rootdir and the config file from the command line before plugins load, so it takes
that value for a test path; the rootdir would become the common ancestor of the run's directory and the
task file's, and the project's ini file would be ignored.  The run must stop with one clear usage error
before anything is written; with ``--tasks=PATH`` the run is rooted where it was started.
"""

from __future__ import annotations

import pytest
from benchdata import make_tasks, write_labels, write_split

PROJECT_INI = "[pytest]\nmarkers =\n    from_the_project_ini: proves the project's ini file was read\n"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch, tmp_path):
    """A project directory with its own pytest.ini, and a private split in a sibling directory."""
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    (pytester.path / "pytest.ini").write_text(PROJECT_INI)
    private = pytester.path.parent / f"{pytester.path.name}-private"
    private.mkdir()
    write_split(private, "private", make_tasks(2), private / "images")
    verdicts = {(f"task-{t:02d}", "identity", 1): t == 0 for t in range(2)}
    write_labels(pytester.path / "r1.json", verdicts)
    return private / "private.json"


def run_args(*extra: str) -> list[str]:
    return ["--model", "identity", "--judge", "labels:r1.json", "--repeats", "1", *extra]


def test_a_task_file_elsewhere_given_with_a_space_is_one_usage_error_before_anything_is_written(pytester, project):
    images = project.parent / "images"
    result = pytester.runpytest(*run_args("--tasks", str(project), "--images-base", str(images)))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        f"ERROR: --tasks {project}, --images-base {images}: pytest read these values as test paths before "
        f"the plugin was loaded, and moved the rootdir from {pytester.path} to {pytester.path.parent} and "
        f"ignored the config file {pytester.path / 'pytest.ini'}; *"
        f"Write the option with '=': --tasks={project} --images-base={images}",
    ])
    for folder in (pytester.path, pytester.path.parent, project.parent):
        assert not (folder / ".pytest_cache").exists() and not (folder / "hypeedit-outputs").exists()


def test_the_same_file_given_with_equals_runs_rooted_where_pytest_was_started(pytester, project):
    images = project.parent / "images"
    result = pytester.runpytest(*run_args(f"--tasks={project}", f"--images-base={images}", "-v",
                                          "--strict-markers", "-m", "not from_the_project_ini"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"rootdir: {pytester.path}", "configfile: pytest.ini",
                                 "hypeedit::private::task-00[[]identity-r001[]] PASSED*"])
    assert (pytester.path / "hypeedit-outputs" / "private" / "identity" / "task-00" / "001.png").is_file()
    assert (pytester.path / ".pytest_cache").is_dir()
    assert not (project.parent / "hypeedit-outputs").exists()


def test_outputs_default_to_the_invocation_directory_not_the_rootdir(pytester, project, monkeypatch):
    """An explicit --rootdir above the run's directory: the candidates still go where pytest was started,
    in every xdist worker too."""
    run_dir = pytester.mkdir("run")
    (pytester.path / "r1.json").rename(run_dir / "r1.json")
    monkeypatch.chdir(run_dir)
    result = pytester.runpytest(*run_args(f"--tasks={project}", f"--images-base={project.parent / 'images'}",
                                          f"--rootdir={pytester.path}", "-n", "2"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"rootdir: {pytester.path}"])
    assert (run_dir / "hypeedit-outputs" / "results.json").is_file()
    assert sorted(p.name for p in (run_dir / "hypeedit-outputs" / "private" / "identity").iterdir()) == [
        "task-00", "task-01"]
    assert not (pytester.path / "hypeedit-outputs").exists()
