import dataclasses

import pytest
from providers_fakes.contract import AdapterContract, make_request
from providers_fakes.openai import FakeOpenAI

from pytest_hypeedit.errors import ModelGone, ProviderError
from pytest_hypeedit.providers.openai import OpenAIProvider
from pytest_hypeedit.providers.openai_models import gpt_image_2_output_tokens

#: USD per 1M tokens as openai_models.py cites them (text in, image in, image out), written out again here so
#: that a wrong constant or a wrong sum there shows.
PRICES = {"gpt-image-1.5": (5, 8, 32), "gpt-image-2": (5, 8, 30)}


def priced(usage: dict, model: str) -> float:
    text_in, image_in, image_out = PRICES[model]
    details = usage["input_tokens_details"]
    return (details["text_tokens"] * text_in + details["image_tokens"] * image_in
            + usage["output_tokens_details"]["image_tokens"] * image_out) / 1e6


def form_fields(fake, path="/images/edits", index=0) -> dict:
    return {n: c.decode() for n, f, c in fake.seen(path)[index].form() if f is None}


class OpenAICase(AdapterContract):
    """The OpenAI route's image edits against its fake: what every OpenAI model's class shares."""

    fake_class = FakeOpenAI
    provider_class = OpenAIProvider
    main_path = "/images/edits"


class TestOpenAI(OpenAICase):
    model = "gpt-image-1.5"
    provider_model = "gpt-image-1.5"
    price = 0.17
    options = {"quality": "high", "input_fidelity": "high"}

    def check_success_request(self, fake, generation):
        parts = fake.seen(self.main_path)[0].form()
        fields = {name: content.decode() for name, filename, content in parts if filename is None}
        assert fields["quality"] == "high" and fields["input_fidelity"] == "high"
        assert fields["size"] == "1536x1024"  # 4800x3584 is landscape
        assert fields["model"] == "gpt-image-1.5" and "seed" not in fields
        assert [name for name, filename, _ in parts if filename] == ["image[]"]
        assert generation.seed is None and generation.request_id.startswith("req_")
        assert generation.extra["cost_source"] == "usage"
        assert generation.cost == pytest.approx(priced(generation.extra["usage"], "gpt-image-1.5"))

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

    def test_without_usage_the_cost_is_the_list_price_of_the_size_and_quality(self, fake, provider, tmp_path):
        fake.usage = False
        landscape = provider.generate(make_request(tmp_path, provider.spec))
        square = provider.generate(make_request(tmp_path, provider.spec, width=2048, height=2048, repeat=2))
        # OpenAI lists $0.133 at 1024x1024 high and about $0.20 at 3:2 high (6208 tokens at $32 per 1M)
        assert square.cost == pytest.approx(0.133, abs=0.001) and landscape.cost == pytest.approx(0.1987, abs=0.001)
        assert landscape.extra["cost_source"] == "list price"

    def test_the_worst_case_covers_the_size_the_references_and_the_prompt(self, fake, provider, tmp_path):
        one, two = (make_request(tmp_path, provider.spec, images=n, task_id=f"t{n}") for n in (1, 2))
        square = make_request(tmp_path, provider.spec, width=2048, height=2048, task_id="sq")
        worst = provider.worst_case_cost(one)
        assert worst == pytest.approx((6208 * 32 + 8000 * 8 + len(one.task.instruction) * 5) / 1e6)
        assert provider.worst_case_cost(two) - worst == pytest.approx(8000 * 8 / 1e6)
        assert provider.worst_case_cost(square) < worst
        assert provider.generate(one).cost <= worst

    def test_a_retired_id_is_final_names_its_successor_and_is_not_asked_again(self, fake, provider, tmp_path):
        fake.retired.add("gpt-image-1.5")
        with pytest.raises(ModelGone) as info:
            provider.generate(make_request(tmp_path, provider.spec))
        message = str(info.value)
        assert not info.value.retryable and info.value.status == 404 and "model_not_found" in message
        assert "shut down on 2026-12-01" in message and "gpt-image-2" in message
        with pytest.raises(ModelGone):
            provider.generate(make_request(tmp_path, provider.spec, repeat=2))
        assert len(fake.seen(self.main_path)) == 1
        self.assert_no_key(fake, message)


