"""The batch tier on the public split's shape: gpt-image-2 and gemini-3-pro-preview with ``--tier batch`` against
loopback fakes of OpenAI's Files + Batch APIs and Gemini's Batch mode (tests/support/providers_fakes/openai_batch.py,
tests/support/genai_fakes/gemini_batch.py), each batch taking at least ``--ready`` seconds on the server.

Prints per model the run's spend at the batch tier (the results' ``spent``, and what the fake billed) against what
the standard tier would have cost for the same calls, the uploads (references, input files), batches and polls,
and the run's wall time against the servers' completion time (first batch created to last batch done), and the
pytest process's peak memory (its maximum resident set).  The fakes run in this process and hold the results
files; the run is a pytest subprocess, and the peak is its own (``RUSAGE_CHILDREN``), not the fakes'.
``--image-bytes`` makes each returned image a PNG of about that size (noise, which does not compress), ``--side N``
an N x N one: the whole split in one batch of 2K PNGs, to show that a batch's results are read line by line and
each image written to disk before the next line is read (providers/batch_results.py), not held whole:

    python bench/bench_batch.py [--tasks 50] [--repeats 10] [--ready 5] [--workers 0]
    python bench/bench_batch.py --models gpt-image-2 --image-bytes 4000000 --ready 0   # 500 lines of 4 MB PNGs
    python bench/bench_batch.py --models gpt-image-2 --side 2048 --ready 0   # 500 lines of 2K PNGs (12.6 MB each)
    python bench/bench_batch.py --models gpt-image-2 --side 2048 --ready 0 --tasks 10   # 100 lines
    python bench/bench_batch.py --models gemini-3-pro-preview --side 2048 --ready 0 [--tasks 10]

Measured on 2 loaded cores, peak of the pytest process (wall times are the machine's load, not the plugin's):
gpt-image-2 at ``--side 2048``, 100 lines (1.68 GB of output files) 321 MB, 500 lines (8.39 GB) 460 MB; with tiny
images 163 MB and 251 MB: the 2K images add 158 MB at 100 lines and 209 MB at 500, the rest grows with the
candidates (items, records, a waiting thread each).  gemini-3-pro-preview at ``--side 2048``: 100 lines 334 MB,
500 lines 483 MB, where gpt-image-2 took 313 MB and 435 MB on the same day: its adapter keeps the preview of the
image it checks (providers/gemini.py ``decoded``), from which the pixel signals are measured.  Before it did, each
candidate was decoded again from its file for the signals and those waiting for their turn to be compared held
their previews (engine/signals.py): 352 MB and 544 MB that day (366 MB and 599 MB when first measured), up to 30
and 79 previews alive at once, 7 since.  Without glibc's fixed mmap threshold (engine/memory.py), gpt-image-2's
100 lines took 446 and 601 MB in two runs and 500 lines 865 MB.

The tasks are the public split (sizes, reference counts and instructions as they are): ``HYPEEDIT_PUBLIC_SPLIT``
names a local copy of its task file, else the plugin's own download at its pinned commit is used (checked against its
sha256 and cached, as ``--tasks public`` does).  Small synthetic reference images stand in for the CDN's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS / "support"))  # the fakes and helpers
from benchdata import write_labels  # noqa: E402
from genai_fakes.gemini_batch import FakeGeminiBatch  # noqa: E402
from providers_fakes.openai_batch import FakeOpenAIBatch  # noqa: E402

MODELS = ("gpt-image-2", "gemini-3-pro-preview")
GEMINI_KEY = "fake-gemini-key-bench-0123456789"
#: max_image_mb: the room a purchase in flight reserves on the disk is its image's cap (engine/room.py): 1,000 in
#: flight at the default 96 MB would ask for 97 GB; the bench's images are at most a few MB.
QUICK = {"batch_linger_s": 2.0, "batch_poll_s": 0.5, "batch_poll_max_s": 2.0, "max_image_mb": 16}
FORMATS = {"webp": "WEBP", "png": "PNG", "jpg": "JPEG", "jpeg": "JPEG"}


def public_task_file() -> Path:
    """``HYPEEDIT_PUBLIC_SPLIT``, else the public split as the plugin downloads it (pytest_hypeedit/splits/public.yaml:
    the pinned commit and sha256; docs/reference/formats.md)."""
    local = os.environ.get("HYPEEDIT_PUBLIC_SPLIT")
    if local:
        return Path(local)
    from pytest_hypeedit.config import default_cache_dir
    from pytest_hypeedit.tasks import default_sources, load_split

    return load_split(default_sources()[0], default_cache_dir()).path


def prepare(folder: Path, tasks: int, repeats: int, models: tuple[str, ...] = MODELS) -> list[str]:
    """The public split's first ``tasks`` tasks with small references, labels and quick batch settings."""
    from pytest_hypeedit.registry import load_registry

    task_list = json.loads(public_task_file().read_text())[:tasks]
    for index, task in enumerate(task_list):
        for number, name in enumerate(task["input_images"]):
            path = folder / "images" / task["task_id"] / name
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (96, 64), (index * 5 % 255, 90 + 20 * number, 160)).save(
                path, format=FORMATS.get(name.rsplit(".", 1)[-1].lower(), "PNG"))
    (folder / "public.json").write_text(json.dumps(task_list))
    write_labels(folder / "r1.json", {(t["task_id"], m, r): r % 3 != 0 for t in task_list for m in MODELS
                                      for r in range(1, repeats + 1)})
    registry = load_registry()
    entries = {m: {"options": {**registry.get(m).options, **QUICK}} for m in MODELS}
    (folder / "quick.yaml").write_text(json.dumps({"models": entries}))
    return ["-q", "-p", "no:cacheprovider", "--tasks", "public.json", "--images-base", "images",
            "--repeats", str(repeats), "--outputs", "out", "--judge", "labels:r1.json", "--models-file",
            "quick.yaml", "--tier", "batch", "--concurrency", str(2 * tasks * repeats),
            *[arg for m in models for arg in ("--model", m)]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--ready", type=float, default=5.0, help="seconds each batch takes on the server")
    parser.add_argument("--workers", type=int, default=0, help="pytest-xdist workers (0: none)")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--image-bytes", type=int, default=0, help="each returned image a PNG of about this size "
                        "(0: a tiny one)")
    parser.add_argument("--side", type=int, default=0, help="each returned image a PNG of N x N noise pixels, "
                        "stored (2048: a 2K PNG of 12.6 MB, more than a photo's); overrides --image-bytes")
    args = parser.parse_args()
    if args.side:
        args.image_bytes = 3 * args.side * args.side  # noise_png: a square of side sqrt(bytes / 3), RGB, stored
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIBatch() as openai, \
            FakeGeminiBatch(expected_key=GEMINI_KEY) as gemini:
        folder = Path(tmp) / "run"
        folder.mkdir()
        command = prepare(folder, args.tasks, args.repeats, tuple(args.models)) + \
            (["-n", str(args.workers)] if args.workers else [])
        openai.ready_after = gemini.ready_after = args.ready
        openai.image_bytes = gemini.image_bytes = args.image_bytes
        env = {**os.environ, "HYPEEDIT_CACHE_DIR": str(Path(tmp) / "cache"),
               "HYPEEDIT_OPENAI_BASE_URL": openai.base, "OPENAI_API_KEY": openai.key,
               "HYPEEDIT_GEMINI_BASE_URL": gemini.url, "GEMINI_API_KEY": GEMINI_KEY}
        env.pop("GOOGLE_API_KEY", None)
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "pytest", *command], cwd=folder, env=env,
                              capture_output=True, text=True)
        wall = time.monotonic() - started
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KB on Linux
        if "run complete" not in done.stdout:
            print(done.stdout[-3000:], done.stderr[-2000:])
            raise SystemExit("the run did not complete")
        rows = {row["model"]: row for row in json.loads((folder / "out" / "results.json").read_text())["rows"]}
        report(args, rows, openai, gemini, wall, started)
        print(f"  peak memory of the pytest process {peak_mb:.0f} MB"
              + (f"; each image {image_shape(args)}, gpt-image-2's output files "
                 f"{sum(openai.file_size(f['data']) for f in openai.files.values() if f['purpose'] == 'batch_output') / 1e9:.2f} GB"
                 if args.image_bytes else ""))


