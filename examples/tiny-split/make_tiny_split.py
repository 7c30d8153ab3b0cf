"""Writes the tiny example split: tiny.json, its reference images, and rater1.json.

Five small edits on images drawn here (so the project ships no third-party
data), in the upstream task schema, and one rater's labels in the upstream
review tool's schema (version 2) for the ``identity`` control: it returns the
reference unchanged, which fails every task by construction, so every one of
its candidates is labelled FAIL.  Rerun it to regenerate the files:

    python examples/tiny-split/make_tiny_split.py
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from PIL import Image, ImageDraw

HERE = Path(__file__).resolve().parent
REPEATS = 10  # the benchmark's default --repeats: the labels cover every candidate of a default run
NAMESPACE = uuid.UUID("6f1c2a4e-0d1b-4c1e-9a57-2f7a3c9b8d10")  # task ids are stable across regenerations

#: (name, task type(s), instruction, target size, the reference images' drawings)
TASKS = [
    ("red-circle", "remove", "Remove the red circle. Keep everything else the same.", (512, 512),
     [[("ellipse", (20, 20, 60, 60), "red"), ("rectangle", (70, 60, 110, 100), "navy")]]),
    ("blue-square", "change", "Make the blue square green. Keep everything else the same.", (640, 480),
     [[("rectangle", (40, 30, 90, 80), "blue")]]),
    ("grey-background", "enhance", "Make the grey background white. Keep the orange bar as it is.", (512, 512),
     [[("background", None, "grey"), ("rectangle", (30, 50, 98, 70), "orange")]]),
    ("two-shapes", "restructure", "Swap the positions of the triangle and the square.", (640, 480),
     [[("polygon", ((20, 90), (50, 30), (80, 90)), "purple"), ("rectangle", (90, 40, 120, 70), "teal")]]),
    ("logo-on-box", ["change", "restructure"], "Put the logo from the second image on the front of the box.",
     (512, 512),
     [[("rectangle", (30, 30, 100, 100), "saddlebrown")], [("ellipse", (40, 40, 88, 88), "gold")]]),
]


def draw(shapes) -> Image.Image:
    image = Image.new("RGB", (128, 128), "white")
    pen = ImageDraw.Draw(image)
    for kind, box, colour in shapes:
        if kind == "background":
            pen.rectangle((0, 0, 127, 127), fill=colour)
        else:
            getattr(pen, kind)(box, fill=colour)
    return image


def main(out: Path = HERE) -> None:
    tasks = []
    for name, task_type, instruction, (width, height), drawings in TASKS:
        task_id = str(uuid.uuid5(NAMESPACE, name))
        files = [f"{index:03d}.png" for index in range(1, len(drawings) + 1)]
        for file_name, shapes in zip(files, drawings):
            path = out / "images" / task_id / file_name
            path.parent.mkdir(parents=True, exist_ok=True)
            draw(shapes).save(path, format="PNG", optimize=True)
        tasks.append({"task_id": task_id, "input_images": files, "task_type": task_type,
                      "instruction": instruction, "width": width, "height": height})
    (out / "tiny.json").write_text(json.dumps(tasks, indent=2) + "\n", encoding="utf-8")
    fails = {f"{repeat:03d}.png": {"verdict": "FAIL", "notes": "unchanged reference: the edit was not made"}
             for repeat in range(1, REPEATS + 1)}
    labels = {"schema_version": 2, "models": {"M01": "identity"},
              "judgements": {task["task_id"]: {"M01": dict(fails)} for task in tasks}}
    (out / "rater1.json").write_text(json.dumps(labels, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
