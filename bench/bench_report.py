"""Benchmark of the HTML report and of a leaderboard-size replay.

    python bench/bench_report.py [--case 500|500-real|7000|all] [--workdir DIR] [--workers 2] [--keep] [--html-views PX]

Three cases, no network (images are generated, the judges read labels files):

- **500** candidates: 50 tasks x 10 repeats of ``identity`` judged by one labels
  file, ``--html`` under ``-n 2``: the report folder's size, the run's wall time
  and the seconds until the page is usable in headless Chromium.
- **500-real**: the same count at the public split's real sizes (each task's
  width x height from the public split's task file, 2048 to 5504 px: 4K
  pictures), every candidate already on disk as a noisy JPEG of its task's size
  (3 to 9 MB each) with its record, replayed with ``--html``: the report folder
  against its 60 MB goal, and the replay's time.
- **7000** candidates, the paper's full table: 7 models x 2 splits x 50 tasks x
  10 repeats, every candidate already on disk as a 1024 px JPEG with its record
  (written without pixel signals, as a run before they existed), judged by two
  labels files.  Timed with the plain command (no ``-n``): twice without
  ``--html`` (records lacking signals are not measured without ``--signals``)
  and twice with it (the second reuses the images).  Prints the replays' wall
  times (the second, a replay of the finished run, against the 30 s goal), the
  time ``--html`` adds, the report folder's size against its 150 MB goal and
  what makes it up, and the seconds until the page is usable in Chromium.  ``--replays-only`` stops after the two replays.
  A reused fixture's records are put back as the fixture wrote them first, so
  the first replay is one (it judges every record and writes it).  The pytest
  plugins of this project's test extra (pytest-rerunfailures, pytest-timeout)
  are turned off, as a user's install has neither (``--with-test-plugins``
  keeps them: each reads every item's markers in every phase).

Building the 7000-candidate fixture writes ~2.7 GB; it is kept in the work
folder (``fixture.ok`` marks it complete), so ``--workdir DIR`` reuses it on a
later call.  Its candidates are a few photo-like base images, each file made
unique by a JPEG comment segment: every candidate has its own bytes (so no
cache keyed by content can share work between them) and is decoded in full,
without minutes spent encoding 7,000 distinct pictures.

"Usable" means: the page's load event fired, the metric charts are drawn, the
failure browser has drawn its first task card, and that card, scrolled into
view, has every image (references and thumbnails) decoded.  Wall times
are printed beside CPU times: on a shared machine the CPU time is the steadier
figure.  Chromium is /usr/bin/chromium (Debian's
package), driven by the playwright package (the dev extra).
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASKS, REPEATS = 50, 10
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]

#: The seven models of the paper's table (models.yaml); with every candidate on disk no key is needed.
PAPER_MODELS = ("gemini-3-pro-preview", "seedream-4.5", "seedream-4.0", "gpt-image-1.5", "flux-2-max",
                "riverflow-2-b1", "qwen-image-edit-2511")
LARGE_SPLITS = ("public", "private")
LARGE_SIZE = (1024, 768)
BASE_IMAGES = 16  # distinct pictures behind the 7,000 unique candidate files
FIXTURE_VERSION = "2"  # 2: records without signals again (an earlier replay measured and stored them)
#: A local copy of the public split's task file, as bench_batch.py takes it (no download here: the sizes suffice).
PUBLIC_SPLIT = Path(os.environ["HYPEEDIT_PUBLIC_SPLIT"]) if os.environ.get("HYPEEDIT_PUBLIC_SPLIT") else None
#: The public split's task sizes (width, height: count), read from its task file, for when none is named.
PUBLIC_SIZES = {(4096, 4096): 17, (3584, 4800): 11, (2048, 2048): 10, (5504, 3072): 6, (4800, 3584): 2,
                (3072, 5504): 2, (2304, 1728): 1, (2304, 4096): 1}
REAL_MODEL = "seedream-4.5"
REAL_GOAL_MB, LARGE_GOAL_MB, REPLAY_GOAL_S = 60, 150, 30


# --------------------------------------------------------------------------- images


def picture(seed: int, size: tuple[int, int]):
    """Shapes on noise, so it compresses like a photo-ish image rather than a flat fill."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    image = Image.effect_noise(size, 40).convert("RGB")
    draw = ImageDraw.Draw(image)
    for _ in range(12):
        x, y = rng.randrange(size[0]), rng.randrange(size[1])
        colour = tuple(rng.randrange(256) for _ in range(3))
        draw.ellipse((x, y, x + rng.randrange(20, 160), y + rng.randrange(20, 160)), fill=colour)
    return image


