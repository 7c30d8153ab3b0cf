"""No API key in any output, proven with providers and judges that quote the key back.

Real servers do echo credentials ("Incorrect API key provided: sk-..."), in
error bodies, in refusal messages, and in the URLs they hand out.  Each run
below makes every one of those happen, then reads every file the run wrote
(records, results JSON and Markdown, junit XML, the HTML report) and the
terminal output: the key must be in none of them, and the places where it was
echoed must show the mask instead (so the fakes really did echo it).
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from pathlib import Path

import pytest
from benchdata import make_tasks, write_labels, write_split
from fake_judges import judges_conftest
from fake_models import models_conftest
from providers_fakes import Reply, Seen
from providers_fakes.ark import FakeArk
from providers_fakes.contract import FAST, make_request

from pytest_hypeedit.errors import ProviderError, Refusal
from pytest_hypeedit.providers.ark import ArkProvider
from pytest_hypeedit.providers.runtime import Runtime
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.secrets import MASK

# Characters that URL-quoting changes, so the quoted form must be masked too.
ARK_KEY = "ark-Echo+Key/With=Chars-0123456789"
ECHO_KEY = "echo-provider-key-5f3a9c1e"
# The judge's key contains the provider's: masked whole, no tail may be left.
ECHO_JUDGE_KEY = ECHO_KEY + "-judge-TAIL77"


class EchoingArk(FakeArk):
    """ModelArk that quotes the caller's Authorization header in its errors and refusals, and hands out a
    result URL with the key in its query, whose file server quotes the URL back in its error."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.arrived, self.seen_generations = threading.Condition(), 0

    #: The 401 is answered once this many generations have arrived: a rejected key stops the route's calls not
    #: yet sent, and on a loaded machine a quick 401 left some unsent (errors that echo nothing).
    generations = 0

    def generate(self, seen: Seen) -> Reply:
        auth = seen.headers.get("authorization", "")
        with self.arrived:
            self.seen_generations += 1
            self.arrived.notify_all()
        if self.take_fault("echo_error", seen.path):
            with self.arrived:
                self.arrived.wait_for(lambda: self.seen_generations >= self.generations, timeout=10)
            return Reply(401, {"error": {"code": "AuthenticationError", "type": "Unauthorized",
                                         "message": f"the API key in '{auth}' is not allowed to use this model"}})
        if self.take_fault("echo_refusal", seen.path):
            return Reply(400, {"error": {"code": "InputImageSensitiveContentDetected", "type": "BadRequest",
                                         "message": f"the request signed '{auth}' may contain sensitive information"}})
        reply = super().generate(seen)
        if self.take_fault("echo_url", seen.path):
            key = auth.removeprefix("Bearer ")
            reply.body["data"][0]["url"] += "&token=" + urllib.parse.quote(key, safe="")
        return reply

    def dispatch(self, seen: Seen) -> Reply | None:
        if seen.path.startswith("/files/") and "token=" in seen.query:
            return Reply(400, {"error": {"code": "SignatureDoesNotMatch",
                                         "message": f"signature check failed for {seen.path}?{seen.query}"}})
        return super().dispatch(seen)


ECHO_CONFTEST = models_conftest("EchoProvider", ({"name": "echo", "route": "echo", "provider_model": "echo-v1",
                                                  "price": 0.01},), route="echo", key_env=("ECHO_API_KEY",), log=None,
                                cost=0.01) + judges_conftest("EchoJudge")


def run_args(model: str, judge: str, repeats: int, *extra: str) -> list[str]:
    return ["-p", "no:cacheprovider", "--model", model, "--tasks", "mini.json", "--images-base", "images",
            "--repeats", str(repeats), "--outputs", "out", "--judge", judge, "--junitxml", "junit.xml",
            "--html", "report/report.html", *extra]


def everything_written(root: Path, result) -> str:
    """The terminal output and every file under the run's folder, as text."""
    files = [path.read_bytes().decode("utf-8", "replace") for path in root.rglob("*") if path.is_file()]
    return "\n".join([result.stdout.str(), result.stderr.str(), *files])


