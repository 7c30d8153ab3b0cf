"""A small benchmark run whose HTML report holds everything the report can show, for the browser tests.

Two models on four tasks, four repeats each, through the real plugin and pytest-html.  What other
sessions fill at the same time (CONTRACTS.md) is put in through the plugin's own hooks, as they will:
``record.human`` (votes with the raters' notes) and ``record.signals`` on the controller, and the
results keys ``calibrated``, ``judge_error``, ``judge_stability``, ``signals_summary`` and
``possibly_paid``.  The judge's votes carry notes like the labels judge's.  A baseline file makes
some tasks worse; one gate fails.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_judges import judges_conftest
from fake_models import models_conftest
from PIL import Image, ImageDraw

MODELS = ("identity", "flaky")
TASKS, REPEATS = 4, 4
LONG_INSTRUCTION = (
    "Remove the red car parked on the left side of the street, including its shadow on the cobblestones and its "
    "reflection in the bakery window. Fill the area with the pavement and the storefront that would plausibly be "
    "behind it, matching the perspective, the grain and the warm afternoon light of the photograph. Keep every "
    "other object, the two people walking on the right and the colours of the whole scene exactly as they are."
)
SCRIPT_INSTRUCTION = "<script>alert(1)</script> Recolour the <b>door</b> blue."
RATER_NOTE = "the shadow of the car is still on the road <i>here</i>"
JUDGE_NOTE = "halo around the removed object"

#: The flaky model: the reference (the old release, HX_RELEASE=old: its negative); task-00 repeat 1 fails with a 503.
MODELS_CONFTEST = models_conftest("ReleaseProvider", ({"name": "flaky", "route": "flaky", "provider_model": "flaky-v1",
                                                     "price": 0.05},), route="flaky", flaky=True, seed=1234, log=None)
#: The judge (fake_judges.PanelJudge) and what other sessions fill, through the plugin's own hooks (below).
CONFTEST = judges_conftest("PanelJudge", note=JUDGE_NOTE) + (
    "from report_fixture import pytest_hypeedit_record, pytest_hypeedit_results\n")


@pytest.hookimpl(tryfirst=True)
def pytest_hypeedit_record(config, record):
    """What the calibration session fills on the controller: the panel's labels and pixel signals."""
    if record.outcome not in ("pass", "fail"):
        return
    # the humans disagree with the judge on repeat 2 of task-01 (identity passes it, they fail it)
    human_pass = record.outcome == "pass" and not (record.task_id == "task-01" and record.repeat == 2)
    verdict = "PASS" if human_pass else "FAIL"
    record.human = {"verdict": verdict, "votes": [
        {"rater": "alice", "verdict": verdict, "note": None if human_pass else RATER_NOTE},
        {"rater": "bob", "verdict": verdict, "note": None}]}
    unchanged = record.model == "identity"  # the identity model returns the reference itself
    record.signals = {"width": 256, "height": 192, "size_match": record.task_id != "task-03",
                      "aspect_match": True, "unchanged": unchanged, "ssim": 1.0 if unchanged else 0.62,
                      "delta_e": 0.0 if unchanged else 7.5}


def pytest_hypeedit_results(config, results):
    """What the calibration and the paid-call journal add to each row."""
    for row in results["rows"]:
        row["calibrated"] = {key: {"value": 0.9 * (row.get(key) or 0.0), "low": 0.5 * (row.get(key) or 0.0),
                                   "high": min(1.0, 1.2 * (row.get(key) or 0.0))}
                             for key in ("pass_rate", "pass_at_4", "pass_at_10", "hype_gap")}
        row["calibrated"]["first_attempt_pass_rate"] = {"value": 0.25, "low": 0.1, "high": 0.4}
        row["judge_error"] = {"n_human": 30, "sensitivity": 0.91, "specificity": 0.83, "pooled": True}
        row["calibration"] = {"method": "Rogan-Gladen", "design": "recorded", "n_human": 30, "note": "fixture"}
        row["judge_stability"] = {"candidates": 16, "k": 3, "flips": 2, "flip_rate": 0.125}
        row["signals_summary"] = {"size_mismatch": 4, "unchanged": 8, "unchanged_pass": 4, "ssim_mean": 0.81,
                                  "delta_e_mean": 3.7}
        row["possibly_paid"] = 1 if row["model"] == "flaky" else 0
        row["possibly_paid_cost"] = 0.05 if row["model"] == "flaky" else 0.0


