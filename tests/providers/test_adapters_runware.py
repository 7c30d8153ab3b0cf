import dataclasses

import pytest
from providers_fakes.contract import AdapterContract, ExpiringUrlContract, JobContract, make_request
from providers_fakes.runware import RIVERFLOW_25_SIZES, RIVERFLOW_PRO_SIZES, FakeRunware

from pytest_hypeedit.errors import ConfigError, JobExpired, ModelGone, ProviderError, Refusal
from pytest_hypeedit.providers.runware import SIZES, RunwareProvider


class RunwareCase(AdapterContract, ExpiringUrlContract, JobContract):
    """The Runware route's adapter against its fake: what every Runware model's class shares."""

    fake_class = FakeRunware
    provider_class = RunwareProvider
    price = 0.15
    options = {"poll_s": 0.01, "poll_max_s": 0.02}
    main_path = "imageInference"
    poll_path = "getResponse"
    submit_path = "#imageInference$"


class TestRunware(RunwareCase):
    model = "riverflow-2-b1"
    provider_model = "sourceful:riverflow-2.0@pro"

    def check_success_request(self, fake, generation):
        task = fake.inference_tasks()[0]
        assert task["model"] == "sourceful:riverflow-2.0@pro" and task["includeCost"] is True
        assert (task["width"], task["height"]) == (2304, 1728)  # the listed 2K 4:3 pair, nearest to 4800x3584
        assert "seed" not in task and generation.seed is None and task["deliveryMethod"] == "async"
        assert "settings" not in task and "resolution" not in task
        assert generation.request_id == task["taskUUID"] and generation.cost == pytest.approx(0.15)
        polls = [seen.json()[0] for seen in fake.seen(self.poll_path)]
        assert polls and all(p == {"taskType": "getResponse", "taskUUID": task["taskUUID"]} for p in polls)

    def test_the_task_uuid_is_journaled_before_the_task_is_sent(self, fake, provider, tmp_path):
        sent_when_saved = []
        request, saved = self.journaled_request(tmp_path, provider.spec,
                                                on_save=lambda job: sent_when_saved.append(len(fake.inference_tasks())))
        generation = provider.generate(request)
        assert sent_when_saved[0] == 0 and saved[0]["id"] == generation.request_id

    def test_a_task_not_accepted_outright_is_not_left_journaled(self, fake, make_provider, tmp_path):
        provider = make_provider(sizes=[[1000, 1000]])  # not a listed pair: invalidParameter
        request, saved = self.journaled_request(tmp_path, provider.spec)
        with pytest.raises(ProviderError, match="invalidParameter") as info:
            provider.generate(request)
        assert not info.value.retryable and saved[-1] is None

    def test_a_moderated_task_is_a_refusal(self, fake, provider, tmp_path):
        fake.inject("refusal")
        with pytest.raises(Refusal, match="contentModerated"):
            provider.generate(make_request(tmp_path, provider.spec))

    @pytest.mark.parametrize("width, height, expected", [
        (4800, 3584, (2304, 1728)), (3584, 4800, (1728, 2304)), (1000, 1000, (2048, 2048)),
        (1920, 1080, (2560, 1440)), (1080, 1920, (1440, 2560)), (1500, 1000, (2496, 1664)),
        (1000, 1500, (1664, 2496)), (1250, 1000, (2240, 1792)), (1000, 1250, (1792, 2240)),
        (2100, 900, (3024, 1296)), (1152, 896, (2240, 1792)),
    ])
    def test_every_task_gets_a_listed_2k_size(self, fake, provider, tmp_path, width, height, expected):
        generation = provider.generate(make_request(tmp_path, provider.spec, width=width, height=height))
        task = fake.inference_tasks()[0]
        assert (task["width"], task["height"]) == expected and expected in RIVERFLOW_PRO_SIZES
        assert generation.extra["width"] == expected[0]

    def test_the_2k_list_is_the_listed_1k_list_doubled(self):
        assert set(SIZES) <= RIVERFLOW_PRO_SIZES and len(SIZES) == 10

    def test_sync_delivery_on_request(self, fake, make_provider, tmp_path):
        provider = make_provider(delivery="sync")
        request, saved = self.journaled_request(tmp_path, provider.spec)
        provider.generate(request)
        assert fake.inference_tasks()[0]["deliveryMethod"] == "sync" and not fake.seen(self.poll_path)

    def test_a_journaled_task_is_resumed_even_after_switching_to_sync(self, fake, make_provider, tmp_path):
        request, saved, _ = self.left_journaled(fake, make_provider(max_wait_s=0.2), tmp_path)
        synchronous = make_provider(delivery="sync")
        resumed, _ = self.journaled_request(tmp_path, synchronous.spec, job=request.call.journal.job)
        assert synchronous.generate(resumed).request_id == saved[0]["id"]
        assert len(fake.inference_tasks()) == 1

    def test_reported_cost_wins_over_the_price(self, fake, provider, tmp_path):
        fake.cost = 0.1234
        generation = provider.generate(make_request(tmp_path, provider.spec))
        assert generation.cost == pytest.approx(0.1234) and generation.extra["price"] == 0.15

    def test_references_are_fitted_to_300_2048_px(self, fake, provider, tmp_path):
        provider.generate(make_request(tmp_path, provider.spec, images=2))
        refs = fake.inference_tasks()[0]["inputs"]["referenceImages"]
        assert len(refs) == 2 and all(ref.startswith("data:image/") for ref in refs)

    def test_sizes_option_replaces_the_list(self, fake, make_provider, tmp_path):
        provider = make_provider(sizes=[[2048, 2048], [2304, 1728]])
        provider.generate(make_request(tmp_path, provider.spec, width=1000, height=1000))
        task = fake.inference_tasks()[0]
        assert (task["width"], task["height"]) == (2048, 2048)

    # ------------------------------------------------------------------ the third audit (issue 15)
    def test_a_seed_is_not_accepted_by_the_schema_so_none_is_sent(self, fake, make_provider, tmp_path):
        provider = make_provider(send_seed=True)  # what the adapter sent before: no call was accepted
        request, saved = self.journaled_request(tmp_path, provider.spec)
        with pytest.raises(ProviderError, match="unknownParameter.*'seed'") as info:
            provider.generate(request)
        assert not info.value.retryable and saved[-1] is None

    @pytest.mark.parametrize("delivery", ["async", "sync"])
    @pytest.mark.parametrize("code", ["unsafeContentDetected", "nsfwContentDetected", "contentModerated"])
    def test_a_safety_code_is_a_refusal(self, fake, make_provider, tmp_path, code, delivery):
        provider = make_provider(delivery=delivery)
        fake.inject("refusal", body=code)
        with pytest.raises(Refusal, match=code):
            provider.generate(make_request(tmp_path, provider.spec))

    def test_a_cancelled_task_is_gone_and_submitted_anew_by_the_runner(self, fake, provider, tmp_path):
        fake.inject("cancelled", path=self.poll_path)
        request, saved = self.journaled_request(tmp_path, provider.spec)
        with pytest.raises(JobExpired, match="taskCancelled"):
            provider.generate(request)
        assert request.call.journal.job is not None  # the runner forgets it and counts it resubmitted

    @pytest.mark.parametrize("code", ["modelDisabled", "modelUnavailable"])
    def test_a_disabled_model_is_final_and_not_asked_again(self, fake, provider, tmp_path, code):
        fake.model_errors[self.provider_model] = code
        request, saved = self.journaled_request(tmp_path, provider.spec)
        with pytest.raises(ModelGone, match=code) as info:
            provider.generate(request)
        assert not info.value.retryable and saved[-1] is None  # not accepted outright: no task to resume
        assert "not in the plugin's retirement table" in str(info.value)
        with pytest.raises(ModelGone):
            provider.generate(make_request(tmp_path, provider.spec, repeat=2))
        assert len(fake.inference_tasks()) == 1
        self.assert_no_key(fake, str(info.value))


    def test_the_worst_case_of_a_4k_pair_is_the_4k_price(self, fake, make_provider, tmp_path):
        two_k, four_k = make_provider(), make_provider(sizes=[[4608, 3456]])
        request = make_request(tmp_path, two_k.spec)
        assert two_k.worst_case_cost(request) == 0.15
        assert four_k.worst_case_cost(dataclasses.replace(request, spec=four_k.spec)) == 0.33


