import pytest

from pytest_hypeedit.errors import ProviderError, Refusal
from pytest_hypeedit.providers.bfl import BflProvider
from providers_fakes.bfl import FakeBfl
from providers_fakes.contract import AdapterContract, ExpiringUrlContract, make_request


class TestBfl(AdapterContract, ExpiringUrlContract):
    fake_class = FakeBfl
    provider_class = BflProvider
    model = "flux-2-max"
    provider_model = "flux-2-max"
    price = 0.10
    options = {"poll_s": 0.01, "poll_max_s": 0.02}
    main_path = "/v1/flux-2-max"

    def check_success_request(self, fake, generation):
        body = fake.seen(self.main_path)[0].json()
        assert body["seed"] == generation.seed and "input_image" in body and "input_image_2" not in body
        assert body["width"] % 16 == 0 and body["height"] % 16 == 0
        assert 0.9e6 <= body["width"] * body["height"] <= 1.1e6
        polls = fake.seen("/v1/get_result")
        assert len(polls) == 3 and all(p.headers["x-key"] == fake.key for p in polls)
        # The key never goes to the delivery host of the result.
        assert all("x-key" not in seen.headers for seen in fake.seen("/delivery"))
        assert generation.cost == pytest.approx(0.10) and generation.extra["cost_credits"] == 10.0
        assert generation.request_id.startswith("bfl-task-")

    def test_reported_credits_are_the_cost(self, fake, provider, tmp_path):
        fake.credits = 13.0
        assert provider.generate(make_request(tmp_path, provider.spec)).cost == pytest.approx(0.13)

    def test_several_references(self, fake, provider, tmp_path):
        provider.generate(make_request(tmp_path, provider.spec, images=2))
        body = fake.seen(self.main_path)[0].json()
        assert "input_image" in body and "input_image_2" in body

    def test_content_moderated_keeps_the_billed_cost(self, fake, provider, tmp_path):
        fake.inject("refusal")
        with pytest.raises(Refusal, match="Content Moderated") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert info.value.cost == pytest.approx(0.10)

    def test_a_poll_429_is_retried(self, fake, provider, tmp_path):
        fake.inject("status", status=429, retry_after="0.02", path="/v1/get_result")
        provider.generate(make_request(tmp_path, provider.spec))
        assert len(fake.seen("/v1/get_result")) == 4

    def test_task_that_never_finishes_times_out(self, fake, make_provider, tmp_path):
        fake.pending_polls = 10_000
        provider = make_provider(max_wait_s=0.1)
        with pytest.raises(ProviderError, match="still 'Pending'") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert info.value.retryable
