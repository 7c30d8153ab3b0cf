"""The runner copies the tier a provider says served a generation (``Generation.tier``) into the record, and the
results price that candidate at the tier: a plugin's provider that bought at a batch tier is billed and compared
so (effective cost at the price paid, and at list price beside it)."""

from __future__ import annotations

import json

import pytest
from benchdata import make_tasks, write_labels, write_split
from fake_models import models_conftest

from pytest_hypeedit.engine.records import Record

#: fake_models.HalfPriceProvider: repeat 1 served at the batch tier, at half the price.
BATCH_CONFTEST = models_conftest("HalfPriceProvider", (
    {"name": "half", "route": "halfprice", "provider_model": "half-v1", "price": 0.10, "batch_price": 0.05},),
    route="halfprice", log=None)


@pytest.fixture
def bench(pytester, tmp_path, monkeypatch):
    pytester.makeconftest(BATCH_CONFTEST)
    tasks = make_tasks(2)
    write_split(pytester.path, "mini", tasks, pytester.path / "images")
    write_labels(pytester.path / "labels.json", {(t["task_id"], "half", repeat): repeat == 1
                                                 for t in tasks for repeat in (1, 2)})
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    return pytester


def test_the_record_carries_the_tier_the_provider_says_and_results_price_it_so(bench):
    result = bench.runpytest("-p", "no:cacheprovider", "--model", "half", "--tasks", "mini.json", "--images-base",
                             "images", "--repeats", "2", "--outputs", "out", "--judge", "labels:labels.json")
    result.assert_outcomes(passed=2, failed=2)
    tiers = {p.name: Record.from_json(p.read_text()).tier for p in (bench.path / "out" / "mini" / "half").glob("*/*.json")}
    assert set(tiers.values()) == {"batch", "standard"} and all(
        tier == ("batch" if name == "001.json" else "standard") for name, tier in tiers.items())
    row = json.loads((bench.path / "out" / "results.json").read_text())["rows"][0]
    assert row["spend_by_tier"]["generation"] == {"batch": pytest.approx(0.10), "standard": pytest.approx(0.20)}
    assert row["cost_per_candidate_paid"] == pytest.approx(0.075) and row["cost_per_candidate"] == 0.10
    assert row["effective_cost"] < row["effective_cost_list"]
    assert "spend by tier: generation batch $0.10, standard $0.20" in " ".join(result.stdout.str().split())
