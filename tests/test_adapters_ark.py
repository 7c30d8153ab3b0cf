import pytest

from pytest_hypeedit.errors import Refusal
from pytest_hypeedit.providers.ark import ArkProvider
from providers_fakes.ark import FakeArk
from providers_fakes.contract import AdapterContract, ExpiringUrlContract, make_request


class TestArk(AdapterContract, ExpiringUrlContract):
    fake_class = FakeArk
    provider_class = ArkProvider
    model = "seedream-4.5"
    provider_model = "seedream-4-5-251128"
    price = 0.04
    main_path = "/images/generations"

    def check_success_request(self, fake, generation):
        body = fake.seen(self.main_path)[0].json()
        assert body["model"] == "seedream-4-5-251128" and body["watermark"] is False
        assert body["image"].startswith("data:image/jpeg;base64,")
        width, height = (int(x) for x in body["size"].split("x"))
        assert 3_686_400 <= width * height <= 4_300_000 and abs(width / height - 4800 / 3584) < 0.02
        assert body["seed"] == generation.seed and generation.cost == 0.04
        assert generation.request_id.startswith("ark-req-")

    def test_several_references_go_as_an_array(self, fake, provider, tmp_path):
        provider.generate(make_request(tmp_path, provider.spec, images=2))
        images = fake.seen(self.main_path)[0].json()["image"]
        assert isinstance(images, list) and len(images) == 2

    def test_item_level_moderation_error_is_a_refusal(self, fake, provider, tmp_path, monkeypatch):
        from providers_fakes.base import Reply
        fake._routes.insert(0, ("POST", __import__("re").compile(r"/api/v3/images/generations"),
                                lambda seen: Reply(200, {"data": [{"error": {"code": "OutputImageSensitiveContentDetected",
                                                                             "message": "flagged"}}]})))
        with pytest.raises(Refusal, match="OutputImageSensitiveContentDetected"):
            provider.generate(make_request(tmp_path, provider.spec))

    def test_seed_can_be_left_out(self, fake, make_provider, tmp_path):
        provider = make_provider(send_seed=False)
        provider.generate(make_request(tmp_path, provider.spec))
        assert "seed" not in fake.seen(self.main_path)[0].json()
