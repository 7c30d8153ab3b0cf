"""Pixel diagnostics beside each verdict (engine/signals.py): hand-computed measures, the flags, stored once,
summarised per row and set against judge-human disagreements."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from benchdata import make_tasks, write_labels, write_split
from PIL import Image

from pytest_hypeedit.engine import signals
from pytest_hypeedit.engine.signals import Window, compute_signals, lab, mean_delta_e, mean_distance, ssim, ssim_against


def test_ssim_of_two_flat_images_by_hand():
    # flat images: no variance, no covariance, so SSIM = (2 a b + C1) / (a^2 + b^2 + C1), C1 = (0.01 * 255)^2
    a, b = np.full((16, 16), 100.0), np.full((16, 16), 120.0)
    c1 = (0.01 * 255) ** 2
    assert ssim(a, b) == pytest.approx((2 * 100 * 120 + c1) / (100**2 + 120**2 + c1))
    assert ssim(a, a) == pytest.approx(1.0)


def test_ssim_falls_as_structure_is_lost():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (64, 64)).astype(float)
    values = [ssim(image, np.clip(image + rng.normal(0, sd, image.shape), 0, 255)) for sd in (2, 20, 80)]
    assert 1 > values[0] > values[1] > values[2]
    assert ssim(image, 255 - image) < 0  # inverted structure: negatively correlated
    with pytest.raises(ValueError, match="same size"):
        ssim(image, image[:10])


def whole_ssim(a, b):
    """SSIM written out in one piece, five box filters (integral images), as the signals were first computed."""
    def box(x):
        integral = np.pad(x, ((1, 0), (1, 0))).cumsum(axis=0).cumsum(axis=1)
        return (integral[7:, 7:] - integral[:-7, 7:] - integral[7:, :-7] + integral[:-7, :-7]) / 49
    correction = 49 / 48
    mu_a, mu_b = box(a), box(b)
    var_a, var_b = (box(a * a) - mu_a**2) * correction, (box(b * b) - mu_b**2) * correction
    cov = (box(a * b) - mu_a * mu_b) * correction
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    return float((((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a**2 + mu_b**2 + c1) * (var_a + var_b + c2))).mean())


def whole_lab(rgb):
    """sRGB -> CIE Lab as the signals were first computed: both segments of f everywhere, chosen by np.where."""
    linear = signals._LINEAR[rgb[..., :3]]
    xyz = linear @ (signals._SRGB_TO_XYZ.T / signals._D65).astype(np.float32)
    delta = 6 / 29
    f = np.where(xyz > delta**3, np.cbrt(xyz), xyz / (3 * delta**2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def test_the_references_side_computed_once_gives_the_very_bits_of_the_whole_formula():
    """The reference's window means, variances and squared means are kept with it (every candidate of its task is
    compared with them), the candidate's three box filters run as one stack in place, Lab takes the cube root
    everywhere and the linear segment only where it applies, and a Delta E adds its three squares without a
    reduction: a faster path, not other figures.  SSIM, Lab and the mean Delta E are the same floats, to the last
    bit, as the whole formulas give, so the signals stored in records do not move (planted: the reference's
    variances without the sample correction, the Delta E without its square root, the candidate's box sums taken
    over the stack's wrong axis, 2 * cov left out of the numerator, the dark pixels' linear segment dropped or
    taken where xyz > delta^3: all caught; the squares added right to left change single pixels by an ulp, not
    the mean).  Images: noise, flat, dark (the linear segment), a gradient, at sizes from one window up."""
    rng = np.random.default_rng(5)
    for height, width in ((7, 7), (8, 9), (48, 64), (171, 256), (256, 90), (143, 256)):
        a = rng.random((height, width)) * 255
        b = np.clip(a + rng.normal(0, 25, a.shape), 0, 255)
        assert ssim_against(Window.of(a), b) == whole_ssim(a, b)
        noise = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        flat = np.full((height, width, 3), rng.integers(0, 256, 3), dtype=np.uint8)
        dark = rng.integers(0, 24, (height, width, 3), dtype=np.uint8)
        ramp = np.clip(np.arange(width)[None, :, None] * 255 // width + rng.integers(-9, 9, (height, width, 3)), 0, 255)
        for x in (noise, flat, dark, ramp.astype(np.uint8)):
            y = np.clip(x + rng.integers(-30, 30, x.shape), 0, 255).astype(np.uint8)
            assert np.array_equal(lab(x), whole_lab(x)) and np.array_equal(lab(y), whole_lab(y))
            assert mean_distance(lab(x), lab(y)) == float(np.sqrt(((whole_lab(x) - whole_lab(y)) ** 2).sum(axis=-1)).mean())
            small = signals.SmallReference.of(x)  # the reference's side as the cache keeps it (float32 luma)
            luma_x, luma_y = small.window.pixels.astype(np.float64), signals.luminance(y)
            assert ssim_against(small.window, luma_y) == whole_ssim(luma_x, luma_y)
            assert ssim_against(small.window, luma_y) == ssim_against(small.window, luma_y)  # kept state unharmed


def test_lab_and_delta_e_against_the_cie_values():
    pixels = np.array([[[255, 255, 255], [0, 0, 0], [255, 0, 0]]], dtype=np.uint8)
    values = lab(pixels)[0]
    assert values[0] == pytest.approx([100.0, 0.0, 0.0], abs=0.02)  # D65 white
    assert values[1] == pytest.approx([0.0, 0.0, 0.0], abs=1e-9)
    assert values[2] == pytest.approx([53.24, 80.09, 67.20], abs=0.02)  # sRGB red, the usual reference value
    white, black = np.full((2, 2, 3), 255, np.uint8), np.zeros((2, 2, 3), np.uint8)
    assert mean_delta_e(white, black) == pytest.approx(100.0, abs=0.02)


def photo(path, size, shift=0, fmt=None, **save):
    """A smooth, photo-like test image (gradients and blobs), optionally colour-shifted."""
    w, h = size
    y, x = np.mgrid[0:h, 0:w]
    u, v = x / w, y / h  # the same picture at any size
    rgb = np.stack([255 * u, 255 * v, 128 + 100 * np.sin(17 * u) * np.cos(21 * v)], axis=-1)
    rgb = np.clip(rgb + shift, 0, 255).astype(np.uint8)
    Image.fromarray(rgb).save(path, format=fmt, **save)
    return path


def test_an_unchanged_copy_a_changed_colour_and_the_target_size(tmp_path):
    reference = photo(tmp_path / "ref.webp", (640, 480), fmt="WEBP", lossless=True)
    same = compute_signals(reference, (640, 480), reference)
    assert same == {"width": 640, "height": 480, "size_match": True, "aspect_match": True, "unchanged": True,
                    "ssim": 1.0, "delta_e": 0.0}
    jpeg = photo(tmp_path / "copy.jpg", (1280, 960), fmt="JPEG", quality=92)  # a re-encoded, larger copy
    near = compute_signals(jpeg, (640, 480), reference)
    assert near["unchanged"] and not near["size_match"] and near["aspect_match"] and near["ssim"] > 0.98
    shifted = compute_signals(photo(tmp_path / "warm.png", (640, 480), shift=(12, 0, -12)), (640, 480), reference)
    assert not shifted["unchanged"] and shifted["delta_e"] > 5 and shifted["ssim"] > 0.9  # same shapes, new colour
    wide = compute_signals(photo(tmp_path / "wide.png", (800, 450)), (640, 480), reference)
    assert not wide["aspect_match"] and not wide["size_match"]
    assert compute_signals(reference, (640, 480), None)["ssim"] is None  # no reference: sizes only


def rotated_jpeg(path, upright_path):
    """``upright_path``'s picture stored on its side, with the EXIF orientation (6) that shows it upright."""
    with Image.open(upright_path) as image:
        turned = image.convert("RGB").transpose(Image.Transpose.ROTATE_90)
    exif = Image.Exif()
    exif[0x0112] = 6
    turned.save(path, format="JPEG", quality=95, exif=exif)
    return path


