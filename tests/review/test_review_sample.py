"""The review app's calibration sample (random, stratified, reproducible, blind), the rater's notes, and the
files it will serve (never a link that leads out of its folders)."""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import os
import threading
from collections import Counter

import pytest
import review_fixture as fixture
from PIL import Image

from pytest_hypeedit import labels
from pytest_hypeedit.errors import InputError
from pytest_hypeedit.review.server import make_server
from pytest_hypeedit.sample_design import (
    Design,
    Stratum,
    allocate,
    design_path,
    draw,
    parse_size,
    read_design,
    write_design,
)

# --------------------------------------------------------------------------- drawing


def test_allocation_is_proportional_by_largest_remainders_with_two_at_least():
    # 10 of 60: 5 / 3.33 / 1.67 -> floors 5, 3, 1 (9), the largest remainder (.67) gets the 10th
    assert allocate({"a": 30, "b": 20, "c": 10}, 10) == {"a": 5, "b": 3, "c": 2}
    # 4 of 100: 3.6 / .4 -> 4 / 0, then the small stratum is raised to 2 (its error needs labels of its own)
    assert allocate({"a": 90, "b": 10}, 4) == {"a": 4, "b": 2}
    assert allocate({"a": 1, "b": 50}, 2) == {"a": 1, "b": 2}  # never more than a stratum holds
    assert allocate({"a": 3, "b": 3}, 100) == {"a": 3, "b": 3}


def positions(tasks: int, repeats: int):
    return [(f"t{t}", r) for t in range(tasks) for r in range(1, repeats + 1)]


def test_a_sample_is_stratified_reproducible_from_its_seed_and_shares_positions():
    populations = {"m1": positions(10, 10), "m2": positions(10, 10)[:50]}
    design = draw("public", populations, 30, seed=4)
    sizes = {s.model: len(s.sample) for s in design.strata}
    assert sizes == {"m1": 20, "m2": 10}  # 30 in proportion to 100 and 50
    m1, m2 = (set(s.sample) for s in design.strata)
    assert m1 <= set(populations["m1"]) and m2 <= set(populations["m2"])
    assert design.to_json() == {**draw("public", populations, 30, seed=4).to_json(), "created_at": design.created_at}
    other = draw("public", populations, 30, seed=5)
    assert {s.sample for s in other.strata} != {s.sample for s in design.strata}
    # one permutation for every model: m2's positions are the first ones of it that m2 has, so where m1's
    # sample reaches into m2's half of the positions, both are labelled on the same ones
    order_in_m2_half = [p for p in m1 if p in set(populations["m2"])]
    assert set(order_in_m2_half) <= m2 or m2 <= set(order_in_m2_half)
    assert design.strata[0].inclusion == pytest.approx(0.2) and design.strata[1].inclusion == pytest.approx(0.2)


def test_every_candidate_has_the_same_chance_within_its_stratum():
    # 4,000 draws of 3 of 12: each position drawn about 1,000 times (sd ~27); a bias in the permutation shows
    population = {"m": positions(4, 3)}
    counts = Counter(p for seed in range(4000) for p in draw("s", population, 3, seed).strata[0].sample)
    assert len(counts) == 12 and all(880 < c < 1120 for c in counts.values()), counts


def test_sample_sizes_as_counts_or_shares():
    assert parse_size("150", 600) == 150 and parse_size("15%", 600) == 90 and parse_size("0.1%", 600) == 1
    for bad in ("0", "-3", "1.5", "ten", "nan%", "inf"):
        with pytest.raises(InputError, match="--sample"):
            parse_size(bad, 600)


def test_a_doctored_design_file_is_not_accepted_by_name(tmp_path):
    path = tmp_path / "sample-design.json"
    good = Design("public", 1, 2, (Stratum("m", "public", (("t1", 1), ("t2", 1)), (("t1", 1),)),))
    write_design(path, good)
    assert read_design(path).strata == good.strata
    for change, message in [
        (lambda d: d["strata"][0].update(sample=[["t9", 1]]), "outside the stratum's population"),
        (lambda d: d["strata"][0].update(population=[["../../etc", 1]]), "is not a \\[task_id, repeat\\] pair"),
        (lambda d: d["strata"][0].update(model="a/b"), "strata\\[0\\].model must be a plain name"),
        (lambda d: d.update(schema="other"), "not a sampling design"),
        (lambda d: d["strata"][0].update(population=[["t1", 1], ["t1", 1]]), "names a candidate twice"),
    ]:
        data = good.to_json()
        change(data)
        path.write_text(json.dumps(data))
        with pytest.raises(InputError, match=message):
            read_design(path)


