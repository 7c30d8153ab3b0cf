"""A route stops at its first authentication failure: a wrong key costs a few requests, not one per candidate.

Most keys are proved before anything is paid (transport/keycheck.py): a rejected OpenAI key ends the run at start-up
with one usage error, nothing bought.  A route whose provider documents no free call to check a key (ModelArk here,
the loopback stand-in answering 401 to a key it does not know) and a judge server that is not OpenAI's (the
loopback chat-completions stand-in) are stopped the first time the key is rejected instead.  Each run has 24 candidates: at
most the route's calls already in flight when the first 401 came back may still be sent (8 on the ark route), and
the whole run says it once: the provider's reply (its request id once) on the first item, one short line for every
other, shown once with how many items it ended.  The key's variable is named, its value never.
"""

from __future__ import annotations

import re

import pytest
from benchdata import make_tasks, write_labels, write_split
from fake_models import models_conftest
from genai_fakes import FakeChat
from providers_fakes.ark import FakeArk
from providers_fakes.openai import FakeOpenAI

from pytest_hypeedit.engine.rejected_keys import RejectedKeys, key_rejected
from pytest_hypeedit.errors import JobExpired, JudgeError, ProviderError

TASKS, REPEATS = 6, 4
ITEMS = TASKS * REPEATS
WRONG_KEY = "sk-wrong-key-0123456789abcdef"
#: The ark route's calls in flight (models.yaml), which may be sent before the first 401 is back.
IN_FLIGHT = 8
JUDGE_IN_FLIGHT = 4
USAGE_ERROR = 4  # pytest's exit code for a usage error

FREE_MODEL = models_conftest(route="free", image="png", log=None, models=(
    {"name": "free", "route": "free", "provider_model": "free-v1", "price": 0.0},))


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path):
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    write_labels(pytester.path / "r1.json", {(f"task-{t:02d}", model, r): True for t in range(TASKS)
                                             for model in ("gpt-image-1.5", "seedream-4.5")
                                             for r in range(1, REPEATS + 1)})
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    return pytester


def run(pytester, *extra):
    """In-process (runpytest_inprocess): a subprocess added only its start-up to each run."""
    return pytester.runpytest("--tasks", "mini.json", "--images-base", "images", "--repeats", str(REPEATS),
                              "--outputs", "out", "-p", "no:cacheprovider", "-ra", *extra)


def said_by_the_run(out: str) -> str:
    """What the run itself printed, its prose unfolded (the end of a run folds it within 100 columns), without
    pytest's short test summary: ``-ra`` repeats there each failed item's message, in full when the variable CI is
    set (pytest truncates it elsewhere), and that echo is pytest's, not a second message of the plugin's."""
    return " ".join(out.split("short test summary info")[0].split())


def test_a_rejected_key_is_found_before_anything_is_paid(bench, monkeypatch):
    """OpenAI documents a free call (models retrieve): the wrong key is one usage error, no edit bought."""
    with FakeOpenAI() as openai:
        monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", openai.base)
        monkeypatch.setenv("OPENAI_API_KEY", WRONG_KEY)
        result = run(bench, "--model", "gpt-image-1.5", "--judge", "labels:r1.json")
    assert result.ret == USAGE_ERROR
    assert openai.requests == []  # nothing paid, nothing sent but the check
    [check] = openai.key_checks
    assert (check.method, check.path) == ("GET", "/v1/models/gpt-image-1.5")
    err, out = result.stderr.str(), result.stdout.str()
    assert err.count("OPENAI_API_KEY was rejected (HTTP 401 invalid_api_key") == 1
    assert "route openai" in err and "nothing was paid for" in err
    assert WRONG_KEY not in err + out


def test_a_rejected_key_on_a_route_without_a_free_check_stops_it_and_is_said_once(bench, monkeypatch):
    with FakeArk() as ark:
        monkeypatch.setenv("HYPEEDIT_ARK_BASE_URL", ark.base)
        monkeypatch.setenv("ARK_API_KEY", WRONG_KEY)
        result = run(bench, "--model", "seedream-4.5", "--judge", "labels:r1.json")
    result.assert_outcomes(errors=ITEMS)
    sent = len(ark.seen("/images/generations"))
    assert 1 <= sent <= IN_FLIGHT, sent  # one per candidate without the stop
    assert ark.key_checks == []  # ModelArk documents no free call to prove a key
    out = result.stdout.str()
    text = said_by_the_run(out)
    assert WRONG_KEY not in out
    # the provider's reply once (the first rejection), its request id once, though it quotes it itself
    assert text.count("missing or invalid") == 1, text
    [request_id] = set(re.findall(r"Request id: (\d+)", text))
    assert text.count(request_id) == 1
    assert "ARK_API_KEY was rejected by ark (HTTP 401): check the key" in text
    # every other item, sent or not, ends with the one same line, shown once with how many items it ended
    [others] = re.findall(r"ERROR x(\d+), e\.g\. [^:]*: ARK_API_KEY was rejected by ark \(HTTP 401\) "
                          r"earlier in this run, so nothing more is sent on route ark", text)
    assert int(others) == ITEMS - 1
    assert "Traceback" not in out


