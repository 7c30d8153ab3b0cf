"""The Gemini batch backend (providers/gemini_batch.py) against the fake Batch mode: a line journaled with its
input file and display name but no batch (a kill between the two) adopts the batch of that name, or creates it
from the journaled file when there is none; an inline line whose batch was never made is bought again (nothing
was billed); a line with an error is an error, retryable as its code says."""

from __future__ import annotations

import dataclasses

import pytest
from genai_fakes.gemini_batch import FakeGeminiBatch
from providers_fakes.contract import FAST, make_request

from pytest_hypeedit.engine.journal import Journal
from pytest_hypeedit.errors import JobExpired
from pytest_hypeedit.providers.gemini import GeminiProvider
from pytest_hypeedit.providers.runtime import Runtime
from pytest_hypeedit.registry import load_registry

KEY = "fake-gemini-key-wire-0123456789"
QUICK = {"batch_linger_s": 0.05, "batch_poll_s": 0.01, "batch_poll_max_s": 0.02, "batch_max_wait_s": 20}


@pytest.fixture
def fake(monkeypatch):
    with FakeGeminiBatch(expected_key=KEY) as server:
        monkeypatch.setenv("HYPEEDIT_GEMINI_BASE_URL", server.url)
        monkeypatch.setenv("GEMINI_API_KEY", KEY)
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        yield server


def provider_with(tmp_path, **options):
    spec = load_registry().get("gemini-3-pro-preview")
    spec = dataclasses.replace(spec, options={**spec.options, **QUICK, **options})
    return GeminiProvider(spec, runtime=Runtime(cache_dir=tmp_path / "cache", policy=FAST, tier="batch"))


def request(tmp_path, provider, journal=None):
    plain = make_request(tmp_path, provider.spec, width=1536, height=1024)
    return dataclasses.replace(plain, call=dataclasses.replace(plain.call, journal=journal or Journal()))


def test_a_line_journaled_with_its_input_file_is_created_once_from_it(fake, tmp_path):
    provider = provider_with(tmp_path, batch_inline_max_bytes=1)
    first = Journal(save=lambda job: None)
    generation = provider.generate(request(tmp_path, provider, first))
    assert generation.tier == "batch" and generation.cost == pytest.approx(0.067)
    assert first.job["batch_id"] == next(iter(fake.batches))  # journaled as soon as it was known
    job = {k: v for k, v in first.job.items() if k != "batch_id"}
    fake.batches.clear()  # as if the create never reached Google
    saved = []
    again = provider.generate(request(tmp_path, provider, Journal(job, save=saved.append)))
    assert again.tier == "batch"
    assert fake.creations == 1 and fake.uploads("jsonl") == 1  # created from the journaled file, not uploaded again
    assert saved[0]["batch_id"] == next(iter(fake.batches))
    provider.close()


def test_a_line_journaled_with_its_display_name_adopts_the_batch(fake, tmp_path):
    provider = provider_with(tmp_path)
    first = Journal(save=lambda job: None)
    provider.generate(request(tmp_path, provider, first))
    job = {k: v for k, v in first.job.items() if k != "batch_id"}
    provider.generate(request(tmp_path, provider, Journal(job, save=lambda job: None)))
    assert fake.creations == 1
    provider.close()


def test_an_inline_line_whose_batch_was_never_made_is_bought_again(fake, tmp_path):
    provider = provider_with(tmp_path)
    job = {"id": "public/task-0001/r001", "kind": "batch", "display_name": "hypeedit-" + "0" * 32,
           "input_file_id": None}
    journal = Journal(job, save=lambda job: None)
    with pytest.raises(JobExpired, match="never created"):
        provider.generate(request(tmp_path, provider, journal))
    assert journal.job["cost"] == 0.0 and fake.creations == 0
    provider.close()
