"""Bad values in options and files are one clear usage error naming the option, the file and the key.

nan passes every ``x < 0`` check and inf is no amount of money, so both once went through and broke every item
later; a limit of 0 once meant "no limit".  And the upstream judge script is parsed once per process, under a
lock: several threads parsing it at once crashed CPython 3.11's AST constructor.
"""

from __future__ import annotations

import ast
import threading
import time
from types import SimpleNamespace

import pytest
from benchdata import make_tasks, write_labels, write_split
from upstream_stub import make_script, sha256

from pytest_hypeedit.config import build_run_config
from pytest_hypeedit.errors import ConfigError
from pytest_hypeedit.judges import upstream
from pytest_hypeedit.options import NotFinite, finite_float
from pytest_hypeedit.registry import RouteLimits, build_registry, parse_rate_limit


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path):
    write_split(pytester.path, "mini", make_tasks(2), pytester.path / "images")
    write_labels(pytester.path / "r1.json", {(f"task-{t:02d}", "identity", r): True for t in range(2) for r in (1, 2)})
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    return pytester


def run(pytester, *extra: str):
    return pytester.runpytest("--tasks", "mini.json", "--images-base", "images", "--repeats", "2", "--outputs", "out",
                              "--model", "identity", "--judge", "labels:r1.json", *extra)


