"""A batch's images in memory at once (providers/batch_results.py): a batch ends all its lines together, and each
candidate's image is written to a file under ``LINE_WORK`` before the next line is read, so at most
``LINES_AT_ONCE`` decoded images are alive whatever the number of lines, and none once the candidates hold their
generations (each a path in its landing folder).  Counted, not measured: each decoded image is a ``bytes`` that
counts itself alive until it is freed."""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from genai_fakes.gemini_batch import FakeGeminiBatch
from PIL import Image as PILImage
from providers_fakes.contract import FAST, decodes, make_request
from providers_fakes.openai_batch import FakeOpenAIBatch

from pytest_hypeedit.engine.call_context import GenerationContext
from pytest_hypeedit.engine.journal import Journal
from pytest_hypeedit.providers import openai_batch
from pytest_hypeedit.providers.batch_results import LINES_AT_ONCE
from pytest_hypeedit.providers.gemini import GeminiProvider
from pytest_hypeedit.providers.openai import OpenAIProvider
from pytest_hypeedit.providers.runtime import Runtime
from pytest_hypeedit.registry import load_registry

#: Lines of one batch: three times the images the reader may hold, all delivered at once.
LINES = 3 * LINES_AT_ONCE
#: Long enough a linger for every candidate to join the one batch.
QUICK = {"batch_linger_s": 0.5, "batch_poll_s": 0.01, "batch_poll_max_s": 0.02, "batch_max_wait_s": 60}
GEMINI_KEY = "fake-gemini-key-memory-0123456789"


class Alive:
    """Decoded images alive now, and the most alive at once."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self._lock = threading.Lock()
        counter = self

        class Image(bytes):
            def __del__(self) -> None:
                counter.change(-1)

        self.Image = Image

    def change(self, step: int) -> None:
        with self._lock:
            self.now += step
            self.most = max(self.most, self.now)

    def image(self, data: bytes) -> bytes:
        self.change(+1)
        return self.Image(data)


def buy_together(provider, tmp_path: Path) -> list:
    """``LINES`` candidates bought at once (one batch), their generations held as the engine holds them until
    each is saved; each landing in its own folder."""
    requests = [dataclasses.replace(make_request(tmp_path, provider.spec, width=1536, height=1024, repeat=repeat),
                                    call=GenerationContext(journal=Journal(save=lambda job: None),
                                    landing=tmp_path / "landing" / f"r{repeat}"))
                for repeat in range(1, LINES + 1)]  # one by one: each writes the task's reference files
    with ThreadPoolExecutor(LINES) as pool:
        return list(zip(requests, pool.map(provider.generate, requests)))


def assert_landed(bought: list, alive: Alive) -> None:
    assert alive.most <= LINES_AT_ONCE, f"{alive.most} decoded images alive at once"
    assert alive.now == 0, f"{alive.now} decoded images still held by the candidates"
    for request, generation in bought:
        assert generation.tier == "batch"
        assert isinstance(generation.image, Path) and generation.image.parent == request.call.landing
        assert decodes(generation.image)
        # the pixel signals' copy, made by the decode that checked the line: its file is not decoded again
        with PILImage.open(generation.image) as image:
            assert generation.preview is not None and generation.preview.size == image.size


def test_openai_lines_land_on_disk_a_few_at_a_time(monkeypatch, tmp_path):
    """Planted: the decoded image kept as the generation's bytes (no ``land``) -> 12 alive when the candidates
    hold their generations."""
    alive = Alive()
    decode = openai_batch.decode_base64
    monkeypatch.setattr(openai_batch, "decode_base64", lambda text, what, **kw: alive.image(decode(text, what, **kw)))
    spec = load_registry().get("gpt-image-2")
    spec = dataclasses.replace(spec, options={**spec.options, **QUICK})
    with FakeOpenAIBatch() as fake:
        monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", fake.base)
        monkeypatch.setenv("OPENAI_API_KEY", fake.key)
        provider = OpenAIProvider(spec, runtime=Runtime(cache_dir=tmp_path / "cache", policy=FAST, tier="batch"))
        try:
            bought = buy_together(provider, tmp_path)
        finally:
            provider.close()
        assert fake.creations == 1
    assert_landed(bought, alive)


@pytest.mark.parametrize("inline_max_bytes", [1, None], ids=["responses-file", "inline"])
def test_gemini_lines_land_on_disk_a_few_at_a_time(monkeypatch, tmp_path, inline_max_bytes):
    """Planted: the decoded image kept as the generation's bytes (no ``land``) -> 12 alive when the candidates
    hold their generations, from a responses file and from inline responses alike.  Planted: a line's generation
    without the preview its check made (each candidate decoded again from its file for the signals, and waiting
    for its turn to be compared with the preview in hand, 366 MB at 100 2K lines, 599 MB at 500) -> caught."""
    alive = Alive()
    spec = load_registry().get("gemini-3-pro-preview")
    options = {**spec.options, **QUICK, "batch_inline_max_lines": LINES}
    if inline_max_bytes is not None:
        options["batch_inline_max_bytes"] = inline_max_bytes
    spec = dataclasses.replace(spec, options=options)
    with FakeGeminiBatch(expected_key=GEMINI_KEY) as fake:
        monkeypatch.setenv("HYPEEDIT_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        provider = GeminiProvider(spec, runtime=Runtime(cache_dir=tmp_path / "cache", policy=FAST, tier="batch"))
        take = provider.take_image

        def counted(response, what, previews=None):
            image, ext = take(response, what, previews)
            return alive.image(image), ext

        monkeypatch.setattr(provider, "take_image", counted)
        try:
            bought = buy_together(provider, tmp_path)
        finally:
            provider.close()
        assert fake.creations == 1 and fake.uploads("jsonl") == (1 if inline_max_bytes else 0)
    assert_landed(bought, alive)
