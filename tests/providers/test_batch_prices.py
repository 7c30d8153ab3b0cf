"""A batch line's price is the batch price whatever path lands it: an image adopted after a full disk (its record
was never written), a refused line (tier batch), a billed line whose image cannot be decoded (its price, not $0),
usage that cannot be read (the line's worst case, said so)."""

from __future__ import annotations

import base64
import dataclasses
from pathlib import Path

import pytest
from providers_fakes.contract import FAST, make_request

from pytest_hypeedit.engine.call_context import GenerationContext
from pytest_hypeedit.engine.journal import Journal
from pytest_hypeedit.engine.planning import Planning
from pytest_hypeedit.engine.record_spend import set_job
from pytest_hypeedit.engine.records import Record
from pytest_hypeedit.errors import Refusal
from pytest_hypeedit.providers import openai_batch
from pytest_hypeedit.providers.batching import Outcome
from pytest_hypeedit.providers.openai import OpenAIProvider
from pytest_hypeedit.providers.runtime import Runtime
from pytest_hypeedit.registry import load_registry

SPEC = load_registry().get("gpt-image-2")


def test_an_image_of_a_batch_line_adopted_after_a_full_disk_is_at_the_batch_price(tmp_path):
    """Planted: the adoption prices every unnamed image at the standard price and tier ($0.19 for a $0.095 line)."""
    record = Record("public", SPEC.name, "task-0001", 1)
    set_job(record, {"id": "k", "kind": "batch", "batch_id": "batch_1"})
    Planning._adopt_candidate(record, SPEC, Path(tmp_path / "001.png"))
    assert (record.cost, record.tier) == (SPEC.price_at("batch"), "batch") and record.cost < SPEC.price
    standard = Record("public", SPEC.name, "task-0001", 1)
    Planning._adopt_candidate(standard, SPEC, Path(tmp_path / "001.png"))
    assert (standard.cost, standard.tier) == (SPEC.price, "standard")


@pytest.fixture
def provider(tmp_path):
    made = OpenAIProvider(SPEC, runtime=Runtime(cache_dir=tmp_path / "cache", policy=FAST, tier="batch"))
    yield made
    made.close()


def line(body: dict, status: int = 200) -> Outcome:
    return Outcome("batch_1", reply={"custom_id": "k", "response": {"status_code": status, "request_id": "req_1",
                                                                    "body": body}}, billed=status == 200)


def request(tmp_path, provider):
    return dataclasses.replace(make_request(tmp_path, provider.spec, width=1536, height=1024),
                               call=GenerationContext(journal=Journal()))


USAGE = {"input_tokens": 1000, "output_tokens": 6000, "input_tokens_details": {"text_tokens": 100, "image_tokens": 900}}


def test_a_billed_line_whose_image_cannot_be_used_is_a_batch_refusal_at_its_price(tmp_path, provider):
    """Planted: the refusal raised without the line's cost ($0) and filed under tier standard."""
    with pytest.raises(Refusal) as caught:
        openai_batch.generation_of(provider, request(tmp_path, provider),
                                   line({"data": [{"b64_json": base64.b64encode(b"not an image").decode()}],
                                         "usage": USAGE}))
    assert caught.value.cost > 0 and caught.value.tier == "batch"
    with pytest.raises(Refusal) as refused:
        openai_batch.generation_of(provider, request(tmp_path, provider), line(
            {"error": {"code": "moderation_blocked", "message": "blocked"}}, status=400))
    assert refused.value.tier == "batch"


def test_usage_without_output_tokens_is_priced_at_the_lines_worst_case(tmp_path, provider):
    """Planted: usage without output_tokens priced at its input tokens only (98% under)."""
    req = request(tmp_path, provider)
    cost, source = openai_batch._cost(provider, req, {"usage": {"input_tokens": 1000, "output_tokens": "many"}})
    assert cost == provider.worst_case_cost(req) and "worst case" in source
    full, _ = openai_batch._cost(provider, req, {"usage": USAGE})
    assert full < cost and full == pytest.approx((100 * 5 + 900 * 8 + 6000 * 30) / 1e6 / 2)
