"""A paid call is sent once, and it is in the candidate's record before it leaves (engine/journal.py).

The real adapters and judges (their httpx or google-genai clients, the run's HTTP policy with five attempts)
against their loopback fakes, which count what they received: a fake bills a request on receipt, so every
request that reached it may have cost money.  A reply lost to a read timeout or a dropped connection is never
sent again and says so (``reply_lost``); a reply that says the request was not taken (503) is retried.  The
runner tests read the record on disk at the moment the fake receives the request.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import MappingProxyType

import pytest
from genai_fakes import FakeChat
from genai_fakes.chat import verdict_reply
from genai_fakes.fixtures import FAKE_GEMINI_KEY, fake_gemini  # noqa: F401 - fixture
from genai_fakes.gemini import image_reply, slow
from ledger_view import open_call
from providers_fakes.ark import FakeArk
from providers_fakes.bfl import FakeBfl
from providers_fakes.contract import make_request
from providers_fakes.dashscope import FakeDashScope
from providers_fakes.fal import FakeFal
from providers_fakes.openai import FakeOpenAI
from providers_fakes.openrouter import FakeOpenRouter
from providers_fakes.replicate import FakeReplicate
from providers_fakes.runware import FakeRunware
from upstream_stub import upstream_stub  # noqa: F401 - fixture

from pytest_hypeedit.analysis.metrics import MetricSettings
from pytest_hypeedit.engine.call_context import GenerationContext, JudgeContext
from pytest_hypeedit.engine.journal import REVIEW, Journal
from pytest_hypeedit.engine.means import Means
from pytest_hypeedit.engine.records import Record
from pytest_hypeedit.engine.runner import Runner
from pytest_hypeedit.engine.store import Store
from pytest_hypeedit.errors import JudgeError, ProviderError
from pytest_hypeedit.judges import JudgeOptions
from pytest_hypeedit.judges.base import Judge, JudgeRequest, Verdict
from pytest_hypeedit.judges.majority import MajorityJudge
from pytest_hypeedit.judges.openai_compat import OpenAICompatJudge
from pytest_hypeedit.providers.ark import ArkProvider
from pytest_hypeedit.providers.bfl import BflProvider
from pytest_hypeedit.providers.dashscope import DashScopeProvider
from pytest_hypeedit.providers.fal import FalProvider
from pytest_hypeedit.providers.gemini import GeminiProvider
from pytest_hypeedit.providers.openai import OpenAIProvider
from pytest_hypeedit.providers.openrouter import OpenRouterProvider
from pytest_hypeedit.providers.replicate import ReplicateProvider
from pytest_hypeedit.providers.runtime import Runtime
from pytest_hypeedit.providers.runware import RunwareProvider
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.report.results import build_results
from pytest_hypeedit.transport.http import RetryPolicy

#: The run's own number of attempts, with tiny waits: a paid request resent blindly would show as 5 requests.
PATIENT = RetryPolicy(max_attempts=5, base_delay=0.01, max_delay=0.02)


@dataclasses.dataclass(frozen=True)
class Route:
    fake: type
    provider: type
    model: str
    provider_model: str
    price: float
    paid_path: str  # regex of the paid request's path, as the fake's fault_path sees it
    options: tuple = ()


ROUTES = [
    Route(FakeArk, ArkProvider, "seedream-4.5", "seedream-4-5-251128", 0.04, "/images/generations"),
    Route(FakeOpenAI, OpenAIProvider, "gpt-image-1.5", "gpt-image-1.5", 0.17, "/images/edits"),
    Route(FakeDashScope, DashScopeProvider, "qwen-image-edit-2511", "qwen-image-edit-plus-2025-12-15", 0.03,
          "/multimodal-generation/generation$"),
    Route(FakeOpenRouter, OpenRouterProvider, "gemini-3-pro-preview", "google/gemini-3-pro-image-preview", 0.134,
          "/chat/completions$"),
    Route(FakeRunware, RunwareProvider, "riverflow-2-b1", "sourceful:riverflow-2.0@pro", 0.15, "#imageInference$",
          (("delivery", "sync"),)),
    Route(FakeBfl, BflProvider, "flux-2-max", "flux-2-max", 0.10, "/v1/flux-2-max$"),
    Route(FakeFal, FalProvider, "qwen-image-edit-2511", "fal-ai/qwen-image-edit-2511", 0.03, "qwen-image-edit-2511$"),
    Route(FakeReplicate, ReplicateProvider, "riverflow-2-b1", "sourceful/riverflow-2.0-pro", 0.15,
          "/models/.*/predictions$"),
]
IDS = [route.provider.route for route in ROUTES]


def spec_of(route: Route, **options) -> ModelSpec:
    merged = {"poll_s": 0.01, "poll_max_s": 0.02, "timeout_s": 5.0, **dict(route.options), **options}
    return ModelSpec(route.model, route.provider.route, route.provider_model, route.price, MappingProxyType(merged))


@pytest.fixture
def served(request, monkeypatch, tmp_path):
    """(route, fake, make_provider) for the route the test is parametrized with."""
    route: Route = request.param
    made = []
    with route.fake() as fake:
        monkeypatch.setenv(fake.env, fake.base)
        monkeypatch.setenv(fake.key_env, fake.key)

        def make(**options):
            provider = route.provider(spec_of(route, **options),
                                      runtime=Runtime(cache_dir=tmp_path / "cache", policy=PATIENT))
            made.append(provider)
            return provider
        yield route, fake, make
        for provider in made:
            provider.close()


def paid_requests(route: Route, fake) -> list:
    return fake.seen(route.paid_path)


def journaled(tmp_path: Path, spec: ModelSpec):
    return dataclasses.replace(make_request(tmp_path, spec),
                               call=GenerationContext(journal=Journal(route=spec.route, call_id="call-0001")))


# --------------------------------------------------------------------------- every adapter: sent once


@pytest.mark.parametrize("served", ROUTES, ids=IDS, indirect=True)
def test_a_paid_request_whose_connection_drops_is_sent_once(served, tmp_path):
    route, fake, make = served
    provider = make()
    fake.inject("drop", path=route.paid_path)  # received (and billed), then the connection is gone
    with pytest.raises(ProviderError) as info:
        provider.generate(journaled(tmp_path, provider.spec))
    assert len(paid_requests(route, fake)) == 1
    assert info.value.reply_lost and "not sent again" in str(info.value)
    assert fake.key not in str(info.value)


@pytest.mark.parametrize("served", ROUTES, ids=IDS, indirect=True)
def test_a_paid_request_whose_reply_is_too_slow_is_sent_once(served, tmp_path):
    route, fake, make = served
    provider = make(timeout_s=0.2)
    fake.inject("slow", delay=0.6, count=10, path=route.paid_path)  # generating past the read timeout
    with pytest.raises(ProviderError, match="Timeout") as info:
        provider.generate(journaled(tmp_path, provider.spec))
    assert len(paid_requests(route, fake)) == 1 and info.value.reply_lost


@pytest.mark.parametrize("served", ROUTES, ids=IDS, indirect=True)
def test_a_reply_that_says_not_taken_is_retried(served, tmp_path):
    route, fake, make = served
    provider = make()
    fake.inject("status", status=503, path=route.paid_path)  # the provider says it did not take it
    provider.generate(journaled(tmp_path, provider.spec))
    assert len(paid_requests(route, fake)) == 2


@pytest.mark.parametrize("served", [ROUTES[0], ROUTES[1]], ids=IDS[:2], indirect=True)
def test_the_journaled_call_id_goes_with_the_request(served, tmp_path):
    route, fake, make = served
    provider = make()
    provider.generate(journaled(tmp_path, provider.spec))
    assert paid_requests(route, fake)[0].headers["x-client-request-id"] == "call-0001"


def test_the_per_read_timeouts_are_the_sdks():
    timeouts = {provider.route: provider(spec_of(route)).timeout for route in ROUTES
                for provider in [route.provider]}
    assert timeouts == {"ark": 600, "openai": 600, "dashscope": 300, "openrouter": 600, "runware": 1200,
                        "bfl": 30, "fal": 120, "replicate": 30}
    assert ReplicateProvider(spec_of(ROUTES[-1], wait_s=20)).timeout == 50  # Prefer: wait holds the reply


# --------------------------------------------------------------------------- google-genai: the model and the judge


GEMINI = ModelSpec("gemini-3-pro-preview", "gemini", "gemini-3-pro-image", 0.134,
                   MappingProxyType({"image_size": "2K"}))


def test_a_gemini_generation_that_times_out_is_sent_once(fake_gemini, tmp_path):
    fake_gemini.default = slow(image_reply(), 1.0)
    provider = GeminiProvider(GEMINI, policy=PATIENT, timeout_s=0.3)
    with pytest.raises(ProviderError, match="not sent again") as info:
        provider.generate(make_request(tmp_path, GEMINI))
    provider.close()
    assert len(fake_gemini.requests) == 1 and info.value.reply_lost
    assert FAKE_GEMINI_KEY not in str(info.value)


def test_a_gemini_reply_that_says_not_taken_is_retried(fake_gemini, tmp_path):
    from genai_fakes.gemini import error_reply
    fake_gemini.queue(error_reply(503, "overloaded", "UNAVAILABLE"), image_reply())
    provider = GeminiProvider(GEMINI, policy=PATIENT, timeout_s=5)
    assert provider.generate(make_request(tmp_path, GEMINI)).ext == "png"
    provider.close()
    assert len(fake_gemini.requests) == 2


def test_the_gemini_judge_call_is_sent_once(fake_gemini, tmp_path, upstream_stub):
    from genai_fakes.gemini import verdict_reply as gemini_verdict

    from pytest_hypeedit.judges.gemini import GeminiJudge
    fake_gemini.default = slow(gemini_verdict("PASS", "fine"), 1.0)
    judge = GeminiJudge(JudgeOptions(policy=PATIENT, timeout_s=0.3))
    with pytest.raises(JudgeError) as info:
        judge.judge(judge_request(tmp_path))
    judge.close()
    assert len(fake_gemini.requests) == 1 and info.value.reply_lost


def test_the_openai_judge_call_is_sent_once_and_names_its_id(tmp_path):
    with FakeChat() as chat:
        chat.default = slow(verdict_reply("PASS"), 1.0)
        judge = OpenAICompatJudge("m", JudgeOptions(openai_base_url=chat.base_url, policy=PATIENT, timeout_s=0.3),
                                  prompt="rubric")
        with pytest.raises(JudgeError, match="not sent again") as info:
            judge.judge(dataclasses.replace(judge_request(tmp_path), call=JudgeContext(call_id="call-0042")))
        judge.close()
        assert len(chat.requests) == 1 and info.value.reply_lost
        assert chat.requests[0].headers["x-client-request-id"] == "call-0042"


def test_a_panel_says_when_a_jurors_reply_was_lost(tmp_path):
    class Lost(Judge):
        name = "lost"

        def judge(self, request):
            raise JudgeError("the reply never came", reply_lost=True)

    class Fine(Judge):
        name = "fine"

        def judge(self, request):
            return Verdict(True, "ok", "fine")

    with pytest.raises(JudgeError) as info:
        MajorityJudge([Fine(), Lost()]).judge(judge_request(tmp_path))
    assert info.value.reply_lost


def judge_request(tmp_path: Path) -> JudgeRequest:
    request = make_request(tmp_path, GEMINI)
    candidate = tmp_path / "cand.png"
    candidate.write_bytes(request.references[0].read_bytes())
    return JudgeRequest(request.task, "seedream-4.5", 1, candidate, request.references)


# --------------------------------------------------------------------------- the runner: journal before send


class FreeJudge(Judge):
    """Labels-like: no call, no route; every candidate passes."""

    name = "free"
    routes = ()
    needs_images = False

    def judge(self, request):
        return Verdict(True, "free", "free")


class Witness:
    """Notes the candidate's record as it is on disk at the moment a request reaches a fake."""

    def __init__(self, outputs: Path):
        self.outputs, self.seen = outputs, []

    def __call__(self, _request=None) -> None:
        records = [json.loads(p.read_text()) for p in self.outputs.rglob("[0-9][0-9][0-9].json")]
        self.seen.append([open_call(r) for r in records])


