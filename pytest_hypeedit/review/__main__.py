"""hypeedit-review: label candidates PASS/FAIL in the browser, blind to the model and to the judge.

    hypeedit-review --outputs OUT --rater ann [--tasks PATH] [--images-base DIR|URL]
                    [--labels DIR|FILE] [--seed N] [--sample N|P% [--sample-seed S]]
                    [--host 127.0.0.1] [--port 8765] [--allow-host NAME] [--allow-missing-references]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..errors import HypeEditError, ImageError, InputError
from ..tasks import default_sources, is_plain_name, load_split, parse_tasks_option, reference_image_paths

if TYPE_CHECKING:
    from filelock import FileLock

    from ..tasks import Split, Task
    from .server import ReviewApp, ReviewServer

DEFAULT_PORT = 8765


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hypeedit-review", description=__doc__.splitlines()[0])
    parser.add_argument("--outputs", required=True, type=Path,
                        help="the plugin's outputs folder (<outputs>/<split>/<model>/<task>/NNN.ext; "
                             "a release bought aside, <model>@<release id>/, is a model of its own)")
    parser.add_argument("--rater", required=True, help="your name: the labels file is <rater>.json")
    parser.add_argument("--tasks", help="[NAME=]PATH|URL of the task file, or a split manifest (default: the public split)")
    parser.add_argument("--images-base", help="folder or URL holding <task_id>/<image> (default: the split's own)")
    parser.add_argument("--labels", type=Path, help="labels folder or .json file (default: <outputs>/../judgements/<split>/<rater>.json)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the aliases and the order (default 0)")
    parser.add_argument("--sample", metavar="N|P%",
                        help="review a random sample of the judged candidates (a verdict in their record) for "
                             "calibration (pytest --calibrate): N of them, or P%% of them, stratified by model; its "
                             "design goes beside the labels (sample-design.json), and every rater of that folder "
                             "then reviews the same sample")
    parser.add_argument("--sample-seed", type=int, default=0, metavar="S",
                        help="seed of the sample (default 0); the same outputs, size and seed draw the same sample")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        help="another name the server is reached by (a proxy, a DNS name), for its Host and Origin "
                             "checks; repeat for several")
    parser.add_argument("--allow-missing-references", action="store_true",
                        help="start even when some tasks' reference images cannot be found (those tasks are shown "
                             "with a warning in place of their references); by default the app does not start")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port (default {DEFAULT_PORT}; 0 = any free port). Restart on the same port so the "
                             "browser can resend verdicts it holds")
    parser.add_argument("--cache-dir", type=Path, help="where downloaded tasks and images are kept")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    if not is_plain_name(args.rater):
        parser.error(f"--rater {args.rater!r}: use a plain name (letters, digits, '.', '_', '-'); it names the labels file")
    return args


def labels_path(args: argparse.Namespace, split: str) -> Path:
    outputs: Path = args.outputs
    labels: Path | None = args.labels
    if labels is None:
        return outputs.resolve().parent / "judgements" / split / f"{args.rater}.json"
    if labels.suffix == ".json":
        return labels
    return labels / f"{args.rater}.json"


def cache_dir(args: argparse.Namespace) -> Path:
    given: Path | None = args.cache_dir
    if given:
        return given
    if os.environ.get("HYPEEDIT_CACHE_DIR"):
        return Path(os.environ["HYPEEDIT_CACHE_DIR"])
    import platformdirs

    return Path(platformdirs.user_cache_dir("pytest-hypeedit"))


def load_tasks(args: argparse.Namespace) -> tuple[Split, str]:
    source = parse_tasks_option(args.tasks) if args.tasks else default_sources()[0]
    split = load_split(source, cache_dir(args))
    images_base = args.images_base or source.images_base
    if images_base is None:
        raise InputError(f"--tasks {args.tasks}: no images base known for split {split.name!r}; pass --images-base")
    return split, images_base


def reference_paths(tasks: Sequence[Task], images_base: str, cache: Path, warnings: list[str]) -> dict[str, list[Path]]:
    """Local reference images per task; a task whose images cannot be had is shown without them."""
    paths: dict[str, list[Path]] = {}
    for task in tasks:
        try:
            paths[task.task_id] = reference_image_paths(task, images_base, cache)
        except (ImageError, InputError) as exc:
            warnings.append(f"task {task.task_id}: reference images unavailable ({exc})")
    return paths


def build_app(args: argparse.Namespace, split: Split, images_base: str, path: Path) -> tuple[ReviewApp, list[str]]:
    """Everything but the socket: catalog, labels store, image table."""
    from .. import labels
    from .catalog import build_catalog
    from .labels_store import LabelsStore
    from .sampling import restrict_to_sample
    from .server import ImageTable, ReviewApp

    doc = labels.load_document(path) if path.exists() else None
    catalog = build_catalog(args.outputs, split.name, split.tasks, seed=args.seed, rater=args.rater,
                            existing_aliases=doc["models"] if doc else None)
    catalog, design = restrict_to_sample(catalog, args, path.parent)
    warnings = list(catalog.warnings)
    shown = {c.task_id for c in catalog.candidates}
    refs = reference_paths([t for t in split.tasks if t.task_id in shown], images_base, cache_dir(args), warnings)
    # restrict_to_sample's design always names the file it was read from or written to
    meta = {"sample_design": design.path.name, "sample_seed": design.seed} if design else {}  # type: ignore[union-attr]
    store = LabelsStore.open(path, catalog, doc, dataset=split.name, rater=args.rater,
                             outputs_dir=str(args.outputs.resolve()), seed=args.seed, **meta)
    roots = allowed_roots(args, split.name, images_base)
    return ReviewApp(catalog, store, ImageTable(catalog, refs, roots), args.rater), warnings


def allowed_roots(args: argparse.Namespace, split: str, images_base: str) -> dict[str, list[Path]]:
    """The folders the app may serve images from, resolved: a file (or a link) that leads elsewhere is not served."""
    from ..tasks import is_url

    references = [cache_dir(args).resolve()]
    if not is_url(images_base):
        references.append(Path(images_base).resolve())
    return {"candidate": [(args.outputs / split).resolve()], "reference": references}


def lock_labels_file(path: Path) -> FileLock:
    """One server per rater file: a second one would overwrite the first one's verdicts."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(path) + ".lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise InputError(f"{path}: another hypeedit-review is writing this rater's file; stop it first") from None
    return lock


