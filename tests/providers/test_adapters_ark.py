import base64
import io

import httpx
import pytest
from PIL import Image
from providers_fakes.ark import FakeArk
from providers_fakes.contract import AdapterContract, ExpiringUrlContract, make_request, reference_files

from pytest_hypeedit.errors import ModelGone, ProviderError, Refusal
from pytest_hypeedit.providers.ark import ArkProvider
from pytest_hypeedit.providers.base import GenerationRequest


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

    # An HTTP 200 whose top-level ``error`` is set (the SDK's ImagesResponse.error) is that error.

    def test_top_level_moderation_error_in_a_200_is_a_refusal_with_its_code(self, fake, provider, tmp_path):
        fake.inject("reply_error")
        with pytest.raises(Refusal, match="moderation: OutputImageSensitiveContentDetected") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert info.value.request_id.startswith("ark-req-")

    def test_top_level_error_in_a_200_is_a_provider_error_with_its_code(self, fake, provider, tmp_path):
        fake.inject("reply_error", body={"code": "InvalidParameter", "message": "The parameter size is invalid"})
        with pytest.raises(ProviderError, match="InvalidParameter: The parameter size is invalid") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert not info.value.retryable
        assert fake.key not in str(info.value)

    def test_top_level_rate_limit_error_in_a_200_is_retryable(self, fake, provider, tmp_path):
        fake.inject("reply_error", body={"code": "RateLimitExceeded.EndpointRPMExceeded", "message": "slow down"})
        with pytest.raises(ProviderError, match="RateLimitExceeded.EndpointRPMExceeded") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert info.value.retryable

    def test_item_level_error_that_is_not_moderation_is_a_provider_error(self, fake, provider, tmp_path):
        from providers_fakes.base import Reply
        fake._routes.insert(0, ("POST", __import__("re").compile(r"/api/v3/images/generations"),
                                lambda seen: Reply(200, {"data": [{"error": {"code": "InternalServiceError",
                                                                             "message": "try later"}}]})))
        with pytest.raises(ProviderError, match="InternalServiceError: try later") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert info.value.retryable

    def test_a_message_saying_sensitive_does_not_make_another_code_a_refusal(self, fake, provider, tmp_path):
        fake.inject("reply_error", body={"code": "InvalidParameter", "message": "the model name is case-sensitive"})
        with pytest.raises(ProviderError, match="case-sensitive"):
            provider.generate(make_request(tmp_path, provider.spec))

    # Inputs must have a width/height in [1/3, 3] (the fake does not accept others: 400 InvalidParameter, as the
    # 4.0 spec says the service does): a reference outside is padded into range and the record says so.

    @pytest.mark.parametrize("size", [(1500, 400), (300, 1200)])
    def test_a_reference_outside_the_aspect_ratio_range_is_padded_and_recorded(self, fake, provider, tmp_path, size):
        request = make_request(tmp_path, provider.spec)
        wide = reference_files(tmp_path / "odd", 1, size=size)
        request = GenerationRequest(request.task, 1, request.seed, tuple(wide), provider.spec)
        generation = provider.generate(request)
        sent = fake.seen(self.main_path)[0].json()["image"]
        with Image.open(io.BytesIO(base64.b64decode(sent.split(",", 1)[1]))) as image:
            width, height = image.size
        assert max(width, height) == max(size) and 1 / 3 <= width / height <= 3
        assert generation.extra["padded_references"] == [
            {"reference": "001.webp", "size": f"{size[0]}x{size[1]}", "sent": f"{width}x{height}",
             "max_aspect_ratio": 3.0}]

    def test_a_reference_within_the_range_is_not_recorded_as_padded(self, fake, provider, tmp_path):
        generation = provider.generate(make_request(tmp_path, provider.spec))
        assert "padded_references" not in generation.extra

    def test_an_empty_error_object_on_a_successful_reply_is_no_error(self, fake, provider, tmp_path):
        real = fake.generate

        def with_empty_error(seen):
            reply = real(seen)
            reply.body["error"] = {"code": "", "message": ""}
            reply.body["data"][0]["error"] = None
            return reply
        fake._routes.insert(0, ("POST", __import__("re").compile(r"/api/v3/images/generations"), with_empty_error))
        assert provider.generate(make_request(tmp_path, provider.spec)).image

    def test_an_unknown_or_retired_id_is_final_and_not_asked_again(self, fake, provider, tmp_path):
        fake.retired.add(self.provider_model)
        with pytest.raises(ModelGone, match="InvalidEndpointOrModel.NotFound") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert not info.value.retryable and info.value.status == 404
        with pytest.raises(ModelGone):
            provider.generate(make_request(tmp_path, provider.spec, repeat=2))
        assert len(fake.seen(self.main_path)) == 1
        self.assert_no_key(fake, str(info.value))


def sent(fake) -> dict:
    return fake.seen("/images/generations")[0].json()


def pixels(size: str) -> int:
    width, height = (int(x) for x in size.split("x"))
    return width * height


