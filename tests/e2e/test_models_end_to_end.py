"""Each of the paper's seven models and each model of the current generation runs the tiny example split
(examples/tiny-split) end to end with the plugin (pytester), against a loopback fake that answers as its
provider does today: the shipped models.yaml entry as it is (only the polls made quick), one refusal injected
and counted (and not paid for again by a rerun, which calls nothing), the spend plausible for the model's price,
and the fake's key nowhere in the output or on disk.

The clock is issue 24's today (2026-11-26), so gpt-image-1.5 (shut down 2026-12-01) still runs, with its
warning, whatever day the suite runs on; gemini-3.1-flash-image (reported shut down 2026-10-29) runs on its
last day, 2026-10-28 (on today's date it is not accepted: tests/test_retirements.py)."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from benchdata import write_labels
from genai_fakes import FakeGemini
from genai_fakes.gemini import block_reply, image_reply
from providers_fakes.ark import FakeArk
from providers_fakes.bfl import FakeBfl
from providers_fakes.fal import FakeFal
from providers_fakes.openai import FakeOpenAI
from providers_fakes.runware import FakeRunware

from pytest_hypeedit import retirements
from pytest_hypeedit.registry import load_registry

TINY = Path(__file__).resolve().parents[2] / "examples" / "tiny-split"
REPEATS = 2
GEMINI_KEY = "fake-gemini-key-e2e-0123456789"


TODAY = dt.date(2026, 11, 26)


@dataclass
class Case:
    fake: Callable[[], Any]
    refuse: Callable[[Any], None]  # queue one refusal on the fake
    day: dt.date = TODAY  # the clock of the run (retirements.today)


def gemini_refusal(fake) -> None:
    fake.queue(block_reply("SAFETY"))


CASES = {
    # the paper's seven
    "gemini-3-pro-preview": Case(lambda: FakeGemini(expected_key=GEMINI_KEY), gemini_refusal),
    "seedream-4.5": Case(FakeArk, lambda fake: fake.inject("refusal")),
    "seedream-4.0": Case(FakeArk, lambda fake: fake.inject("refusal")),
    "gpt-image-1.5": Case(FakeOpenAI, lambda fake: fake.inject("refusal")),
    "flux-2-max": Case(FakeBfl, lambda fake: fake.inject("refusal")),
    "riverflow-2-b1": Case(FakeRunware, lambda fake: fake.inject("refusal", body="unsafeContentDetected")),
    "qwen-image-edit-2511": Case(FakeFal, lambda fake: fake.inject("refusal")),
    # the current generation
    "gpt-image-2": Case(FakeOpenAI, lambda fake: fake.inject("refusal")),
    "gemini-3.1-flash-image": Case(lambda: FakeGemini(expected_key=GEMINI_KEY), gemini_refusal,
                                   day=dt.date(2026, 10, 28)),
    "gemini-nano-banana-2.1": Case(lambda: FakeGemini(expected_key=GEMINI_KEY), gemini_refusal),
    "gemini-3.1-flash-lite-image": Case(lambda: FakeGemini(expected_key=GEMINI_KEY), gemini_refusal),
    "gpt-image-2.5-flare": Case(FakeOpenAI, lambda fake: fake.inject("refusal")),
    "gpt-image-2.5-sunburst": Case(FakeOpenAI, lambda fake: fake.inject("refusal")),
    "gpt-image-2.6-flare": Case(FakeOpenAI, lambda fake: fake.inject("refusal")),
    "gpt-image-2.6-sunburst": Case(FakeOpenAI, lambda fake: fake.inject("refusal")),
    "seedream-5.0-pro": Case(FakeArk, lambda fake: fake.inject("refusal")),
    "seedream-5.0": Case(FakeArk, lambda fake: fake.inject("refusal")),
    "seedream-5.5": Case(FakeArk, lambda fake: fake.inject("refusal")),
    "flux-3": Case(FakeBfl, lambda fake: fake.inject("refusal")),
    "qwen-image-2-edit": Case(FakeFal, lambda fake: fake.inject("refusal")),
    "riverflow-2.5-pro": Case(FakeRunware, lambda fake: fake.inject("refusal", body="unsafeContentDetected")),
}


def connect(fake, monkeypatch) -> str:
    """Point the route at the fake; the key the fake expects."""
    if isinstance(fake, FakeGemini):
        fake.default = image_reply()
        monkeypatch.setenv("HYPEEDIT_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        return GEMINI_KEY
    monkeypatch.setenv(fake.env, fake.base)
    monkeypatch.setenv(fake.key_env, fake.key)
    return fake.key


def quick_polls(path: Path, name: str) -> None:
    """The shipped entry with quick polls (an entry's options replace the shipped ones whole: restate them)."""
    options = {**load_registry().get(name).options, "poll_s": 0.01, "poll_max_s": 0.05}
    path.write_text(yaml.safe_dump({"models": {name: {"options": options}}}))


def labels(path: Path, name: str) -> None:
    tasks = json.loads((TINY / "tiny.json").read_text())
    write_labels(path, {(task["task_id"], name, r): True for task in tasks for r in range(1, REPEATS + 1)})


def all_text(root: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("name", list(CASES))
def test_the_model_runs_the_tiny_split_against_its_fake(pytester, monkeypatch, tmp_path, name):
    spec, case = load_registry().get(name), CASES[name]
    monkeypatch.setattr(retirements, "today", lambda: case.day)
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    quick_polls(pytester.path / "quick.yaml", name)
    labels(pytester.path / "r1.json", name)
    args = (f"--tasks={TINY / 'tiny.json'}", f"--images-base={TINY / 'images'}", "--repeats", str(REPEATS),
            "--outputs", "out", "--model", name, "--models-file", "quick.yaml", "--judge", "labels:r1.json")
    with case.fake() as fake:
        key = connect(fake, monkeypatch)
        case.refuse(fake)
        result = pytester.runpytest(*args)
        calls = len(fake.requests)
        again = pytester.runpytest(*args)  # nothing is bought twice, the refusal included
        assert len(fake.requests) == calls
    candidates = 5 * REPEATS
    result.assert_outcomes(passed=candidates - 1, failed=1)
    again.assert_outcomes(passed=candidates - 1, failed=1)
    row = json.loads((pytester.path / "out" / "results.json").read_text())["rows"][0]
    assert (row["candidates"], row["errors"], row["refusals"], row["judged"]) == (candidates, 0, 1, candidates)
    assert 0.5 * spec.price * (candidates - 1) <= row["spent"] <= 1.5 * spec.price * candidates, row["spent"]
    output = result.stdout.str() + result.stderr.str() + all_text(pytester.path)
    assert key not in output
    records = [json.loads(p.read_text()) for p in (pytester.path / "out").rglob("0*.json")]
    assert {r["provider_model"] for r in records} == {spec.provider_model}


def test_every_model_of_models_yaml_has_a_fake():
    assert set(CASES) == set(load_registry().models) - {"identity"}
