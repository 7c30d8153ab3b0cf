"""A key goes to its provider's own hosts only: not through a redirect, not to a URL from a reply or a record.

Each test counts at a second loopback server (the "stranger", another origin) what reached it, and with
which headers: a key must never arrive there.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType

import pytest
from benchdata import make_tasks, write_run_folder
from fake_models import fast_retries_conftest
from genai_fakes.fixtures import FAKE_GEMINI_KEY, fake_gemini  # noqa: F401 - fixture
from genai_fakes.gemini import Reply as GeminiReply, png_bytes
from ledger_view import job
from providers_fakes import FakeServer, Reply, make_image
from providers_fakes.bfl import FakeBfl
from providers_fakes.contract import FAST, make_request
from providers_fakes.fal import FakeFal
from providers_fakes.replicate import FakeReplicate
from upstream_stub import upstream_stub  # noqa: F401 - fixture

from pytest_hypeedit.errors import JudgeError, ProviderError
from pytest_hypeedit.judges import JudgeOptions
from pytest_hypeedit.judges.base import JudgeRequest
from pytest_hypeedit.judges.gemini import GeminiJudge
from pytest_hypeedit.providers.bfl import BflProvider
from pytest_hypeedit.providers.fal import FalProvider
from pytest_hypeedit.providers.gemini import GeminiProvider
from pytest_hypeedit.providers.polling import JobPoller
from pytest_hypeedit.providers.replicate import ReplicateProvider
from pytest_hypeedit.providers.runtime import Runtime
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.tasks import Task
from pytest_hypeedit.transport.http import download_to, make_http_client, send
from pytest_hypeedit.transport.keyhosts import key_hosts

KEY = "bfl-fake-key-0123456789"


class Stranger(FakeServer):
    """Another origin: answers everything (a file for /delivery/, else {}), and remembers what it was sent."""

    def __init__(self):
        super().__init__()
        self.route("GET", r"/delivery/.*", lambda seen: Reply(200, make_image(32, 24), {"content-type": "image/png"}))
        for method in ("GET", "POST"):
            self.route(method, r"/(?!delivery/).*", lambda seen: Reply(200, {"status": "Ready"}))

    def keys_seen(self, *keys: str) -> list[str]:
        """Header values that carried any of ``keys``."""
        return [f"{name}: {value}" for seen in self.seen() for name, value in seen.headers.items()
                if any(key in value for key in keys)]


@pytest.fixture
def stranger():
    with Stranger() as server:
        yield server


@pytest.fixture
def api():
    fake = FakeServer()
    fake.route("GET", "/v1/get_result", lambda seen: Reply(200, {"status": "Ready"}))
    fake.route("GET", "/v1/moved", lambda seen: Reply(200, {"moved": True, "key": seen.headers.get("x-key")}))
    with fake:
        yield fake


def client_for(api_url: str, documented=()):
    return make_http_client("bfl", secrets=(KEY,), policy=FAST, key_hosts=key_hosts("bfl", api_url, documented))


# --------------------------------------------------------------------------- the policy itself


def test_key_hosts_are_the_base_origin_and_documented_https_hosts():
    hosts = key_hosts("bfl", "http://127.0.0.1:5000/v1", ["api.eu.bfl.ai"])
    assert hosts.allows("http://127.0.0.1:5000/v1/get_result?id=1")
    assert not hosts.allows("http://127.0.0.1:5001/v1/get_result")  # another port is another origin
    assert not hosts.allows("https://127.0.0.1:5000/v1/get_result")  # another scheme too
    assert hosts.allows("https://api.eu.bfl.ai/v1/get_result?id=1")
    assert not hosts.allows("http://api.eu.bfl.ai/v1/get_result")  # documented hosts over https only
    assert not hosts.allows("https://api.eu.bfl.ai:8443/v1/get_result")
    assert not hosts.allows("https://api.eu.bfl.ai.evil.example/v1/get_result")
    assert "127.0.0.1:5000" in hosts.describe() and "api.eu.bfl.ai" in hosts.describe()


@pytest.mark.parametrize("header", [{"x-key": KEY}, {"x-goog-api-key": KEY}, {"Authorization": f"Key {KEY}"},
                                    {"Authorization": f"Bearer {KEY}"}], ids=lambda h: next(iter(h)))
def test_a_request_carrying_a_key_to_another_origin_is_not_sent(api, stranger, header):
    with client_for(api.url) as client:
        with pytest.raises(ProviderError) as info:
            send(client, "GET", f"{stranger.url}/v1/get_result?id=1", route="bfl", model="flux-2-max", headers=header)
    assert stranger.seen() == []
    assert f"the bfl key is not sent to {stranger.url}" in str(info.value) and KEY not in str(info.value)
    assert info.value.retryable is False


@pytest.mark.parametrize("status", [307, 302, 301, 308])
@pytest.mark.parametrize("header", [{"x-key": KEY}, {"x-goog-api-key": KEY}, {"Authorization": f"Key {KEY}"}],
                         ids=lambda h: next(iter(h)))
def test_a_redirect_to_another_origin_is_not_followed_with_a_key(api, stranger, status, header):
    api.inject("redirect", status=status, body=stranger.url + "{path}?{query}", path="get_result")
    with client_for(api.url) as client:
        with pytest.raises(ProviderError) as info:
            send(client, "GET", f"{api.url}/v1/get_result?id=1", route="bfl", model="flux-2-max", headers=header)
    assert stranger.seen() == []  # not with the key, and not without it either
    assert f"redirects to {stranger.url}: not followed" in str(info.value)
    assert len(api.seen("get_result")) == 1


def test_a_redirect_within_the_origin_keeps_the_key(api):
    api.inject("redirect", body=api.url + "/v1/moved", path="get_result")
    with client_for(api.url) as client:
        response = client.get(f"{api.url}/v1/get_result?id=1", headers={"x-key": KEY})
    assert response.json() == {"moved": True, "key": KEY}


def test_a_download_without_a_key_follows_a_redirect_anywhere(api, stranger, tmp_path):
    api.route("GET", "/delivery/a.png", lambda seen: Reply(302, b"", {"location": f"{stranger.url}/delivery/a.png"}))
    with client_for(api.url) as client:
        path = download_to(client, f"{api.url}/delivery/a.png", tmp_path, route="bfl", model="flux-2-max")
    assert path.read_bytes().startswith(b"\x89PNG") and len(stranger.seen("/delivery/")) == 1
    assert stranger.keys_seen(KEY) == []


# --------------------------------------------------------------------------- the adapters: URLs from replies


@pytest.fixture
def bfl(monkeypatch):
    with FakeBfl(pending_polls=1) as fake:
        monkeypatch.setenv(fake.env, fake.base)
        monkeypatch.setenv(fake.key_env, fake.key)
        yield fake


def bfl_provider(tmp_path, **options):
    spec = ModelSpec("flux-2-max", "bfl", "flux-2-max", 0.10,
                     MappingProxyType({"timeout_s": 5.0, "poll_s": 0.01, "max_wait_s": 2, **options}))
    return BflProvider(spec, runtime=Runtime(cache_dir=tmp_path / "cache", policy=FAST))


def test_a_polling_url_on_another_host_in_the_submit_reply_is_not_accepted(bfl, stranger, tmp_path):
    bfl.inject("relocate", body=stranger.url, path="/v1/flux")
    provider = bfl_provider(tmp_path)
    request = make_request(tmp_path, provider.spec)
    with pytest.raises(ProviderError) as info:
        provider.generate(request)
    provider.close()
    message = str(info.value)
    assert f"its polling_url points at {stranger.url}, not at bfl's API" in message
    assert "the URL came in the provider's own reply" in message and info.value.retryable is False
    assert stranger.seen() == [] and sum(bfl.ledger.submitted.values()) == 1  # paid once, never re-sent


def test_a_poll_redirected_to_another_origin_is_not_followed(bfl, stranger, tmp_path):
    bfl.inject("redirect", body=stranger.url + "{path}?{query}", path="get_result")
    provider = bfl_provider(tmp_path)
    with pytest.raises(ProviderError, match="not followed"):
        provider.generate(make_request(tmp_path, provider.spec))
    provider.close()
    assert stranger.seen() == [] and sum(bfl.ledger.submitted.values()) == 1


def test_a_result_file_on_another_host_is_fetched_without_the_key(bfl, stranger, tmp_path):
    bfl.inject("relocate", body=stranger.url, path="get_result", count=5)  # result.sample on the stranger
    provider = bfl_provider(tmp_path)
    generation = provider.generate(make_request(tmp_path, provider.spec))
    provider.close()
    assert generation.ext == "png" and len(stranger.seen("/delivery/")) == 1
    assert stranger.keys_seen(bfl.key) == []


def test_bfl_regional_hosts_are_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("BFL_API_KEY", KEY)
    provider = bfl_provider(tmp_path)
    request = make_request(tmp_path, provider.spec)
    poller = JobPoller(provider, request, "job-1", "what")
    for host in ("api.bfl.ai", "api.eu.bfl.ai", "api.us.bfl.ai", "api.eu1.bfl.ai", "api.us1.bfl.ai"):
        assert poller.api_url(f"https://{host}/v1/get_result?id=1", "polling_url").startswith("https://")
    with pytest.raises(ProviderError, match="delivery.bfl.ai"):
        poller.api_url("https://delivery.bfl.ai/v1/get_result?id=1", "polling_url")  # files, not the API


POLLED = MappingProxyType({"timeout_s": 5.0, "poll_s": 0.01, "max_wait_s": 2})


@pytest.mark.parametrize("fake_class, provider_class, spec, path, field", [
    (FakeFal, FalProvider, ModelSpec("qwen-image-edit-2511", "fal", "fal-ai/qwen-image-edit-2511", 0.03, POLLED),
     "", "status_url"),  # the submit reply: status and response URLs
    (FakeReplicate, ReplicateProvider, ModelSpec("seedream-4.5-r", "replicate", "bytedance/seedream-4.5", 0.04, POLLED),
     "predictions", "urls.get"),
], ids=["fal", "replicate"])
def test_a_job_url_on_another_host_is_not_accepted(monkeypatch, stranger, tmp_path, fake_class, provider_class, spec, path,
                                              field):
    with fake_class() as fake:
        monkeypatch.setenv(fake.env, fake.base)
        monkeypatch.setenv(fake.key_env, fake.key)
        fake.inject("relocate", body=stranger.url, path=path)
        provider = provider_class(spec, runtime=Runtime(cache_dir=tmp_path / "cache", policy=FAST))
        with pytest.raises(ProviderError, match=rf"its {field} points at .*not at {spec.route}'s API"):
            provider.generate(make_request(tmp_path, spec))
        provider.close()
        assert sum(fake.ledger.submitted.values()) == 1
    assert stranger.seen() == []


# --------------------------------------------------------------------------- google-genai: model and judge


def test_the_gemini_image_model_does_not_follow_a_redirect_with_its_key(fake_gemini, stranger, tmp_path):
    fake_gemini.queue(GeminiReply(307, b"", {"Location": f"{stranger.url}/v1beta/models/m:generateContent"}))
    spec = ModelSpec("gemini-3-pro-preview", "gemini", "gemini-3-pro-image", 0.134, MappingProxyType({}))
    provider = GeminiProvider(spec, policy=FAST, timeout_s=5)
    request = make_request(tmp_path, spec)
    with pytest.raises(ProviderError, match="not followed") as info:
        provider.generate(request)
    provider.close()
    assert stranger.seen() == [] and info.value.retryable is False and FAKE_GEMINI_KEY not in str(info.value)


def test_the_gemini_judge_does_not_follow_a_redirect_with_its_key(fake_gemini, stranger, upstream_stub, tmp_path):
    fake_gemini.queue(GeminiReply(302, b"", {"Location": f"{stranger.url}/v1beta/models/m:generateContent"}))
    (tmp_path / "ref.png").write_bytes(png_bytes())
    (tmp_path / "cand.png").write_bytes(png_bytes(color=(0, 0, 255)))
    task = Task("task-9", ("ref.png",), ("edit",), "Make the mug blue.", 1024, 1024, "public")
    judge = GeminiJudge(JudgeOptions(policy=FAST, timeout_s=5))
    with pytest.raises(JudgeError, match="not followed"):
        judge.judge(JudgeRequest(task, "m", 1, tmp_path / "cand.png", (tmp_path / "ref.png",)))
    judge.close()
    assert stranger.seen() == []


# --------------------------------------------------------------------------- a record on disk (the next run)

FAST_POLLS = """
models:
  flux-2-max: {options: {poll_s: 0.01, poll_max_s: 0.05, max_wait_s: 0.3}}