class WitnessArk(FakeArk):
    def __init__(self, witness: Witness):
        super().__init__()
        self.witness = witness

    def generate(self, seen):
        self.witness()
        return super().generate(seen)


def make_runner(tmp_path: Path, judge: Judge | None = None, **kwargs) -> Runner:
    route = ROUTES[0]
    spec = spec_of(route)
    runtime = Runtime(cache_dir=tmp_path / "cache", policy=PATIENT)
    refs = make_request(tmp_path, spec).references
    return Runner(Means(store=Store(tmp_path / "out", claims_dir=tmp_path / "claims"),
                        make_provider=lambda s: ArkProvider(s, runtime=runtime), make_judge=lambda: judge or FreeJudge(),
                        references=lambda task: list(refs), **kwargs))


@pytest.fixture
def ark(monkeypatch, tmp_path):
    witness = Witness(tmp_path / "out")
    with WitnessArk(witness) as fake:
        monkeypatch.setenv(fake.env, fake.base)
        monkeypatch.setenv(fake.key_env, fake.key)
        yield fake


def run_once(runner: Runner, tmp_path: Path, repeat: int = 1) -> Record:
    request = make_request(tmp_path, spec_of(ROUTES[0]))
    try:
        return runner.run(request.task, spec_of(ROUTES[0]), repeat)
    finally:
        runner.close()


