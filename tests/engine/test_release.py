"""The release identity (engine/release.py): what is in it, what is not, and labels not accepted, with a clear error."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from pathlib import Path

import pytest

from pytest_hypeedit.engine.records import Record
from pytest_hypeedit.engine.release import (
    TRANSPORT_OPTIONS,
    Release,
    belongs,
    check_label,
    parse_release_options,
    release_of,
)
from pytest_hypeedit.errors import ConfigError
from pytest_hypeedit.registry import ModelSpec, build_registry

DOCS = Path(__file__).resolve().parents[2] / "docs"
SPEC = ModelSpec(name="ourmodel", route="ark", provider_model="ep-rel-a", price=0.04, options={"pixels": 1e6})


def test_the_id_is_stable_and_short():
    assert release_of(SPEC).id == release_of(dataclasses.replace(SPEC)).id
    assert len(release_of(SPEC).id) == 12 and int(release_of(SPEC).id, 16) >= 0


@pytest.mark.parametrize("change", [
    {"route": "fal"}, {"provider_model": "ep-rel-b"}, {"release": "2026-11-28"}, {"options": {"pixels": 2e6}},
    {"options": {"pixels": 1e6, "output_format": "jpeg"}},
])
def test_each_part_of_the_release_changes_its_id(change):
    assert release_of(dataclasses.replace(SPEC, **change)).id != release_of(SPEC).id


def test_options_that_only_govern_the_call_keep_the_release():
    slow = dataclasses.replace(SPEC, options={"pixels": 1e6, "timeout_s": 600, "deadline_s": 900, "poll_s": 2,
                                              "max_wait_s": 60, "max_image_mb": 80, "reference_fee": 0.01,
                                              "batch_max_wait_s": 5, "batch_linger_s": 0.1, "batch_poll_s": 1})
    assert release_of(slow).id == release_of(SPEC).id


def test_every_batch_tier_option_documented_for_a_model_keeps_the_release():
    """Each ``batch_*`` option docs/how-to/models.md gives a model only says how the batch tier sends its lines
    (what a line asks for is the same at every tier): changing one must not buy every candidate again.
    ``batch_inline_max_lines`` (how many lines Gemini takes inline) was once left out of the id's exceptions."""
    manual = (DOCS / "how-to" / "models.md").read_text(encoding="utf-8")
    options = manual.split("Options of a model for the batch tier", 1)[1].split("\n\n", 1)[0]
    documented = set(re.findall(r"`(batch_[a-z_]+)`", options))
    assert {"batch_linger_s", "batch_inline_max_bytes", "batch_inline_max_lines"} <= documented
    tuned = dataclasses.replace(SPEC, options={"pixels": 1e6, **{name: 7 for name in documented}})
    assert release_of(tuned).id == release_of(SPEC).id, documented - TRANSPORT_OPTIONS


def test_a_moved_base_url_is_in_the_release_without_its_secrets(monkeypatch):
    monkeypatch.setenv("HYPEEDIT_ARK_BASE_URL", "https://user:pa55word@llm.internal:8443/ark/v3/?key=sk-secret#x")
    moved = release_of(SPEC)
    assert moved.base_url == "https://llm.internal:8443/ark/v3"
    assert "pa55word" not in str(moved.as_record()) and "sk-secret" not in str(moved.as_record())
    monkeypatch.setenv("HYPEEDIT_ARK_BASE_URL", "https://other.internal/ark/v3")
    assert release_of(SPEC).id != moved.id
    monkeypatch.delenv("HYPEEDIT_ARK_BASE_URL")
    assert release_of(SPEC).base_url is None


@pytest.mark.parametrize("label", ["v1\nrm -rf /", "\x1b[2J", "-rf", "a" * 65, "a b", "../x", "<svg>", "ü"])
def test_a_hostile_label_is_not_accepted_naming_where_it_came_from(label):
    with pytest.raises(ConfigError, match=r"^--release: release label .* is not a plain label"):
        check_label(label, "--release")


@pytest.mark.parametrize("given, label", [("2026-11-28", "2026-11-28"), ("v1.4.0-rc1", "v1.4.0-rc1"),
                                          (dt.date(2026, 11, 28), "2026-11-28"), (3, "3"), ("", None),
                                          (None, None)])
def test_plain_labels_and_yaml_dates_are_labels(given, label):
    assert check_label(given, "--release") == label


def test_release_options_set_every_model_or_one():
    assert parse_release_options(["v2"], ["a", "b"]) == {"a": "v2", "b": "v2"}
    assert parse_release_options(["v2", "b=v3"], ["a", "b"]) == {"a": "v2", "b": "v3"}
    with pytest.raises(ConfigError, match="--release 'c=v3': 'c' is not a model of this run"):
        parse_release_options(["c=v3"], ["a", "b"])
    with pytest.raises(ConfigError, match="--release 'a=': no label given"):
        parse_release_options(["a="], ["a", "b"])


def test_a_models_file_label_is_checked_and_kept():
    registry = build_registry([("ours.yaml", {"models": {"ourmodel": {"route": "ark", "price": 0.04,
                                                                      "release": dt.date(2026, 11, 28)}}})])
    assert registry.get("ourmodel").release == "2026-11-28"
    with pytest.raises(ConfigError, match=r"ours.yaml: model ourmodel: 'release': release label"):
        build_registry([("ours.yaml", {"models": {"ourmodel": {"route": "ark", "price": 0.04,
                                                               "release": "x\u202e"}}})])


def test_a_record_belongs_to_its_own_release_only():
    release = release_of(SPEC)
    ours = Record("s", "ourmodel", "t", 1, release=release.as_record(), candidate="001.png")
    theirs = Record("s", "ourmodel", "t", 1, release=release_of(dataclasses.replace(SPEC, release="v2")).as_record())
    assert belongs(ours, release) and not belongs(theirs, release)
    forged = Record("s", "ourmodel", "t", 1, release={"id": ["not", "an", "id"]})
    assert not belongs(forged, release)


def test_an_earlier_versions_record_is_this_release_only_when_it_proves_it():
    release = release_of(SPEC)
    same = Record("s", "ourmodel", "t", 1, candidate="001.png", route="ark", provider_model="ep-rel-a")
    other = Record("s", "ourmodel", "t", 1, candidate="001.png", route="ark", provider_model="ep-rel-0")
    nothing = Record("s", "ourmodel", "t", 1, outcome="error", error="HTTP 503")  # nothing bought, nothing to count
    assert belongs(same, release) and belongs(nothing, release) and not belongs(other, release)
    labelled = Release(**{**vars(release), "label": "v2"})
    assert not belongs(same, labelled)  # an earlier version recorded no label: nothing proves it is v2