def main(argv: list[str] | None = None) -> int:
    from .server import exposure_warning, make_server

    args = parse_args(argv)
    try:
        split, images_base = load_tasks(args)
        path = labels_path(args, split.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = lock_labels_file(path)  # noqa: F841 (held for the life of the process)
        app, warnings = build_app(args, split, images_base, path)
    except HypeEditError as exc:
        print(f"hypeedit-review: error: {exc}", file=sys.stderr)
        return 2
    for warning in warnings:
        print(f"hypeedit-review: warning: {warning}", file=sys.stderr)
    if not app.catalog.candidates:
        print(f"hypeedit-review: error: no candidates under {args.outputs / split.name} "
              f"(<outputs>/<split>/<model>/<task_id>/NNN.png|webp|jpg); check --outputs and --tasks", file=sys.stderr)
        return 2
    missing = missing_references(app)
    if missing and not args.allow_missing_references:
        print(missing_references_error(missing, images_base), file=sys.stderr)
        return 2
    try:
        server = make_server(app, args.host, args.port, verbose=args.verbose, allow_hosts=tuple(args.allow_host))
    except OSError as exc:
        print(f"hypeedit-review: error: cannot listen on {args.host}:{args.port} ({exc.strerror}); "
              "try another --port, or --port 0 for any free one", file=sys.stderr)
        return 2
    exposed = exposure_warning(args.host, server.server_address[1], args.rater)
    if exposed:
        print(f"hypeedit-review: warning: {exposed}", file=sys.stderr, flush=True)
    return serve(server, app, path)


def missing_references(app: ReviewApp) -> dict[str, list[str]]:
    """task id -> the reference images it lacks, for every task with a candidate to label: a rater must not
    judge an edit without its original."""
    missing: dict[str, list[str]] = {}
    for task_id in sorted({c.task_id for c in app.catalog.candidates}):
        task = app.catalog.tasks[task_id]
        servable = len(app.images.reference_images.get(task_id, []))
        if servable < len(task.input_images):
            missing[task_id] = (list(task.input_images) if not servable
                                else [f"{len(task.input_images) - servable} of {len(task.input_images)} images"])
    return missing


#: Tasks named one by one in the message, at most; the rest are counted.
MAX_MISSING_LINES = 20


def missing_references_error(missing: dict[str, list[str]], images_base: str) -> str:
    lines = [f"  task {task_id}: {', '.join(names)}" for task_id, names in list(missing.items())[:MAX_MISSING_LINES]]
    if len(missing) > MAX_MISSING_LINES:
        lines.append(f"  ... and {len(missing) - MAX_MISSING_LINES} more tasks")
    head = (f"hypeedit-review: error: the reference images of {len(missing)} task(s) cannot be found under "
            f"{images_base}, and a rater must not label an edit without its original:")
    tail = ("Fix --images-base (the folder or URL holding <task_id>/<image>), or pass --allow-missing-references to "
            "start anyway (those tasks then say their references are missing).")
    return "\n".join([head, *lines, tail])


def serve(server: ReviewServer, app: ReviewApp, path: Path) -> int:
    address, port = server.server_address[:2]
    host = str(address)  # a TCP server's host is text (the standard library types it as text or bytes)
    shown_host = f"[{host}]" if ":" in host else host
    total, done = len(app.catalog.candidates), app.store.labelled_count()
    print(f"hypeedit-review: {total} candidates, {done} labelled by {app.rater}; verdicts go to {path}", flush=True)
    print(f"hypeedit-review: open http://{shown_host}:{port}/  (Ctrl+C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print(f"\nhypeedit-review: stopped; {app.store.labelled_count()} of {total} verdicts in {path}", flush=True)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
