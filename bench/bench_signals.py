"""CPU per candidate of the pixel diagnostics (engine/signals.py) at the tasks' real sizes.

    python bench/bench_signals.py [--rounds 5]

The public split's references are WebP of up to 5504 x 3072 pixels; models return about 2K images as PNG,
JPEG or WebP.  For each case prints the CPU time (process time, median of --rounds) of the signals of a candidate
just bought ("bought": the adapter has decoded it to check it anyway, so only its preview and the measures count),
then of one read back from disk (decoded once more), with its reference already reduced in the cache (every repeat but a task's first, in a process), of the first
candidate of a process whose cache folder holds the reduced reference (an xdist worker, a rerun), of the very first
candidate of a task (the reference decoded and reduced too), and the mean over a task's 10 repeats of one model
and over its 70 candidates of seven models, counting the very first (for candidates bought in the run, then
read from disk).  Goal: under 50 ms per candidate.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
from PIL import Image

from pytest_hypeedit.engine import signals

CASES = (  # (reference size, candidate size): the public split's largest landscape target, and a square one
    ((5504, 3072), (2048, 1143)),
    ((4096, 4096), (2048, 2048)),
)
FORMATS = (("PNG", {}), ("JPEG", {"quality": 90}), ("WEBP", {"quality": 90}))


def photo(size: tuple[int, int], seed: int) -> Image.Image:
    """Photo-like content (smooth gradients, texture, noise): compresses and decodes like a real image."""
    w, h = size
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    u, v = x / w, y / h
    base = np.stack([200 * u + 30, 180 * v + 40, 128 + 90 * np.sin(9 * u + 5 * v)], axis=-1)
    texture = 25 * np.sin(x / 7.0)[..., None] * np.cos(y / 11.0)[..., None]
    image = np.clip(base + texture + rng.normal(0, 6, base.shape).astype(np.float32), 0, 255).astype(np.uint8)
    return Image.fromarray(image)


def cpu(call) -> float:
    started = time.process_time()
    call()
    return time.process_time() - started


def measure(folder: Path, reference_size, candidate_size, fmt: str, options: dict, rounds: int) -> dict[str, float]:
    reference = folder / f"ref-{reference_size[0]}.webp"
    if not reference.exists():
        photo(reference_size, 1).save(reference, "WEBP", quality=90)
    candidate = folder / f"cand-{candidate_size[0]}.{fmt.lower()}"
    photo(candidate_size, 2).save(candidate, fmt, **options)
    target = reference_size
    cold, disk, warm = [], [], []
    for round_ in range(rounds):
        measure_once = partial(signals.compute_signals, candidate, target, reference,
                               folder / f"cache-{fmt}-{candidate_size[0]}-{round_}")  # the run's cache folder
        signals.REFERENCES = signals._ReferenceCache()  # a new process, nothing on disk: the reference decoded
        cold.append(cpu(measure_once))
        signals.REFERENCES = signals._ReferenceCache()  # a new process (an xdist worker, a rerun): read from disk
        disk.append(cpu(measure_once))
        warm.append(statistics.median(cpu(measure_once) for _ in range(5)))
    with Image.open(candidate) as decoded:  # what the adapter's check has done already
        decoded.load()
        bought = statistics.median(
            cpu(lambda: signals.compute_signals(signals.preview_of(decoded), target, reference)) for _ in range(5))
    first, rest = statistics.median(cold), statistics.median(warm)
    return {"bought": bought, "cached": rest, "disk": statistics.median(disk), "first": first,
            "bought 70": (first + 69 * bought) / 70, "per 10": (first + 9 * rest) / 10, "per 70": (first + 69 * rest) / 70}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"CPU ms per candidate (median of {args.rounds}); reference WebP q90, common size {signals.COMMON_SIDE} px")
    print(f"{'reference':>11} {'candidate':>11} {'format':>6} {'bought':>7} {'bought, 70':>11} {'read back':>10} "
          f"{'ref on disk':>12} {'first':>8} {'mean of 10':>11} {'mean of 70':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for reference_size, candidate_size in CASES:
            for fmt, options in FORMATS:
                found = measure(Path(tmp), reference_size, candidate_size, fmt, options, args.rounds)
                print(f"{'x'.join(map(str, reference_size)):>11} {'x'.join(map(str, candidate_size)):>11} {fmt:>6} "
                      f"{1000 * found['bought']:>7.1f} {1000 * found['bought 70']:>11.1f} "
                      f"{1000 * found['cached']:>10.1f} {1000 * found['disk']:>12.1f} {1000 * found['first']:>8.1f} "
                      f"{1000 * found['per 10']:>11.1f} "
                      f"{1000 * found['per 70']:>11.1f}")


if __name__ == "__main__":
    main()
