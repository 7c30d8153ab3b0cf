"""Small benchmark fixtures for the plugin's tests: task files, images, label files, a file server."""

from __future__ import annotations

import io
import json
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from loopback import Arrived, LoopbackService, send
from PIL import Image


def png_bytes(color=(200, 30, 30), size=(24, 16)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def make_tasks(n: int, prefix: str = "task", types=("remove", "change")) -> list[dict]:
    return [
        {
            "task_id": f"{prefix}-{i:02d}",
            "input_images": ["001.png"],
            "task_type": types[i % len(types)] if i % 3 else [types[i % len(types)]],  # string and list forms
            "instruction": f"Edit {i}. Keep everything else the same.",
            "width": 640,
            "height": 480,
        }
        for i in range(n)
    ]


def write_split(root: Path, name: str, tasks: list[dict], images: Path) -> Path:
    """Write <root>/<name>.json and the reference images under <images>/<task_id>/."""
    for i, task in enumerate(tasks):
        for file_name in task["input_images"]:
            path = images / task["task_id"] / file_name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(png_bytes((10 * i % 255, 80, 120)))
    path = root / f"{name}.json"
    path.write_text(json.dumps(tasks))
    return path


def write_labels(path: Path, verdicts: dict[tuple[str, str, int], bool],
                 notes: dict[tuple[str, str, int], object] | None = None) -> Path:
    """One rater's file in the upstream schema v2 from {(task_id, model, repeat): passed}; ``notes`` adds
    a ``note`` to some verdict entries."""
    models = sorted({model for _, model, _ in verdicts})
    alias = {model: f"M{i + 1:02d}" for i, model in enumerate(models)}
    judgements: dict = {}
    for (task_id, model, repeat), passed in verdicts.items():
        entry = judgements.setdefault(task_id, {}).setdefault(alias[model], {})
        entry[f"{repeat:03d}.png"] = {"verdict": "PASS" if passed else "FAIL"}
        if notes and (task_id, model, repeat) in notes:
            entry[f"{repeat:03d}.png"]["note"] = notes[(task_id, model, repeat)]
    document = {"schema_version": 2, "models": {a: m for m, a in alias.items()}, "judgements": judgements}
    path.write_text(json.dumps(document))
    return path


def write_run_folder(folder: Path, *, conftest: str, models_file: str, tasks: list[dict],
                     labels: dict[tuple[str, str, int], bool], repeats: int) -> list[str]:
    """A folder a pytest run works in: conftest.py, fast.yaml (a models file), split "mini" of ``tasks`` with its
    images, r1.json of ``labels``; the run's arguments (no --model among them)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conftest.py").write_text(conftest)
    (folder / "fast.yaml").write_text(models_file)
    write_split(folder, "mini", tasks, folder / "images")
    write_labels(folder / "r1.json", labels)
    return ["-p", "no:cacheprovider", "--tasks", "mini.json", "--images-base", "images", "--repeats", str(repeats),
            "--outputs", "out", "--judge", "labels:r1.json", "--models-file", "fast.yaml"]


class FileServer(LoopbackService):
    """A loopback HTTP server (loopback.py) for a dict of path -> bytes, counting hits per path."""

    protocol = "HTTP/1.0"  # one request per connection, as it always served
    methods = ("GET",)

    def __init__(self, files: dict[str, bytes], delay: float = 0.0):
        super().__init__()
        self.files, self.hits = dict(files), Counter()
        self.delay = delay  # seconds before each reply: a slow image host

    def respond(self, handler: BaseHTTPRequestHandler, arrived: Arrived) -> None:
        if self.delay:
            time.sleep(self.delay)
        target = f"{arrived.path}?{arrived.query}" if arrived.query else arrived.path
        self.hits[target] += 1
        body = self.files.get(target)
        send(handler, 200 if body is not None else 404, body or b"", ())
