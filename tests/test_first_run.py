"""A newcomer's first run: the README's keyless try-out, run exactly as written, from a fresh copy of the repo."""

from __future__ import annotations

import json
import re
import subprocess

from fresh_clone import REPO, copy_repo, keyless_env


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


def test_the_readme_keyless_tryout_runs_the_whole_pipeline_offline(tmp_path):
    clone = copy_repo(tmp_path / "clone")
    env = keyless_env(tmp_path / "home")
    # No key, and any attempt to reach the network for the public split would fail loudly, not hang.
    env["HYPEEDIT_PUBLIC_SPLIT_URL"] = "http://127.0.0.1:9/unreachable.json"
    done = subprocess.run(["bash", "-e", "-c", keyless_tryout()], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=120)
    out = done.stdout + done.stderr
    # identity fails every task by construction: items fail, so pytest's status is 1, not a usage error (4)
    assert done.returncode == 1, out
    assert re.search(r"^=+ 50 failed\b", out, re.M), out
    table = out[out.index("HYPE-EDIT-1 results"):]
    assert re.search(r"^identity\s+tiny\s+0\.0%\s+0\.0%\s+0\.0%\s+4\.00\s", table, re.M), table
    results = json.loads((clone / "hypeedit-outputs" / "results.json").read_text())
    [row] = results["rows"]
    assert (row["model"], row["split"], row["tasks"], row["judged"], row["errors"]) == ("identity", "tiny", 5, 50, 0)
    candidates = sorted((clone / "hypeedit-outputs" / "tiny" / "identity").glob("*/0*.png"))
    assert len(candidates) == 50
    report = (clone / "report.html").read_text(encoding="utf-8")
    assert "HYPE-EDIT-1" in report and "Swap the positions of the triangle and the square." in report


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