def records(outputs: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in outputs.rglob("[0-9][0-9][0-9].json")]


def assert_written(root: Path) -> None:
    """The outputs the checks read do exist (a check of a missing file proves nothing)."""
    for name in ("out/results.json", "out/results.md", "junit.xml", "report/report.html"):
        assert (root / name).is_file(), name


def test_a_provider_that_echoes_the_key_leaves_no_key_in_any_output(pytester: pytest.Pytester, monkeypatch, tmp_path):
    write_split(pytester.path, "mini", make_tasks(3), pytester.path / "images")
    write_labels(pytester.path / "r1.json", {(f"task-{t:02d}", "seedream-4.5", r): True for t in range(3) for r in (1, 2)})
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    with EchoingArk(key=ARK_KEY) as fake:
        monkeypatch.setenv("HYPEEDIT_ARK_BASE_URL", fake.base)
        monkeypatch.setenv("ARK_API_KEY", ARK_KEY)
        for kind in ("echo_error", "echo_refusal", "echo_url"):
            fake.inject(kind, path="/images/generations")
        fake.generations = 6  # every candidate is sent before the 401 comes back
        result = pytester.runpytest(*run_args("seedream-4.5", "labels:r1.json", 2))
    result.assert_outcomes(passed=3, failed=1, errors=2)
    assert_written(pytester.path)
    text = everything_written(pytester.path, result)
    assert ARK_KEY not in text
    assert urllib.parse.quote(ARK_KEY, safe="") not in text
    said = sorted((r["outcome"], r["error"] or r["refusal"]) for r in records(pytester.path / "out") if r["outcome"] != "pass")
    assert [outcome for outcome, _ in said] == ["error", "error", "refused"]
    assert all(MASK in message for _, message in said), said  # the key was echoed, and masked
    assert any("SignatureDoesNotMatch" in message for _, message in said)  # the URL's query was quoted back


def test_a_plugins_own_provider_and_judge_that_echo_their_keys_leave_no_key_in_any_output(
        pytester: pytest.Pytester, monkeypatch, tmp_path):
    pytester.makeconftest(ECHO_CONFTEST)
    write_split(pytester.path, "mini", make_tasks(2), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ECHO_API_KEY", ECHO_KEY)
    monkeypatch.setenv("ECHO_JUDGE_KEY", ECHO_JUDGE_KEY)
    result = pytester.runpytest(*run_args("echo", "echojudge", 3))
    result.assert_outcomes(failed=3, errors=3)
    assert_written(pytester.path)
    text = everything_written(pytester.path, result)
    assert ECHO_KEY not in text
    assert "TAIL77" not in text  # the judge's key contains the provider's: no part of it is left
    said = sorted((r["outcome"], r["error"] or r["refusal"] or r["reasoning"]) for r in records(pytester.path / "out"))
    assert [outcome for outcome, _ in said] == ["error"] * 3 + ["fail"] + ["refused"] * 2
    assert all(MASK in message for _, message in said), said


@pytest.mark.parametrize("fault, error", [("echo_error", ProviderError), ("echo_refusal", Refusal),
                                          ("echo_url", ProviderError)])
def test_the_adapter_itself_masks_an_echoed_key(monkeypatch, tmp_path, fault, error):
    """For a library user calling the adapter directly, with no runner around it."""
    spec = ModelSpec(name="seedream-4.5", route="ark", provider_model="seedream-4-5-251128", price=0.04)
    with EchoingArk(key=ARK_KEY) as fake:
        monkeypatch.setenv("HYPEEDIT_ARK_BASE_URL", fake.base)
        monkeypatch.setenv("ARK_API_KEY", ARK_KEY)
        fake.inject(fault, path="/images/generations")
        provider = ArkProvider(spec, runtime=Runtime(cache_dir=tmp_path / "cache", policy=FAST))
        with pytest.raises(error) as info:
            provider.generate(make_request(tmp_path, spec))
        provider.close()
    message = str(info.value)
    assert MASK in message
    assert ARK_KEY not in message and urllib.parse.quote(ARK_KEY, safe="") not in message