def make_image(path: Path, seed: int, size: tuple[int, int]) -> None:
    """A WebP picture (the 500-candidate case's references)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    picture(seed, size).save(path, format="WEBP", quality=80)


def jpeg_bytes(seed: int, size: tuple[int, int]) -> bytes:
    out = io.BytesIO()
    picture(seed, size).save(out, format="JPEG", quality=85)
    return out.getvalue()


def with_comment(jpeg: bytes, text: str) -> bytes:
    """The same picture with a JPEG COM segment after SOI: other bytes, the same pixels to decode."""
    payload = text.encode("ascii")
    segment = b"\xff\xfe" + (len(payload) + 2).to_bytes(2, "big") + payload
    return jpeg[:2] + segment + jpeg[2:]


# --------------------------------------------------------------------------- the 500-candidate case


def make_benchmark(workdir: Path, size: tuple[int, int]) -> None:
    tasks = []
    for t in range(TASKS):
        task_id = f"task-{t:03d}"
        make_image(workdir / "images" / task_id / "001.webp", t, size)
        tasks.append({"task_id": task_id, "input_images": ["001.webp"], "task_type": ["remove", "recolor", "add"][t % 3],
                      "instruction": f"Edit {t}: remove the <b>logo</b> and keep the rest.", "width": size[0], "height": size[1]})
    (workdir / "bench.json").write_text(json.dumps(tasks))
    rng = random.Random(0)
    judgements = {f"task-{t:03d}": {"M01": {f"{r:03d}.webp": {"verdict": "PASS" if rng.random() < 0.4 else "FAIL"}
                                            for r in range(1, REPEATS + 1)}} for t in range(TASKS)}
    labels = {"schema_version": 2, "models": {"M01": "identity"}, "judgements": judgements}
    (workdir / "labels.json").write_text(json.dumps(labels))
    (workdir / "conftest.py").write_text("")


def run_benchmark(workdir: Path, workers: int) -> tuple[int, float]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--model", "identity",
               "--tasks", "bench.json", "--images-base", "images", "--repeats", str(REPEATS), "--outputs", "out",
               "--judge", "labels:labels.json", "--html", "report/report.html", "-n", str(workers),
               "--gate", "pass_rate>=0.3"]
    return timed(command, workdir)


def timed(command: list[str], workdir: Path) -> tuple[int, float]:
    """Run a pytest command; print its last lines, wall time and CPU time (which other load on the
    machine does not inflate); return its exit status and wall time."""
    started, cpu = time.monotonic(), _children_cpu()
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True,
                          env={**os.environ, "HYPEEDIT_CACHE_DIR": str(workdir / "cache")})
    elapsed, cpu = time.monotonic() - started, _children_cpu() - cpu
    print("\n".join(done.stdout.splitlines()[-4:]))
    if done.returncode not in (0, 1):
        print(done.stderr[-3000:] or done.stdout[-3000:])
    print(f"  -> {elapsed:.1f} s wall, {cpu:.1f} s CPU (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    return done.returncode, elapsed


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# --------------------------------------------------------------------------- the 7000-candidate case


def large_tasks(split: str) -> list[dict]:
    prefix = split[:4]
    return [{"task_id": f"{prefix}-{t:03d}", "input_images": ["001.jpg"], "task_type": ["remove", "recolor", "add"][t % 3],
             "instruction": f"{split} edit {t}: replace the label text with <i>NEW</i>, keep the bottle.",
             "width": LARGE_SIZE[0], "height": LARGE_SIZE[1]} for t in range(TASKS)]


def make_large_benchmark(workdir: Path) -> float:
    """The 7000-candidate fixture (reused when ``fixture.ok`` says it is complete); returns seconds spent."""
    stamp = workdir / "fixture.ok"
    if stamp.is_file() and stamp.read_text() == FIXTURE_VERSION:
        return 0.0
    started = time.monotonic()
    shutil.rmtree(workdir / "out", ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "conftest.py").write_text("")
    bases = [jpeg_bytes(seed, LARGE_SIZE) for seed in range(BASE_IMAGES)]
    rng = random.Random(7)
    votes: dict[tuple[str, str, int], tuple[bool, bool]] = {}
    for split in LARGE_SPLITS:
        tasks = large_tasks(split)
        (workdir / f"{split}.json").write_text(json.dumps(tasks))
        for index, task in enumerate(tasks):
            write_bytes(workdir / "images" / task["task_id"] / "001.jpg", with_comment(bases[index % BASE_IMAGES], task["task_id"]))
            for number, model in enumerate(PAPER_MODELS):
                skill = 0.15 + 0.1 * number  # models differ, as in the paper's table
                for repeat in range(1, REPEATS + 1):
                    write_candidate(workdir / "out", split, model, task, repeat, bases, rng)
                    votes[(task["task_id"], model, repeat)] = rater_votes(rng, skill)
    write_large_labels(workdir, votes)
    stamp.write_text(FIXTURE_VERSION)
    return time.monotonic() - started


def rater_votes(rng: random.Random, skill: float) -> tuple[bool, bool]:
    """Two raters who agree 85% of the time."""
    first = rng.random() < skill
    return first, first if rng.random() < 0.85 else not first


def write_candidate(out: Path, split: str, model: str, task: dict, repeat: int, bases: list[bytes], rng) -> None:
    """A candidate a paid run left behind: the image and its record."""
    from pytest_hypeedit.engine.call_ledger import BILLED, GENERATION, new_entry
    from pytest_hypeedit.engine.records import Record

    spec = model_spec(model)
    folder = out / split / model / task["task_id"]
    name = f"{repeat:03d}.jpg"
    write_bytes(folder / name, with_comment(bases[rng.randrange(len(bases))], f"{split}/{model}/{task['task_id']}/{name}"))
    record = Record(split, model, task["task_id"], repeat, task_types=[task["task_type"]], candidate=name,
                    route=spec.route, provider_model=spec.provider_model, seed=1000 + repeat,
                    calls=[new_entry(GENERATION, BILLED, spec.price, route=spec.route, entry="generation")],
                    latency_s=round(rng.uniform(8, 40), 3), generated_at="2026-11-23T10:00:00+00:00")
    write_bytes(folder / f"{repeat:03d}.json", json.dumps(record.to_dict(), indent=2, sort_keys=True).encode())


@functools.cache
def model_spec(name: str):
    from pytest_hypeedit.registry import load_registry

    return load_registry().get(name)


def write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_large_labels(workdir: Path, votes: dict[tuple[str, str, int], tuple[bool, bool]]) -> None:
    aliases = {model: f"M{i + 1:02d}" for i, model in enumerate(PAPER_MODELS)}
    for rater in (0, 1):
        judgements: dict = {}
        for (task_id, model, repeat), pair in votes.items():
            verdict = "PASS" if pair[rater] else "FAIL"
            judgements.setdefault(task_id, {}).setdefault(aliases[model], {})[f"{repeat:03d}.jpg"] = {"verdict": verdict}
        document = {"schema_version": 2, "models": {a: m for m, a in aliases.items()}, "judgements": judgements}
        (workdir / f"rater{rater + 1}.json").write_text(json.dumps(document))


#: pytest plugins this project's own tests use (the extra "test"), which a user's install of the plugin does not
#: bring: each adds its own work to every item (pytest-rerunfailures and pytest-timeout read every item's markers
#: in every phase).  The replays run without them unless --with-test-plugins; the run says which it was.
TEST_EXTRA_PLUGINS = ("rerunfailures", "timeout")
WITH_TEST_PLUGINS = False
REPLAYS_ONLY = False


def large_command(*extra: str) -> list[str]:
    models = [arg for model in PAPER_MODELS for arg in ("--model", model)]
    tasks = [arg for split in LARGE_SPLITS for arg in ("--tasks", f"{split}.json")]
    plugins = [] if WITH_TEST_PLUGINS else [arg for name in TEST_EXTRA_PLUGINS for arg in ("-p", f"no:{name}")]
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *plugins, "-q", *models, *tasks,
            "--images-base", "images", "--outputs", "out", "--judge", "labels:rater1.json,rater2.json", *extra]


#: What the fixture writes into a record (write_candidate); a replay adds the verdict, the hashes and the rest.
FIXTURE_FIELDS = ("split", "model", "task_id", "repeat", "task_types", "candidate", "route", "provider_model", "seed",
                  "calls", "latency_s", "generated_at")


def reset_large_records(workdir: Path) -> int:
    """Every record of a reused fixture put back as the fixture wrote it (no verdict, no content hashes, no
    signals), so that the first replay measured is a first replay; returns how many."""
    from pytest_hypeedit.engine.records import Record

    paths = sorted((workdir / "out").glob("*/*/*/*.json"))
    for path in paths:
        fields = json.loads(path.read_text())
        record = Record(**{name: fields[name] for name in FIXTURE_FIELDS})
        path.write_text(json.dumps(record.to_dict(), indent=2, sort_keys=True))
    return len(paths)


def bench_large(workdir: Path, views: int | None) -> None:
    built = make_large_benchmark(workdir)
    if not built:
        reset_large_records(workdir)
    print(f"7000-candidate fixture: {f'built in {built:.1f} s' if built else 'reused, its records reset'} ({workdir})")
    print("pytest plugins of the test extra (" + ", ".join(TEST_EXTRA_PLUGINS) + "): "
          + ("loaded" if WITH_TEST_PLUGINS else "turned off, as a user's install has none of them"))
    shutil.rmtree(workdir / "report", ignore_errors=True)
    html = ["--html", "report/report.html", *(["--html-views", str(views)] if views is not None else [])]
    # The fixture's records lack the pixel signals: without --signals a replay leaves them unmeasured (the report
    # says how many), so every replay below reads the records as they were written.
    _, first = timed(large_command(), workdir)
    _, plain = timed(large_command(), workdir)
    if REPLAYS_ONLY:
        print_replays(first, plain)
        return
    _, with_html = timed(large_command(*html), workdir)
    _, rerun = timed(large_command(*html), workdir)
    print_replays(first, plain)
    print(f"7000 --html adds: {with_html - plain:.1f} s (run with --html {with_html:.1f} s, its images built; "
          f"a rerun, its images reused, {rerun:.1f} s, goal {REPLAY_GOAL_S} s)")
    print_folder(workdir / "report", "7000", LARGE_GOAL_MB)
    seconds = chromium_load_seconds(workdir / "report" / "report.html")
    if seconds is not None:
        print(f"7000 chromium usable after: {seconds:.2f} s")


def print_replays(first: float, plain: float) -> None:
    """The two replays without --html.  The goal is a replay of a finished run whose records lack pixel signals:
    the second.  The first also judges, hashes and writes every record (the fixture writes none of that), once."""
    print(f"7000 first replay (records as the fixture wrote them: no verdicts, no content hashes, no pixel signals; "
          f"it judges, hashes and writes all 7,000, once): {first:.1f} s")
    print(f"7000 replay of the finished run (records with verdicts and content hashes, without pixel signals): "
          f"{plain:.1f} s (goal {REPLAY_GOAL_S} s)")


def print_folder(report_dir: Path, case: str, goal_mb: float | None = None) -> None:
    """The report folder's size (against ``goal_mb``), and what makes it up."""
    total, count = report_size(report_dir)
    parts: dict[str, int] = {}
    for path in report_dir.rglob("*"):
        if path.is_file():
            kind = ("full-size views" if ".full." in path.name else "thumbnails" if ".thumb." in path.name
                    else "the page" if path.name.endswith(".html") else "the rest")
            parts[kind] = parts.get(kind, 0) + path.stat().st_size
    detail = ", ".join(f"{kind} {size / 1e6:.1f}" for kind, size in sorted(parts.items()))
    goal = f", goal at most {goal_mb} MB: {'met' if total <= goal_mb * 1e6 else 'MISSED'}" if goal_mb else ""
    print(f"{case} report folder: {total / 1e6:.1f} MB in {count} files ({detail}){goal}")


