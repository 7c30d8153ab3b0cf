"""A newcomer's first run: the README's keyless try-out, run exactly as written, from an empty folder (the
example split ships with the plugin)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from fresh_clone import REPO, TRYOUT, keyless_env, run_keyless_tryout


def check_tryout(done: subprocess.CompletedProcess, folder: Path) -> None:
    """What the README says the try-out does: 50 FAILs (status 1), the table, the outputs and the report."""
    out = done.stdout + done.stderr
    # identity fails every task by construction: items fail, so pytest's status is 1, not a usage error (4)
    assert done.returncode == 1, out
    assert re.search(r"^=+ 50 failed\b", out, re.M), out
    table = out[out.index("HYPE-EDIT-1 results"):]
    assert re.search(r"^identity\s+example\s+0\.0%\s+0\.0%\s+0\.0%\s+4\.00\s", table, re.M), table
    assert max(len(line) for line in table.splitlines()) <= 100, table  # the answer never wraps
    results = json.loads((folder / "hypeedit-outputs" / "results.json").read_text())
    [row] = results["rows"]
    assert (row["model"], row["split"], row["tasks"], row["judged"], row["errors"]) == ("identity", "example", 5, 50, 0)
    candidates = sorted((folder / "hypeedit-outputs" / "example" / "identity").glob("*/0*.png"))
    assert len(candidates) == 50
    report = (folder / "report" / "report.html").read_text(encoding="utf-8")
    assert "HYPE-EDIT-1" in report and "Swap the positions of the triangle and the square." in report


def test_the_readme_keyless_tryout_runs_the_whole_pipeline_offline(tmp_path):
    """From an empty folder, with this checkout's install; tests/e2e/test_install.py runs the same block with the
    plugin installed from a wheel."""
    root = tmp_path / "root"
    root.mkdir()
    done = run_keyless_tryout(root, keyless_env(tmp_path / "home"))
    check_tryout(done, root / TRYOUT)
    assert sorted(p.name for p in root.iterdir()) == [TRYOUT]
    assert sorted(p.name for p in (root / TRYOUT).iterdir()) == [
        ".pytest_cache", "hypeedit-outputs", "report"]  # nothing else was needed or written


def test_the_shipped_tiny_split_is_what_its_script_makes(tmp_path):
    import runpy

    from PIL import Image

    shipped = REPO / "examples" / "tiny-split"
    runpy.run_path(str(shipped / "make_tiny_split.py"))["main"](tmp_path)
    for name in ("tiny.json", "rater1.json"):
        assert (tmp_path / name).read_text() == (shipped / name).read_text(), name
    made = sorted(p.relative_to(tmp_path) for p in (tmp_path / "images").rglob("*.png"))
    assert made == sorted(p.relative_to(shipped) for p in (shipped / "images").rglob("*.png"))
    for path in made:  # the pixels, not the bytes: another Pillow may compress differently
        with Image.open(tmp_path / path) as new, Image.open(shipped / path) as old:
            assert new.tobytes() == old.tobytes(), path