def image_shape(args) -> str:
    if args.side:
        return f"a {args.side}x{args.side} PNG ({args.image_bytes / 1e6:.1f} MB)"
    return f"about {args.image_bytes / 1e6:g} MB"


def report(args, rows: dict, openai: FakeOpenAIBatch, gemini: FakeGeminiBatch, wall: float, started: float) -> None:
    candidates = args.tasks * args.repeats
    print(f"{args.tasks} tasks x {args.repeats} repeats x {len(args.models)} models at --tier batch, each batch "
          f"{args.ready:g} s on the server, {args.workers or 'no'} xdist workers")
    standard_openai = openai.billed * 2  # the batch tier bills half the same tokens [T3]
    standard_gemini = sum(0.134 for _ in range(candidates))  # gemini-3-pro-image at 2K, standard [G24]
    for model, fake, standard in (("gpt-image-2", openai, standard_openai),
                                  ("gemini-3-pro-preview", gemini, standard_gemini)):
        if model not in rows:
            continue
        row = rows[model]
        print(f"  {model}: {row['candidates']} candidates, {row['errors']} errors; spent ${row['spent']:.2f} at "
              f"batch (the server billed ${fake.billed:.2f}); standard would have cost ${standard:.2f}")
    inputs = gemini.uploads("jsonl")
    print(f"  uploads: openai {len(openai.uploads('vision'))} references + {len(openai.uploads('batch'))} input "
          f"files; gemini {gemini.uploads() - inputs} references + {inputs} input files (else inline)")
    print(f"  batches: openai {openai.creations}, gemini {gemini.creations}; polls: openai {openai.polls}, "
          f"gemini {gemini.polls}")
    completed = openai.completed_at + gemini.completed_at
    server = max(completed) - started if completed else float("nan")
    print(f"  wall time {wall:.1f} s (pytest start to exit); the servers' last batch done {server:.1f} s after the "
          f"start, each batch {args.ready:g} s from its creation")


if __name__ == "__main__":
    main()