# --------------------------------------------------------------------------- measuring


def report_size(report_dir: Path) -> tuple[int, int]:
    files = [p for p in report_dir.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def chromium_load_seconds(report: Path) -> float | None:
    if not CHROMIUM.exists():
        print("no Chromium at /usr/bin/chromium: load time not measured")
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("playwright is not installed (pip install -e .[dev]): load time not measured")
        return None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        started = time.monotonic()
        page.goto(report.as_uri(), wait_until="load")
        page.wait_for_selector("svg.hypeedit-chart")
        first_failure_shown(page)
        elapsed = time.monotonic() - started
        busy = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}.get("ThreadTime")
        rows = page.locator("tbody.results-table-row").count()
        cards = page.locator(".hx-task").count()
        images = page.locator("img").count()
        browser.close()
    busy_text = f", the page's main thread busy {busy:.2f} s" if busy is not None else ""
    print(f"chromium: {cards} task cards and {rows} pytest-html rows drawn, {images} images in the page{busy_text}")
    return elapsed


def first_failure_shown(page) -> None:
    """The browser's first task card scrolled into view with its images decoded: the reader sees the task."""
    entry = page.locator(".hx-task").first
    entry.scroll_into_view_if_needed()
    page.wait_for_function("e => [...e.querySelectorAll('img')].every(i => i.complete && i.naturalWidth > 0)",
                           arg=entry.element_handle())


