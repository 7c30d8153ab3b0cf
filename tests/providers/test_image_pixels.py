"""An image is checked against the pixel limit from its header, before it is decoded.

A 12000 x 12000 PNG is 140 KB on the wire and 144 MP: decoded, hundreds of MB.  From a model it is a
refusal (an answer no one can use, never decoded); as a reference image, an input error naming the file.
"""

from __future__ import annotations

import io
import tracemalloc
from types import MappingProxyType

import pytest
from genai_fakes.fixtures import fake_gemini  # noqa: F401 - fixture
from genai_fakes.gemini import image_reply
from PIL import Image
from providers_fakes.base import huge_png, make_image
from providers_fakes.bfl import FakeBfl
from providers_fakes.contract import FAST, make_request

from pytest_hypeedit.errors import ImageError, Refusal
from pytest_hypeedit.providers import images
from pytest_hypeedit.providers.adapter import decoded_ext
from pytest_hypeedit.providers.bfl import BflProvider
from pytest_hypeedit.providers.gemini import GeminiProvider
from pytest_hypeedit.providers.images import MAX_IMAGE_PIXELS, ImageLimits, fit
from pytest_hypeedit.providers.runtime import Runtime
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.tasks import check_image_bytes

MiB = 1024 * 1024


def test_the_limit_leaves_room_for_the_largest_reference_and_4k_outputs():
    assert 5504 * 3072 * 2 < MAX_IMAGE_PIXELS < 12000 * 12000
    assert Image.MAX_IMAGE_PIXELS == MAX_IMAGE_PIXELS  # Pillow's own guard, for every image this process opens


@pytest.mark.parametrize("as_file", [False, True], ids=["bytes", "file"])
def test_a_huge_output_is_a_refusal_and_is_never_decoded(tmp_path, as_file):
    data = huge_png()
    source = data
    if as_file:
        source = tmp_path / "download.part"
        source.write_bytes(data)
    tracemalloc.start()
    try:
        with pytest.raises(Refusal) as info:
            decoded_ext(source, "m on task t r001", cost=0.1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "the returned png image is 144.0 MP, more than the 40 MP" in str(info.value)
    assert "it was not decoded" in str(info.value) and info.value.cost == 0.1
    assert peak < 8 * MiB, peak  # decoded, it would be 144 MB at the least


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")  # Pillow's, over its (our) limit
def test_an_image_just_over_the_limit_names_its_size():
    width, height = 8000, 5001  # 40.008 MP: over our limit, under Pillow's error threshold (twice it)
    buffer = io.BytesIO()
    Image.new("1", (width, height)).save(buffer, format="PNG")
    with pytest.raises(Refusal, match=r"is 8000x5001 \(40.0 MP\), more than the 40 MP"):
        decoded_ext(buffer.getvalue(), "m")


def test_bfl_returning_a_huge_image_is_a_refusal_and_nothing_is_kept(monkeypatch, tmp_path):
    with FakeBfl(pending_polls=0) as bfl:
        monkeypatch.setenv(bfl.env, bfl.base)
        monkeypatch.setenv(bfl.key_env, bfl.key)
        bfl.inject("huge", path="/v1/flux")
        spec = ModelSpec("flux-2-max", "bfl", "flux-2-max", 0.10, MappingProxyType({"timeout_s": 5.0, "poll_s": 0.01}))
        runtime = Runtime(cache_dir=tmp_path / "cache", policy=FAST)
        provider = BflProvider(spec, runtime=runtime)
        with pytest.raises(Refusal, match="144.0 MP"):
            provider.generate(make_request(tmp_path, spec))
        provider.close()
        assert sum(bfl.ledger.submitted.values()) == 1
    assert list(runtime.downloads_dir().glob("*")) == []  # the download is not left behind


def test_gemini_returning_a_huge_image_is_a_refusal(fake_gemini, tmp_path):
    fake_gemini.queue(image_reply(huge_png()))
    spec = ModelSpec("gemini-3-pro-preview", "gemini", "gemini-3-pro-image", 0.134, MappingProxyType({}))
    provider = GeminiProvider(spec, policy=FAST, timeout_s=10)
    with pytest.raises(Refusal, match="144.0 MP, more than the 40 MP"):
        provider.generate(make_request(tmp_path, spec))
    provider.close()


def test_a_huge_reference_is_an_input_error_naming_it():
    with pytest.raises(ImageError, match="refs/001.png: reference image is 144.0 MP.*replace the file"):
        check_image_bytes(huge_png(), "refs/001.png")


def test_a_huge_reference_is_not_accepted_before_it_is_prepared():
    with pytest.raises(ImageError, match="task t: 001.png is 144.0 MP"):
        fit(huge_png(), ImageLimits(max_pixels=1_000_000), where="task t: 001.png")


def test_images_within_the_limit_decode_as_before():
    assert decoded_ext(make_image(64, 48), "m") == "png"
    check_image_bytes(make_image(5504 // 8, 3072 // 8), "ref")
    assert images.open_checked(io.BytesIO(make_image(10, 10)), "x").size == (10, 10)