routes:
  bfl: {rpm: 100000, inflight: 24}
"""
FAST_RETRIES = fast_retries_conftest(max_attempts=2, max_delay=0.02)


def journaled_run(pytester, bfl) -> list[str]:
    """A run whose polls fail: every candidate's job stays journaled in its record; the run's arguments.
    Afterwards the fake answers Ready at the first poll."""
    tasks = make_tasks(1)
    args = [*write_run_folder(pytester.path, conftest=FAST_RETRIES, models_file=FAST_POLLS, tasks=tasks,
                              labels={(tasks[0]["task_id"], "flux-2-max", r): True for r in (1, 2)}, repeats=2),
            "--model", "flux-2-max"]
    bfl.inject("malformed", path="get_result", count=10_000)
    pytester.runpytest(*args).assert_outcomes(errors=2)  # every poll unreadable: only max_wait_s ends them
    bfl.faults.clear()
    # From now on a job is Ready at its first poll: the rerun's outcome never waits, so it never races the
    # 0.3 s max_wait_s, which ends the unreadable polls above (and would end a doctored job trusted blindly).
    bfl.pending_polls = 0
    return args


def record_paths(folder: Path) -> list[Path]:
    return sorted((folder / "out").rglob("[0-9][0-9][0-9].json"))


def doctor(path: Path, fields: dict) -> None:
    """Edit the journaled job of the record at ``path``: its fields, or (``{"whole": value}``) all of it."""
    record = json.loads(path.read_text())
    entry = next(entry for entry in reversed(record["calls"]) if "job" in entry)  # the purchase's entry holds it
    entry["job"] = fields["whole"] if "whole" in fields else {**entry["job"], **fields}
    path.write_text(json.dumps(record))


def test_a_doctored_record_cannot_send_the_key_to_another_host(pytester, bfl, stranger, monkeypatch, tmp_path):
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    args = journaled_run(pytester, bfl)
    doctored, honest = record_paths(pytester.path)
    doctor(doctored, {"polling_url": f"{stranger.url}/v1/get_result?id=stolen"})
    polls_before = len(bfl.seen("get_result"))

    rerun = pytester.runpytest(*args)
    rerun.assert_outcomes(passed=1, errors=1)  # the honest record's job is resumed and finished
    assert stranger.seen() == [] and stranger.keys_seen(bfl.key) == []
    assert list(bfl.ledger.submitted.values()) == [1, 1]  # nothing paid twice, nothing submitted anew
    error = json.loads(doctored.read_text())["error"]
    assert str(doctored.relative_to(pytester.path)) in error and f"points at {stranger.url}" in error
    assert 'delete the "job" of its entry in "calls"' in error
    assert job(json.loads(doctored.read_text()))["polling_url"].startswith(stranger.url)  # kept for review
    assert len(bfl.seen("get_result")) > polls_before  # the honest one was polled
    assert bfl.key not in rerun.stdout.str()


@pytest.mark.parametrize("job, words", [
    ({"cost": "NaN"}, "'cost' 'NaN', not a number >= 0"),
    ({"polling_url": "file:///etc/passwd"}, "'polling_url' that is not an http(s) URL"),
    ({"id": "two words"}, "no valid 'id'"),
    ({"whole": "just a string"}, "no valid 'id'"),
    ({"whole": ["a", "list"]}, "no valid 'id'"),
], ids=["nan cost", "file url", "bad id", "a string", "a list"])
def test_a_malformed_journaled_job_is_an_error_naming_the_record(pytester, bfl, monkeypatch, tmp_path, job, words):
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    args = journaled_run(pytester, bfl)
    doctored = record_paths(pytester.path)[0]
    doctor(doctored, job)
    requests_before = len(bfl.seen())
    # in-process: a job trusted blindly cannot hang the run, the models file's 0.3 s max_wait_s ends its polls
    rerun = pytester.runpytest(*args)
    rerun.assert_outcomes(passed=1, errors=1)
    error = json.loads(doctored.read_text())["error"]
    assert str(doctored.relative_to(pytester.path)) in error and words in error and "nothing was sent" in error
    assert list(bfl.ledger.submitted.values()) == [1, 1]
    assert len(bfl.seen()) > requests_before  # the other candidate went on
    assert "Traceback" not in rerun.stdout.str()