class TestRiverflow25(RunwareCase):
    model = "riverflow-2.5-pro"
    provider_model = "sourceful:riverflow-2.5@pro"

    def check_success_request(self, fake, generation):
        task = fake.inference_tasks()[0]
        assert task["model"] == "sourceful:riverflow-2.5@pro" and "seed" not in task and "resolution" not in task
        assert (task["width"], task["height"]) == (2048, 1536)  # the 2.5 table's 2K 4:3 pair
        assert task["settings"] == {"thinkingLevel": "medium"}
        assert generation.extra["width"] == 2048

    @pytest.mark.parametrize("width, height, expected", [
        (4096, 4096, (2048, 2048)), (5504, 3072, (2048, 1152)), (3072, 5504, (1152, 2048)),
        (2304, 4096, (1152, 2048)), (3000, 2000, (2304, 1536)), (2100, 900, (2688, 1152)), (1250, 1000, (1920, 1536)),
    ])
    def test_every_task_gets_a_listed_2k_size_of_the_2_5_table(self, fake, provider, tmp_path, width, height,
                                                               expected):
        provider.generate(make_request(tmp_path, provider.spec, width=width, height=height))
        task = fake.inference_tasks()[0]
        assert (task["width"], task["height"]) == expected and expected in RIVERFLOW_25_SIZES

    def test_the_thinking_level_option_is_sent(self, fake, make_provider, tmp_path):
        provider = make_provider(thinking_level="xhigh")
        provider.generate(make_request(tmp_path, provider.spec))
        assert fake.inference_tasks()[0]["settings"] == {"thinkingLevel": "xhigh"}

    def test_an_unknown_thinking_level_is_a_config_error_before_any_call(self, fake, make_provider):
        with pytest.raises(ConfigError, match="thinking_level 'max'.*low, medium, high, xhigh"):
            make_provider(thinking_level="max")
        assert fake.requests == []

    def test_the_2_0_table_is_not_accepted_by_2_5(self, fake, make_provider, tmp_path):
        provider = make_provider(sizes=[[2304, 1728]])  # a 2.0 pair: not in the 2.5 table
        with pytest.raises(ProviderError, match="invalidParameter.*unsupported dimensions"):
            provider.generate(make_request(tmp_path, provider.spec))
