"""Keys proved before anything is paid, in a whole run against loopback stand-ins.

The default judge (Gemini) with a wrong key and the model's right key: no generation is bought (the wrong key
used to be found after every candidate was paid for, at its first verdict), and the run ends at start-up with
one message naming the variable.  A check endpoint that is down does not block the run: it warns, and buys.
"""

from __future__ import annotations

import pytest
from benchdata import make_tasks, write_labels, write_split
from genai_fakes import FakeGemini, Reply
from providers_fakes.openai import FakeOpenAI

TASKS, REPEATS = 3, 2
GEMINI_IN_FLIGHT = 8  # the gemini route's calls in flight (models.yaml)
RIGHT_GEMINI = "right-gemini-key-0123456789"
WRONG_GEMINI = "wrong-gemini-key-9876543210"
USAGE_ERROR = 4


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path):
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    write_labels(pytester.path / "r1.json", {(f"task-{t:02d}", model, r): True for t in range(TASKS)
                                             for model in ("gpt-image-1.5", "gemini-3-pro-preview")
                                             for r in range(1, REPEATS + 1)})
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    return pytester


def run(pytester, *extra, model: str = "gpt-image-1.5", repeats: int = REPEATS):
    """In-process (runpytest_inprocess): a subprocess added only its start-up, an import of the plugin and of
    google-genai, to each run (the file took 3x as long)."""
    return pytester.runpytest("--tasks", "mini.json", "--images-base", "images", "--repeats", str(repeats),
                              "--outputs", "out", "-p", "no:cacheprovider", "--model", model, *extra)


def test_a_wrong_judge_key_buys_nothing_and_says_so_once(bench, monkeypatch):
    with FakeOpenAI() as openai, FakeGemini(expected_key=RIGHT_GEMINI) as gemini:
        monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", openai.base)
        monkeypatch.setenv("OPENAI_API_KEY", openai.key)
        monkeypatch.setenv("HYPEEDIT_GEMINI_BASE_URL", gemini.url)
        monkeypatch.setenv("GEMINI_API_KEY", WRONG_GEMINI)
        result = run(bench)  # the default judge, gemini-3-flash
    assert result.ret == USAGE_ERROR
    assert openai.seen("/images/edits") == [] and gemini.requests == []  # no generation bought, no verdict asked
    assert [c.path for c in gemini.key_checks] == ["/v1beta/models/gemini-3-flash-preview"]
    err, out = result.stderr.str(), result.stdout.str()
    assert err.count("GEMINI_API_KEY was rejected") == 1
    assert "HTTP 400 INVALID_ARGUMENT" in err and "API_KEY_INVALID" in err and "judge gemini-3-flash" in err
    assert "nothing was paid for" in err
    assert WRONG_GEMINI not in err + out


def test_a_wrong_key_of_a_gemini_model_and_judge_is_one_message_naming_both(bench, monkeypatch):
    with FakeGemini(expected_key=RIGHT_GEMINI) as gemini:
        monkeypatch.setenv("HYPEEDIT_GEMINI_BASE_URL", gemini.url)
        monkeypatch.setenv("GEMINI_API_KEY", WRONG_GEMINI)
        result = run(bench, "-n", "2", model="gemini-3-pro-preview")  # the default judge is on Gemini too
    assert result.ret == USAGE_ERROR
    assert gemini.requests == []  # no image bought (Google's 400 used to be no rejection: 50 of 50 were sent)
    assert sorted(c.path for c in gemini.key_checks) == ["/v1beta/models/gemini-3-flash-preview",
                                                          "/v1beta/models/gemini-3-pro-image"]
    err = result.stderr.str()
    assert err.count("GEMINI_API_KEY was rejected") == 1
    assert "the key of route gemini and judge gemini-3-flash" in err
    assert WRONG_GEMINI not in err + result.stdout.str()


def test_the_right_keys_are_checked_once_and_the_run_buys(bench, monkeypatch):
    with FakeOpenAI() as openai:
        monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", openai.base)
        monkeypatch.setenv("OPENAI_API_KEY", openai.key)
        result = run(bench, "--judge", "labels:r1.json", "-n", "2")
    result.assert_outcomes(passed=TASKS * REPEATS)
    assert len(openai.key_checks) == 1  # once per run, on the controller: not once per xdist worker
    assert len(openai.seen("/images/edits")) == TASKS * REPEATS
    assert "could not be checked" not in result.stdout.str()


