"""Benchmark of the HTML report: a 500-candidate run (50 tasks x 10 repeats, identity + a labels judge).

    python bench/bench_report.py [--workdir DIR] [--workers 2] [--size 512x384] [--keep]

Prints the size of the report with its files (report.html + assets/ +
hypeedit-assets/), the run's wall time, and how long headless Chromium takes to
load the report (when /usr/bin/chromium and the playwright package are there).
No network: images are generated, the judge reads a labels file.
"""

from __future__ import annotations

import argparse
import json
import random
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


def make_image(path: Path, seed: int, size: tuple[int, int]) -> None:
    """A WebP with shapes and noise, so it compresses like a photo-ish image rather than a flat fill."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    image = Image.effect_noise(size, 40).convert("RGB")
    draw = ImageDraw.Draw(image)
    for _ in range(12):
        x, y = rng.randrange(size[0]), rng.randrange(size[1])
        colour = tuple(rng.randrange(256) for _ in range(3))
        draw.ellipse((x, y, x + rng.randrange(20, 160), y + rng.randrange(20, 160)), fill=colour)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="WEBP", quality=80)


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
    started = time.monotonic()
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True,
                          env={**_env(), "HYPEEDIT_CACHE_DIR": str(workdir / "cache")})
    elapsed = time.monotonic() - started
    print("\n".join(done.stdout.splitlines()[-8:]))
    return done.returncode, elapsed


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


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
        started = time.monotonic()
        page.goto(report.as_uri(), wait_until="load")
        page.wait_for_selector("svg.hypeedit-chart")
        page.wait_for_selector(".hypeedit-gallery img")
        elapsed = time.monotonic() - started
        rows = page.locator("tbody.results-table-row").count()
        browser.close()
    print(f"chromium: {rows} result rows rendered")
    return elapsed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="where to build and run (default: a temporary folder)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--size", default="512x384", help="image size WxH (default 512x384)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hypeedit-bench-report-"))
    size = tuple(int(v) for v in args.size.split("x"))
    try:
        make_benchmark(workdir, size)
        code, elapsed = run_benchmark(workdir, args.workers)
        total, count = report_size(workdir / "report")
        print(f"run: exit status {code}, {elapsed:.1f} s for {TASKS * REPEATS} candidates with -n {args.workers}")
        print(f"report + files: {total / 1e6:.2f} MB in {count} files "
              f"(report.html alone {(workdir / 'report/report.html').stat().st_size / 1e6:.2f} MB)")
        seconds = chromium_load_seconds(workdir / "report" / "report.html")
        if seconds is not None:
            print(f"chromium load: {seconds:.2f} s")
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"kept: {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