# --------------------------------------------------------------------------- the app on a sample


def build(paths, rater="ann", *extra):
    return fixture.app_of(paths, rater, *extra)[0]


def test_the_app_shows_the_sample_only_and_every_rater_gets_the_same(tmp_path):
    paths = fixture.build(tmp_path, repeats=5)  # 4 tasks x 2 models x 5 repeats = 40 judged candidates
    app = build(paths, "ann", "--sample", "25%", "--sample-seed", "3")
    design = read_design(design_path(paths["labels"]))
    shown = {(c.task_id, c.model, c.repeat) for c in app.catalog.candidates}
    assert len(shown) == 10 and shown == design.sampled()
    assert Counter(model for _, model, _ in shown) == {m: 5 for m in fixture.MODELS}  # stratified by model
    bob = build(paths, "bob")  # a second rater of the folder: the same sample, in an order of his own
    assert {(c.task_id, c.model, c.repeat) for c in bob.catalog.candidates} == shown
    assert [c.item_id for c in bob.catalog.candidates] != [c.item_id for c in app.catalog.candidates]
    with pytest.raises(InputError, match="a sample of 10 \\(seed 3\\) was drawn already"):
        build(paths, "cy", "--sample", "25%", "--sample-seed", "4")
    doc = json.loads((paths["labels"] / "ann.json").read_text())
    assert doc["sample_design"] == "sample-design.json" and doc["sample_seed"] == 3


def test_only_judged_candidates_can_be_drawn(tmp_path):
    paths = fixture.build(tmp_path, repeats=2)
    folder = paths["outputs"] / "fixture" / fixture.MODELS[0] / "task-0"
    record = json.loads((folder / "001.json").read_text())
    (folder / "001.json").write_text(json.dumps({**record, "outcome": "error", "verdict": None}))
    (folder / "002.json").unlink()  # no record: nothing says it was judged
    build(paths, "ann", "--sample", "100%")
    population = {p for s in read_design(design_path(paths["labels"])).strata
                  for p in ((t, s.model, r) for t, r in s.population)}
    assert len(population) == 14 and not {("task-0", fixture.MODELS[0], 1), ("task-0", fixture.MODELS[0], 2)} & population


@pytest.fixture
def served(tmp_path):
    paths = fixture.build(tmp_path, repeats=4)
    app = build(paths, "ann", "--sample", "50%")
    with serving(app) as port:
        yield port, app, paths


