import io

import pytest
from forked import fork, run_forked
from PIL import Image

from pytest_hypeedit.errors import ImageError
from pytest_hypeedit.providers.images import ImageLimits, fit, padded_size, prepare_references, target_scale


def image_bytes(width, height, fmt="WEBP", mode="RGB", noisy=False):
    if noisy:  # random pixels do not compress: a way to make big files
        image = Image.frombytes(mode, (width, height), __import__("os").urandom(width * height * len(mode)))
    else:
        image = Image.new(mode, (width, height), (10, 120, 200) if mode == "RGB" else (10, 120, 200, 128))
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


def opened(data):
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def test_an_image_within_limits_is_passed_through_unchanged():
    data = image_bytes(300, 200)
    assert fit(data, ImageLimits(max_side=4096, formats=("webp", "png"))) == (data, "webp")


def test_unaccepted_format_is_converted():
    data, fmt = fit(image_bytes(300, 200), ImageLimits(formats=("png", "jpeg"), convert_to="png"))
    assert fmt == "png" and opened(data).format == "PNG" and opened(data).size == (300, 200)


def test_max_side_and_max_pixels_keep_the_aspect_ratio():
    data, _ = fit(image_bytes(4096, 2048), ImageLimits(max_side=2048, formats=("webp",), convert_to="webp"))
    width, height = opened(data).size
    assert width <= 2048 and abs(width / height - 2.0) < 0.01
    data, _ = fit(image_bytes(4000, 3000), ImageLimits(max_pixels=1_000_000, formats=("png",)))
    width, height = opened(data).size
    assert width * height <= 1_000_000 and abs(width / height - 4 / 3) < 0.01


def test_small_images_are_upscaled_to_min_side():
    data, _ = fit(image_bytes(200, 100, fmt="PNG"), ImageLimits(min_side=300, formats=("png",)))
    assert min(opened(data).size) >= 300


def test_max_bytes_switches_a_big_png_to_jpeg_then_shrinks():
    big = image_bytes(800, 800, fmt="PNG", noisy=True)
    limit = 120_000
    data, fmt = fit(big, ImageLimits(max_bytes=limit, formats=("png", "jpeg")))
    assert len(data) <= limit and fmt == "jpeg" and opened(data).format == "JPEG"


def test_alpha_is_flattened_on_white_for_jpeg():
    data, fmt = fit(image_bytes(64, 64, fmt="PNG", mode="RGBA"), ImageLimits(formats=("jpeg",), convert_to="jpeg"))
    pixel = opened(data).getpixel((5, 5))
    assert fmt == "jpeg" and pixel[0] > 100  # blended towards white, not black


def test_undecodable_reference_names_the_task():
    with pytest.raises(ImageError, match="task t1: 001.webp"):
        fit(b"RIFF\x00\x00\x00\x00WEBPjunk", ImageLimits(), where="task t1: 001.webp")


def test_target_scale_is_one_when_it_fits():
    assert target_scale(1000, 800, ImageLimits(max_side=2048, max_pixels=4_000_000, min_side=300)) == 1.0


def test_prepare_references_caches_once_per_task_and_route(tmp_path):
    source = tmp_path / "001.webp"
    source.write_bytes(image_bytes(3000, 1500))
    limits = ImageLimits(max_side=1024, formats=("png", "jpeg"), convert_to="jpeg")
    first = prepare_references([source], limits, tmp_path / "cache", task_id="t1", route="ark")
    assert first[0].format == "jpeg" and first[0].width in (1023, 1024)
    assert first[0].path.parent == tmp_path / "cache" / "ark" / "t1"
    stamp = first[0].path.stat().st_mtime_ns
    second = prepare_references([source], limits, tmp_path / "cache", task_id="t1", route="ark")
    assert second == first and second[0].path.stat().st_mtime_ns == stamp
    assert first[0].data_url().startswith("data:image/jpeg;base64,")
    other = prepare_references([source], ImageLimits(max_side=512), tmp_path / "cache", task_id="t1", route="ark")
    assert other[0].path != first[0].path and other[0].width <= 512