def test_a_byte_identical_copy_of_a_rotated_reference_is_measured_upright_and_unchanged(tmp_path):
    upright = photo(tmp_path / "upright.png", (640, 480))
    reference = rotated_jpeg(tmp_path / "ref.jpg", upright)
    copy = tmp_path / "001.jpg"
    copy.write_bytes(reference.read_bytes())
    same = compute_signals(copy, (640, 480), reference)
    assert (same["width"], same["height"], same["size_match"], same["unchanged"]) == (640, 480, True, True)
    assert same["ssim"] == 1.0
    # the picture a viewer sees, saved upright without EXIF, is the same picture too
    assert compute_signals(upright, (640, 480), reference)["unchanged"]


def test_a_reference_wanted_by_many_threads_at_once_is_reduced_once(tmp_path, monkeypatch):
    # a task's ten repeats finish together: each decoding the same 4K reference would cost ten decodes
    import threading

    from pytest_hypeedit.engine import signals

    cache = signals._ReferenceCache()  # asked without a cache folder: nothing on disk
    reference = photo(tmp_path / "ref.png", (320, 240))
    reduced, original = [], cache._reduce
    start = threading.Barrier(8)

    def slow_reduce(path, stored):
        reduced.append(path)
        threading.Event().wait(0.2)  # long enough for every other thread to ask meanwhile
        return original(path, stored)

    monkeypatch.setattr(cache, "_reduce", slow_reduce)
    got = []

    def ask():
        start.wait()
        got.append(cache.get(reference))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(reduced) == 1 and len(got) == 8 and all(small is got[0] for small in got)