def request(port, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def test_the_rater_sees_no_model_and_no_judge_verdict(served):
    port, app, paths = served
    status, body = request(port, "GET", "/api/state")
    state = json.loads(body)
    assert status == 200 and len(state["items"]) == 16
    assert all(set(item) == {"id", "alias", "task", "repeat", "image", "verdict", "ms", "note"} for item in state["items"])
    assert all(item["verdict"] is None for item in state["items"])  # the judge's PASS/FAIL is not the rater's
    served_bytes = [body, request(port, "GET", "/")[1], request(port, "GET", "/static/app.js")[1]]
    served_bytes += [request(port, "GET", f"/img/{item['image']}")[1] for item in state["items"]]
    for secret in (*fixture.MODELS, fixture.JUDGE_REASONING, "gemini-3-flash"):
        assert not any(secret.encode() in data for data in served_bytes), secret
    record = (paths["outputs"] / "fixture" / fixture.MODELS[0] / "task-0" / "001.json").read_text()
    assert fixture.JUDGE_REASONING in record  # the records do hold it: the app left it out


def test_a_note_is_kept_with_the_verdict_in_the_upstream_schema(served):
    port, app, paths = served
    items = json.loads(request(port, "GET", "/api/state")[1])["items"]
    ops = [{"op": "a", "item": items[0]["id"], "verdict": "FAIL", "ms": 900, "note": "the logo\nis missing"},
           {"op": "b", "item": items[1]["id"], "verdict": "PASS", "ms": 700, "note": None},
           {"op": "c", "item": items[2]["id"], "verdict": "PASS", "ms": 700, "note": 7},
           {"op": "d", "item": items[3]["id"], "verdict": "PASS", "ms": 700, "note": "x" * (labels.MAX_NOTE + 1)}]
    status, body = request(port, "POST", "/api/verdicts", json.dumps({"ops": ops}), {"Content-Type": "application/json"})
    result = json.loads(body)
    assert status == 200 and result["acked"] == ["a", "b"] and [r["op"] for r in result["rejected"]] == ["c", "d"]
    rater = labels.read_labels(app.store.path, known_models=fixture.MODELS)  # still the upstream schema
    first = next(c for c in app.catalog.candidates if c.item_id == items[0]["id"])
    assert rater.notes == {(first.task_id, first.model, first.repeat): "the logo is missing"}
    again = {"op": "e", "item": items[0]["id"], "verdict": "FAIL", "ms": 900, "note": "the logo is cut off"}
    request(port, "POST", "/api/verdicts", json.dumps({"ops": [again]}), {"Content-Type": "application/json"})
    state = {i["id"]: i for i in json.loads(request(port, "GET", "/api/state")[1])["items"]}
    assert state[items[0]["id"]]["note"] == "the logo is cut off" and state[items[1]["id"]]["note"] is None


# --------------------------------------------------------------------------- what is served


def outside_image(tmp_path):
    """A private image outside every folder of the app: 37 x 23 px, so a served copy would show by its size."""
    path = tmp_path / "private" / "holiday.png"
    path.parent.mkdir()
    Image.new("RGB", (37, 23), (1, 2, 3)).save(path)
    return path


def served_sizes(port, state):
    sizes = []
    for image in [i["image"] for i in state["items"]] + [r for t in state["tasks"].values() for r in t["refs"]]:
        status, body = request(port, "GET", f"/img/{image}")
        if status == 200:
            sizes.append(Image.open(io.BytesIO(body)).size)
    return sizes


@contextlib.contextmanager
def serving(app):
    """The review app on a loopback port (the port), shut down afterwards."""
    server = make_server(app, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_candidate_that_links_out_of_the_outputs_is_never_served(tmp_path):
    paths = fixture.build(tmp_path / "root", repeats=2)
    candidate = paths["outputs"] / "fixture" / fixture.MODELS[0] / "task-1" / "002.png"
    candidate.unlink()
    os.symlink(outside_image(tmp_path), candidate)
    app = build(paths)
    assert not any(c.path == candidate for c in app.catalog.candidates)
    with serving(app) as port:
        sizes = served_sizes(port, app.state())
    assert sizes and (37, 23) not in sizes


def test_a_reference_that_links_out_of_the_images_folder_is_never_served(tmp_path):
    paths = fixture.build(tmp_path / "root", repeats=1)
    reference = paths["images"] / "task-2" / "001.png"
    reference.unlink()
    os.symlink(outside_image(tmp_path), reference)
    app = build(paths)
    assert app.state()["tasks"]["task-2"]["refs"] == []
    with serving(app) as port:
        sizes = served_sizes(port, app.state())
    assert sizes and (37, 23) not in sizes


def test_a_file_swapped_for_a_link_after_the_start_is_not_accepted(tmp_path):
    paths = fixture.build(tmp_path / "root", repeats=1)
    app = build(paths)
    with serving(app) as port:
        item = app.state()["items"][0]
        assert request(port, "GET", f"/img/{item['image']}")[0] == 200
        path = next(c.path for c in app.catalog.candidates if c.item_id == item["id"])
        path.unlink()
        os.symlink(outside_image(tmp_path), path)
        app.images._cache.clear()  # not served from the cache of the old file either
        status, body = request(port, "GET", f"/img/{item['image']}")
        assert status == 404 and b"PNG" not in body