def test_a_rejected_judge_key_stops_the_judge_and_the_buying(bench, monkeypatch):
    bench.makeconftest(FREE_MODEL)
    monkeypatch.delenv("HYPEEDIT_OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("HYPEEDIT_JUDGE_API_KEY", WRONG_KEY)
    with FakeChat(expected_key="the-right-judge-key-0123") as judge:
        result = run(bench, "--model", "free", "--judge", "openai-rubric:judge-model", "--judge-base-url",
                     judge.base_url, "--rate-limit", f"openai-judge=6000/{JUDGE_IN_FLIGHT}")
    result.assert_outcomes(errors=ITEMS)
    assert 1 <= len(judge.requests) <= JUDGE_IN_FLIGHT, len(judge.requests)
    assert judge.key_checks == []  # a server that is not OpenAI's documents no free call
    out = result.stdout.str()
    text = said_by_the_run(out)
    assert WRONG_KEY not in out
    assert "HYPEEDIT_JUDGE_API_KEY was rejected by openai-judge (HTTP 401): check the key" in text
    assert text.count("Incorrect API key provided") == 1
    assert "HYPEEDIT_JUDGE_API_KEY was rejected by openai-judge (HTTP 401) earlier in this run" in text


# --------------------------------------------------------------------------- the rules


def test_what_counts_as_a_rejected_key():
    assert key_rejected(ProviderError("x", retryable=False, status=401))
    assert key_rejected(JudgeError("x", retryable=False, status=403))
    assert not key_rejected(ProviderError("x", retryable=True, status=403))  # a signed result URL that expired
    assert not key_rejected(JobExpired("x", retryable=False, status=403))
    assert not key_rejected(ProviderError("x", retryable=False, status=404))
    assert not key_rejected(ProviderError("x", retryable=False))


def test_401_stops_the_route_and_403_only_the_model(monkeypatch):
    monkeypatch.setenv("ARK_API_KEY", "ark-secret-value-0123")
    keys = RejectedKeys()
    note = keys.note(ProviderError("x", retryable=False, status=403), route="ark", model_scope="ark model m1",
                     variables=("ARK_API_KEY",))
    assert note == ("; ARK_API_KEY was rejected by ark (HTTP 403): check the key (and that it may use this model); "
                    "nothing more is sent on ark model m1 in this run")
    assert keys.stopped("ark", "ark model m1") and keys.stopped("ark", "ark model m2") is None
    keys.note(ProviderError("x", retryable=False, status=401), route="ark", model_scope="ark model m2",
              variables=("ARK_API_KEY",))
    assert "route ark" in keys.stopped("ark", "ark model m2")
    assert not any("ark-secret-value" in (keys.stopped(s) or "") for s in ("ark", "ark model m1"))


def test_the_variable_named_is_the_one_whose_value_was_sent(monkeypatch):
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-secret-value-0123")
    note = RejectedKeys().note(ProviderError("x", retryable=False, status=401), route="gemini",
                              model_scope="gemini model g", variables=("GOOGLE_API_KEY", "GEMINI_API_KEY"))
    assert note.startswith("; GEMINI_API_KEY was rejected by gemini (HTTP 401)")


def test_googles_invalid_key_reason_is_a_rejected_key_of_the_whole_route(monkeypatch):
    """Gemini answers a wrong key with 400 INVALID_ARGUMENT (reason API_KEY_INVALID), not 401: still rejected."""
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-secret-value-0123")
    wrong = ProviderError("x", retryable=False, status=400)
    assert not key_rejected(wrong)  # a bad request is not a rejected key
    wrong.key_invalid = True
    assert key_rejected(wrong)
    keys = RejectedKeys()
    keys.note(wrong, route="gemini", model_scope="gemini model a", variables=("GOOGLE_API_KEY", "GEMINI_API_KEY"))
    assert "route gemini" in keys.stopped("gemini", "gemini model b")


def test_a_rejection_in_flight_after_the_first_gets_the_one_line():
    keys = RejectedKeys()
    first = keys.rejection(ProviderError("x", retryable=False, status=401), route="ark", model_scope="ark model m",
                         variables=("ARK_API_KEY",))
    again = keys.rejection(ProviderError("y", retryable=False, status=401), route="ark", model_scope="ark model m",
                         variables=("ARK_API_KEY",))
    assert first[0] and first[1] is None  # the first says what the provider answered, and its note
    assert again[1] == keys.stopped("ark")  # the next: the line every other candidate ends with