def test_the_reduced_reference_is_kept_in_the_cache_folder_the_caller_names(tmp_path, monkeypatch):
    """The signals keep a reduced reference in ``<cache>/signals/`` of the folder their caller passes (the run's
    --cache-dir, engine/means.py), read back by a new process without decoding the reference again; they read no
    module global for it: a process-wide runtime's cache folder is not where they write (planted: the folder read
    from ``runtime.current().cache_dir`` again when the caller names none -> a file under the runtime's folder)."""
    from pytest_hypeedit.engine import signals
    from pytest_hypeedit.providers import runtime

    reference = photo(tmp_path / "ref.png", (320, 240))
    candidate = photo(tmp_path / "cand.png", (320, 240), shift=(8, 0, 0))
    monkeypatch.setattr(runtime, "_current", runtime.Runtime(cache_dir=tmp_path / "global" / "prepared"), raising=False)
    monkeypatch.setattr(signals, "REFERENCES", signals._ReferenceCache())
    measured = compute_signals(candidate, (320, 240), reference)
    assert not (tmp_path / "global").exists()  # no folder named: in memory only
    monkeypatch.setattr(signals, "REFERENCES", signals._ReferenceCache())
    assert compute_signals(candidate, (320, 240), reference, tmp_path / "cache") == measured
    stored = list((tmp_path / "cache" / "signals").glob("*.npy"))
    assert len(stored) == 1
    fresh = signals._ReferenceCache()  # a new process (an xdist worker, a rerun)
    monkeypatch.setattr(signals, "REFERENCES", fresh)
    monkeypatch.setattr(fresh, "_reduce", lambda path, stored: pytest.fail("the reference was decoded again"))
    assert compute_signals(candidate, (320, 240), reference, tmp_path / "cache") == measured


class FairTurns:
    """IMAGE_WORK's bound with its turns handed out in the order they were asked for, as a loaded machine's
    scheduler may hand them out: a thread that lets go of its turn and asks again waits behind every thread that
    asked before it (Python's semaphore lets it barge in first, which would hide a thread holding pixels while it
    waits)."""

    def __init__(self, bound: int) -> None:
        import threading
        from collections import deque

        self._free, self._queue, self._turns = bound, deque(), threading.Condition()

    def __enter__(self) -> None:
        with self._turns:
            ticket = object()
            self._queue.append(ticket)
            self._turns.wait_for(lambda: self._free > 0 and self._queue[0] is ticket)
            self._queue.popleft()
            self._free -= 1
            self._turns.notify_all()

    def __exit__(self, *exc) -> None:
        with self._turns:
            self._free += 1
            self._turns.notify_all()


def test_candidates_read_from_disk_hold_their_previews_only_in_their_turn(tmp_path, monkeypatch):
    """Hundreds of batch lines land together, and a candidate read back from its file is decoded for the
    signals: its preview (512 px a side, 0.8 MB) exists only inside the candidate's IMAGE_WORK turn, decoded,
    compared and dropped in it, so a thread waiting for its turn holds none and at most IMAGE_WORK's bound are
    alive whatever the number of candidates.  Counted, not measured: each preview counts itself alive until it
    is freed (planted: the preview decoded in a turn of its own before the candidate waits for its turn to be
    compared, as it was -> 12 alive at once, one per candidate)."""
    import threading
    import weakref

    from pytest_hypeedit.engine import signals
    from pytest_hypeedit.providers import images

    bound, threads = 2, 12
    monkeypatch.setattr(images, "IMAGE_WORK", FairTurns(bound))
    monkeypatch.setattr(signals, "REFERENCES", signals._ReferenceCache())
    reference = photo(tmp_path / "ref.png", (320, 240))
    candidates = [photo(tmp_path / f"{n:03d}.png", (640, 480), shift=(n, 0, 0)) for n in range(threads)]
    lock, alive = threading.Lock(), {"now": 0, "most": 0}

    def change(step):
        with lock:
            alive["now"] += step
            alive["most"] = max(alive["most"], alive["now"])

    make = signals.preview_of

    def counted(image):
        preview = make(image)
        change(+1)
        weakref.finalize(preview, change, -1)
        threading.Event().wait(0.02)  # a decode takes a while: the other threads ask for their turns meanwhile
        return preview

    monkeypatch.setattr(signals, "preview_of", counted)
    compute_signals(candidates[0], (320, 240), reference)  # the reference reduced (one preview, dropped)
    start, got = threading.Barrier(threads), []

    def one(candidate):
        start.wait()
        got.append(compute_signals(candidate, (320, 240), reference))

    workers = [threading.Thread(target=one, args=(candidate,)) for candidate in candidates]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(got) == threads and all(found["ssim"] is not None for found in got)
    assert alive["most"] <= bound, f"{alive['most']} previews alive at once, {bound} turns"
    assert alive["now"] == 0


