import pytest
from providers_fakes.base import Reply
from providers_fakes.contract import AdapterContract, make_request
from providers_fakes.openrouter import FakeOpenRouter

from pytest_hypeedit.engine.records import PASS, Record
from pytest_hypeedit.errors import ProviderError, Refusal
from pytest_hypeedit.providers.openrouter import OpenRouterProvider


class TestOpenRouter(AdapterContract):
    fake_class = FakeOpenRouter
    provider_class = OpenRouterProvider
    model = "gemini-3-pro-preview"
    provider_model = "google/gemini-3-pro-image"
    price = 0.134
    main_path = "/chat/completions$"

    def check_success_request(self, fake, generation):
        body = fake.seen(self.main_path)[0].json()
        assert body["modalities"] == ["image", "text"] and body["image_config"]["aspect_ratio"] == "4:3"
        parts = body["messages"][0]["content"]
        assert parts[0]["type"] == "text" and parts[1]["image_url"]["url"].startswith("data:image/")
        assert body["seed"] == generation.seed and generation.cost == 0.134
        assert generation.request_id.startswith("gen-")

    @pytest.mark.parametrize("sent, kept", [({"trace": "t-1"}, None), (["gen-1"], None), (True, None),
                                            (12345, "12345"), ("gen-7", "gen-7")])
    def test_a_reply_id_that_is_not_text_never_makes_the_paid_record_unreadable(self, fake, provider, tmp_path,
                                                                                sent, kept):
        """The reply's ``id`` goes into the paid candidate's record as its ``request_id``: anything but text or
        a number there made the record unreadable (MalformedRecord: treated as absent), so the next run bought the
        candidate again."""
        fake.inject("request_id", body=sent)
        generation = self.run(provider, tmp_path)
        record = Record(split="public", model=self.model, task_id="t", repeat=1, outcome=PASS,
                        request_id=generation.request_id)
        assert Record.from_json(record.to_json()).request_id == kept
        assert generation.request_id == kept

    def test_reported_cost_is_used(self, fake, provider, tmp_path):
        fake.cost = 0.139
        assert provider.generate(make_request(tmp_path, provider.spec)).cost == pytest.approx(0.139)

    @pytest.mark.parametrize("model, modalities", [
        ("sourceful/riverflow-v2.5-pro", ["image"]), ("black-forest-labs/flux.2-max", ["image"]),
        ("google/gemini-3-pro-image", ["image", "text"]), ("openai/gpt-image-2", ["image", "text"]),
    ])
    def test_modalities_follow_the_model(self, fake, make_provider, tmp_path, model, modalities):
        provider = make_provider()
        object.__setattr__(provider.spec, "provider_model", model)
        provider.generate(make_request(tmp_path, provider.spec))
        assert fake.seen(self.main_path)[0].json()["modalities"] == modalities

    def test_the_modalities_option_wins(self, fake, make_provider, tmp_path):
        provider = make_provider(modalities=["image"])
        object.__setattr__(provider.spec, "provider_model", "black-forest-labs/flux.2-max")
        provider.generate(make_request(tmp_path, provider.spec))
        assert fake.seen(self.main_path)[0].json()["modalities"] == ["image"]

    def test_an_image_only_model_asked_for_text_finds_no_endpoint(self, fake, make_provider, tmp_path):
        provider = make_provider(modalities=["image", "text"])
        object.__setattr__(provider.spec, "provider_model", "sourceful/riverflow-v2.5-pro")
        with pytest.raises(ProviderError, match="404.*No endpoints found"):
            provider.generate(make_request(tmp_path, provider.spec))

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

    # ------------------------------------------------------------------ documented error shapes
    # OpenRouter's errors page (api_reference/errors-and-debugging.mdx) and response schema
    # (api_reference/overview.mdx): 403 is moderation, a guardrail or a permission; errors after
    # generation started come in an HTTP 200, at the top level or on the choice.

    def test_moderation_403_is_a_refusal_with_its_reasons(self, fake, provider, tmp_path):
        fake.inject("refusal")
        with pytest.raises(Refusal, match=r"moderation: 403: Your input was flagged \(reasons: violence\)"):
            provider.generate(make_request(tmp_path, provider.spec))

    def test_guardrail_403_is_an_error_that_points_at_the_guardrail_settings(self, fake, provider, tmp_path):
        fake.inject("guardrail")
        with pytest.raises(ProviderError, match="Request blocked.*guardrail settings") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert not isinstance(info.value, Refusal) and info.value.status == 403 and not info.value.retryable
        assert fake.key not in str(info.value)

    def test_permission_403_is_an_error_that_points_at_the_key(self, fake, provider, tmp_path):
        fake.inject("forbidden")
        with pytest.raises(ProviderError, match="may not use this model.*OPENROUTER_API_KEY's permissions") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert info.value.status == 403 and not info.value.retryable
        assert "guardrail settings" not in str(info.value)

    def test_null_native_finish_reason_with_an_image_is_a_success(self, fake, provider, tmp_path):
        fake.inject("null_native")
        generation = provider.generate(make_request(tmp_path, provider.spec))
        assert generation.ext == "png" and generation.image.startswith(b"\x89PNG")

    def test_null_native_finish_reason_without_an_image_is_a_refusal(self, fake, provider, tmp_path):
        self._answer(fake, {"id": "gen-n", "choices": [{"finish_reason": None, "native_finish_reason": None,
                                                         "message": {"role": "assistant", "content": None}}]})
        with pytest.raises(Refusal, match="without an image"):
            provider.generate(make_request(tmp_path, provider.spec))

    def test_choice_error_is_a_retryable_provider_error_not_a_refusal(self, fake, provider, tmp_path):
        fake.inject("choice_error")
        with pytest.raises(ProviderError, match="on the choice.*502 provider_unavailable: Provider returned error") \
                as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert info.value.retryable and info.value.status == 502

    def test_choice_error_that_waiting_cannot_fix_is_not_retryable(self, fake, provider, tmp_path):
        fake.inject("choice_error", body={"code": 400, "message": "image too large",
                                          "metadata": {"error_type": "image_too_large"}})
        with pytest.raises(ProviderError, match="image_too_large") as info:
            provider.generate(make_request(tmp_path, provider.spec))
        assert not info.value.retryable

    def test_content_policy_error_on_the_choice_is_a_refusal(self, fake, provider, tmp_path):
        fake.inject("choice_error", body={"code": 400, "message": "Output flagged by the provider's filter",
                                          "metadata": {"error_type": "content_policy_violation"}})
        with pytest.raises(Refusal, match="content_policy_violation"):
            provider.generate(make_request(tmp_path, provider.spec))
