"""A release bought aside (``<outputs>/<split>/<model>@<release id>``, engine/release.py) is reviewed like any
model folder: its own blinded entry, whose alias the labels file maps back to ``<model>@<id>``, so a rater's
verdicts on it can calibrate the run that measured that release (glue/human_labels.py); a folder whose name is
neither a plain model name nor ``<model>@<12 hex digits>`` is skipped with a warning naming it."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import review_fixture as fixture
from test_review_sample import build, request, serving

from pytest_hypeedit import labels
from pytest_hypeedit.engine.release import Release, aside_folder
from pytest_hypeedit.sample_design import design_path, read_design
from pytest_hypeedit.tasks import folder_parts

RELEASE_ID = "0123456789ab"
MODEL = fixture.MODELS[0]
ASIDE = f"{MODEL}@{RELEASE_ID}"


def with_release_aside(tmp_path, repeats=2):
    """The fixture's outputs with a second release of its first model in ``<model>@<id>``, as a run of a new
    release leaves it (its records name the model, not the folder)."""
    paths = fixture.build(tmp_path, repeats=repeats)
    split_dir = paths["outputs"] / "fixture"
    shutil.copytree(split_dir / MODEL, split_dir / ASIDE)
    return paths, split_dir


def test_a_release_bought_aside_is_its_own_blinded_entry_and_its_verdicts_map_back_to_it(tmp_path):
    paths, _ = with_release_aside(tmp_path)
    app = build(paths)
    shown = Counter(c.model for c in app.catalog.candidates)
    assert shown == {MODEL: 8, ASIDE: 8, fixture.MODELS[1]: 8}  # 4 tasks x 2 repeats each
    assert sorted(app.catalog.aliases.values()) == sorted([MODEL, ASIDE, fixture.MODELS[1]])
    aside = next(c for c in app.catalog.candidates if c.model == ASIDE)
    assert aside.alias != next(c.alias for c in app.catalog.candidates if c.model == MODEL)
    with serving(app) as port:
        status, body = request(port, "GET", "/api/state")
        assert status == 200 and RELEASE_ID.encode() not in body and MODEL.encode() not in body  # still blind
        op = {"op": "a", "item": aside.item_id, "verdict": "PASS", "ms": 900}
        request(port, "POST", "/api/verdicts", json.dumps({"ops": [op]}), {"Content-Type": "application/json"})
    doc = json.loads(app.store.path.read_text())
    assert doc["models"][aside.alias] == ASIDE
    read = labels.read_labels(app.store.path, known_models=[MODEL, fixture.MODELS[1]])
    assert read.verdicts == {(aside.task_id, ASIDE, aside.repeat): True}


def test_an_aside_release_keeps_its_alias_on_a_restart(tmp_path):
    paths, _ = with_release_aside(tmp_path)
    first = build(paths).catalog.aliases
    assert build(paths).catalog.aliases == first


def test_a_folder_that_is_no_release_of_a_model_is_skipped_with_a_warning_naming_it(tmp_path):
    paths, split_dir = with_release_aside(tmp_path, repeats=1)
    hostile = [f"{MODEL}@not-an-id", f"{MODEL}@{RELEASE_ID}@{RELEASE_ID}", f"{MODEL}@{RELEASE_ID.upper()}",
               f"a..b@{RELEASE_ID}", f"{MODEL}@{RELEASE_ID}\n", "a model"]
    for name in hostile:
        shutil.copytree(split_dir / MODEL, split_dir / name)
    (split_dir / ".hidden").mkdir()  # a hidden folder is nobody's candidates: skipped without a word
    app = build(paths)
    assert {c.model for c in app.catalog.candidates} == {MODEL, ASIDE, fixture.MODELS[1]}
    for name in hostile:
        assert any(w.startswith(f"{split_dir / name}: not a model folder") for w in app.catalog.warnings), name
    assert not any(".hidden" in w for w in app.catalog.warnings)


def test_a_sample_draws_an_aside_release_as_its_own_stratum_and_reads_its_design_again(tmp_path):
    paths, _ = with_release_aside(tmp_path, repeats=5)
    app = build(paths, "ann", "--sample", "30%", "--sample-seed", "3")
    design = read_design(design_path(paths["labels"]))
    assert {s.model for s in design.strata} == {MODEL, ASIDE, fixture.MODELS[1]}
    assert {(c.task_id, c.model, c.repeat) for c in app.catalog.candidates} == design.sampled()
    assert {c.model for c in build(paths, "bob").catalog.candidates} >= {ASIDE}  # the design read back


def test_every_folder_a_release_is_bought_into_is_read_back_as_its_model_and_release():
    release = Release(route="openai", provider_model="ep-rel-b", base_url=None, options={}, label="b")
    assert folder_parts(aside_folder("seedream-4.5", release)) == ("seedream-4.5", release.id)
    assert folder_parts("seedream-4.5") == ("seedream-4.5", None)
    assert folder_parts(None) is None and folder_parts(f"a/b@{RELEASE_ID}") is None
