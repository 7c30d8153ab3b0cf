"""The behaviour every httpx adapter owes, run against its loopback fake.

A ``tests/test_adapters_<provider>.py`` subclasses ``AdapterContract`` and
names its fake, adapter and model; the tests below then drive the real
adapter (real httpx client, real retry policy with tiny backoffs) through
``HYPEEDIT_<PROVIDER>_BASE_URL`` with a fake key, and check that the key never
appears in any error.

The client sends through the fake's ``httpx.MockTransport`` (``FakeServer.transport``: the same replies and
faults, no socket), the transport seam httpx gives; the retries, caps, key guard and streamed bodies are the
real ones, as they wrap it.  A test marked ``wire`` runs over the loopback socket instead: what only a socket
shows (a read timeout; a paid submission whose connection is dropped before its reply, as the HTTP stack
below httpx sees it), and ``test_success_on_the_wire``, each adapter's end-to-end call over a real connection.
"""

from __future__ import annotations

import dataclasses
import io
import re
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import pytest
from PIL import Image

from pytest_hypeedit.engine.call_context import GenerationContext
from pytest_hypeedit.engine.journal import Journal
from pytest_hypeedit.errors import ConfigError, JobExpired, JobFailed, ProviderError, Refusal
from pytest_hypeedit.providers.base import GenerationRequest, seed_for
from pytest_hypeedit.providers.runtime import Runtime
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.tasks import Task
from pytest_hypeedit.transport.http import RetryPolicy

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02)


def reference_files(folder: Path, count: int = 1, size=(640, 480)) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(count):
        path = folder / f"{index + 1:03d}.webp"
        Image.new("RGB", size, (40 * index, 90, 160)).save(path, format="WEBP")
        paths.append(path)
    return paths


def make_request(folder: Path, spec: ModelSpec, *, width: int = 4800, height: int = 3584, images: int = 1,
                 repeat: int = 1, task_id: str = "task-0001") -> GenerationRequest:
    task = Task(task_id=task_id, input_images=tuple(f"{i + 1:03d}.webp" for i in range(images)),
                task_types=("object_edit",), instruction="Make the mug blue; change nothing else.",
                width=width, height=height, split="public")
    refs = reference_files(folder / "refs" / task_id, images)
    return GenerationRequest(task, repeat, seed_for(task_id, repeat), tuple(refs), spec)


def decodes(data: "bytes | Path") -> bool:
    """The image (bytes, or the file a download went to) decodes whole."""
    with Image.open(data if isinstance(data, Path) else io.BytesIO(data)) as image:
        image.load()
    return True


