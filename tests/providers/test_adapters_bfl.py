import pytest
from providers_fakes.bfl import FLUX3_INTERIM, FakeBfl
from providers_fakes.contract import AdapterContract, ExpiringUrlContract, JobContract, make_request

from pytest_hypeedit.errors import ConfigError, JobExpired, JobFailed, ProviderError, Refusal
from pytest_hypeedit.providers.bfl import BflProvider, Flux3Provider
from pytest_hypeedit.registry import ModelSpec


class TestBfl(AdapterContract, ExpiringUrlContract, JobContract):
    fake_class = FakeBfl
    provider_class = BflProvider
    model = "flux-2-max"
    provider_model = "flux-2-max"
    price = 0.10
    options = {"poll_s": 0.01, "poll_max_s": 0.02}
    main_path = "/v1/flux-2-max"
    poll_path = "get_result"
    submit_path = "/v1/flux-2-max$"

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

    def test_a_resumed_task_costs_what_its_submission_reported(self, fake, make_provider, tmp_path):
        fake.credits = 13.0
        first, _, _ = self.left_journaled(fake, make_provider(max_wait_s=0.2), tmp_path)
        fake.credits = 99.0  # a second submission would report this
        provider = make_provider()
        resumed, _ = self.journaled_request(tmp_path, provider.spec, job=first.call.journal.job)
        generation = provider.generate(resumed)
        assert generation.cost == pytest.approx(0.13) and generation.extra["resumed_job"] is True
        assert len(fake.seen(self.main_path)) == 1

    def test_several_references(self, fake, provider, tmp_path):
        provider.generate(make_request(tmp_path, provider.spec, images=2))
        body = fake.seen(self.main_path)[0].json()
        assert "input_image" in body and "input_image_2" in body

    @pytest.mark.parametrize("status", ["Content Moderated", "Request Moderated"])
    def test_moderation_is_a_refusal_and_not_charged(self, fake, provider, tmp_path, status):
        # help.bfl.ai "Why did my request fail?": both moderation statuses are "Not charged".
        fake.inject("refusal", body=status)
        with pytest.raises(Refusal, match=status) as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert info.value.cost == 0.0

    @pytest.mark.parametrize("status", ["Failed", "Error"])
    def test_failed_and_error_are_final(self, fake, make_provider, tmp_path, status):
        provider = make_provider(max_wait_s=20)
        fake.inject("failed", body=status)
        with pytest.raises(JobFailed, match=f"BFL status '{status}'") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert "bfl job bfl-task-" in str(info.value)
        assert len(fake.seen(self.poll_path)) == fake.pending_polls + 1  # no poll after the final status

    def test_task_not_found_means_the_result_expired(self, fake, provider, tmp_path):
        fake.inject("lost", path=self.poll_path)
        with pytest.raises(JobExpired, match="Task not found"):
            provider.generate(make_request(tmp_path, provider.spec))

    def test_a_404_on_the_polling_url_is_task_not_found(self, fake, provider, tmp_path):
        fake.inject("status", status=404, path=self.poll_path, body={"detail": "Not Found"})
        with pytest.raises(JobExpired, match="Task not found"):
            provider.generate(make_request(tmp_path, provider.spec))

    def test_an_undocumented_status_is_not_waited_on(self, fake, make_provider, tmp_path):
        provider = make_provider(max_wait_s=20)
        fake.inject("failed", body="Exploded")
        with pytest.raises(JobFailed, match="only 'Pending' is waited on"):
            provider.generate(make_request(tmp_path, provider.spec))

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


class TestFlux3(AdapterContract, ExpiringUrlContract, JobContract):
    fake_class = FakeBfl
    provider_class = BflProvider  # the route's class: a flux-3 id makes it a Flux3Provider
    model = "flux-3"
    provider_model = "flux-3-image"
    price = 0.10
    options = {"poll_s": 0.01, "poll_max_s": 0.02}
    main_path = "/v1/flux-3-image"
    poll_path = "get_result"
    submit_path = "/v1/flux-3-image$"

    def check_success_request(self, fake, generation):
        body = fake.seen(self.main_path)[0].json()
        assert set(body) == {"prompt", "images", "aspect_ratio", "resolution", "grounding"}
        assert (body["aspect_ratio"], body["resolution"], body["grounding"]) == ("4:3", "2k", False)
        assert len(body["images"]) == 1 and not body["images"][0].startswith("data:")
        assert generation.seed is None and generation.cost == pytest.approx(0.10)
        statuses = len(fake.seen("/v1/get_result"))
        assert statuses == fake.pending_polls + len(FLUX3_INTERIM) + 1  # Pending, then the interim ones, then Ready

    def test_the_route_class_picks_the_flux3_shape(self, provider):
        assert type(provider) is Flux3Provider
        assert type(BflProvider(ModelSpec("m", "bfl", "flux-2-max", 0.1))) is BflProvider

    @pytest.mark.parametrize("width, height, ratio", [(4096, 4096, "1:1"), (5504, 3072, "16:9"), (3072, 5504, "9:16"),
                                                      (2304, 4096, "9:16"), (3584, 4800, "3:4"), (1400, 1000, "7:5")])
    def test_the_aspect_ratio_is_the_nearest_allowed(self, fake, provider, tmp_path, width, height, ratio):
        provider.generate(make_request(tmp_path, provider.spec, width=width, height=height))
        assert fake.seen(self.main_path)[0].json()["aspect_ratio"] == ratio

    @pytest.mark.parametrize("field, value", [("seed", 1), ("width", 1024), ("output_format", "png"),
                                              ("input_image", "abc")])
    def test_the_strict_schema_answers_422_to_a_flux2_field(self, fake, provider, tmp_path, monkeypatch, field,
                                                            value):
        body = provider.body
        monkeypatch.setattr(provider, "body", lambda request: {**body(request), field: value})
        with pytest.raises(ProviderError, match=f"422.*extra_forbidden.*{field}") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert not info.value.retryable

    def test_options_choose_the_tier_grounding_and_tolerance(self, fake, make_provider, tmp_path):
        provider = make_provider(resolution="4k", grounding=True, safety_tolerance=1)
        request = make_request(tmp_path, provider.spec)
        assert provider.worst_case_cost(request) == pytest.approx(0.607)
        generation = provider.generate(request)
        body = fake.seen(self.main_path)[0].json()
        assert (body["resolution"], body["grounding"], body["safety_tolerance"]) == ("4k", True, 1)
        assert generation.cost == pytest.approx(0.607)

    def test_an_unknown_resolution_is_a_config_error(self, fake, make_provider):
        with pytest.raises(ConfigError, match="resolution '3k'"):
            make_provider(resolution="3k")

    def test_up_to_ten_references(self, fake, provider, tmp_path):
        provider.generate(make_request(tmp_path, provider.spec, images=10))
        assert len(fake.seen(self.main_path)[0].json()["images"]) == 10

    @pytest.mark.parametrize("status", ["Content Moderated", "Request Moderated"])
    def test_moderation_after_interim_statuses_is_a_refusal(self, fake, provider, tmp_path, status):
        fake.inject("refusal", body=status)
        with pytest.raises(Refusal, match=status):
            provider.generate(make_request(tmp_path, provider.spec))