def test_too_many_references_is_a_clear_error(tmp_path):
    paths = []
    for i in range(3):
        path = tmp_path / f"{i}.png"
        path.write_bytes(image_bytes(50, 50, fmt="PNG"))
        paths.append(path)
    with pytest.raises(ImageError, match="task t9: 3 reference images, but route dashscope takes at most 2"):
        prepare_references(paths, ImageLimits(max_count=2), tmp_path / "c", task_id="t9", route="dashscope")


def _prepare(source, cache, queue):
    limits = ImageLimits(max_side=700, formats=("png",))
    queue.put(str(prepare_references([source], limits, cache, task_id="t", route="r")[0].path))


def test_workers_share_one_prepared_copy(tmp_path):
    source = tmp_path / "a.webp"
    source.write_bytes(image_bytes(2000, 1400))
    queue = fork.Queue()
    assert run_forked(_prepare, (source, tmp_path / "cache", queue), 3, bound=30) == [0] * 3
    paths = {queue.get(timeout=30) for _ in range(3)}
    assert len(paths) == 1
    assert [p.name for p in (tmp_path / "cache" / "r" / "t").iterdir() if not p.name.startswith(".")] == \
        [next(iter(paths)).rsplit("/", 1)[1]]


# ---------------------------------------------------------------- aspect ratio (ImageLimits.max_aspect_ratio)

def test_padded_size_grows_only_the_short_side_into_the_ratio():
    assert padded_size(1500, 400, 3.0) == (1500, 500)
    assert padded_size(400, 1500, 3.0) == (500, 1500)
    assert padded_size(1200, 400, 3.0) == (1200, 400)  # exactly 3: in range
    assert padded_size(1500, 400, None) == (1500, 400)


def test_a_reference_outside_the_ratio_is_padded_centred_on_white_not_cropped():
    limits = ImageLimits(formats=("png",), max_aspect_ratio=3.0)
    data, fmt = fit(image_bytes(1500, 400, fmt="PNG"), limits)
    image = opened(data).convert("RGB")
    assert fmt == "png" and image.size == (1500, 500)
    assert image.getpixel((750, 0)) == (255, 255, 255) and image.getpixel((750, 499)) == (255, 255, 255)
    assert image.getpixel((0, 50)) == (10, 120, 200) and image.getpixel((1499, 449)) == (10, 120, 200)


def test_padding_keeps_alpha_transparent():
    data, _ = fit(image_bytes(100, 400, fmt="PNG", mode="RGBA"), ImageLimits(formats=("png",), max_aspect_ratio=3.0))
    image = opened(data)
    assert image.mode == "RGBA" and image.size == (134, 400) and image.getpixel((0, 200))[3] == 0


def test_a_reference_in_range_is_passed_through_unchanged_with_a_ratio_limit():
    data = image_bytes(900, 300)
    assert fit(data, ImageLimits(formats=("webp",), convert_to="webp", max_aspect_ratio=3.0)) == (data, "webp")


@pytest.mark.parametrize("size", [(2000, 250), (250, 2000), (1201, 400), (1030, 15), (12, 5000)])
def test_the_sent_image_is_within_the_ratio_and_every_other_limit(size):
    limits = ImageLimits(max_side=1024, min_side=14, max_pixels=300_000, formats=("jpeg", "png"),
                         convert_to="jpeg", max_aspect_ratio=3.0)
    data, _ = fit(image_bytes(*size, fmt="PNG"), limits)
    width, height = opened(data).size
    assert max(width, height) <= 3.0 * min(width, height)
    assert max(width, height) <= 1024 and min(width, height) >= 14 and width * height <= 300_000


def test_shrinking_to_fit_the_bytes_stays_within_the_ratio():
    limits = ImageLimits(max_bytes=20_000, formats=("jpeg",), convert_to="jpeg", max_aspect_ratio=3.0)
    data, _ = fit(image_bytes(603, 201, fmt="PNG", noisy=True), limits)  # 0.85 x: 512 x 170
    width, height = opened(data).size
    assert len(data) <= 20_000 and max(width, height) <= 3.0 * min(width, height)


def test_max_aspect_ratio_below_one_is_rejected():
    with pytest.raises(ValueError, match="max_aspect_ratio"):
        ImageLimits(max_aspect_ratio=0.5)