def record_on_disk(tmp_path: Path, repeat: int = 1) -> dict:
    return json.loads(next((tmp_path / "out").rglob(f"{repeat:03d}.json")).read_text())


def test_the_generation_is_in_the_record_before_the_request_reaches_the_provider(ark, tmp_path):
    record = run_once(make_runner(tmp_path), tmp_path)
    assert record.outcome == "pass" and record.open_call is None
    (pending,), = ark.witness.seen  # one request, one record on disk when it arrived
    sent = ark.seen("/images/generations")[0]
    assert (pending["kind"], pending["state"]) == ("generation", "journaled")
    assert pending["id"] == sent.headers["x-client-request-id"] and pending["entry"] == f"call.{pending['id']}"
    assert pending["price"] == 0.04 and pending["worst"] and pending["route"] == "ark"
    on_disk = record_on_disk(tmp_path)  # the reply's write ended it: billed, in place
    assert open_call(on_disk) is None and [(c["entry"], c["state"], c["price"]) for c in on_disk["calls"]] == [
        (pending["entry"], "billed", 0.04)] and "worst" not in on_disk["calls"][0]


def test_a_lost_reply_is_counted_as_possibly_paid_and_bought_again_saying_so(ark, tmp_path):
    ark.inject("drop", path="/images/generations")
    lost = run_once(make_runner(tmp_path), tmp_path)
    assert lost.outcome == "error" and "counted as possibly paid (up to $0.04" in lost.error
    sent = ark.seen("/images/generations")
    assert len(sent) == 1 and lost.possibly_paid_calls[0]["id"] == sent[0].headers["x-client-request-id"]
    row = results_row([lost])
    assert (row["possibly_paid"], row["possibly_paid_open"], row["errors"]) == (1, 1, 1)

    again = run_once(make_runner(tmp_path), tmp_path)
    assert again.outcome == "pass" and len(ark.seen("/images/generations")) == 2
    assert again.possibly_paid_calls[0]["rebought"] is True
    row = results_row([again])
    assert (row["possibly_paid"], row["possibly_paid_open"]) == (1, 0)
    assert row["possibly_paid_cost"] == pytest.approx(0.04)
    assert row["spent"] == pytest.approx(0.08) and row["spent_breakdown"]["possibly_paid"] == pytest.approx(0.04)