@pytest.fixture
def bench(pytester, monkeypatch, tmp_path):
    write_split(pytester.path, "mini", make_tasks(4), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    # the judge passes repeat 1 of every task: the identity control, which changes nothing
    write_labels(pytester.path / "judge.json", {(f"task-{t:02d}", "identity", r): r == 1 for t in range(4) for r in (1, 2)})
    write_labels(pytester.path / "panel.json", {(f"task-{t:02d}", "identity", r): False for t in range(4) for r in (1, 2)})
    return pytester


def run(pytester, *extra):
    return pytester.runpytest("-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json",
                              "--images-base", "images", "--repeats", "2", "--outputs", "out",
                              "--judge", "labels:judge.json", *extra)


def test_signals_are_kept_once_summarised_per_row_and_set_against_disagreements(bench):
    result = run(bench, "--agreement", "labels:panel.json")
    results = json.loads((bench.path / "out" / "results.json").read_text())
    record_path = bench.path / "out" / "mini" / "identity" / "task-00" / "001.json"
    record = json.loads(record_path.read_text())
    assert record["signals"]["unchanged"] is True and record["signals"]["ssim"] == 1.0
    summary = results["rows"][0]["signals_summary"]
    # the identity control hands back the 24 x 16 reference for a 640 x 480 target: unchanged, wrong size
    assert summary == {"measured": 8, "unmeasured": 0, "size_mismatch": 8, "unchanged": 8, "unchanged_pass": 4,
                       "ssim_mean": 1.0, "delta_e_mean": 0.0}
    signals = results["agreement"]["signals"]
    assert signals["disagreements"] == 4 and signals["judge_pass_unchanged"] == 4  # "judge PASS but unchanged"
    assert signals["false_pass"]["n"] == 4 and signals["both_fail"]["unchanged"] == 4
    result.stdout.fnmatch_lines(["signals among disagreements: judge PASS / panel FAIL 4 (4 unchanged, 4 wrong size)*"])
    # each task's reference reduced once into the run's cache folder (--cache-dir), for every worker and later run
    assert len(list((Path(os.environ["HYPEEDIT_CACHE_DIR"]) / "signals").glob("*.npy"))) == 4

    record["signals"]["ssim"] = 0.5  # stored once: a rerun reads them, it does not measure again
    record_path.write_text(json.dumps(record))
    run(bench)
    again = json.loads((bench.path / "out" / "results.json").read_text())["rows"][0]["signals_summary"]
    assert again["ssim_mean"] == pytest.approx((7 * 1.0 + 0.5) / 8)


def test_candidates_read_back_without_signals_are_measured_only_when_asked(bench):
    run(bench).assert_outcomes(passed=4, failed=4)
    records = sorted((bench.path / "out" / "mini" / "identity").glob("*/*.json"))
    for path in records:  # records written before the signals existed
        record = json.loads(path.read_text())
        record.pop("signals", None)
        path.write_text(json.dumps(record))
    run(bench, "--html", "rep/report.html").assert_outcomes(passed=4, failed=4)
    summary = json.loads((bench.path / "out" / "results.json").read_text())["rows"][0]["signals_summary"]
    assert summary["measured"] == 0 and summary["unmeasured"] == 8 and summary["ssim_mean"] is None
    assert all(not json.loads(path.read_text()).get("signals") for path in records)  # nothing made up either
    page = (bench.path / "rep" / "report.html").read_text()
    assert "<td>0 of 8</td>" in page
    assert "Signals not computed for 8 candidates read back from disk" in page and "run with --signals" in page

    run(bench, "--signals").assert_outcomes(passed=4, failed=4)
    summary = json.loads((bench.path / "out" / "results.json").read_text())["rows"][0]["signals_summary"]
    assert summary["measured"] == 8 and summary["unmeasured"] == 0 and summary["ssim_mean"] == 1.0
    assert all(json.loads(path.read_text())["signals"]["unchanged"] is True for path in records)  # stored once
