"""A copy of the repository as a fresh clone has it, and the environment of a machine with no keys.

For the tests that run the README's commands and the example CI workflow as a
user would, in a subprocess with bash, without touching the worktree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from pytest_hypeedit.secrets import KEY_ENV

REPO = Path(__file__).resolve().parents[2]
#: What a clone does not hold: git-ignored folders and what earlier runs wrote.
NOT_IN_A_CLONE = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", ".pytest_cache", "build",
                                        "dist", "hypeedit-outputs", "report.html", "assets", "hypeedit-assets",
                                        "site")


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


# --------------------------------------------------------------------------- the README's keyless try-out


def readme_section(title: str) -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def bash_blocks(markdown: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", markdown, re.S)


def keyless_tryout() -> str:
    """The Quickstart's bash block that runs the identity control (the one the README says needs no key)."""
    blocks = [block for block in bash_blocks(readme_section("Quickstart")) if "--model identity" in block]
    assert len(blocks) == 1, "the Quickstart should have one keyless try-out block"
    return blocks[0]


#: The folder the try-out block runs in, as the README says: it makes it (empty) and runs there.
TRYOUT = "try-hypeedit"


def run_keyless_tryout(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The try-out block, as written, from the empty folder ``root``: the example split ships with the plugin,
    nothing of a clone is needed.  The block makes ``root/try-hypeedit`` and runs there."""
    assert not any(root.iterdir()), f"{root} should be empty"
    # No key, and any attempt to reach the network for the public split would fail loudly, not hang.
    env = {**env, "HYPEEDIT_PUBLIC_SPLIT_URL": "http://127.0.0.1:9/unreachable.json"}
    return subprocess.run(["bash", "-e", "-c", keyless_tryout()], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)
