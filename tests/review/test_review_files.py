"""The review app reads candidates as the run does: the file the record names (never a stray beside it, so the
rater's verdict lands on the file shown and counted), regular files only (a link is skipped, even one that stays
inside the outputs), and turned upright by the EXIF orientation the signals and the report honour."""

from __future__ import annotations

import io
import json
import os

import review_fixture as fixture
from PIL import Image
from test_review_sample import build, request, serving


def candidate_folder(paths, model=0, task="task-1"):
    return paths["outputs"] / "fixture" / fixture.MODELS[model] / task


def test_a_stray_beside_the_named_candidate_is_never_shown_and_the_verdict_lands_on_the_named_file(tmp_path):
    paths = fixture.build(tmp_path, repeats=1)
    folder = candidate_folder(paths)
    (folder / "001.png").rename(folder / "001.jpg")  # the run's candidate, as its record names it
    record = json.loads((folder / "001.json").read_text())
    (folder / "001.json").write_text(json.dumps({**record, "candidate": "001.jpg"}))
    Image.new("RGB", (41, 29), (250, 0, 0)).save(folder / "001.jpeg", format="JPEG")  # sorts before 001.jpg
    app = build(paths)
    shown = next(c for c in app.catalog.candidates if c.model == fixture.MODELS[0] and c.task_id == "task-1")
    assert shown.path == folder / "001.jpg"
    assert any("001.jpeg: not the file its record names (the candidate is 001.jpg); skipped" in w
               for w in app.catalog.warnings)
    with serving(app) as port:
        item = next(i for i in app.state()["items"] if i["id"] == shown.item_id)
        status, body = request(port, "GET", f"/img/{item['image']}")
        assert status == 200 and Image.open(io.BytesIO(body)).size == (48, 32)  # not the stray's 41 x 29
        op = {"op": "a", "item": item["id"], "verdict": "FAIL", "ms": 500}
        request(port, "POST", "/api/verdicts", json.dumps({"ops": [op]}), {"Content-Type": "application/json"})
    doc = json.loads(app.store.path.read_text())
    alias = next(a for a, m in doc["models"].items() if m == fixture.MODELS[0])
    assert list(doc["judgements"]["task-1"][alias]) == ["001.jpg"]


def test_a_link_to_another_candidate_inside_the_outputs_is_skipped_with_its_name(tmp_path):
    paths = fixture.build(tmp_path, repeats=2)
    folder = candidate_folder(paths)
    (folder / "002.png").unlink()
    os.symlink(folder / "001.png", folder / "002.png")  # inside the outputs, but a link all the same
    app = build(paths)
    assert not any(c.path == folder / "002.png" for c in app.catalog.candidates)
    assert any(w.startswith(f"{folder / '002.png'}: a symbolic link") for w in app.catalog.warnings)


def test_a_rotated_candidate_is_shown_upright(tmp_path):
    paths = fixture.build(tmp_path, repeats=1)
    folder = candidate_folder(paths)
    stored = Image.new("RGB", (32, 48), (0, 90, 0))  # on its side; orientation 6 shows it 48 x 32
    exif = Image.Exif()
    exif[0x0112] = 6
    (folder / "001.png").unlink()
    stored.save(folder / "001.jpg", format="JPEG", exif=exif)
    record = json.loads((folder / "001.json").read_text())
    (folder / "001.json").write_text(json.dumps({**record, "candidate": "001.jpg"}))
    app = build(paths)
    shown = next(c for c in app.catalog.candidates if c.path == folder / "001.jpg")
    assert Image.open(io.BytesIO(app.images.png(app.images.candidate_image[shown.item_id]))).size == (48, 32)


def test_a_candidate_swapped_for_a_link_inside_the_outputs_after_the_start_is_not_served(tmp_path):
    paths = fixture.build(tmp_path, repeats=2)
    app = build(paths)
    with serving(app) as port:
        item = app.state()["items"][0]
        path = next(c.path for c in app.catalog.candidates if c.item_id == item["id"])
        other = path.with_name("002.png" if path.name == "001.png" else "001.png")
        path.unlink()
        os.symlink(other, path)  # still inside the outputs folder: a link all the same
        app.images._cache.clear()
        assert request(port, "GET", f"/img/{item['image']}")[0] == 404
