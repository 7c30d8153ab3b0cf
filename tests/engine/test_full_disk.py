"""Nothing paid is lost to a full disk, and a disk with no room stops the buying with the folder named.

The model is the real ModelArk adapter against its loopback fake, which answers with a result URL: the image
is downloaded.  The judge is a labels file (free).  A conftest plugin makes a disk full:

- the cache's (``CACHE_FULL``): every write of data into a file under the cache fails with ENOSPC, except the
  rate limiter's and the live line's few bytes (``limits/``, ``status/``), which a disk with a few KB left
  still takes; result files used to be downloaded there and moved into the outputs, so they were lost;
- the outputs' (``OUTPUTS_FULL_AFTER``=k): once k images are in the outputs, every write of data there fails;
- a nearly full one (``FREE_MB``): the free space the run is told of, minus 40 MB for each image in the
  outputs, so it runs out after a few purchases (``pytest_hypeedit.engine.room.free_bytes`` replaced).

Counted at the fake: what was bought, and that a rerun with room buys nothing twice.
"""

from __future__ import annotations

import pytest
from benchdata import make_tasks, write_labels, write_split
from providers_fakes.ark import FakeArk

TASKS = 3
MODEL = "seedream-4.5"

FULL_DISKS = """
import errno, os
from pathlib import Path

CACHE = os.path.realpath(os.environ["HYPEEDIT_CACHE_DIR"])
OUTPUTS = os.path.realpath(os.path.join(os.getcwd(), "out"))
SMALL_STATE = (os.sep + "limits" + os.sep, os.sep + "status" + os.sep)


def images_in_outputs():
    return sum(1 for p in Path(OUTPUTS).rglob("0*.*") if p.suffix in (".png", ".jpg", ".jpeg", ".webp"))


def full(path):
    if os.environ.get("CACHE_FULL") and path.startswith(CACHE + os.sep) and not any(s in path for s in SMALL_STATE):
        return True
    after = os.environ.get("OUTPUTS_FULL_AFTER")
    return bool(after) and path.startswith(OUTPUTS + os.sep) and images_in_outputs() >= int(after)


class NoRoom:
    def __init__(self, handle):
        self._handle = handle

    def write(self, data):
        if len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return 0

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()


_fdopen = os.fdopen


def fdopen(fd, mode="r", *args, **kwargs):
    handle = _fdopen(fd, mode, *args, **kwargs)
    if any(flag in mode for flag in "wa+"):
        path = os.path.realpath(os.readlink(f"/proc/self/fd/{fd}"))
        if full(path):
            return NoRoom(handle)
    return handle


os.fdopen = fdopen

if os.environ.get("FREE_MB"):
    import pytest_hypeedit.engine.room as room

    def free_bytes(folder):
        return (int(os.environ["FREE_MB"]) - 40 * images_in_outputs()) * 1024 * 1024

    room.free_bytes = free_bytes
"""


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path):
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    write_labels(pytester.path / "r1.json", {(f"task-{t:02d}", MODEL, r): True for t in range(TASKS)
                                             for r in range(1, 9)})
    pytester.makeconftest(FULL_DISKS)
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("CACHE_FULL", "OUTPUTS_FULL_AFTER", "FREE_MB"):
        monkeypatch.delenv(name, raising=False)
    with FakeArk() as ark:
        monkeypatch.setenv("HYPEEDIT_ARK_BASE_URL", ark.base)
        monkeypatch.setenv("ARK_API_KEY", ark.key)
        yield pytester, ark


def run(pytester, repeats: int, **env):
    import os
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        return pytester.runpytest_subprocess("--tasks", "mini.json", "--images-base", "images", "--repeats",
                                             # the results beside the outputs, not in them: the end-of-run
                                             # write on a full disk is another test's
                                             str(repeats), "--outputs", "out", "--results", "results.json",
                                             "--model", MODEL, "--judge",
                                             "labels:r1.json", "-p", "no:cacheprovider", "-ra", timeout=180)
    finally:
        for name, value in saved.items():
            os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)


