import pytest
from providers_fakes.contract import AdapterContract, ExpiringUrlContract, JobContract, make_request
from providers_fakes.fal import FakeFal

from pytest_hypeedit.errors import JobExpired, JobFailed, ProviderError, Refusal
from pytest_hypeedit.providers.fal import FalProvider


class TestFal(AdapterContract, ExpiringUrlContract, JobContract):
    fake_class = FakeFal
    provider_class = FalProvider
    model = "qwen-image-edit-2511"
    provider_model = "fal-ai/qwen-image-edit-2511"
    price = 0.03
    options = {"poll_s": 0.01, "poll_max_s": 0.02}
    main_path = "qwen-image-edit-2511$"
    poll_path = "/status$"
    submit_path = "qwen-image-edit-2511$"

    def check_success_request(self, fake, generation):
        submit = fake.seen(self.main_path)[0]
        body = submit.json()
        assert submit.headers["authorization"] == f"Key {fake.key}"
        assert body["seed"] == generation.seed and len(body["image_urls"]) == 1
        size = body["image_size"]
        assert 0.9e6 <= size["width"] * size["height"] <= 1.1e6
        assert len(fake.seen("/requests/.*/status")) == 2
        assert generation.request_id.startswith("fal-") and generation.cost == 0.03

    def test_returned_urls_are_followed_for_a_deeper_endpoint_id(self, fake, make_provider, tmp_path):
        provider = make_provider()
        object.__setattr__(provider.spec, "provider_model", "fal-ai/bytedance/seedream/v4.5/edit")
        provider.generate(make_request(tmp_path, provider.spec))
        assert fake.seen("/fal-ai/bytedance/requests/")  # the id's first two segments only

    def test_the_journal_keeps_the_urls_to_resume(self, fake, provider, tmp_path):
        request, saved = self.journaled_request(tmp_path, provider.spec)
        provider.generate(request)
        job = saved[0]
        assert job["polling_url"].endswith(f"/requests/{job['id']}/status")
        assert job["response_url"].endswith(f"/requests/{job['id']}")

    def test_arguments_option_adds_input_fields(self, fake, make_provider, tmp_path):
        provider = make_provider(arguments={"image_size": "auto_2K", "enable_safety_checker": False})
        provider.generate(make_request(tmp_path, provider.spec))
        body = fake.seen(self.main_path)[0].json()
        assert body["image_size"] == "auto_2K" and body["enable_safety_checker"] is False

    def test_nsfw_flag_is_a_refusal(self, fake, provider, tmp_path):
        fake.nsfw = True
        with pytest.raises(Refusal, match="has_nsfw_concepts"):
            provider.generate(make_request(tmp_path, provider.spec))

    def test_a_completed_status_with_an_error_ends_the_request(self, fake, make_provider, tmp_path):
        provider = make_provider(max_wait_s=20)
        fake.inject("failed")
        with pytest.raises(JobFailed, match="runner_disconnected"):
            provider.generate(make_request(tmp_path, provider.spec))

    def test_a_result_fal_no_longer_keeps_has_expired(self, fake, provider, tmp_path):
        fake.inject("lost", path="requests/[^/]+$")  # gone between the status and the result
        with pytest.raises(JobExpired, match="response URL answered HTTP 404"):
            provider.generate(make_request(tmp_path, provider.spec))

    def test_result_faults_are_waited_out(self, fake, provider, tmp_path):
        fake.inject("malformed", path="requests/[^/]+$")
        fake.inject("status", status=503, path="requests/[^/]+$", count=3)
        provider.generate(make_request(tmp_path, provider.spec))
        assert sum(fake.ledger.submitted.values()) == 1

    def test_a_request_that_stays_queued_times_out(self, fake, make_provider, tmp_path):
        fake.queued_polls = 10_000
        provider = make_provider(max_wait_s=0.1)
        with pytest.raises(ProviderError, match="still IN_QUEUE") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert info.value.retryable


class TestQwenImage2(AdapterContract, ExpiringUrlContract, JobContract):
    fake_class = FakeFal
    provider_class = FalProvider
    model = "qwen-image-2-edit"
    provider_model = "fal-ai/qwen-image-2/edit"
    price = 0.035
    options = {"poll_s": 0.01, "poll_max_s": 0.02}
    main_path = "qwen-image-2/edit$"
    poll_path = "/status$"
    submit_path = "qwen-image-2/edit$"

    def check_success_request(self, fake, generation):
        body = fake.seen(self.main_path)[0].json()
        size = body["image_size"]
        assert 4_000_000 <= size["width"] * size["height"] <= 2048 * 2048  # 4800x3584 brought down to 4.19 MP
        assert abs(size["width"] / size["height"] - 4800 / 3584) < 0.02
        assert size["width"] % 16 == size["height"] % 16 == 0 and generation.cost == 0.035
        assert fake.seen("/fal-ai/qwen-image-2/requests/")  # the returned URLs keep two segments of the id

    @pytest.mark.parametrize("width, height, low, high", [
        (4096, 4096, 4_150_000, 2048 * 2048), (5504, 3072, 4_000_000, 2048 * 2048),
        (640, 480, 300_000, 310_000),  # a small task keeps its own size
        (300, 200, 262_144, 280_000),  # below the minimum: brought up to it
    ])
    def test_the_task_size_is_brought_into_the_endpoints_range(self, fake, provider, tmp_path, width, height, low,
                                                                high):
        provider.generate(make_request(tmp_path, provider.spec, width=width, height=height))
        size = fake.seen(self.main_path)[0].json()["image_size"]
        assert low <= size["width"] * size["height"] <= high

    def test_the_megapixels_option_still_decides(self, fake, make_provider, tmp_path):
        provider = make_provider(megapixels=1.0)
        provider.generate(make_request(tmp_path, provider.spec))
        size = fake.seen(self.main_path)[0].json()["image_size"]
        assert 0.9e6 <= size["width"] * size["height"] <= 1.1e6