def test_a_check_endpoint_that_is_down_warns_and_the_run_goes_on(bench, monkeypatch):
    with FakeOpenAI() as openai:
        monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", openai.base)
        monkeypatch.setenv("OPENAI_API_KEY", openai.key)
        openai.inject("status", path="/v1/models", status=503, count=2)
        result = run(bench, "--judge", "labels:r1.json")
    result.assert_outcomes(passed=TASKS * REPEATS)
    text = " ".join(result.stdout.str().split())
    assert "WARNING: OPENAI_API_KEY of route openai could not be checked before paying (HTTP 503" in text
    assert len(openai.seen("/images/edits")) == TASKS * REPEATS


def test_an_estimate_checks_no_key(bench, monkeypatch):
    with FakeOpenAI() as openai:
        monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", openai.base)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-0123456789abc")
        result = run(bench, "--judge", "labels:r1.json", "--estimate")
    assert result.ret == 0
    assert openai.key_checks == [] and openai.requests == []


class GeminiCheckDown(FakeGemini):
    """models.get is down (503); generateContent answers as Google does."""

    def model_info(self, request):
        return Reply(503, {"error": {"code": 503, "message": "The service is currently unavailable.",
                                     "status": "UNAVAILABLE"}})


def test_googles_400_for_a_wrong_key_in_a_paid_call_stops_the_route(bench, monkeypatch):
    """The check could not tell: the paid calls' 400 INVALID_ARGUMENT (API_KEY_INVALID) is a rejected key, which
    stops the route after the calls in flight (it used to send one request per candidate), said once."""
    tasks, repeats = 3, 6
    write_split(bench.path, "mini", make_tasks(tasks), bench.path / "images")
    with GeminiCheckDown(expected_key=RIGHT_GEMINI) as gemini:
        monkeypatch.setenv("HYPEEDIT_GEMINI_BASE_URL", gemini.url)
        monkeypatch.setenv("GEMINI_API_KEY", WRONG_GEMINI)
        result = run(bench, "--judge", "labels:r1.json", model="gemini-3-pro-preview", repeats=repeats)
    result.assert_outcomes(errors=tasks * repeats)
    assert 1 <= len(gemini.requests) <= GEMINI_IN_FLIGHT < tasks * repeats
    text = " ".join(result.stdout.str().split())
    assert "could not be checked before paying (HTTP 503" in text
    assert "GEMINI_API_KEY was rejected by gemini (HTTP 400): check the key" in text
    assert text.count("API key not valid") == 1
    assert WRONG_GEMINI not in text


#: A model team's own provider, from its conftest.py, proving its key with the public KeyProbe.
IN_HOUSE_CONFTEST = '''
import os
from pathlib import Path

from pytest_hypeedit import Generation, KeyProbe, Provider


class InHouse(Provider):
    route = "in-house"
    key_env = ("IN_HOUSE_KEY",)

    def key_probe(self):
        key = os.environ["IN_HOUSE_KEY"]
        return KeyProbe(user="route in-house", route=self.route, variable="IN_HOUSE_KEY", method="GET",
                        url=os.environ["IN_HOUSE_URL"] + "/v1/me", headers={"Authorization": f"Bearer {key}"},
                        secret=key)

    def generate(self, request):
        with open("generations.log", "a") as log:
            log.write(f"{request.task.task_id} {request.repeat}\\n")
        return Generation(image=request.references[0].read_bytes(), ext="png", cost=0.01)


def pytest_hypeedit_add_models(config):
    return [{"name": "in-house", "route": "in-house", "provider_model": "ours-v1", "price": 0.01}]


def pytest_hypeedit_make_provider(config, spec):
    return InHouse(spec) if spec.route == "in-house" else None
'''


@pytest.mark.parametrize("key, bought", [("right-in-house-key-0123", TASKS), ("wrong-in-house-key-9876", 0)])
def test_a_conftest_provider_proves_its_key_with_the_public_key_probe(bench, monkeypatch, key, bought):
    from providers_fakes import FakeServer, Reply

    bench.makeconftest(IN_HOUSE_CONFTEST)
    with FakeServer(key="right-in-house-key-0123") as server:
        server.key_check_route("GET", "/v1/me", lambda seen: Reply(
            200 if seen.headers.get("authorization") == f"Bearer {server.key}" else 401, {"error": "bad key"}))
        monkeypatch.setenv("IN_HOUSE_URL", server.url)
        monkeypatch.setenv("IN_HOUSE_KEY", key)
        result = run(bench, "--judge", "labels:r1.json", "--repeats", "1", model="in-house")
    log = bench.path / "generations.log"
    assert len(server.key_checks) == 1
    assert (len(log.read_text().splitlines()) if log.exists() else 0) == bought
    if not bought:
        assert result.ret == USAGE_ERROR
        err = result.stderr.str()
        assert "IN_HOUSE_KEY was rejected" in err and "route in-house" in err and "nothing was paid for" in err
        assert key not in err + result.stdout.str()
