"""The most one call can cost (``worst_case_cost``), what --budget reserves before it starts: by hand, for the
providers whose price depends on the request (BFL per megapixel with the inputs, OpenAI by size, quality and input
tokens) and for the judges (tokens at their max); and never below what a fake of the provider charges."""

from __future__ import annotations

import pytest
from genai_fakes.gemini import png_bytes
from providers_fakes.bfl import FakeBfl, bfl_credits
from providers_fakes.contract import make_request

from pytest_hypeedit.judges import JudgeOptions, builtin_judge
from pytest_hypeedit.judges.base import Judge, JudgeRequest
from pytest_hypeedit.judges.gemini import FLASH_MODEL, IMAGE_TOKENS_MAX, MAX_OUTPUT_TOKENS, PART_TOKENS, PRICES
from pytest_hypeedit.judges.majority import MajorityJudge
from pytest_hypeedit.judges.prompting import RUBRIC, message_pieces
from pytest_hypeedit.providers.base import Provider
from pytest_hypeedit.providers.bfl import BflProvider, credits_for
from pytest_hypeedit.providers.openai import OpenAIProvider
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.tasks import Task


def spec(route: str, model: str, price: float, **options) -> ModelSpec:
    return ModelSpec(name=model, route=route, provider_model=model, price=price, options=options)


def test_the_base_worst_case_is_the_list_price(tmp_path):
    provider = Provider(spec("x", "m", 0.04))
    assert provider.worst_case_cost(make_request(tmp_path, provider.spec, images=5)) == 0.04


# --------------------------------------------------------------------------- BFL


def test_bfl_credits_take_the_larger_reading_of_its_megapixels():
    # 1008x1008 out and a 1024x1024 reference: 2.066 MP of 10^6 pixels, or 1 + 1 whole MP of 1024x1024
    assert credits_for(7, 3, [1008 * 1008, 1024 * 1024]) == pytest.approx(7 + 3 * (1.016064 + 1.048576 - 1))
    # three small references: each is billed as a whole megapixel at least
    assert credits_for(7, 3, [1008 * 1008, 100, 100, 100]) == pytest.approx(7 + 3 * 3)


@pytest.mark.parametrize("references", [1, 3, 8])
def test_bfl_worst_case_counts_every_reference_and_covers_the_per_megapixel_charge(tmp_path, references):
    provider = BflProvider(spec("bfl", "flux-2-max", 0.10))
    request = make_request(tmp_path, provider.spec, images=references)
    body = {key: str(value) if key.startswith("input_image") else value  # the base64 text the request carries
            for key, value in provider.body(request).items()}
    charged = bfl_credits(body) * 0.01
    worst = provider.worst_case_cost(request)
    assert worst >= charged and worst == pytest.approx(0.07 + 0.03 * references, abs=0.01)


def test_bfl_worst_case_of_an_unpriced_model_is_its_list_price_for_every_megapixel(tmp_path):
    provider = BflProvider(spec("bfl", "flux-9-new", 0.05))
    request = make_request(tmp_path, provider.spec, images=2)
    assert provider.worst_case_cost(request) == pytest.approx(0.05 * 3)


def test_bfl_charges_its_formula_when_the_submit_reply_reports_no_cost(tmp_path, monkeypatch):
    with FakeBfl(credits=None, pending_polls=0) as fake:
        monkeypatch.setenv("HYPEEDIT_BFL_BASE_URL", fake.base)
        monkeypatch.setenv("BFL_API_KEY", fake.key)
        provider = BflProvider(spec("bfl", "flux-2-max", 0.10, poll_s=0.01))
        request = make_request(tmp_path, provider.spec, images=3)
        assert provider.generate(request).cost == pytest.approx(provider.worst_case_cost(request)) \
            == pytest.approx(0.16)
        provider.close()


# --------------------------------------------------------------------------- OpenAI


def test_openai_worst_case_follows_the_quality_asked_and_is_never_below_the_list_price(tmp_path):
    # The token tables themselves are tested with the adapter (tests/providers/test_adapters_openai.py): here, that a
    # lower quality is reserved lower, and that no reservation is below the model's list price.
    provider = OpenAIProvider(spec("openai", "gpt-image-1.5", 0.17, quality="high", input_fidelity="high"))
    request = make_request(tmp_path, provider.spec, images=2)  # landscape: 1536x1024
    low = OpenAIProvider(spec("openai", "gpt-image-1.5", 0.17, quality="low", input_fidelity="low"))
    assert low.worst_case_cost(request) < provider.worst_case_cost(request)
    assert provider.worst_case_cost(request) >= 0.17


# --------------------------------------------------------------------------- judges


@pytest.fixture
def judge_request(tmp_path):
    (tmp_path / "001.png").write_bytes(png_bytes())
    (tmp_path / "cand.png").write_bytes(png_bytes())
    task = Task("task-9", ("001.png",), ("edit",), "Make the mug blue.", 1024, 1024, "public")
    return JudgeRequest(task, "m", 1, tmp_path / "cand.png", (tmp_path / "001.png",))


def test_the_gemini_judge_reserves_two_asks_at_their_most_tokens(judge_request):
    judge = builtin_judge("gemini-3-flash-rubric", None, JudgeOptions())
    price_in, price_out = PRICES[FLASH_MODEL]
    pieces = message_pieces(judge_request, RUBRIC)
    tokens_in = sum((len(p.encode()) if isinstance(p, str) else IMAGE_TOKENS_MAX) + PART_TOKENS for p in pieces)
    assert judge.worst_case_cost(judge_request) == pytest.approx(2 * (tokens_in * price_in + MAX_OUTPUT_TOKENS * price_out))
    # far above what a verdict costs when its reply is short, never below a reply at the output cap
    assert judge.worst_case_cost(judge_request) >= tokens_in * price_in + MAX_OUTPUT_TOKENS * price_out


def test_free_judges_reserve_nothing_and_a_panel_reserves_every_juror(judge_request):
    gemini = builtin_judge("gemini-3-flash-rubric", None, JudgeOptions())
    chat = builtin_judge("openai-rubric", "local-model", JudgeOptions(openai_base_url="http://127.0.0.1:9/v1"))
    assert Judge().worst_case_cost(judge_request) == 0 and chat.worst_case_cost(judge_request) == 0


    class Priced(Judge):
        name = "priced"

        def worst_case_cost(self, request):
            return 0.5

    panel = MajorityJudge([gemini, chat, Priced()])
    assert panel.worst_case_cost(judge_request) == pytest.approx(gemini.worst_case_cost(judge_request) + 0.5)
    panel.close()
