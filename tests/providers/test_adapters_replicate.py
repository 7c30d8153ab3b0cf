import io

import pytest
from PIL import Image
from providers_fakes.contract import AdapterContract, ExpiringUrlContract, JobContract, make_request
from providers_fakes.replicate import FakeReplicate

from pytest_hypeedit.errors import JobExpired, JobFailed, Refusal
from pytest_hypeedit.providers.replicate import ReplicateProvider


class TestReplicateRiverflow(AdapterContract, ExpiringUrlContract, JobContract):
    fake_class = FakeReplicate
    provider_class = ReplicateProvider
    model = "riverflow-2-b1"
    provider_model = "sourceful/riverflow-2.0-pro"
    price = 0.15
    options = {"poll_s": 0.01, "poll_max_s": 0.02}
    main_path = "/predictions$"
    poll_path = "/v1/predictions/"
    submit_path = "/models/.*/predictions$"

    def check_success_request(self, fake, generation):
        seen = fake.seen(self.main_path)[0]
        body = seen.json()["input"]
        assert "prefer" not in seen.headers  # the id comes back at once, to be journaled (module docstring)
        assert body["instruction"] and body["init_images"][0].startswith("data:image/jpeg;base64,")
        assert body["aspect_ratio"] == "4:3" and body["resolution"] == "2K"
        assert generation.request_id.startswith("rep") and generation.cost == 0.15

    def test_an_unfinished_prediction_is_polled(self, fake, provider, tmp_path):
        fake.processing_polls = 3
        provider.generate(make_request(tmp_path, provider.spec))
        assert len(fake.seen("/v1/predictions/rep")) == 4

    def test_wait_option_asks_replicate_to_hold_the_reply(self, fake, make_provider, tmp_path):
        fake.processing_polls = 0
        provider = make_provider(wait_s=5)
        provider.generate(make_request(tmp_path, provider.spec))
        assert fake.seen(self.main_path)[0].headers["prefer"] == "wait=5"
        assert not fake.seen(self.poll_path)  # settled in the create reply

    def test_other_models_get_prompt_and_image_input(self, fake, make_provider, tmp_path):
        provider = make_provider(arguments={"size": "2K"})
        object.__setattr__(provider.spec, "provider_model", "bytedance/seedream-4.5")
        provider.generate(make_request(tmp_path, provider.spec, width=3072, height=5504))
        body = fake.seen(self.main_path)[0].json()["input"]
        assert body["prompt"] and len(body["image_input"]) == 1
        assert body["aspect_ratio"] == "9:16" and body["size"] == "2K"

    @pytest.mark.parametrize("width, height, expected", [(3584, 4480, "3:4"), (4480, 3584, "4:3"), (1000, 1000, "1:1")])
    def test_seedream_gets_a_ratio_from_its_own_list(self, fake, make_provider, tmp_path, width, height, expected):
        # Seedream 4.5's list has no 4:5 or 5:4; the fake does not accept a ratio the model does not list.
        provider = make_provider()
        object.__setattr__(provider.spec, "provider_model", "bytedance/seedream-4.5")
        provider.generate(make_request(tmp_path, provider.spec, width=width, height=height))
        assert fake.seen(self.main_path)[0].json()["input"]["aspect_ratio"] == expected

    def test_riverflow_gets_4_5_from_its_own_list(self, fake, provider, tmp_path):
        provider.generate(make_request(tmp_path, provider.spec, width=3584, height=4480))
        assert fake.seen(self.main_path)[0].json()["input"]["aspect_ratio"] == "4:5"

    def test_a_reference_over_1_mb_goes_through_the_files_api(self, fake, provider, tmp_path):
        request = make_request(tmp_path, provider.spec)
        noisy = Image.effect_noise((2000, 1500), 120).convert("RGB")  # noise does not compress: > 1 MB as JPEG
        buffer = io.BytesIO()
        noisy.save(buffer, format="JPEG", quality=95)
        assert len(buffer.getvalue()) > 1_000_000
        request.references[0].write_bytes(buffer.getvalue())
        provider.generate(request)
        provider.generate(request)  # a second repeat reuses the upload
        uploads = fake.seen("/v1/files$")
        assert len(uploads) == 1 and uploads[0].form()[0][0] == "content"
        assert not fake.oversized_data_uris
        init = fake.seen(self.main_path)[0].json()["input"]["init_images"][0]
        assert init == f"{fake.url}/v1/files/{next(iter(fake.uploads))}"

    def test_a_failed_prediction_that_is_not_moderation_ends_the_job(self, fake, provider, tmp_path):
        fake.inject("failed")
        with pytest.raises(JobFailed, match="CUDA out of memory"):
            provider.generate(make_request(tmp_path, provider.spec))

    def test_a_canceled_prediction_ends_the_job(self, fake, provider, tmp_path):
        fake.inject("failed", body="canceled")
        with pytest.raises(JobFailed, match="canceled"):
            provider.generate(make_request(tmp_path, provider.spec))

    def test_a_sensitive_content_failure_is_a_refusal(self, fake, provider, tmp_path):
        fake.inject("refusal")
        with pytest.raises(Refusal, match="E005"):
            provider.generate(make_request(tmp_path, provider.spec))

    def test_a_removed_output_has_expired(self, fake, provider, tmp_path):
        fake.inject("removed", path=self.poll_path)
        with pytest.raises(JobExpired, match="data_removed"):
            provider.generate(make_request(tmp_path, provider.spec))