class AdapterContract:
    fake_class: ClassVar[type]
    provider_class: ClassVar[type]
    model: ClassVar[str]
    provider_model: ClassVar[str]
    price: ClassVar[float]
    options: ClassVar[dict[str, Any]] = {}
    main_path: ClassVar[str]  # regex of the submit endpoint's path (where status faults are injected)

    # ------------------------------------------------------------------ fixtures
    @pytest.fixture
    def fake(self, monkeypatch):
        with self.fake_class() as fake:
            monkeypatch.setenv(fake.env, fake.base)
            monkeypatch.setenv(fake.key_env, fake.key)
            yield fake

    def spec(self, **options: Any) -> ModelSpec:
        merged = {"timeout_s": 5.0, **self.options, **options}
        return ModelSpec(name=self.model, route=self.provider_class.route, provider_model=self.provider_model,
                         price=self.price, options=MappingProxyType(merged))

    @pytest.fixture
    def make_provider(self, tmp_path, fake, request):
        made = []
        transport = None if request.node.get_closest_marker("wire") else fake.transport()

        def make(**options):
            provider = self.provider_class(self.spec(**options), runtime=Runtime(cache_dir=tmp_path / "cache",
                                                                                 policy=FAST, transport=transport))
            made.append(provider)
            return provider
        yield make
        for provider in made:
            provider.close()

    @pytest.fixture
    def provider(self, make_provider, fake):
        return make_provider()

    def run(self, provider, tmp_path, **kwargs):
        return provider.generate(make_request(tmp_path, provider.spec, **kwargs))

    def assert_no_key(self, fake, text: str) -> None:
        assert fake.key not in text

    # ------------------------------------------------------------------ the contract
    def test_success_returns_a_decodable_image_with_its_metadata(self, fake, provider, tmp_path):
        generation = self.run(provider, tmp_path)
        assert generation.ext in ("png", "jpg", "webp") and decodes(generation.image)
        assert generation.provider_model == self.provider_model
        assert generation.cost > 0
        assert generation.request_id
        self.check_success_request(fake, generation)

    @pytest.mark.wire
    def test_success_on_the_wire(self, fake, provider, tmp_path):
        """The same call over a loopback connection: the request's bytes as a socket carries them."""
        self.test_success_returns_a_decodable_image_with_its_metadata(fake, provider, tmp_path)

    def check_success_request(self, fake, generation) -> None:
        """Provider-specific checks of what was sent; subclasses extend."""

    def test_refusal_is_a_refusal(self, fake, provider, tmp_path):
        fake.inject("refusal")
        with pytest.raises(Refusal) as info:
            self.run(provider, tmp_path)
        self.assert_no_key(fake, str(info.value))

    def test_429_with_retry_after_is_retried(self, fake, provider, tmp_path):
        fake.inject("status", status=429, retry_after="0.05", path=self.main_path)
        generation = self.run(provider, tmp_path)
        assert decodes(generation.image)
        assert len(fake.seen(self.main_path)) == 2

    def test_500_then_503_are_retried(self, fake, provider, tmp_path):
        fake.inject("status", status=500, path=self.main_path)
        fake.inject("status", status=503, path=self.main_path)
        assert decodes(self.run(provider, tmp_path).image)
        assert len(fake.seen(self.main_path)) == 3

    def test_persistent_503_is_a_retryable_provider_error(self, fake, provider, tmp_path):
        fake.inject("status", status=503, count=99, path=self.main_path)
        with pytest.raises(ProviderError) as info:
            self.run(provider, tmp_path)
        assert info.value.retryable and info.value.status == 503
        assert len(fake.seen(self.main_path)) == FAST.max_attempts
        self.assert_no_key(fake, str(info.value))

    def test_malformed_json_is_a_provider_error(self, fake, provider, tmp_path):
        fake.inject("malformed", path=self.main_path)
        with pytest.raises(ProviderError, match="not JSON") as info:
            self.run(provider, tmp_path)
        self.assert_no_key(fake, str(info.value))

    def test_truncated_image_is_a_refusal(self, fake, provider, tmp_path):
        fake.inject("truncated")
        with pytest.raises(Refusal, match="cannot be decoded"):
            self.run(provider, tmp_path)

    @pytest.mark.wire
    def test_slow_reply_past_the_timeout_is_a_provider_error(self, fake, make_provider, tmp_path):
        provider = make_provider(timeout_s=0.15)
        fake.inject("slow", delay=0.4, count=99, path=self.main_path)
        with pytest.raises(ProviderError, match="Timeout") as info:
            self.run(provider, tmp_path)
        assert info.value.retryable
        self.assert_no_key(fake, str(info.value))

    def test_bad_key_is_a_permanent_redacted_error(self, fake, provider, tmp_path, monkeypatch):
        wrong = "wrong-key-ABCDEFGHIJKLMNOP"
        monkeypatch.setenv(fake.key_env, wrong)
        with pytest.raises(ProviderError) as info:
            self.run(provider, tmp_path)
        assert not info.value.retryable and info.value.status == 401
        assert wrong not in str(info.value)

    def test_missing_key_names_the_variable(self, fake, provider, tmp_path, monkeypatch):
        monkeypatch.delenv(fake.key_env)
        with pytest.raises(ConfigError, match=fake.key_env):
            self.run(provider, tmp_path)

    def test_references_are_prepared_once_per_task(self, fake, provider, tmp_path):
        self.run(provider, tmp_path, repeat=1)
        cache = tmp_path / "cache" / provider.route / "task-0001"
        before = {p.name: p.stat().st_mtime_ns for p in cache.iterdir() if not p.name.startswith(".")}
        self.run(provider, tmp_path, repeat=2)
        after = {p.name: p.stat().st_mtime_ns for p in cache.iterdir() if not p.name.startswith(".")}
        assert before and before == after


class ExpiringUrlContract:
    """For providers that answer with a signed URL to download (mixed into AdapterContract)."""

    def test_expired_result_url_is_a_provider_error(self, fake, provider, tmp_path):
        fake.inject("expired")
        with pytest.raises(ProviderError, match="expired") as info:
            self.run(provider, tmp_path)
        assert info.value.status == 403
        self.assert_no_key(fake, str(info.value))


