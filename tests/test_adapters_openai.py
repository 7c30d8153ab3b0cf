import pytest

from pytest_hypeedit.errors import ProviderError
from pytest_hypeedit.providers.openai import OpenAIProvider
from providers_fakes.contract import AdapterContract, make_request
from providers_fakes.openai import FakeOpenAI


class TestOpenAI(AdapterContract):
    fake_class = FakeOpenAI
    provider_class = OpenAIProvider
    model = "gpt-image-1.5"
    provider_model = "gpt-image-1.5"
    price = 0.17
    options = {"quality": "high", "input_fidelity": "high"}
    main_path = "/images/edits"

    def check_success_request(self, fake, generation):
        parts = fake.seen(self.main_path)[0].form()
        fields = {name: content.decode() for name, filename, content in parts if filename is None}
        assert fields["quality"] == "high" and fields["input_fidelity"] == "high"
        assert fields["size"] == "1536x1024"  # 4800x3584 is landscape
        assert fields["model"] == "gpt-image-1.5" and "seed" not in fields
        assert [name for name, filename, _ in parts if filename] == ["image[]"]
        assert generation.seed is None and generation.request_id.startswith("req_")
        # the cost is the reply's usage at gpt-image-1.5's token prices: 50 tokens in (no breakdown: priced as
        # image tokens, $8/1M), 6240 image tokens out ($32/1M)
        assert generation.cost == pytest.approx(50 * 8e-6 + 6240 * 32e-6)

    @pytest.mark.parametrize("size, expected", [((3072, 5504), "1024x1536"), ((4096, 4096), "1024x1024")])
    def test_nearest_allowed_size(self, fake, provider, tmp_path, size, expected):
        provider.generate(make_request(tmp_path, provider.spec, width=size[0], height=size[1]))
        fields = {n: c.decode() for n, f, c in fake.seen(self.main_path)[0].form() if f is None}
        assert fields["size"] == expected

    def test_every_reference_is_one_image_part(self, fake, provider, tmp_path):
        provider.generate(make_request(tmp_path, provider.spec, images=2))
        names = [name for name, filename, _ in fake.seen(self.main_path)[0].form() if filename]
        assert names == ["image[]", "image[]"]

    def test_insufficient_quota_is_not_retried(self, fake, provider, tmp_path):
        body = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                          "param": None, "code": "insufficient_quota"}}
        fake.inject("status", status=429, body=body, path=self.main_path)
        with pytest.raises(ProviderError, match="insufficient_quota") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert not info.value.retryable and len(fake.seen(self.main_path)) == 1
