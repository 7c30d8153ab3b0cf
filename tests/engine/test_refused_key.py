"""A route stops at its first authentication failure: a wrong key costs a few requests, not one per candidate.

The model's route is the loopback OpenAI fake, which answers 401 to a key it does not know; the judge's route
is the loopback chat-completions fake, which does the same when given its own key.  Each run has 24 candidates:
at most the route's calls already in flight when the first 401 came back may still be sent (8 on the openai
route), every other candidate ends with one short line and nothing sent.  The key's variable is named, its
value never.
"""

from __future__ import annotations

import re

import pytest
from benchdata import make_tasks, write_labels, write_split
from fake_models import models_conftest
from genai_fakes import FakeChat
from providers_fakes.openai import FakeOpenAI

from pytest_hypeedit.engine.refusedkeys import RefusedKeys, key_refused
from pytest_hypeedit.errors import JobExpired, JudgeError, ProviderError

TASKS, REPEATS = 6, 4
ITEMS = TASKS * REPEATS
WRONG_KEY = "sk-wrong-key-0123456789abcdef"
#: The openai route's calls in flight (models.yaml), which may be sent before the first 401 is back.
IN_FLIGHT = 8
JUDGE_IN_FLIGHT = 4

FREE_MODEL = models_conftest(route="free", image="png", log=None, models=(
    {"name": "free", "route": "free", "provider_model": "free-v1", "price": 0.0},))


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path):
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    write_labels(pytester.path / "r1.json", {(f"task-{t:02d}", model, r): True for t in range(TASKS)
                                             for model in ("gpt-image-1.5",) for r in range(1, REPEATS + 1)})
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    return pytester


def run(pytester, *extra):
    return pytester.runpytest_subprocess("--tasks", "mini.json", "--images-base", "images", "--repeats",
                                         str(REPEATS), "--outputs", "out", "-p", "no:cacheprovider", "-ra", *extra,
                                         timeout=180)


def test_a_refused_model_key_stops_its_route_after_a_few_requests(bench, monkeypatch):
    with FakeOpenAI() as openai:
        monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", openai.base)
        monkeypatch.setenv("OPENAI_API_KEY", WRONG_KEY)
        result = run(bench, "--model", "gpt-image-1.5", "--judge", "labels:r1.json")
    result.assert_outcomes(errors=ITEMS)
    sent = len(openai.seen("/images/edits"))
    assert 1 <= sent <= IN_FLIGHT, sent  # one per candidate without the stop
    out = result.stdout.str()
    text = " ".join(out.split())  # the end of a run folds its prose within 100 columns
    assert WRONG_KEY not in out
    assert "OPENAI_API_KEY was refused by openai (HTTP 401): check the key" in text
    # each error message is said once, with how many items it ended (report/terminal_table.py)
    [not_sent] = re.findall(r"ERROR x(\d+), e\.g\. [^:]*: not sent: OPENAI_API_KEY was refused by openai \(HTTP 401\) "
                            r"earlier in this run, so nothing more is sent on route openai", text)
    assert int(not_sent) >= ITEMS - IN_FLIGHT
    assert out.count("Incorrect API key provided") <= 2 * IN_FLIGHT  # the provider's own text only for those sent
    assert "Traceback" not in out


def test_a_refused_judge_key_stops_the_judge_and_the_buying(bench, monkeypatch):
    bench.makeconftest(FREE_MODEL)
    monkeypatch.delenv("HYPEEDIT_OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("HYPEEDIT_JUDGE_API_KEY", WRONG_KEY)
    with FakeChat(expected_key="the-right-judge-key-0123") as judge:
        result = run(bench, "--model", "free", "--judge", "openai-rubric:judge-model", "--judge-base-url",
                     judge.base_url, "--rate-limit", f"openai-judge=6000/{JUDGE_IN_FLIGHT}")
    result.assert_outcomes(errors=ITEMS)
    assert 1 <= len(judge.requests) <= JUDGE_IN_FLIGHT, len(judge.requests)
    out = result.stdout.str()
    text = " ".join(out.split())  # the end of a run folds its prose within 100 columns
    assert WRONG_KEY not in out
    assert "HYPEEDIT_JUDGE_API_KEY was refused by openai-judge (HTTP 401): check the key" in text
    assert "not sent: HYPEEDIT_JUDGE_API_KEY was refused by openai-judge (HTTP 401) earlier in this run" in text


# --------------------------------------------------------------------------- the rules


def test_what_counts_as_a_refused_key():
    assert key_refused(ProviderError("x", retryable=False, status=401))
    assert key_refused(JudgeError("x", retryable=False, status=403))
    assert not key_refused(ProviderError("x", retryable=True, status=403))  # a signed result URL that expired
    assert not key_refused(JobExpired("x", retryable=False, status=403))
    assert not key_refused(ProviderError("x", retryable=False, status=404))
    assert not key_refused(ProviderError("x", retryable=False))


def test_401_stops_the_route_and_403_only_the_model(monkeypatch):
    monkeypatch.setenv("ARK_API_KEY", "ark-secret-value-0123")
    keys = RefusedKeys()
    note = keys.note(ProviderError("x", retryable=False, status=403), route="ark", model_scope="ark model m1",
                     variables=("ARK_API_KEY",))
    assert note == ("; ARK_API_KEY was refused by ark (HTTP 403): check the key (and that it may use this model); "
                    "nothing more is sent on ark model m1 in this run")
    assert keys.stopped("ark", "ark model m1") and keys.stopped("ark", "ark model m2") is None
    keys.note(ProviderError("x", retryable=False, status=401), route="ark", model_scope="ark model m2",
              variables=("ARK_API_KEY",))
    assert "route ark" in keys.stopped("ark", "ark model m2")
    assert not any("ark-secret-value" in (keys.stopped(s) or "") for s in ("ark", "ark model m1"))


def test_the_variable_named_is_the_one_whose_value_was_sent(monkeypatch):
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-secret-value-0123")
    note = RefusedKeys().note(ProviderError("x", retryable=False, status=401), route="gemini",
                              model_scope="gemini model g", variables=("GOOGLE_API_KEY", "GEMINI_API_KEY"))
    assert note.startswith("; GEMINI_API_KEY was refused by gemini (HTTP 401)")