class TestGptImage2(OpenAICase):
    model = "gpt-image-2"
    provider_model = "gpt-image-2"
    price = 0.19
    options = {"quality": "high"}

    def check_success_request(self, fake, generation):
        fields = form_fields(fake)
        assert fields["model"] == "gpt-image-2" and fields["quality"] == "high"
        assert "input_fidelity" not in fields  # gpt-image-2 ignores it (openai-python api_reference)
        assert fields["size"] == "1456x1088"  # 4800x3584's own ratio at about 1536 x 1024 pixels
        assert generation.cost == pytest.approx(priced(generation.extra["usage"], "gpt-image-2"))

    @pytest.mark.parametrize("width, height, expected", [
        (4096, 4096, "1248x1248"), (5504, 3072, "1680x944"), (3072, 5504, "944x1680"), (2304, 4096, "944x1680"),
        (9000, 1000, "2160x720"),  # wider than 3:1: the widest ratio allowed
    ])
    def test_the_size_is_the_tasks_own_aspect_ratio_in_multiples_of_16(self, fake, provider, tmp_path, width,
                                                                        height, expected):
        provider.generate(make_request(tmp_path, provider.spec, width=width, height=height))
        size = form_fields(fake)["size"]
        w, h = (int(x) for x in size.split("x"))
        assert size == expected and w % 16 == h % 16 == 0 and max(w, h) <= 3 * min(w, h)
        assert abs(w * h - 1536 * 1024) / (1536 * 1024) < 0.02

    def test_the_pixels_option_moves_the_size(self, fake, make_provider, tmp_path):
        provider = make_provider(pixels=2560 * 1440)
        provider.generate(make_request(tmp_path, provider.spec, width=5504, height=3072))
        assert form_fields(fake)["size"] == "2576x1440"

    def test_input_fidelity_is_not_sent_even_when_an_option_sets_it(self, fake, make_provider, tmp_path):
        provider = make_provider(input_fidelity="high")
        provider.generate(make_request(tmp_path, provider.spec))
        assert "input_fidelity" not in form_fields(fake)

    def test_output_tokens_follow_the_calculator_readings(self):
        # the community post's readings of OpenAI's calculator: 1024x1024 = 7024, 1536x1024 = 5488 (high)
        assert gpt_image_2_output_tokens("high", 1024, 1024) == 7024
        assert gpt_image_2_output_tokens("high", 1536, 1024) == 5488

    def test_the_worst_case_grows_with_the_size(self, fake, make_provider, tmp_path):
        small, large = make_provider(), make_provider(pixels=2560 * 1440)
        request = make_request(tmp_path, small.spec)
        worst = small.worst_case_cost(request)
        tokens = gpt_image_2_output_tokens("high", 1456, 1088)
        assert worst == pytest.approx((tokens * 30 + 8000 * 8 + len(request.task.instruction) * 5) / 1e6)
        assert large.worst_case_cost(dataclasses.replace(request, spec=large.spec)) > worst
        assert small.generate(request).cost <= worst


class TestGptImage26Sunburst(OpenAICase):
    """GPT Image 2.6 (and 2.5), second-hand: gpt-image-2's size rule and token prices, no input_fidelity."""

    model = "gpt-image-2.6-sunburst"
    provider_model = "gpt-image-2.6-sunburst"
    price = 0.19
    options = {"quality": "high"}

    def check_success_request(self, fake, generation):
        fields = form_fields(fake)
        assert fields["model"] == "gpt-image-2.6-sunburst" and fields["quality"] == "high"
        assert "input_fidelity" not in fields and "complexity" not in fields
        assert fields["size"] == "1456x1088"  # the task's own ratio, as gpt-image-2: not a listed size
        assert generation.cost == pytest.approx(priced(generation.extra["usage"], "gpt-image-2"))


@pytest.mark.parametrize("name", ["gpt-image-2.5-flare", "gpt-image-2.5-sunburst", "gpt-image-2.6-flare",
                                  "gpt-image-2.6-sunburst"])
def test_the_later_gpt_image_models_take_gpt_image_2s_rules(name):
    from pytest_hypeedit.providers.openai_models import GPT_IMAGE_2, image_model
    from pytest_hypeedit.registry import load_registry

    model, spec = image_model(name), load_registry().get(name)
    assert spec.route == "openai" and spec.provider_model == name
    assert model.free_size == GPT_IMAGE_2.free_size and model.prices == GPT_IMAGE_2.prices
    assert not model.takes_input_fidelity
