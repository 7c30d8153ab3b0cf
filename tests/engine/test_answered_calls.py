"""An answered call is never bought again because of its reply; an address no request can go to is never sent.

A 200 whose result URL cannot be fetched (a newline, a control character, ``http://[::1/x.png``, no http(s), not
text) was "a bug of the plugin", counted possibly paid and bought again on every run: 10 ark generations for 5
candidates.  It is the answered call's failure: a refusal at the call's price with the route and the request id,
never possibly paid.  A ``HYPEEDIT_<PROVIDER>_BASE_URL`` holding a newline took the same path with nothing sent
(spent grew by the price on every run): it is a usage error naming the variable, before anything is paid, and a
request built on such an address anyway is "not sent", never possibly paid (transport/addresses.py).
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from ledger_view import open_call
from paid_benches import ark_bench
from providers_fakes.ark import FakeArk
from providers_fakes.contract import make_request

from pytest_hypeedit.engine.records import Record
from pytest_hypeedit.errors import ConfigError, ProviderError
from pytest_hypeedit.providers.ark import ArkProvider
from pytest_hypeedit.providers.runtime import Runtime
from pytest_hypeedit.registry import load_registry
from pytest_hypeedit.transport.addresses import check_address_settings, check_request_options, url_problem
from pytest_hypeedit.transport.http import RetryPolicy, make_http_client, send

TASKS, REPEATS = 5, 1
PRICE = 0.04  # seedream-4.5
#: Result URLs a hostile or broken reply may name, each unusable for its own reason.
BROKEN_URLS = {"newline": "http://127.0.0.1:9/x\n.png", "control": "http://127.0.0.1:9/x\x01.png",
               "bracket": "http://[::1/x.png", "ftp": "ftp://127.0.0.1/x.png", "relative": "x.png",
               "number": 42, "bad-port": "http://127.0.0.1:99999/x.png", "c1": "http://127.0.0.1:9/x\x85.png"}
#: Those a run is tried with end to end (two runs each); the others are checked by url_problem alone.
E2E_URLS = ("newline", "bracket", "ftp", "number")


def args(*extra: str) -> list[str]:
    return ["--tasks", "mini.json", "--images-base", "images", "--repeats", str(REPEATS), "--outputs", "out",
            "--model", "seedream-4.5", "--judge", "labels:r1.json", *extra]


def records(pytester) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((pytester.path / "out").rglob("0*.json"))]


def results_row(pytester) -> dict:
    return json.loads((pytester.path / "out" / "results.json").read_text())["rows"][0]


@pytest.fixture
def ark_run(pytester, monkeypatch, tmp_path):
    with ark_bench(pytester, monkeypatch, tmp_path, TASKS, REPEATS, lambda t, r: True) as fake:
        yield pytester, fake


@pytest.mark.parametrize("url", [BROKEN_URLS[name] for name in E2E_URLS], ids=E2E_URLS)
def test_an_answered_generation_whose_url_cannot_be_fetched_is_paid_once_and_refused(ark_run, monkeypatch, url):
    # Planted: adapter.download without its url_problem check: the newline, control and bracket URLs fail as
    # "a bug of the plugin", possibly paid, and the rerun buys all five again (10 generations).
    pytester, fake = ark_run
    monkeypatch.setattr(fake.files, "put", lambda data: url)
    first = pytester.runpytest(*args())
    first.assert_outcomes(failed=TASKS)  # a refusal is the model's FAIL
    out = first.stdout.str()
    assert "bug of the plugin" not in out and "possibly paid" not in out
    for record in records(pytester):
        assert record["outcome"] == "refused" and "result URL" in record["refusal"]
        assert "cannot be fetched" in record["refusal"] and "ark seedream-4-5-251128" in record["refusal"]
        assert record["request_id"].startswith("ark-req-") and Record.from_dict(record).cost == pytest.approx(PRICE)
        assert not Record.from_dict(record).possibly_paid_calls and open_call(record) is None
    again = pytester.runpytest(*args())
    again.assert_outcomes(failed=TASKS)
    assert len(fake.seen("/images/generations")) == TASKS  # answered once each, never bought again
    row = results_row(pytester)
    assert row["spent"] == pytest.approx(TASKS * PRICE) and row["possibly_paid"] == 0


def test_a_base_url_holding_a_newline_is_a_usage_error_naming_it(ark_run, monkeypatch):
    # Planted: the start-up call removed from glue/startup.py: the run errors on every item with "not sent"
    # (before the send() guard: possibly paid, $0.04 more spent on every run).
    pytester, fake = ark_run
    monkeypatch.setenv("HYPEEDIT_ARK_BASE_URL", fake.base.replace("/api/v3", "/api\n/v3"))
    result = pytester.runpytest(*args())
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["*HYPEEDIT_ARK_BASE_URL=*: it holds the control character '\\n'*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert fake.requests == [] and not (pytester.path / "out").exists()


def ark_generation_error(spec, tmp_path) -> ProviderError:
    """The error of one ark generation in this environment, five tries allowed (a request that left would be
    tried again, and counted)."""
    provider = ArkProvider(spec, runtime=Runtime(cache_dir=tmp_path / "cache",
                                                 policy=RetryPolicy(max_attempts=5, base_delay=0.01)))
    try:
        with pytest.raises(ProviderError) as caught:
            provider.generate(make_request(tmp_path, spec))
    finally:
        provider.close()
    return caught.value


def test_a_request_built_on_an_address_that_cannot_be_used_is_not_sent_and_not_possibly_paid(monkeypatch, tmp_path):
    # What start-up missed (a plugin's provider, a variable set after it) still costs nothing: the request is
    # not accepted while it is built (httpx.InvalidURL), or before it leaves (UnsupportedProtocol), never sent.
    spec = load_registry().get("seedream-4.5")
    with FakeArk() as fake:
        monkeypatch.setenv(fake.key_env, fake.key)
        for base in (fake.base.replace("/api", "/a\npi"), "ark.example/api/v3", "http://[::1/api/v3"):
            monkeypatch.setenv(fake.env, base)
            error = ark_generation_error(spec, tmp_path)
            assert "not sent" in str(error) and "HYPEEDIT_ARK_BASE_URL" in str(error)
            assert not error.reply_lost and not error.retryable
        assert fake.requests == []


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/a\nb", "ftp://127.0.0.1:9/x", "127.0.0.1:9/x"])
def test_a_paid_request_to_an_address_that_cannot_be_used_is_not_sent_and_not_lost(url):
    # Planted: send() without its InvalidURL guard (the newline escapes as a bare httpx.InvalidURL, "a bug of the
    # plugin", possibly paid) and UnsupportedProtocol out of NOT_SENT (a submit counted reply_lost).
    with FakeArk() as fake:
        client = make_http_client("ark", policy=RetryPolicy(max_attempts=3, base_delay=0.01))
        with client, pytest.raises(ProviderError) as caught:
            send(client, "POST", url.replace("127.0.0.1:9", fake.url.split("//")[1]), route="ark",
                 model="seedream-4.5", submits=True)
        assert not caught.value.reply_lost and not caught.value.retryable and fake.requests == []


@pytest.mark.parametrize("url", list(BROKEN_URLS.values()), ids=list(BROKEN_URLS))
def test_url_problem_names_why_an_address_cannot_be_used(url):
    assert url_problem(url)


@pytest.mark.parametrize("url", ["https://api.example.com/v1", "http://127.0.0.1:8080/api/v3", "http://[::1]:80/x",
                                 "https://cdn.example.com/a%20b.png?sig=x&exp=1"])
def test_url_problem_passes_addresses_a_request_can_go_to(url):
    assert url_problem(url) is None


def test_the_start_up_check_names_every_setting_that_cannot_be_used():
    environ = {"HYPEEDIT_ARK_BASE_URL": "https://ark.example/api\n/v3", "HYPEEDIT_FAL_BASE_URL": "http://[::1/x",
               "HYPEEDIT_OPENAI_BASE_URL": "  https://proxy.example/v1\n", "HYPEEDIT_CACHE_DIR": "/tmp/\x01",
               "HYPEEDIT_BFL_BASE_URL": ""}
    with pytest.raises(ConfigError) as caught:
        check_address_settings("http://judge\x7f.example/v1", environ)
    message = str(caught.value)
    assert "HYPEEDIT_ARK_BASE_URL" in message and "HYPEEDIT_FAL_BASE_URL" in message
    assert "--judge-base-url" in message
    # a value whose only newline is at its end is used stripped; a variable that is no address is not checked
    assert "HYPEEDIT_OPENAI_BASE_URL" not in message and "HYPEEDIT_CACHE_DIR" not in message
    assert "HYPEEDIT_BFL_BASE_URL" not in message
    check_address_settings(None, {"HYPEEDIT_OPENAI_BASE_URL": "https://proxy.example/v1"})  # nothing to say


@pytest.mark.parametrize("key", ["ark-key-0123\n456789", "ark-key-0123\u00e9456789"])
def test_a_key_no_header_can_carry_is_not_sent_not_possibly_paid_and_not_shown(monkeypatch, tmp_path, key):
    # Planted: LocalProtocolError out of NOT_SENT (a submit counted reply_lost, retried 5 times) and send()
    # without its UnicodeEncodeError guard (a bare exception: "a bug of the plugin", possibly paid).
    spec = load_registry().get("seedream-4.5")
    with FakeArk() as fake:
        monkeypatch.setenv(fake.env, fake.base)
        monkeypatch.setenv(fake.key_env, key)
        error = ark_generation_error(spec, tmp_path)
        assert not error.reply_lost and not error.retryable and "not sent" in str(error)
        assert "0123" not in str(error) and "456789" not in str(error)
        assert fake.seen("/images/generations") == []


def test_a_models_file_option_no_request_can_be_made_with_is_a_usage_error(ark_run):
    # Planted: check_request_settings without check_request_options: every item errors, each journaled call
    # counted possibly paid with nothing sent ('a bug of the plugin': could not convert string to float).
    pytester, fake = ark_run
    (pytester.path / "bad.yaml").write_text("models:\n  seedream-4.5: {options: {timeout_s: abc, poll_s: -1}}\n")
    result = pytester.runpytest(*args("--models-file", "bad.yaml"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["*model seedream-4.5: options.timeout_s is 'abc'; model seedream-4.5: options.poll_s "
                                 "is '-1': each must be a number of seconds above 0*--models-file*"])
    assert fake.requests == []


def test_request_options_in_range_pass_and_zero_waits_are_allowed():
    spec = load_registry().get("seedream-4.5")
    fine = dataclasses.replace(spec, options={"timeout_s": 30, "wait_s": 0, "batch_linger_s": 0.0, "max_image_mb": 200})
    check_request_options([fine])
    for bad in ({"timeout_s": 0}, {"deadline_s": True}, {"max_image_mb": "big"}, {"wait_s": -1}, {"poll_s": None}):
        with pytest.raises(ConfigError, match=f"options.{next(iter(bad))} is"):
            check_request_options([dataclasses.replace(spec, options=bad)])
