import pytest
from providers_fakes.contract import AdapterContract, ExpiringUrlContract, make_request
from providers_fakes.dashscope import FakeDashScope

from pytest_hypeedit.engine.records import PASS, Record
from pytest_hypeedit.errors import ImageError, Refusal
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

    @pytest.mark.parametrize("sent, kept", [({"trace": "t-1"}, None), (["ds-1"], None), (True, None),
                                            (12345, "12345"), ("ds-7", "ds-7")])
    def test_a_reply_id_that_is_not_text_never_makes_the_paid_record_unreadable(self, fake, provider, tmp_path,
                                                                                sent, kept):
        """The reply's ``request_id`` goes into the paid candidate's record as its ``request_id``: anything but text or
        a number there made the record unreadable (MalformedRecord: treated as absent), so the next run bought the
        candidate again."""
        fake.inject("request_id", body=sent)
        generation = self.run(provider, tmp_path)
        record = Record(split="public", model=self.model, task_id="t", repeat=1, outcome=PASS,
                        request_id=generation.request_id)
        assert Record.from_json(record.to_json()).request_id == kept
        assert generation.request_id == kept

    def test_a_refusal_carries_no_request_id_that_is_not_text(self, fake, provider, tmp_path):
        fake.inject("refusal")
        fake.inject("request_id", body={"trace": "t-1"})
        with pytest.raises(Refusal, match="DataInspectionFailed") as info:
            self.run(provider, tmp_path)
        assert info.value.request_id is None

    def test_more_than_three_references_is_a_clear_error(self, fake, provider, tmp_path):
        with pytest.raises(ImageError, match="4 reference images, but route dashscope takes at most 3"):
            provider.generate(make_request(tmp_path, provider.spec, images=4))

    def test_extreme_aspect_ratio_stays_within_sides(self, fake, provider, tmp_path):
        provider.generate(make_request(tmp_path, provider.spec, width=5504, height=1024))
        width, height = (int(x) for x in fake.seen(self.main_path)[0].json()["parameters"]["size"].split("*"))
        assert 512 <= height and width <= 2048