def bought(ark) -> int:
    return len(ark.seen("/images/generations"))


def images(pytester) -> list:
    return sorted(p for p in (pytester.path / "out").rglob("0*.*") if p.suffix in (".png", ".jpg", ".jpeg", ".webp"))


def test_a_full_cache_loses_no_paid_image(bench):
    pytester, ark = bench
    run(pytester, 1).assert_outcomes(passed=TASKS)  # the references are prepared into the cache, with room
    full = run(pytester, 3, CACHE_FULL="1")
    full.assert_outcomes(passed=3 * TASKS)  # every image bought is kept: it landed in the outputs
    assert bought(ark) == 3 * TASKS and len(images(pytester)) == 3 * TASKS
    assert "bug of the plugin" not in full.stdout.str()
    run(pytester, 3).assert_outcomes(passed=3 * TASKS)
    assert bought(ark) == 3 * TASKS  # nothing bought twice
    assert not list((pytester.path / "out").rglob(".download-*"))  # no download left half-way


def test_a_nearly_full_outputs_disk_stops_the_buying_with_one_line(bench):
    pytester, ark = bench
    items = 2 * TASKS
    # 200 MB free, 40 MB per image bought, and a purchase needs 97 MB (the 96 MB image cap and a margin)
    result = run(pytester, 2, FREE_MB="200")
    first = bought(ark)
    assert 2 <= first <= 3, first
    result.assert_outcomes(passed=first, skipped=items - first)
    out = result.stdout.str()
    out_dir = pytester.path / "out"
    result.stdout.fnmatch_lines([f"SKIPPED [[]{items - first}[]] *: disk full at {out_dir}: * MB free, and a "
                                 f"{MODEL} image may take up to 97 MB with its record *; nothing more is bought in "
                                 "this run, and what was paid is kept. Free space there (or point --outputs at a "
                                 "disk with room), then rerun: only what is missing is bought"])
    assert "bug of the plugin" not in out and "Traceback" not in out
    assert len(images(pytester)) == first  # what was paid is kept
    run(pytester, 2, FREE_MB="100000").assert_outcomes(passed=items)
    assert bought(ark) == items  # the rest bought once, nothing twice


def test_no_room_while_saving_a_paid_image_says_disk_full_and_stops_buying(bench):
    pytester, ark = bench
    items = 4 * TASKS
    result = run(pytester, 4, OUTPUTS_FULL_AFTER="2")
    out = result.stdout.str()
    assert "disk full at " + str(pytester.path / "out") in out
    assert "bug of the plugin" not in out and "Traceback" not in out
    first, kept = bought(ark), len(images(pytester))
    assert kept >= 2 and first < items, (first, kept)  # it stopped buying (8 calls may be in flight)
    outcomes = result.parseoutcomes()
    # each candidate bought says what became of it (kept, or its record could not be written); the rest: one line
    assert outcomes.get("passed", 0) + outcomes.get("errors", 0) == first
    assert outcomes.get("skipped", 0) == items - first
    result.stdout.fnmatch_lines([f"SKIPPED [[]{items - first}[]] *: disk full at {pytester.path / 'out'}: No space "
                                 "left on device (errno 28); nothing more is bought in this run*"])
    run(pytester, 4).assert_outcomes(passed=items)
    assert bought(ark) == first + (items - kept)  # every image kept is reused: only the lost ones and the rest


# --------------------------------------------------------------------------- the rules


