"""A copy of the repository as a fresh clone has it, and the environment of a machine with no keys.

For the tests that run the README's commands and the example CI workflow as a
user would, in a subprocess with bash, without touching the worktree.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from pytest_hypeedit.secrets import KEY_ENV

REPO = Path(__file__).resolve().parent.parent
#: What a clone does not hold: git-ignored folders and what earlier runs wrote.
NOT_IN_A_CLONE = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", ".pytest_cache", "build",
                                        "dist", "hypeedit-outputs", "report.html", "assets", "hypeedit-assets")


def copy_repo(dest: Path) -> Path:
    shutil.copytree(REPO, dest, ignore=NOT_IN_A_CLONE, symlinks=True)
    return dest


def keyless_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without any API key, base URL override or cache setting, with a fresh
    HOME (so the default cache folder is new, as on a new machine) and this venv's commands on PATH."""
    secrets = {name for names in KEY_ENV.values() for name in names}
    env = {name: value for name, value in os.environ.items()
           if name not in secrets and not name.startswith(("HYPEEDIT_", "PYTEST_", "XDG_", "GOOGLE_"))}
    home.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    env.update(extra)
    return env