def picture(seed: int, size=(256, 192)) -> bytes:
    image = Image.new("RGB", size, (40 + 40 * seed % 200, 90, 140))
    draw = ImageDraw.Draw(image)
    draw.ellipse((30 + 10 * seed, 40, 120 + 10 * seed, 150), fill=(220, 40, 40))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def tasks() -> list[dict]:
    found = []
    for t in range(TASKS):
        instruction = {1: LONG_INSTRUCTION, 2: SCRIPT_INSTRUCTION}.get(t, f"Edit {t}. Keep everything else the same.")
        found.append({"task_id": f"task-{t:02d}", "input_images": ["001.png"] + (["002.png"] if t == 3 else []),
                      "task_type": ["remove", "recolor"][t % 2], "instruction": instruction,
                      "width": 256, "height": 192})
    return found


def baseline() -> dict:
    """An earlier release: every task passed 3 of 4 (so most tasks got worse)."""
    rows = [{"model": model, "split": "mini", "cost_per_candidate": 0.05 if model == "flaky" else 0.0,
             "task_tallies": [{"task_id": f"task-{t:02d}", "passes": 3, "judged": 4, "first_passed": True,
                               "task_types": [["remove", "recolor"][t % 2]]} for t in range(TASKS)]}
            for model in MODELS]
    return {"schema": "hypeedit-results/1", "settings": {}, "complete": True, "rows": rows}


def write_bench(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "conftest.py").write_text(MODELS_CONFTEST + CONFTEST)
    split = tasks()
    for t, task in enumerate(split):
        for i, name in enumerate(task["input_images"]):
            path = root / "images" / task["task_id"] / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(picture(t + 3 * i))
    (root / "mini.json").write_text(json.dumps(split))
    (root / "old.json").write_text(json.dumps(baseline()))


def command(*extra: str, baseline: str = "old.json", outputs: str = "out", html: bool = True) -> list[str]:
    models = [arg for model in MODELS for arg in ("--model", model)]
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *models, "--tasks", "mini.json",
            "--images-base", "images", "--repeats", str(REPEATS), "--outputs", outputs, "--judge", "paneljudge",
            *(["--baseline", baseline] if baseline else []), "--gate", "pass_rate>=0.9", "--gate", "pass_rate>=0.1",
            "--bootstrap", "200", *(["--html", "report/report.html"] if html else []), *extra]


def make_report(root: Path, *extra: str) -> Path:
    """Run the benchmark in ``root``; returns the report's path."""
    write_bench(root)
    return _report(root, command(*extra))


def make_compare_report(root: Path) -> Path:
    """The old release (``HX_RELEASE=old``: flaky returns negatives and passed all of task-03) into ``old-out``,
    then this release against it with --baseline old-out/results.json (its outputs found from its settings)."""
    write_bench(root)
    env = {**os.environ, "HYPEEDIT_CACHE_DIR": str(root / "cache"), "HX_RELEASE": "old"}
    done = subprocess.run(command(baseline="", outputs="old-out", html=False), cwd=root, capture_output=True,
                          text=True, env=env, timeout=300)
    if not (root / "old-out" / "results.json").is_file():
        raise RuntimeError(f"no baseline (exit {done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return _report(root, command(baseline="old-out/results.json"))


def _report(root: Path, command: list[str]) -> Path:
    env = {**os.environ, "HYPEEDIT_CACHE_DIR": str(root / "cache")}
    env.pop("HX_RELEASE", None)
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, env=env, timeout=300)
    report = root / "report" / "report.html"
    if not report.is_file():
        raise RuntimeError(f"no report (exit {done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return report