class JobContract:
    """For the submit-then-poll routes (mixed into AdapterContract): the job is journaled before its first
    poll, polls are patient, a journaled job is resumed, and a failed or lost job ends at once.

    The fake counts submissions per candidate (``fake.ledger``) and takes the faults ``failed`` (the job ends
    failed) and ``lost`` (the provider no longer knows the job) on the requests ``poll_path`` matches."""

    poll_path: ClassVar[str]  # regex of the poll requests (as the fake's fault_path sees them)
    submit_path: ClassVar[str]  # regex of the request that submits the job

    @pytest.mark.wire
    def test_a_submission_whose_reply_is_lost_is_not_sent_again(self, fake, provider, tmp_path):
        fake.inject("drop", path=self.submit_path)  # the provider may have taken (and billed) it
        request, saved = self.journaled_request(tmp_path, provider.spec)
        with pytest.raises(ProviderError, match="was not sent again"):
            provider.generate(request)
        assert len([s for s in fake.seen() if re.search(self.submit_path, fake.fault_path(s))]) == 1

    def journaled_request(self, tmp_path, spec, job=None, on_save=None):
        saved: list = []

        def save(entry):
            saved.append(entry)
            if on_save is not None:
                on_save(entry)
        journal = Journal(job, save, route=self.provider_class.route)
        return dataclasses.replace(make_request(tmp_path, spec), call=GenerationContext(journal=journal)), saved

    def submissions(self, fake) -> int:
        return sum(fake.ledger.submitted.values())

    def left_journaled(self, fake, provider, tmp_path):
        """A job whose polls keep failing until ``provider`` gives up on it: (its request, the journal entries
        saved, the error); the fake's faults are cleared afterwards, so the job, resumed, finishes."""
        fake.inject("malformed", path=self.poll_path, count=10_000)
        request, saved = self.journaled_request(tmp_path, provider.spec)
        with pytest.raises(ProviderError, match="stays journaled") as info:
            provider.generate(request)
        fake.faults.clear()
        return request, saved, info.value

    def test_the_job_is_journaled_before_its_first_poll(self, fake, provider, tmp_path):
        polls_when_saved = []
        request, saved = self.journaled_request(tmp_path, provider.spec,
                                                on_save=lambda job: polls_when_saved.append(len(fake.seen(self.poll_path))))
        generation = provider.generate(request)
        assert saved and saved[0]["id"] == generation.request_id
        assert polls_when_saved[0] == 0 and len(fake.seen(self.poll_path)) >= 1

    def test_poll_faults_are_waited_out_and_the_job_is_submitted_once(self, fake, provider, tmp_path):
        fake.inject("malformed", path=self.poll_path, count=2)
        fake.inject("status", status=500, path=self.poll_path, count=FAST.max_attempts)  # outlasts the HTTP retries
        fake.inject("status", status=429, retry_after="0.01", path=self.poll_path)
        fake.inject("drop", path=self.poll_path)
        generation = self.run(provider, tmp_path)
        assert decodes(generation.image)
        assert self.submissions(fake) == 1

    def test_a_job_whose_polls_keep_failing_stays_journaled_and_is_resumed(self, fake, make_provider, tmp_path):
        provider = make_provider(max_wait_s=0.3)
        request, saved, error = self.left_journaled(fake, provider, tmp_path)
        assert error.retryable and request.call.journal.job == saved[-1]
        resumed, _ = self.journaled_request(tmp_path, provider.spec, job=request.call.journal.job)
        assert resumed.call.journal.resumed
        generation = provider.generate(resumed)
        assert decodes(generation.image) and generation.request_id == saved[-1]["id"]
        assert self.submissions(fake) == 1

    def test_a_failed_job_ends_at_once_names_the_job_and_is_forgotten(self, fake, make_provider, tmp_path):
        provider = make_provider(max_wait_s=20)
        fake.inject("failed")
        request, saved = self.journaled_request(tmp_path, provider.spec)
        started = time.monotonic()
        with pytest.raises(JobFailed) as info:
            provider.generate(request)
        assert time.monotonic() - started < 5, "a final failure was polled as if pending"
        assert saved[0]["id"] in str(info.value) and "failed" in str(info.value)
        assert saved[-1] is None and request.call.journal.job is None  # the next run submits anew
        self.assert_no_key(fake, str(info.value))

    def test_a_job_the_provider_no_longer_knows_has_expired(self, fake, make_provider, tmp_path):
        provider = make_provider(max_wait_s=20)
        fake.inject("lost", path=self.poll_path)
        request, saved = self.journaled_request(tmp_path, provider.spec)
        with pytest.raises(JobExpired, match="expired") as info:
            provider.generate(request)
        assert saved[0]["id"] in str(info.value)
        assert request.call.journal.job is not None  # the runner, not the adapter, forgets it and counts resubmitted
