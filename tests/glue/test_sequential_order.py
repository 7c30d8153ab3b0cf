"""--sequential's buying order (glue/sequential_order.py): drawn at random once per outputs folder and run identity,
kept in the model's outputs folder, read back by every later run of it, and drawn afresh (with a warning) when
the file there is another run's, corrupt or tampered with; never a crash, never a half-written file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_hypeedit.glue import sequential_order
from pytest_hypeedit.glue.early_stop import planned_order
from pytest_hypeedit.glue.sequential_order import kept_order, model_orders, order_identity, read_seed


@dataclass
class Task:
    task_id: str


@dataclass
class Split:
    name: str
    tasks: list


@dataclass
class Spec:
    name: str
    route: str = "identity"
    provider_model: str = "rel-a"
    options: dict = field(default_factory=dict)
    release: str | None = None


@dataclass
class Run:
    outputs: Path
    splits: list = field(default_factory=lambda: [Split("mini", [Task(f"task-{i}") for i in range(6)])])
    models: list = field(default_factory=lambda: [Spec("m")])
    repeats: int = 10
    folders: dict = field(default_factory=dict)


def test_an_order_is_drawn_kept_and_read_back_by_the_next_run(tmp_path):
    run = Run(tmp_path / "outputs")
    first = kept_order(run, run.models[0])
    assert first.drawn and first.warning is None
    assert first.path.parent == tmp_path / "outputs" / "mini" / "m" and first.path.exists()
    again = kept_order(run, run.models[0])
    assert not again.drawn and again.seed == first.seed and again.warning is None


def test_fresh_outputs_folders_draw_different_orders(tmp_path):
    """A constant seed bought the same tasks first for every model, run and team."""
    seeds = {kept_order(Run(tmp_path / f"o{i}"), Spec("m")).seed for i in range(5)}
    assert len(seeds) == 5
    orders = {tuple(model_orders(Run(tmp_path / f"o{i}"), {"m": seed})[0]) for i, seed in enumerate(seeds)}
    assert len(orders) == 5


@pytest.mark.parametrize("change", ["repeats", "tasks", "model", "splits", "provider_model", "label"])
def test_another_identity_gets_its_own_order(tmp_path, change):
    run = Run(tmp_path)
    kept_order(run, Spec("m"))
    other = {"repeats": Run(tmp_path, repeats=4),
             "tasks": Run(tmp_path, splits=[Split("mini", [Task(f"task-{i}") for i in range(5)])]),
             "model": Run(tmp_path, models=[Spec("n")]),
             "splits": Run(tmp_path, splits=[Split("mini", [Task("task-0")]), Split("more", [Task("x")])]),
             "provider_model": Run(tmp_path, models=[Spec("m", provider_model="rel-b")]),
             "label": Run(tmp_path, models=[Spec("m", release="v2")])}[change]
    spec = other.models[0]
    assert order_identity(other, spec) != order_identity(run, Spec("m"))
    assert kept_order(other, spec).drawn


def test_a_release_bought_aside_keeps_its_order_in_its_own_folder(tmp_path):
    """A second release of a model buys into ``<model>@<id>`` (glue/releases.py): its order is kept there, drawn
    for it, not the first release's."""
    first = kept_order(Run(tmp_path), Spec("m"))
    newer = Spec("m", provider_model="rel-b")
    aside = Run(tmp_path, models=[newer], folders={("mini", "m"): "m@0123456789ab"})
    kept = kept_order(aside, newer)
    assert kept.path.parent == tmp_path / "mini" / "m@0123456789ab" and kept.drawn
    assert first.path.exists() and first.path.parent == tmp_path / "mini" / "m"


def test_the_task_files_order_plays_no_part(tmp_path):
    """The order is drawn over the tasks sorted by id: listing them another way is the same run, the same order."""
    run = Run(tmp_path)
    shuffled = Run(tmp_path, splits=[Split("mini", list(reversed(run.splits[0].tasks)))])
    seed = kept_order(run, Spec("m")).seed
    assert kept_order(shuffled, Spec("m")).seed == seed
    assert model_orders(run, {"m": seed}) == model_orders(shuffled, {"m": seed})


def corrupt(path: Path, how: str) -> None:
    kept = json.loads(path.read_text())
    if how == "not JSON":
        path.write_text("{not json")
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[:20])
    elif how == "another run's":
        kept["identity"]["repeats"] = 3
        path.write_text(json.dumps(kept))
    elif how == "bad seed":
        kept["seed"] = "x" * 32
        path.write_text(json.dumps(kept))
    elif how == "seed swapped":  # a chosen seed: the order it gives is not the one kept
        kept["seed"] = "0" * 32
        path.write_text(json.dumps(kept))
    elif how == "a list":
        path.write_text("[1, 2]")
    elif how == "nested deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif how == "huge":
        path.write_bytes(b" " * 1_000_000 + path.read_bytes())


@pytest.mark.parametrize("how", ["not JSON", "truncated", "another run's", "bad seed", "seed swapped", "a list",
                                 "nested deep", "huge"])
def test_a_file_that_is_not_this_runs_order_is_said_and_replaced_by_a_fresh_draw(tmp_path, how):
    run = Run(tmp_path)
    first = kept_order(run, Spec("m"))
    corrupt(first.path, how)
    _, why = read_seed(first.path, order_identity(run, Spec("m")))
    assert why
    again = kept_order(run, Spec("m"))
    assert again.drawn and again.warning and "is not this run's buying order" in again.warning
    assert str(first.path) in again.warning
    third = kept_order(run, Spec("m"))  # the fresh draw was kept
    assert not third.drawn and third.seed == again.seed and third.warning is None


def test_a_folder_that_takes_no_file_gets_a_drawn_order_and_a_warning(tmp_path):
    outputs = tmp_path / "outputs"
    outputs.write_text("a file where the outputs folder should be")
    order = kept_order(Run(outputs), Spec("m"))
    assert order.drawn and "could not be kept" in (order.warning or "") and "a rerun will draw another" in order.warning


def test_two_processes_drawing_at_once_keep_the_first_ones_order(tmp_path, monkeypatch):
    """The file is linked into place whole: the second writer finds the first's and uses it."""
    run = Run(tmp_path)
    identity = order_identity(run, Spec("m"))
    path = sequential_order.order_path(run, Spec("m"), identity)
    first = sequential_order.keep_seed(path, identity, "a" * 32, replace=False)
    second = sequential_order.keep_seed(path, identity, "b" * 32, replace=False)
    assert first == second == "a" * 32
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]  # no temporary file left


def test_the_planned_order_sets_the_models_abreast_each_in_its_own_order(tmp_path):
    run = Run(tmp_path, models=[Spec("m"), Spec("n")], repeats=3)
    seeds = {"m": "1" * 32, "n": "2" * 32}
    order = planned_order(run, seeds)
    assert [key[1] for key in order[:4]] == ["m", "n", "m", "n"]
    mine, theirs = order[0::2], order[1::2]
    assert mine == model_orders(run, seeds)[0] and theirs == model_orders(run, seeds)[1]
    assert [(k[0], k[2], k[3]) for k in mine] != [(k[0], k[2], k[3]) for k in theirs]


def test_a_file_system_without_hard_links_still_keeps_the_order(tmp_path, monkeypatch):
    def no_links(source, target):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(sequential_order.os, "link", no_links)
    run = Run(tmp_path)
    first = kept_order(run, Spec("m"))
    assert first.drawn and first.warning is None
    assert kept_order(run, Spec("m")).seed == first.seed
