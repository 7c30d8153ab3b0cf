"""Retirement is data (pytest_hypeedit/retirements.yaml): shutdown dates, successors and sources, and what
they mean for a model on a given day (tests/glue/test_retirement_runs.py: in a run)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from pytest_hypeedit import retirements
from pytest_hypeedit.errors import ConfigError, ModelGone
from pytest_hypeedit.registry import ModelSpec, load_registry

DAY = dt.date
GPT15 = ModelSpec("gpt-image-1.5", "openai", "gpt-image-1.5", 0.17)
GPT2 = ModelSpec("gpt-image-2", "openai", "gpt-image-2", 0.2)
FLARE = ModelSpec("gpt-image-2.6-flare", "openai", "gpt-image-2.6-flare", 0.19)
SUNBURST = ModelSpec("gpt-image-2.6-sunburst", "openai", "gpt-image-2.6-sunburst", 0.19)
CURRENT = [GPT15, GPT2, FLARE, SUNBURST]


def test_the_shipped_table_knows_the_shutdowns_of_section_10_with_their_sources():
    gemini = retirements.lookup("gemini", "gemini-3-pro-image-preview")
    openai = retirements.lookup("openai", "gpt-image-1.5")
    assert (gemini.shutdown, gemini.successor) == (DAY(2026, 6, 25), "gemini-3-pro-image")
    assert (openai.shutdown, openai.successors, openai.announced) == (
        DAY(2026, 12, 1), ("gpt-image-2.6-sunburst", "gpt-image-2.6-flare"), DAY(2026, 6, 2))
    for retiring in ("gpt-image-1-mini", "chatgpt-image-latest"):  # the same notice, the same successors
        assert retirements.lookup("openai", retiring).successors == openai.successors
    assert "ai.google.dev/gemini-api/docs/deprecations" in gemini.source
    assert "developers.openai.com/api/docs/deprecations" in openai.source
    judge = retirements.lookup("gemini", "gemini-3-flash-preview")
    assert judge.shutdown is None and judge.successor == "gemini-3.6-flash"
    assert retirements.lookup("gemini", "gemini-3-pro-image") is None  # the GA id is not retired


@pytest.mark.parametrize("day, state", [
    (DAY(2026, 10, 31), ""),  # 31 days before: nothing yet
    (DAY(2026, 11, 1), "retiring"),  # 30 days before
    (DAY(2026, 11, 30), "retiring"),
    (DAY(2026, 12, 1), "retired"),  # the shutdown day itself
    (DAY(2027, 1, 1), "retired"),
])
def test_a_model_is_retiring_within_30_days_and_retired_from_its_shutdown_day(day, state):
    assert retirements.check(GPT15, CURRENT, day)[0] == state


def test_the_usage_error_names_the_date_the_source_and_the_model_to_run_instead():
    state, error = retirements.check(GPT15, CURRENT, DAY(2026, 12, 2))
    message = str(error)
    assert state == "retired" and isinstance(error, ConfigError)
    assert "--model gpt-image-1.5" in message and "on 2026-12-01" in message
    assert "successors are gpt-image-2.6-sunburst or gpt-image-2.6-flare" in message
    assert "OpenAI deprecations page" in message and "run --model gpt-image-2.6-sunburst instead" in message


def test_any_named_successor_is_offered_in_the_providers_order():
    _, error = retirements.check(GPT15, [GPT15, GPT2, FLARE], DAY(2026, 12, 2))
    assert "run --model gpt-image-2.6-flare instead" in str(error)  # sunburst is not among the models
    _, error = retirements.check(GPT15, [GPT15, GPT2], DAY(2026, 12, 2))  # gpt-image-2 is no successor any more
    assert "--model gpt-image-2 " not in str(error) and "run --model" not in str(error)


def test_without_a_named_model_on_the_successor_the_advice_is_a_models_file_entry():
    _, error = retirements.check(GPT15, [GPT15], DAY(2026, 12, 2))
    assert "gpt-image-1.5: {provider_model: gpt-image-2.6-sunburst}" in str(error)


def test_the_warning_says_how_many_days_are_left():
    state, text = retirements.check(GPT15, CURRENT, DAY(2026, 11, 26))  # issue 24's today
    assert state == "retiring" and "shuts down on 2026-12-01, in 5 days" in text
    assert "--model gpt-image-2.6-sunburst" in text


def test_the_shipped_models_of_today_gpt_image_15_warns_and_flash_image_is_not_accepted_second_hand():
    models, today = list(load_registry().models.values()), DAY(2026, 11, 26)
    state, text = retirements.check(load_registry().get("gpt-image-1.5"), models, today)
    assert state == "retiring" and "run --model gpt-image-2.6-sunburst instead" in text
    state, error = retirements.check(load_registry().get("gemini-3.1-flash-image"), models, today)
    assert state == "retired" and "shut down gemini-3.1-flash-image on 2026-10-29" in str(error)
    assert "second-hand, UNCONFIRMED" in str(error) and "run --model gemini-nano-banana-2.1 instead" in str(error)
    for name in ("gemini-nano-banana-2.1", "gemini-3.1-flash-lite-image", "gpt-image-2.6-sunburst",
                 "gpt-image-2.6-flare", "gpt-image-2.5-flare", "gpt-image-2.5-sunburst", "seedream-5.0-pro"):
        assert retirements.check(load_registry().get(name), models, today) == ("", None), name


def test_a_provider_reply_for_a_known_id_names_the_date_and_the_successor():
    spec = ModelSpec("old", "gemini", "gemini-3-pro-image-preview", 0.134)
    gone = retirements.model_gone(spec, "HTTP 404 NOT_FOUND")
    assert isinstance(gone, ModelGone) and not gone.retryable
    assert "shut down on 2026-06-25" in str(gone) and "run --model gemini-3-pro-preview" in str(gone)


def test_a_provider_reply_for_an_unknown_id_says_what_to_do():
    gone = retirements.model_gone(ModelSpec("mine", "openai", "gpt-image-9", 0.1), "HTTP 404 model_not_found")
    assert "not in the plugin's retirement table" in str(gone) and "--models-file" in str(gone)


@pytest.mark.parametrize("entry, problem", [
    ({"route": "openai", "provider_model": "x", "source": "s", "shutdown": "next week"}, "not a date"),
    ({"route": "openai", "provider_model": "x", "source": "s", "when": "2026-01-01"}, "unknown keys ['when']"),
    ({"route": "openai", "provider_model": "x"}, "missing text for ['source']"),
    ({"route": "openai", "provider_model": "x", "source": "s", "successor": ["a", 3]}, "not a model id"),
    ({"route": "openai", "provider_model": "x", "source": "s", "successor": {"a": 1}}, "not a model id"),
])
def test_a_malformed_table_is_an_error_naming_the_entry(tmp_path, entry, problem):
    path = tmp_path / "retirements.yaml"
    path.write_text(json.dumps({"retirements": [entry]}))
    with pytest.raises(ConfigError, match=r"retirements\[0\]") as info:
        retirements.load_table(path)
    assert problem in str(info.value)


def test_the_builtin_models_are_all_served_today_but_the_one_kept_for_its_candidates_on_disk():
    """On issue 24's today (2026-11-26) the only built-in model on a shut-down id is gemini-3.1-flash-image
    (reported shut down 2026-10-29, second-hand), kept so that its candidates on disk are still reported."""
    day = DAY(2026, 11, 26)
    models = load_registry().models.values()
    retired = [m.name for m in models if retirements.check(m, models, day)[0] == "retired"]
    assert retired == ["gemini-3.1-flash-image"]


def test_a_successor_shut_down_since_stands_for_its_own_successor():
    preview = ModelSpec("flash-preview", "gemini", "gemini-3.1-flash-image-preview", 0.1)
    models = list(load_registry().models.values())
    _, error = retirements.check(preview, models, DAY(2026, 11, 26))
    assert "successor is gemini-3.1-flash-image (gemini-3.1-flash-image shut down since; now gemini-nano-banana-2.1)" \
        in str(error) and "run --model gemini-nano-banana-2.1 instead" in str(error)
    _, error = retirements.check(preview, models, DAY(2026, 10, 1))  # before the flash image's own shutdown
    assert "run --model gemini-3.1-flash-image instead" in str(error) and "since" not in str(error)