def test_a_possibly_paid_call_of_an_earlier_version_is_counted_once_held_or_bought_again_once(ark, tmp_path):
    """A record as the version before the ledger wrote it (its lost call in ``possibly_paid``) goes through the
    runner: held for review naming the call, then bought again once, its lost call counted once over every read and
    write, and bought again (planted: the conversion skipped: nothing held, caught; the conversion made on every
    read is caught by test_call_ledger: a record written by this version no longer holds the field)."""
    ark.inject("drop", path="/images/generations")
    run_once(make_runner(tmp_path), tmp_path)
    path = next((tmp_path / "out").rglob("001.json"))
    data = json.loads(path.read_text())
    [lost] = [call for call in data["calls"] if call["state"] == "lost"]
    data["calls"] = [call for call in data["calls"] if call is not lost]
    data["possibly_paid"] = [{"call": "generate", "route": "ark", "id": lost["id"], "sent_at": lost["sent_at"],
                              "price": 0.04, "why": "read timeout", "found_at": lost["found_at"],
                              "rebought": False}]
    path.write_text(json.dumps(data))
    held = run_once(make_runner(tmp_path, on_possibly_paid=REVIEW), tmp_path)
    assert held.outcome == "error" and held.error.startswith("held for review") and lost["id"] in held.error
    assert "up to $0.04" in held.error and len(ark.seen("/images/generations")) == 1
    bought = run_once(make_runner(tmp_path), tmp_path)
    assert bought.outcome == "pass" and len(ark.seen("/images/generations")) == 2
    on_disk = record_on_disk(tmp_path)  # written by this version: the field is gone, its entry holds it
    assert "possibly_paid" not in on_disk
    assert [(c["entry"], c.get("rebought")) for c in on_disk["calls"] if c["state"] == "lost"] == [
        ("possibly_paid.1", True)]
    for _ in range(2):  # read and written again: counted once, bought again once, nothing bought
        again = run_once(make_runner(tmp_path), tmp_path)
        row = results_row([again])
        assert (row["possibly_paid"], row["possibly_paid_open"], row["possibly_paid_cost"]) == (1, 0, 0.04)
        assert row["spent"] == pytest.approx(0.08) and len(ark.seen("/images/generations")) == 2


