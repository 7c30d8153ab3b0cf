"""The plugin installed as a team installs it: from a built wheel, into a fresh virtual environment outside
the clone.

- ``python -m build`` makes the sdist and then the wheel *from the sdist*, as a release does, so a file the
  sdist leaves out is missing from the wheel too;
- the wheel holds every file of the package's folders: a data file (models.yaml, a split manifest, a prompt,
  the review app's static files, the report's assets) that pyproject's package-data misses fails here;
- installed with its dependencies (from the package index, through pip's cache) into a new venv, the code that
  opens each data file finds it there, and the README's keyless try-out runs from an empty folder (the
  example split ships in the package), with nothing of this checkout on the path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from fresh_clone import REPO, TRYOUT, copy_repo, keyless_env, run_keyless_tryout
from test_first_run import check_tryout

PACKAGE = "pytest_hypeedit"

#: Run by the installed venv's Python in isolated mode (-I: no script folder, no user site, no PYTHONPATH):
#: each data file opened by the code that opens it, and where the package was imported from.
OPENS_ITS_DATA = r"""
import importlib.resources, json
import pytest_hypeedit
from pytest_hypeedit.registry import load_registry
from pytest_hypeedit.tasks import default_sources
from pytest_hypeedit.judges.prompting import RUBRIC
from pytest_hypeedit.report.published import load_published
from pytest_hypeedit.review.server import STATIC

opened = {
    "models": sorted(load_registry().models),
    "split": default_sources()[0].name,
    "rubric": len(RUBRIC),
    "published": len(load_published().rows),
    "static": [len(importlib.resources.files("pytest_hypeedit.review").joinpath("static", name).read_bytes())
               for name, _ in STATIC.values()],
}
print(json.dumps({"package": pytest_hypeedit.__file__, "opened": opened}))
"""


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def build(root: Path) -> Path:
    """The sdist and the wheel built from it, from a copy of the checkout (a build writes beside its files);
    the wheel's path."""
    source = copy_repo(root / "source")
    run(sys.executable, "-m", "build", "--outdir", str(root / "dist"), str(source))
    [wheel], [_] = sorted((root / "dist").glob("*.whl")), sorted((root / "dist").glob("*.tar.gz"))
    return wheel


def install(wheel: Path, root: Path) -> Path:
    """A new venv outside the clone with the wheel and its dependencies; its bin folder.  It gets no pip of
    its own (this one installs into it with --python): seconds of set-up less, nothing else differs."""
    run(sys.executable, "-m", "venv", "--without-pip", str(root / "env"))
    python = root / "env" / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", str(python), "install", "--no-compile", "--quiet", str(wheel))
    return root / "env" / "bin"


def package_files() -> set[str]:
    """Every file of the package's folders in this checkout, as the wheel would name it."""
    root = REPO / PACKAGE
    return {f"{PACKAGE}/{path.relative_to(root).as_posix()}" for path in root.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo")}


def test_a_wheel_built_from_the_sdist_installs_anywhere_and_runs_the_tryout(tmp_path):
    """One test, not three: building and installing take most of a minute, and under -n each worker would
    pay for it again."""
    wheel = build(tmp_path / "build")
    check_wheel_holds_the_package(wheel)
    venv = install(wheel, tmp_path / "venv")
    check_the_package_opens_its_data(venv, tmp_path)
    check_the_tryout(venv, tmp_path / "try")


def check_wheel_holds_the_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name for name in archive.namelist() if name.startswith(f"{PACKAGE}/")}
    assert shipped == package_files()
    data = {name for name in shipped if not name.endswith(".py")}
    assert {f"{PACKAGE}/models.yaml", f"{PACKAGE}/splits/public.yaml", f"{PACKAGE}/judges/prompt.txt",
            f"{PACKAGE}/report/published.yaml", f"{PACKAGE}/review/static/index.html",
            f"{PACKAGE}/splits/example.yaml", f"{PACKAGE}/splits/example/tiny.json",
            f"{PACKAGE}/splits/example/rater1.json", f"{PACKAGE}/py.typed"} <= data


def check_the_package_opens_its_data(venv: Path, cwd: Path) -> None:
    done = run(str(venv / "python"), "-I", "-c", OPENS_ITS_DATA, cwd=cwd)
    found = json.loads(done.stdout)
    assert found["package"].startswith(str(venv.parent)), found["package"]  # not this checkout
    opened = found["opened"]
    assert "seedream-4.5" in opened["models"] and "identity" in opened["models"]
    assert opened["split"] == "public" and opened["rubric"] > 1000 and opened["published"] == 21
    assert len(opened["static"]) >= 3 and all(size > 0 for size in opened["static"])


def check_the_tryout(venv: Path, root: Path) -> None:
    """The README's try-out from an empty folder, with this venv's commands."""
    root.mkdir()
    env = keyless_env(root.parent / "try-home", PATH=f"{venv}{os.pathsep}{os.environ.get('PATH', '')}",
                      VIRTUAL_ENV=str(venv.parent))
    env.pop("PYTHONPATH", None)
    done = run_keyless_tryout(root, env)
    check_tryout(done, root / TRYOUT)
    assert f"rootdir: {root / TRYOUT}" in done.stdout and "hypeedit-0.1.0" in done.stdout
    assert sorted(p.name for p in root.iterdir()) == [TRYOUT]  # the empty folder held nothing but the run
    results = root / TRYOUT / "hypeedit-outputs" / "results.json"
    leaderboard = run(str(venv / "hypeedit-leaderboard"), str(results), "--with-published", cwd=root, env=env)
    assert "| identity (judge) | 0.0% |" in leaderboard.stdout and "(published)" in leaderboard.stdout
