import pytest

from pytest_hypeedit.providers.runware import RunwareProvider
from providers_fakes.contract import AdapterContract, ExpiringUrlContract, make_request
from providers_fakes.runware import FakeRunware


class TestRunware(AdapterContract, ExpiringUrlContract):
    fake_class = FakeRunware
    provider_class = RunwareProvider
    model = "riverflow-2-b1"
    provider_model = "sourceful:riverflow-2.0@pro"
    price = 0.15
    main_path = "^/v1$"

    def check_success_request(self, fake, generation):
        task = fake.seen(self.main_path)[0].json()[0]
        assert task["model"] == "sourceful:riverflow-2.0@pro" and task["includeCost"] is True
        assert (task["width"], task["height"]) == (1152, 896)  # nearest to 4800x3584
        assert task["seed"] == generation.seed
        assert generation.request_id == task["taskUUID"] and generation.cost == pytest.approx(0.15)

    def test_reported_cost_wins_over_the_price(self, fake, provider, tmp_path):
        fake.cost = 0.1234
        generation = provider.generate(make_request(tmp_path, provider.spec))
        assert generation.cost == pytest.approx(0.1234) and generation.extra["price"] == 0.15

    def test_references_are_fitted_to_300_2048_px(self, fake, provider, tmp_path):
        provider.generate(make_request(tmp_path, provider.spec, images=2))
        refs = fake.seen(self.main_path)[0].json()[0]["inputs"]["referenceImages"]
        assert len(refs) == 2 and all(ref.startswith("data:image/") for ref in refs)

    def test_sizes_option_replaces_the_list(self, fake, make_provider, tmp_path):
        provider = make_provider(sizes=[[2048, 2048], [2048, 1536]])
        provider.generate(make_request(tmp_path, provider.spec))
        task = fake.seen(self.main_path)[0].json()[0]
        assert (task["width"], task["height"]) == (2048, 1536)
