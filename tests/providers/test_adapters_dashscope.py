import pytest
from providers_fakes.contract import AdapterContract, ExpiringUrlContract, make_request
from providers_fakes.dashscope import FakeDashScope

from pytest_hypeedit.errors import ImageError
from pytest_hypeedit.providers.dashscope import DashScopeProvider


class TestDashScope(AdapterContract, ExpiringUrlContract):
    fake_class = FakeDashScope
    provider_class = DashScopeProvider
    model = "qwen-image-edit-2511"
    provider_model = "qwen-image-edit-plus-2025-12-15"
    price = 0.03
    main_path = "/multimodal-generation/generation$"

    def check_success_request(self, fake, generation):
        body = fake.seen(self.main_path)[0].json()
        content = body["input"]["messages"][0]["content"]
        assert content[0]["image"].startswith("data:image/") and content[-1]["text"]
        assert body["parameters"]["watermark"] is False and body["parameters"]["seed"] == generation.seed
        width, height = (int(x) for x in body["parameters"]["size"].split("*"))
        assert abs(width / height - 4800 / 3584) < 0.03
        assert generation.request_id.startswith("ds-")

    def test_more_than_three_references_is_a_clear_error(self, fake, provider, tmp_path):
        with pytest.raises(ImageError, match="4 reference images, but route dashscope takes at most 3"):
            provider.generate(make_request(tmp_path, provider.spec, images=4))

    def test_extreme_aspect_ratio_stays_within_sides(self, fake, provider, tmp_path):
        provider.generate(make_request(tmp_path, provider.spec, width=5504, height=1024))
        width, height = (int(x) for x in fake.seen(self.main_path)[0].json()["parameters"]["size"].split("*"))
        assert 512 <= height and width <= 2048