def test_room_needed_is_the_models_image_cap_and_a_margin(tmp_path, monkeypatch):
    import shutil
    from pathlib import Path
    from types import SimpleNamespace

    from pytest_hypeedit.engine import room

    big = SimpleNamespace(name="m", options={})
    small = SimpleNamespace(name="m", options={"max_image_mb": 8})
    assert room.room_needed(big.options) == 97 * room.MiB and room.room_needed(small.options) == 9 * room.MiB
    assert room.short_of_room(tmp_path, 97 * room.MiB, big) is None
    line = room.short_of_room(tmp_path, 96 * room.MiB, big)
    assert line.startswith(f"disk full at {tmp_path}: 96.0 MB free, and a m image may take up to 97 MB")
    assert room.short_of_room(tmp_path, 96 * room.MiB, small) is None  # a model whose cap is lower needs less
    assert room.free_bytes(tmp_path) > 0
    # The outputs may not exist yet: their nearest existing parent's disk is asked. (The free figure itself is not
    # compared between two calls: other processes write to the same disk in between.)
    asked: list[Path] = []
    real = shutil.disk_usage

    def disk_usage(path):
        asked.append(Path(path))
        return real(path)

    monkeypatch.setattr(room.shutil, "disk_usage", disk_usage)
    room.free_bytes(tmp_path / "not" / "yet")
    assert asked == [tmp_path]


def test_only_a_write_that_found_no_room_is_a_full_disk():
    import errno

    from pytest_hypeedit.engine import room

    assert room.no_room(OSError(errno.ENOSPC, "No space left on device"))
    assert room.no_room(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert not room.no_room(OSError(errno.EACCES, "Permission denied"))
    assert not room.no_room(ValueError("x"))


def test_after_a_write_found_no_room_a_paid_judge_is_not_asked_and_the_image_is_kept(tmp_path, monkeypatch):
    import errno
    import os
    from types import MappingProxyType

    from providers_fakes.contract import make_request

    from pytest_hypeedit.engine.means import Means
    from pytest_hypeedit.engine.runner import Runner
    from pytest_hypeedit.engine.store import Store
    from pytest_hypeedit.judges.base import Judge, Verdict
    from pytest_hypeedit.providers.ark import ArkProvider
    from pytest_hypeedit.providers.runtime import Runtime
    from pytest_hypeedit.registry import ModelSpec
    from pytest_hypeedit.transport.http import RetryPolicy

    class PaidJudge(Judge):
        name, routes, needs_images, calls = "paid", ("paid-judge",), False, 0

        def judge(self, request):
            PaidJudge.calls += 1
            return Verdict(True, "ok", "paid")

    spec = ModelSpec(MODEL, "ark", "seedream-4-5-251128", 0.04, MappingProxyType({"timeout_s": 5.0}))
    task = make_request(tmp_path, spec).task
    refs = list(make_request(tmp_path, spec).references)
    store, full = Store(tmp_path / "out"), []
    write_record = store.write_record

    def no_room_once_full(record):  # the disk fills up once the first candidate is bought (a journal entry,
        if full and record.candidate:  # written before the request is sent, still fits)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write_record(record)

    store.write_record = no_room_once_full
    with FakeArk() as ark:
        monkeypatch.setenv("HYPEEDIT_ARK_BASE_URL", ark.base)
        monkeypatch.setenv("ARK_API_KEY", ark.key)
        runtime = Runtime(cache_dir=tmp_path / "cache", policy=RetryPolicy(max_attempts=2, base_delay=0.01))
        runner = Runner(Means(store=store, make_provider=lambda s: ArkProvider(s, runtime=runtime),
                              make_judge=PaidJudge, references=lambda t: refs))
        first = runner.generate_step(runner.plan(task, spec, 1))
        assert first.candidate is not None and first.needs_verdict
        full.append(True)
        second = runner.run(task, spec, 2)  # bought, its image written, its record not: the image is kept
        assert second.outcome == "error" and "disk full at " in second.error
        assert "the image is kept at " in second.error and "bug of the plugin" not in second.error
        assert (tmp_path / "out" / "public" / MODEL / task.task_id / "002.png").is_file()
        judged = runner.judge_step(first)  # a paid verdict that could not be journaled (nor kept) is not asked for
        assert judged.outcome == "error" and judged.error.startswith("judge paid: not sent: disk full at ")
        third = runner.run(task, spec, 3)  # and nothing more is bought
        assert third.outcome == "skipped" and third.error.startswith("disk full at ")
        runner.close()
    assert PaidJudge.calls == 0 and len(ark.seen("/images/generations")) == 2