def test_an_adapter_that_fails_unexpectedly_after_sending_is_an_error_and_possibly_paid(ark, tmp_path, monkeypatch):
    # A reply of a shape nobody expected makes the adapter raise something that is not one of our errors: the
    # request was sent (and maybe billed), so the record must not be left with a pending call forever.
    monkeypatch.setattr(ArkProvider, "generation", lambda *a, **k: {}["no such field"])
    broken = run_once(make_runner(tmp_path), tmp_path)
    assert broken.outcome == "error" and "failed unexpectedly (KeyError" in broken.error
    assert "bug" in broken.error and "counted as possibly paid (up to $0.04" in broken.error
    on_disk = record_on_disk(tmp_path)
    assert open_call(on_disk) is None and "possibly_paid" not in on_disk
    assert [call["state"] for call in on_disk["calls"]] == ["lost"]  # a lost entry of its call ledger
    assert len(ark.seen("/images/generations")) == 1


def test_review_holds_a_possibly_paid_candidate_without_paying(ark, tmp_path):
    ark.inject("drop", path="/images/generations")
    run_once(make_runner(tmp_path), tmp_path)
    held = run_once(make_runner(tmp_path, on_possibly_paid=REVIEW), tmp_path)
    assert held.outcome == "error" and held.error.startswith("held for review")
    assert "--possibly-paid rebuy" in held.error and len(ark.seen("/images/generations")) == 1
    row = results_row([held])
    assert (row["possibly_paid"], row["possibly_paid_held"], row["possibly_paid_open"]) == (1, 1, 0)
    bought = run_once(make_runner(tmp_path), tmp_path)  # the user checked the dashboard: buy it
    assert bought.outcome == "pass" and len(ark.seen("/images/generations")) == 2


