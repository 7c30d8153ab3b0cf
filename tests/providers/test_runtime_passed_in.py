"""The run's ``Runtime`` reaches what uses it as a parameter (issue 35): the adapters and judges the glue makes are
given the run's, and one made without a runtime makes its own instead of reading the last run's from a module."""

from __future__ import annotations

import pytest

from pytest_hypeedit.judges import JudgeOptions
from pytest_hypeedit.judges.gemini import GeminiJudge
from pytest_hypeedit.judges.openai_compat import OpenAICompatJudge
from pytest_hypeedit.providers import builtin_provider, runtime
from pytest_hypeedit.registry import load_registry


@pytest.fixture
def last_run(tmp_path, monkeypatch):
    """A runtime an earlier run in this process made: limits, a batch tier, its own folders (set where the module
    global was, which providers/runtime.py no longer has: a module reading it again would find this one)."""
    run = runtime.Runtime(state_dir=tmp_path / "state", cache_dir=tmp_path / "prepared", tier="batch")
    monkeypatch.setattr(runtime, "_current", run, raising=False)
    return run


@pytest.mark.parametrize("model", ["gpt-image-2", "gemini-3-pro-preview", "seedream-4.5"])
def test_an_adapter_made_without_a_runtime_makes_its_own_not_the_last_runs(model, last_run):
    """Planted: ``runtime or runtime_module.current()`` back in the adapter (gemini.py or adapter.py): it buys at the
    last run's batch tier, under its limits, into its folders."""
    spec = load_registry().get(model)
    made = [builtin_provider(spec), builtin_provider(spec)]
    try:
        for provider in made:
            assert provider.runtime is not last_run
            assert (provider.runtime.state_dir, provider.runtime.tier) == (None, "standard")
            assert provider.runtime.limiter_for(spec) is None  # no route limits outside a run
        assert made[0].runtime is not made[1].runtime and made[0].runtime.batches is not made[1].runtime.batches
    finally:
        for provider in made:
            provider.close()


def test_a_judge_takes_the_runtime_its_options_carry_or_makes_its_own(last_run, tmp_path):
    """Planted: ``judge_runtime`` reading ``current()`` when the options carry none: the judge is the last run's."""
    given = runtime.Runtime(state_dir=tmp_path / "given")
    with_run = [GeminiJudge(JudgeOptions(runtime=given)), OpenAICompatJudge("m", JudgeOptions(runtime=given))]
    assert all(judge.runtime is given for judge in with_run)
    without = [GeminiJudge(JudgeOptions()), GeminiJudge(), OpenAICompatJudge("m", JudgeOptions())]
    assert all(judge.runtime is not last_run and judge.runtime.state_dir is None for judge in without)


def test_the_judge_a_run_makes_at_start_up_is_given_the_runs_runtime(pytester, tmp_path):
    """The judge is made at start-up (a bad judge spec is a usage error before anything else), with the run's
    runtime, which the pool's admissions of its route hold too.  Planted: the runtime configured after the judge is
    made (its options carried none: the judge made its own), or ``judge_options`` not passing it."""
    from benchdata import make_tasks, write_split

    from pytest_hypeedit.glue.stash import RUNNER_KEY, RUNTIME_KEY

    write_split(pytester.path, "mini", make_tasks(1), pytester.path / "images")
    seen = []

    class Witness:
        @pytest.hookimpl(tryfirst=True)
        def pytest_unconfigure(self, config):
            seen.append((config.stash[RUNNER_KEY].made_judge, config.stash[RUNTIME_KEY]))

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
        result = pytester.runpytest("-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json",
                                    "--images-base", "images", "--repeats", "1", "--judge", "gemini-3-flash-rubric",
                                    "--outputs", "out", "--estimate", plugins=[Witness()])
    assert result.ret == 0, result.stdout.str()
    [(judge, run)] = seen
    assert isinstance(judge, GeminiJudge) and judge.runtime is run and run.state_dir is not None


@pytest.mark.parametrize("model, variables", [("seedream-4.5", ("ARK_API_KEY", "HYPEEDIT_ARK_BASE_URL")),
                                              ("gemini-3-pro-preview", ("GEMINI_API_KEY", "HYPEEDIT_GEMINI_BASE_URL"))])
def test_every_request_of_an_adapter_goes_through_the_transport_its_runtime_names(model, variables, tmp_path,
                                                                                    monkeypatch):
    """``Runtime.transport`` is the seam the adapter tests send through (httpx.MockTransport, no socket).
    Planted: the transport not passed to ``make_http_client`` (adapter.py) or to ``GenaiSession`` (gemini.py):
    the request goes to the base URL's closed port instead, and the transport sees nothing."""
    import httpx
    from providers_fakes.contract import FAST, make_request

    key_variable, base_variable = variables
    monkeypatch.setenv(key_variable, "fake-key-0123456789")
    monkeypatch.setenv(base_variable, "http://127.0.0.1:9")  # the discard port: nothing answers there
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(400, json={"error": {"code": "InvalidParameter", "message": "seen by the transport"}})

    spec = load_registry().get(model)
    provider = builtin_provider(spec, runtime=runtime.Runtime(cache_dir=tmp_path / "cache", policy=FAST,
                                                             transport=httpx.MockTransport(answer)))
    try:
        with pytest.raises(Exception, match="seen by the transport"):
            provider.generate(make_request(tmp_path, spec))
    finally:
        provider.close()
    assert seen and all(url.startswith("http://127.0.0.1:9/") for url in seen)
