"""The OpenAI batch backend (providers/openai_batch.py) against the fake Files + Batch APIs: the line it writes,
a line journaled with its input file but no batch (a kill between the upload and the create) adopted without a
second create, or created once when no batch was made; per-line errors mapped as the sync path maps them."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest
from providers_fakes.contract import FAST, make_request
from providers_fakes.openai_batch import FakeOpenAIBatch

from pytest_hypeedit.engine.journal import Journal
from pytest_hypeedit.errors import JobExpired, ProviderError, Refusal
from pytest_hypeedit.providers.openai import OpenAIProvider
from pytest_hypeedit.providers.runtime import Runtime
from pytest_hypeedit.registry import load_registry

QUICK = {"batch_linger_s": 0.05, "batch_poll_s": 0.01, "batch_poll_max_s": 0.02, "batch_max_wait_s": 20}


@pytest.fixture
def fake(monkeypatch):
    with FakeOpenAIBatch() as server:
        monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", server.base)
        monkeypatch.setenv("OPENAI_API_KEY", server.key)
        yield server


@pytest.fixture
def provider(tmp_path):
    spec = load_registry().get("gpt-image-2")
    spec = dataclasses.replace(spec, options={**spec.options, **QUICK})
    made = OpenAIProvider(spec, runtime=Runtime(cache_dir=tmp_path / "cache", policy=FAST, tier="batch"))
    yield made
    made.close()


def request(tmp_path, provider, journal=None, repeat=1):
    plain = make_request(tmp_path, provider.spec, width=1536, height=1024, repeat=repeat)
    return dataclasses.replace(plain, call=dataclasses.replace(plain.call, journal=journal or Journal()))


def test_the_line_is_the_json_edit_body_with_the_reference_by_file_id(fake, provider, tmp_path):
    generation = provider.generate(request(tmp_path, provider))
    (input_file,) = fake.uploads("batch")
    (line,) = [json.loads(text) for text in input_file["data"].splitlines()]
    (reference,) = fake.uploads("vision")
    assert (line["method"], line["url"], line["custom_id"]) == ("POST", "/v1/images/edits", "public/task-0001/r001")
    assert line["body"]["images"] == [{"file_id": next(k for k, f in fake.files.items() if f is reference)}]
    assert (line["body"]["model"], line["body"]["n"], line["body"]["quality"]) == ("gpt-image-2", 1, "high")
    assert "input_fidelity" not in line["body"]  # gpt-image-2 ignores it: not sent, as on the sync path
    assert generation.tier == "batch" and generation.cost == pytest.approx(fake.billed, abs=1e-6)
    assert provider.worst_case_cost(request(tmp_path, provider)) == pytest.approx(
        provider.standard_worst_case(request(tmp_path, provider)) / 2, abs=1e-6)


def test_a_line_journaled_with_its_input_file_adopts_the_batch_made_from_it(fake, provider, tmp_path):
    provider.generate(request(tmp_path, provider))  # makes an input file and a batch from it
    (input_id,) = [k for k, f in fake.files.items() if f["purpose"] == "batch"]
    job = {"id": "public/task-0001/r001", "kind": "batch", "input_file_id": input_id}
    generation = provider.generate(request(tmp_path, provider, Journal(job)))
    assert fake.creations == 1 and len(fake.uploads("batch")) == 1  # nothing submitted again
    assert generation.extra["batch_id"] == next(iter(fake.batches))


def test_a_line_whose_batch_was_never_created_creates_it_once_from_its_input_file(fake, provider, tmp_path):
    provider.generate(request(tmp_path, provider))
    (input_id,) = [k for k, f in fake.files.items() if f["purpose"] == "batch"]
    fake.batches.clear()  # as if the create never reached OpenAI
    saved = []
    job = {"id": "public/task-0001/r001", "kind": "batch", "input_file_id": input_id}
    provider.generate(request(tmp_path, provider, Journal(job, save=saved.append)))
    assert fake.creations == 1 and len(fake.uploads("batch")) == 1
    assert saved and saved[0]["batch_id"] == next(iter(fake.batches))  # the new batch journaled at once


def test_a_refused_line_is_a_refusal_and_a_server_error_line_retryable(fake, provider, tmp_path):
    fake.inject("refusal")
    with pytest.raises(Refusal, match="moderation"):
        provider.generate(request(tmp_path, provider))
    journal = Journal()
    fake.usage = True
    original = fake._answer
    fake._answer = lambda body: (500, {"error": {"message": "boom", "type": "server_error", "code": None}})
    with pytest.raises(ProviderError, match="HTTP 500") as caught:
        provider.generate(request(tmp_path, provider, journal))
    fake._answer = original
    assert caught.value.retryable and journal.job is None  # not billed: forgotten, bought again next time


def test_a_batch_that_failed_validation_bills_nothing_and_is_bought_again(fake, provider, tmp_path):
    fake.end_as = "failed"
    journal = Journal()
    with pytest.raises(JobExpired, match="bought again"):
        provider.generate(request(tmp_path, provider, journal))
    assert journal.job["cost"] == 0.0 and fake.billed == 0


def test_an_adoption_stops_listing_at_the_batches_older_than_its_input_file(fake, provider, tmp_path):
    """The listing ends at the first page of batches made before the input file (none can be made from it), not
    after reading every batch of the account, and then creates the batch once."""
    provider.generate(request(tmp_path, provider))
    (input_id,) = [k for k, f in fake.files.items() if f["purpose"] == "batch"]
    fake.batches.clear()  # as if the create never reached OpenAI
    fake.add_batches(50, ago=7200)  # an account's older batches
    fake.page_size = 1
    job = {"id": "public/task-0001/r001", "kind": "batch", "input_file_id": input_id,
           "input_created_at": time.time() - 60}
    provider.generate(request(tmp_path, provider, Journal(job, save=lambda job: None)))
    assert len(fake.made) == 1 and fake.list_pages == 1