def test_a_pending_call_left_by_a_killed_run_is_possibly_paid_unless_its_image_arrived(ark, tmp_path):
    for repeat in (1, 2):
        run_once(make_runner(tmp_path), tmp_path, repeat)
    for repeat in (1, 2):  # as a kill left them in a record of the earlier version: the call journaled, no reply
        path = next((tmp_path / "out").rglob(f"{repeat:03d}.json"))
        data = json.loads(path.read_text())
        data["pending"] = {"call": "generate", "route": "ark", "id": f"lost-{repeat}", "price": 0.04,
                           "sent_at": "2026-11-23T10:00:00+00:00"}
        if repeat == 2:
            data["candidate"] = None
            next(path.parent.glob("002.*g")).unlink()
        path.write_text(json.dumps(data))
    kept = run_once(make_runner(tmp_path), tmp_path, 1)
    bought = run_once(make_runner(tmp_path), tmp_path, 2)
    assert not kept.possibly_paid_calls and kept.open_call is None  # the image is on disk: its reply came
    assert [e["id"] for e in bought.possibly_paid_calls] == ["lost-2"] and bought.outcome == "pass"
    assert len(ark.seen("/images/generations")) == 3 and open_call(record_on_disk(tmp_path, 2)) is None


def test_the_judge_call_is_in_the_record_before_it_is_sent_and_a_lost_reply_is_possibly_paid(ark, tmp_path):
    witness = Witness(tmp_path / "out")
    with FakeChat() as chat:
        def answer(request):
            witness()
            return verdict_reply("PASS")
        chat.queue(slow(verdict_reply("PASS"), 1.0))
        chat.default = answer
        options = JudgeOptions(openai_base_url=chat.base_url, policy=PATIENT, timeout_s=0.3)
        lost = run_once(make_runner(tmp_path, OpenAICompatJudge("m", options, prompt="rubric")), tmp_path)
        assert lost.outcome == "error" and "possibly paid" in lost.error and len(chat.requests) == 1
        assert lost.possibly_paid_calls[0]["kind"] == "verdict" and lost.candidate  # the image is kept
        judged = run_once(make_runner(tmp_path, OpenAICompatJudge("m", options, prompt="rubric")), tmp_path)
    assert judged.outcome == "pass" and len(chat.requests) == 2 and len(ark.seen("/images/generations")) == 1
    (pending,), = witness.seen
    assert pending["kind"] == "verdict" and pending["id"] == chat.requests[1].headers["x-client-request-id"]
    assert results_row([judged])["possibly_paid"] == 1


def results_row(records: list[Record]) -> dict:
    spec = spec_of(ROUTES[0])
    results = build_results(records, models=[spec], split_names=["public"], settings=MetricSettings(),
                            settings_json={})
    return results["rows"][0]


def test_a_doctored_record_cannot_inflate_or_break_the_spend():
    lost = [{"kind": "generation", "state": "lost", "price": price} for price in (float("inf"), -3, 0.1)]
    record = Record("public", "m", "t", 1,
                    calls=[{"entry": "g", "kind": "generation", "state": "billed", "price": 0.04}, "x", *lost])
    assert record.spent == pytest.approx(0.14)
    assert Record("public", "m", "t", 1, calls="nonsense").spent == 0


def test_possibly_paid_takes_rebuy_or_review_from_the_command_line_or_the_ini_file(pytester):
    tiny = Path(__file__).resolve().parents[2] / "examples" / "tiny-split"
    where = [f"--tasks={tiny / 'tiny.json'}", f"--images-base={tiny / 'images'}", "--collect-only", "-q"]
    bad = pytester.runpytest("--model", "identity", *where, "--possibly-paid", "keep")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--possibly-paid keep: give rebuy (*) or review (*)*"])
    pytester.makeini("[pytest]\nhypeedit_possibly_paid = review\n")
    assert pytester.runpytest("--model", "identity", *where).ret == pytest.ExitCode.OK
