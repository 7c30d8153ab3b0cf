import pytest

from pytest_hypeedit.errors import ProviderError, Refusal
from pytest_hypeedit.providers.openrouter import OpenRouterProvider
from providers_fakes.base import Reply
from providers_fakes.contract import AdapterContract, make_request
from providers_fakes.openrouter import FakeOpenRouter


class TestOpenRouter(AdapterContract):
    fake_class = FakeOpenRouter
    provider_class = OpenRouterProvider
    model = "gemini-3-pro-preview"
    provider_model = "google/gemini-3-pro-image-preview"
    price = 0.134
    main_path = "/chat/completions$"

    def check_success_request(self, fake, generation):
        body = fake.seen(self.main_path)[0].json()
        assert body["modalities"] == ["image", "text"] and body["image_config"]["aspect_ratio"] == "4:3"
        parts = body["messages"][0]["content"]
        assert parts[0]["type"] == "text" and parts[1]["image_url"]["url"].startswith("data:image/")
        assert body["seed"] == generation.seed and generation.cost == 0.134
        assert generation.request_id.startswith("gen-")

    def test_reported_cost_is_used(self, fake, provider, tmp_path):
        fake.cost = 0.139
        assert provider.generate(make_request(tmp_path, provider.spec)).cost == pytest.approx(0.139)

    def test_image_only_models_send_image_modality(self, fake, make_provider, tmp_path):
        provider = make_provider(modalities=["image"])
        provider.generate(make_request(tmp_path, provider.spec))
        assert fake.seen(self.main_path)[0].json()["modalities"] == ["image"]

    def _answer(self, fake, body):
        fake._routes.insert(0, ("POST", __import__("re").compile("/api/v1/chat/completions"), lambda seen: Reply(200, body)))

    def test_text_only_answer_is_a_refusal(self, fake, provider, tmp_path):
        self._answer(fake, {"id": "gen-x", "choices": [{"finish_reason": "stop", "message": {"content": "I can't."}}]})
        with pytest.raises(Refusal, match="without an image: \"I can't.\""):
            provider.generate(make_request(tmp_path, provider.spec))

    def test_error_inside_a_200_is_a_provider_error(self, fake, provider, tmp_path):
        self._answer(fake, {"id": "gen-y", "error": {"code": 502, "message": "upstream died"}, "choices": []})
        with pytest.raises(ProviderError, match="upstream died"):
            provider.generate(make_request(tmp_path, provider.spec))
