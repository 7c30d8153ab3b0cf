import pytest

from pytest_hypeedit.providers.replicate import ReplicateProvider
from providers_fakes.contract import AdapterContract, ExpiringUrlContract, make_request
from providers_fakes.replicate import FakeReplicate


class TestReplicateRiverflow(AdapterContract, ExpiringUrlContract):
    fake_class = FakeReplicate
    provider_class = ReplicateProvider
    model = "riverflow-2-b1"
    provider_model = "sourceful/riverflow-2.0-pro"
    price = 0.15
    options = {"poll_s": 0.01, "poll_max_s": 0.02}
    main_path = "/predictions$"

    def check_success_request(self, fake, generation):
        seen = fake.seen(self.main_path)[0]
        body = seen.json()["input"]
        assert seen.headers["prefer"] == "wait=60"
        assert body["instruction"] and body["init_images"][0].startswith("data:image/jpeg;base64,")
        assert body["aspect_ratio"] == "4:3" and body["resolution"] == "2K"
        assert generation.request_id.startswith("rep") and generation.cost == 0.15

    def test_an_unfinished_prediction_is_polled(self, fake, provider, tmp_path):
        fake.starting_polls = 3
        provider.generate(make_request(tmp_path, provider.spec))
        assert len(fake.seen("/v1/predictions/rep")) == 3

    def test_other_models_get_prompt_and_image_input(self, fake, make_provider, tmp_path):
        provider = make_provider(arguments={"size": "2K"})
        object.__setattr__(provider.spec, "provider_model", "bytedance/seedream-4.5")
        provider.generate(make_request(tmp_path, provider.spec, width=3072, height=5504))
        body = fake.seen(self.main_path)[0].json()["input"]
        assert body["prompt"] and len(body["image_input"]) == 1
        assert body["aspect_ratio"] == "9:16" and body["size"] == "2K"

    def test_a_failed_prediction_that_is_not_moderation_is_a_provider_error(self, fake, provider, tmp_path):
        from pytest_hypeedit.errors import ProviderError
        original = fake._settle

        def crash(prediction):
            prediction.update(status="failed", error="CUDA out of memory")
        fake._settle = crash
        with pytest.raises(ProviderError, match="CUDA out of memory"):
            provider.generate(make_request(tmp_path, provider.spec))
        fake._settle = original
