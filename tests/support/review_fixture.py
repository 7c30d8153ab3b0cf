"""A small outputs folder of two models for the review app's tests (generated PNGs)."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

MODELS = ("zephyrsecretmodel", "quokkahiddenmodel")  # names that must never reach the browser
TASK_TYPES = ("text", "colour", "text", "object")


def _png(path: Path, colour: tuple[int, int, int], size=(48, 32), **save) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path, **save)


def build(root: Path, repeats: int = 3) -> dict:
    """tasks.json, images/<task>/001.png, outputs/fixture/<model>/<task>/NNN.png: 4 tasks x 2 models x repeats."""
    root.mkdir(parents=True, exist_ok=True)
    tasks = [{"task_id": f"task-{i}", "input_images": ["001.png"] + (["002.png"] if i == 0 else []),
              "task_type": TASK_TYPES[i], "instruction": f"Change thing number {i}", "width": 48, "height": 32}
             for i in range(len(TASK_TYPES))]
    (root / "tasks.json").write_text(json.dumps(tasks))
    for i, task in enumerate(tasks):
        for name in task["input_images"]:
            _png(root / "images" / task["task_id"] / name, (10 * i, 100, 200))
    for m, model in enumerate(MODELS):
        for _i, task in enumerate(tasks):
            for r in range(1, repeats + 1):
                folder = root / "outputs" / "fixture" / model / task["task_id"]
                # the model name in PNG metadata: the app must strip it
                from PIL import PngImagePlugin
                info = PngImagePlugin.PngInfo()
                info.add_text("Software", model)
                _png(folder / f"{r:03d}.png", (200, 20 * r, 60 * m), pnginfo=info)
                (folder / f"{r:03d}.json").write_text(json.dumps(_record(model, task, r)))
    (root / "secret.txt").write_text("TOPSECRET-OUTSIDE")
    return {"tasks": root / "tasks.json", "images": root / "images", "outputs": root / "outputs",
            "labels": root / "judgements" / "fixture", "candidates": len(tasks) * len(MODELS) * repeats}


#: What the judge said: in every record, and never to reach the rater.
JUDGE_REASONING = "JUDGE-VERDICT-REASONING-MARKER"


def _record(model: str, task: dict, repeat: int) -> dict:
    """A record as the plugin writes it: judged PASS on odd repeats, FAIL on even ones, by a named judge."""
    verdict = "PASS" if repeat % 2 else "FAIL"
    return {"schema": "hypeedit-record/1", "split": "fixture", "model": model, "task_id": task["task_id"],
            "repeat": repeat, "candidate": f"{repeat:03d}.png", "outcome": verdict.lower(), "verdict": verdict,
            "reasoning": f"{JUDGE_REASONING} {verdict}", "judge": "gemini-3-flash"}


def server_args(paths: dict, rater: str = "ann", port: int = 0) -> list[str]:
    return ["--outputs", str(paths["outputs"]), "--tasks", f"fixture={paths['tasks']}",
            "--images-base", str(paths["images"]), "--rater", rater, "--port", str(port), "--seed", "7"]


def app_of(paths: dict, rater: str = "ann", *extra: str):
    """(app, args): the review app ``hypeedit-review`` builds on the fixture's folder from ``server_args``."""
    from pytest_hypeedit.review import __main__ as cli

    args = cli.parse_args(server_args(paths, rater) + list(extra))
    split, images_base = cli.load_tasks(args)
    return cli.build_app(args, split, images_base, cli.labels_path(args, split.name))[0], args