def assert_usage_error(result, *lines: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(list(lines))
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert "passed" not in result.stdout.str()


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize("flag", ["--budget", "--review-seconds", "--review-rate", "--html-max-mb"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_a_non_finite_number_option_is_a_usage_error_naming_it(bench, flag, value):
    assert_usage_error(run(bench, f"{flag}={value}"), f"*argument {flag}: '{value}' is not a finite number*")


def test_a_non_finite_number_in_the_ini_file_names_the_file_and_key(bench):
    bench.makeini("[pytest]\nhypeedit_budget = nan\n")
    assert_usage_error(run(bench), "*tox.ini: hypeedit_budget = 'nan': 'nan' is not a finite number*--budget*")


def test_a_budget_too_large_for_the_ledger_is_not_accepted(bench):
    assert_usage_error(run(bench, "--budget", "1e308"), "*--budget 1e+308: must be at most 1e+12 USD*")


def test_finite_float_is_float_without_nan_and_inf():
    assert finite_float("0.5") == 0.5 and finite_float("1e3") == 1000.0
    for text in ("nan", "inf", "-Infinity", "1e999"):
        with pytest.raises(NotFinite):
            finite_float(text)


@pytest.mark.parametrize("name, value", [("hypeedit_budget", float("nan")), ("hypeedit_budget", float("inf")),
                                         ("hypeedit_review_seconds", float("nan")),
                                         ("hypeedit_review_rate", float("-inf"))])
def test_the_run_config_does_not_accept_non_finite_numbers_whoever_built_the_options(tmp_path, name, value):
    # A library caller (or an ini value of pytest >= 9.2's TOML table) may hand the config a float directly.
    option = SimpleNamespace(hypeedit_models_files=[], hypeedit_models=["identity"], hypeedit_cache_dir=str(tmp_path),
                             hypeedit_outputs=str(tmp_path / "out"), hypeedit_tasks=[str(tmp_path / "t.json")],
                             hypeedit_repeats=1, hypeedit_results=None, hypeedit_judge=None, hypeedit_rejudge=False,
                             hypeedit_images_base=None, hypeedit_retry_cap=4, hypeedit_review_seconds=20.0,
                             hypeedit_review_rate=50.0, hypeedit_budget=None, hypeedit_rate_limits=[])
    setattr(option, name, value)
    write_split(tmp_path, "t", make_tasks(1), tmp_path / "images")
    flag = "--" + name.removeprefix("hypeedit_").replace("_", "-")
    with pytest.raises(ConfigError, match=f"{flag} {value}: must be a finite number >= 0"):
        build_run_config(option, tmp_path)


# --------------------------------------------------------------------------- limits


@pytest.mark.parametrize("text, words", [
    ("ark=0/0", "rpm must be a finite number > 0"),
    ("ark=0", "rpm must be a finite number > 0"),
    ("ark=/0", "inflight must be a finite number > 0"),
    ("ark=120/0", "inflight must be a finite number > 0"),
    ("ark=" + "9" * 400, "rpm must be a finite number > 0"),  # float() of 400 nines is inf
])
def test_a_zero_or_endless_rate_limit_is_an_error_not_no_limit(text, words):
    with pytest.raises(ConfigError, match=f"--rate-limit {text[:20]}.*{words}"):
        parse_rate_limit(text)


def test_a_rate_limit_part_left_out_is_no_limit_of_that_kind():
    assert parse_rate_limit("fal=/2")[1] == RouteLimits(rpm=None, inflight=2)
    assert parse_rate_limit("ark=120")[1] == RouteLimits(rpm=120.0, inflight=None)


def test_rate_limit_zero_is_a_usage_error_in_a_run(bench):
    assert_usage_error(run(bench, "--rate-limit", "ark=0/0"), "*--rate-limit ark=0/0: rpm must be a finite number > 0*")


# --------------------------------------------------------------------------- models files


@pytest.mark.parametrize("entry, words", [
    ("{route: ark, price: .nan}", "model m: 'price' must be a finite number >= 0 (USD per candidate), got nan"),
    ("{route: ark, price: .inf}", "model m: 'price' must be a finite number >= 0 (USD per candidate), got inf"),
    ("{route: bfl, price: 0.1, options: {megapixels: .nan}}", "model m: options.megapixels: nan is not a finite number"),
    ("{route: fal, price: 0.1, options: {arguments: {guidance: [1, .inf]}}}",
     "model m: options.arguments.guidance.1: inf is not a finite number"),
    ("{route: ark, price: 0.1, limits: {inflight: 0}}", "model m: limits: inflight must be a finite number > 0"),
    ("{route: ark, price: 0.1, limits: {rpm: .nan}}", "model m: limits: rpm must be a finite number > 0"),
])
def test_a_non_finite_or_zero_value_in_a_models_file_names_the_file_and_key(bench, entry, words):
    bench.path.joinpath("mine.yaml").write_text(f"models:\n  m: {entry}\n")
    result = run(bench, "--models-file", "mine.yaml")
    assert_usage_error(result, f"*mine.yaml: {words}*")


def test_route_limits_of_zero_in_a_models_file_are_not_accepted():
    with pytest.raises(ConfigError, match="routes.ark: inflight must be a finite number > 0"):
        build_registry([("mine.yaml", {"models": {}, "routes": {"ark": {"rpm": 60, "inflight": 0}}})])


# --------------------------------------------------------------------------- the upstream judge script


def test_the_upstream_script_is_parsed_once_however_many_threads_ask(monkeypatch):
    script, prompt = make_script("THREADS")
    pins = upstream.ScriptPins(url="x", script_sha256=sha256(script), prompt_sha256=sha256(prompt))
    parses, inside, most_inside = [], [0], [0]
    real_parse = ast.parse

    def slow_parse(*args, **kwargs):  # slow enough that unguarded threads would overlap
        inside[0] += 1
        most_inside[0] = max(most_inside[0], inside[0])
        parses.append(threading.get_ident())
        time.sleep(0.05)
        try:
            return real_parse(*args, **kwargs)
        finally:
            inside[0] -= 1

    monkeypatch.setattr(upstream.ast, "parse", slow_parse)
    start, prompts = threading.Barrier(16), []

    def judge_thread() -> None:
        start.wait()
        prompts.append(upstream.extract_prompt(script, "judge.py", pins))

    threads = [threading.Thread(target=judge_thread) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert prompts == [prompt] * 16
    assert len(parses) == 1 and most_inside[0] == 1


def test_a_script_not_accepted_is_still_not_accepted_on_every_ask():
    script, prompt = make_script()
    pins = upstream.ScriptPins(url="x", script_sha256=sha256(script), prompt_sha256=sha256("another prompt"))
    for _ in range(2):  # nothing wrong is remembered as right
        with pytest.raises(Exception, match="the pins disagree"):
            upstream.extract_prompt(script, "judge.py", pins)