class TestSeedream50(AdapterContract, ExpiringUrlContract):
    fake_class = FakeArk
    provider_class = ArkProvider
    model = "seedream-5.0"
    provider_model = "seedream-5-0-260128"
    price = 0.035
    main_path = "/images/generations"

    def check_success_request(self, fake, generation):
        body = sent(fake)
        assert body["model"] == "seedream-5-0-260128" and body["output_format"] == "png"
        assert 3_686_400 <= pixels(body["size"]) <= 3072 * 3072 and generation.cost == 0.035

    @pytest.mark.parametrize("option, expected", [(1024 * 1024, 3_686_400), (12_000_000, 3072 * 3072)])
    def test_the_pixel_budget_is_kept_within_the_models_range(self, fake, make_provider, tmp_path, option, expected):
        provider = make_provider(pixels=option)
        provider.generate(make_request(tmp_path, provider.spec, width=5504, height=3072))
        area = pixels(sent(fake)["size"])
        assert 3_686_400 <= area <= 3072 * 3072 and abs(area - expected) / expected < 0.02


class TestSeedream55(AdapterContract, ExpiringUrlContract):
    fake_class = FakeArk
    provider_class = ArkProvider
    model = "seedream-5.5"
    provider_model = "seedream-5-5-261028"
    price = 0.04
    main_path = "/images/generations"

    def check_success_request(self, fake, generation):
        body = sent(fake)
        assert body["model"] == "seedream-5-5-261028" and "output_format" not in body  # PNG by default
        assert pixels(body["size"]) <= 2048 * 2048 and generation.cost == 0.04  # no fee set: the price alone

    @pytest.mark.parametrize("width, height", [(4800, 3584), (5504, 3072), (2304, 4096), (4096, 4096)])
    def test_the_2k_budget_never_passes_the_models_maximum(self, fake, provider, tmp_path, width, height):
        provider.generate(make_request(tmp_path, provider.spec, width=width, height=height))
        area = pixels(sent(fake)["size"])
        assert 4_100_000 < area <= 2048 * 2048

    def test_the_reference_fee_is_recorded_and_reserved(self, fake, make_provider, tmp_path):
        provider = make_provider(reference_fee=0.01)
        request = make_request(tmp_path, provider.spec, images=2)
        assert provider.worst_case_cost(request) == pytest.approx(0.06)
        assert provider.generate(request).cost == pytest.approx(0.06)

    def test_an_unknown_fee_reserves_each_reference_at_the_price(self, fake, provider, tmp_path):
        request = make_request(tmp_path, provider.spec, images=3)
        assert provider.worst_case_cost(request) == pytest.approx(0.04 * 4)


class TestSeedream50Pro(AdapterContract, ExpiringUrlContract):
    """seedream-5-0-pro-260628 (second-hand facts, models.yaml): up to 4.19 MP, PNG asked, no
    sequential_image_generation (the API does not accept the field, "disabled" included), the first reference free."""

    fake_class = FakeArk
    provider_class = ArkProvider
    model = "seedream-5.0-pro"
    provider_model = "seedream-5-0-pro-260628"
    price = 0.12
    main_path = "/images/generations"

    def check_success_request(self, fake, generation):
        body = sent(fake)
        assert body["model"] == "seedream-5-0-pro-260628" and body["output_format"] == "png"
        assert "sequential_image_generation" not in body and "stream" not in body
        assert pixels(body["size"]) <= 2048 * 2048 and generation.cost == 0.12

    @pytest.mark.parametrize("width, height", [(4800, 3584), (5504, 3072), (2304, 4096), (4096, 4096)])
    def test_the_size_never_passes_the_models_maximum(self, fake, provider, tmp_path, width, height):
        provider.generate(make_request(tmp_path, provider.spec, width=width, height=height))
        area = pixels(sent(fake)["size"])
        assert 4_100_000 < area <= 2048 * 2048

    def test_the_fake_does_not_accept_the_sequential_field_as_the_api_does(self, fake, provider, tmp_path):
        buffer = io.BytesIO()
        Image.new("RGB", (64, 48), (9, 9, 9)).save(buffer, format="PNG")
        body = {"model": "seedream-5-0-pro-260628", "prompt": "x", "size": "2048x2048",
                "image": "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()}
        headers = {"Authorization": f"Bearer {fake.key}"}
        assert httpx.post(f"{fake.base}/images/generations", json=body, headers=headers).status_code == 200
        reply = httpx.post(f"{fake.base}/images/generations", json={**body, "sequential_image_generation": "disabled"},
                           headers=headers)
        assert reply.status_code == 400 and "sequential_image_generation" in reply.text

    def test_the_first_reference_is_free_and_each_other_is_charged(self, fake, make_provider, tmp_path):
        provider = make_provider(reference_fee=0.01)
        assert provider.generate(make_request(tmp_path, provider.spec, images=1)).cost == pytest.approx(0.12)
        request = make_request(tmp_path, provider.spec, images=3)
        assert provider.worst_case_cost(request) == pytest.approx(0.14)
        assert provider.generate(request).cost == pytest.approx(0.14)