# --------------------------------------------------------------------------- the 500-candidate case at real sizes


def public_sizes() -> list[tuple[int, int]]:
    """Each public task's (width, height), in file order: from the split's file, else PUBLIC_SIZES."""
    if PUBLIC_SPLIT is not None and PUBLIC_SPLIT.is_file():
        return [(int(t["width"]), int(t["height"])) for t in json.loads(PUBLIC_SPLIT.read_text())][:TASKS]
    return [size for size, count in PUBLIC_SIZES.items() for _ in range(count)][:TASKS]


def make_real_benchmark(workdir: Path) -> float:
    """500 candidates of one model at the public split's sizes, on disk with their records (reused when
    ``fixture.ok`` says so); returns seconds spent."""
    stamp = workdir / "fixture.ok"
    if stamp.is_file() and stamp.read_text() == FIXTURE_VERSION:
        return 0.0
    started = time.monotonic()
    shutil.rmtree(workdir / "out", ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "conftest.py").write_text("")
    sizes = public_sizes()
    bases = {size: [jpeg_bytes(seed, size) for seed in range(2)] for size in dict.fromkeys(sizes)}
    rng = random.Random(11)
    tasks, votes = [], {}
    for index, size in enumerate(sizes):
        task = {"task_id": f"real-{index:03d}", "input_images": ["001.jpg"], "task_type": ["remove", "recolor", "add"][index % 3],
                "instruction": f"Edit {index} at {size[0]}x{size[1]}.", "width": size[0], "height": size[1]}
        tasks.append(task)
        write_bytes(workdir / "images" / task["task_id"] / "001.jpg", with_comment(bases[size][0], task["task_id"]))
        for repeat in range(1, REPEATS + 1):
            write_candidate(workdir / "out", "real", REAL_MODEL, task, repeat, bases[size], rng)
            votes[(task["task_id"], REAL_MODEL, repeat)] = rng.random() < 0.4
    (workdir / "real.json").write_text(json.dumps(tasks))
    judgements: dict = {}
    for (task_id, _, repeat), passed in votes.items():
        judgements.setdefault(task_id, {}).setdefault("M01", {})[f"{repeat:03d}.jpg"] = {"verdict": "PASS" if passed else "FAIL"}
    (workdir / "labels.json").write_text(json.dumps({"schema_version": 2, "models": {"M01": REAL_MODEL},
                                                      "judgements": judgements}))
    stamp.write_text(FIXTURE_VERSION)
    return time.monotonic() - started


def bench_real(workdir: Path) -> None:
    built = make_real_benchmark(workdir)
    print(f"500-real fixture: {f'built in {built:.1f} s' if built else 'reused'} ({workdir})")
    shutil.rmtree(workdir / "report", ignore_errors=True)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--model", REAL_MODEL,
               "--tasks", "real=real.json", "--images-base", "images", "--outputs", "out",
               "--judge", "labels:labels.json", "--html", "report/report.html"]
    _, first = timed(command, workdir)
    _, rerun = timed(command, workdir)
    print(f"500-real replay with --html: {first:.1f} s, its images built; a rerun, its images reused, {rerun:.1f} s")
    print_folder(workdir / "report", "500-real", REAL_GOAL_MB)


def bench_small(workdir: Path, workers: int, size: tuple[int, int]) -> None:
    make_benchmark(workdir, size)
    code, elapsed = run_benchmark(workdir, workers)
    print(f"500 run: exit status {code}, {elapsed:.1f} s with -n {workers}")
    print_folder(workdir / "report", "500")
    seconds = chromium_load_seconds(workdir / "report" / "report.html")
    if seconds is not None:
        print(f"500 chromium usable after: {seconds:.2f} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("500", "500-real", "7000", "all"), default="all")
    parser.add_argument("--workdir", type=Path, help="where to build and run (default: a temporary folder); "
                        "the 7000-candidate fixture in it is reused")
    parser.add_argument("--workers", type=int, default=2, help="-n for the 500-candidate case")
    parser.add_argument("--size", default="512x384", help="image size WxH of the 500-candidate case (default 512x384)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--html-views", type=int, help="passed on to the 7000-candidate runs (default: the plugin's)")
    parser.add_argument("--replays-only", action="store_true", help="7000: the two replays without --html only")
    parser.add_argument("--with-test-plugins", action="store_true",
                        help="7000: keep the test extra's pytest plugins loaded (" + ", ".join(TEST_EXTRA_PLUGINS) + ")")
    args = parser.parse_args(argv)
    global REPLAYS_ONLY, WITH_TEST_PLUGINS
    REPLAYS_ONLY, WITH_TEST_PLUGINS = args.replays_only, args.with_test_plugins
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hypeedit-bench-report-"))
    size = tuple(int(v) for v in args.size.split("x"))
    try:
        if args.case in ("500", "all"):
            bench_small(workdir / "small", args.workers, size)
        if args.case in ("500-real", "all"):
            bench_real(workdir / "real")
        if args.case in ("7000", "all"):
            bench_large(workdir / "large", args.html_views)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"kept: {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
