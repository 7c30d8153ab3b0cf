"""Putting a run together at configure time: config, markers, runner, up-front checks.

Everything that can be wrong before the first paid call is checked here, on
the controller, so a bad task file, a missing image, a labels file naming an
unknown model or a missing API key is one clear usage error, not 500 errors.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..engine.budget import Budget
from ..config import RunConfig, build_run_config
from ..errors import ConfigError
from ..judges.base import Judge
from ..providers.base import Provider
from ..registry import ModelSpec
from ..secrets import register_key_variables
from ..engine.runner import Runner, refused
from .stash import RUN_KEY, RUNNER_KEY, run_id
from ..engine.store import Store
from ..tasks import CheckedImages, Task, all_task_types, reference_image_paths


def configure_run(config: pytest.Config, *, controller: bool) -> RunConfig:
    extra = [entry for entries in config.hook.pytest_hypeedit_add_models(config=config) for entry in entries or []]
    run = build_run_config(config.option, Path(config.invocation_params.dir), extra)
    config.stash[RUN_KEY] = run
    for task_type in all_task_types(run.splits):
        config.addinivalue_line("markers", f"{task_type}: HYPE-EDIT-1 tasks of type {task_type!r}")
    runner = build_runner(config, run)
    config.stash[RUNNER_KEY] = runner
    if controller and not config.option.collectonly:
        check_retirements(config, run, runner)  # before any image is fetched: nothing to do for a retired id
        check_reference_images(run, progress=startup_progress(config))
        check_keys(run, runner)
        check_judge(run, runner)  # builds the judge now: a bad labels file or judge spec is a usage error
    return run


def build_runner(config: pytest.Config, run: RunConfig) -> Runner:
    images: dict[str, list[Path]] = {}

    def references(task: Task) -> list[Path]:
        key = f"{task.split}/{task.task_id}"
        if key not in images:  # once per task and process, not once per repeat
            split = next(s for s in run.splits if s.name == task.split)
            images[key] = reference_image_paths(task, run.images_base_for(split), run.cache_dir, verify=False)
        return images[key]

    state_dir = configure_runtime(config, run)
    return Runner(
        store=Store(run.outputs),
        make_provider=lambda spec: make_provider(config, spec),
        make_judge=lambda: make_judge(config, run),
        references=references,
        rejudge=run.rejudge,
        budget=Budget(state_dir / "budget", run.budget) if run.budget is not None else None,
    )


def configure_runtime(config: pytest.Config, run: RunConfig) -> Path:
    """Tell the HTTP adapters the run's limits and folders; return the per-run directory every xdist
    worker shares (budget ledger, rate-limiter files), named by the run id the controller hands out."""
    from ..providers import runtime

    state_dir = run.cache_dir / "runs" / run_id(config)
    runtime.configure(runtime.Runtime(state_dir=state_dir, cache_dir=run.cache_dir / "prepared",
                                      limits=run.limits_for))
    return state_dir


def make_provider(config: pytest.Config, spec: ModelSpec) -> Provider:
    provider = config.hook.pytest_hypeedit_make_provider(config=config, spec=spec)
    if provider is None:
        raise ConfigError(f"model {spec.name}: no provider for route {spec.route!r}")
    register_key_variables(provider.key_env)  # a plugin's route may read its key from a variable of its own
    return provider


def make_judge(config: pytest.Config, run: RunConfig) -> Judge:
    """The judge of ``--judge``: each juror through the make-judge hook, a majority when several."""
    from .. import judges

    def juror(name: str, argument: str | None) -> Judge | None:
        judge = config.hook.pytest_hypeedit_make_judge(config=config, name=name, argument=argument)
        if judge is not None:
            register_key_variables(judge.key_env)
        return judge

    return judges.make_judge(run.judge, judge_options(config, run), factory=juror)


def judge_options(config: pytest.Config, run: RunConfig):
    from ..judges import JudgeOptions

    return JudgeOptions(openai_base_url=config.option.hypeedit_judge_base_url, known_models=tuple(run.registry.models),
                        cache_dir=run.cache_dir)


def builtin_judge_for(config: pytest.Config, name: str, argument: str | None) -> Judge:
    from .. import judges

    return judges.builtin_judge(name, argument, judge_options(config, config.stash[RUN_KEY]))


def check_reference_images(run: RunConfig, progress=None) -> None:
    """Fetch (once, into the cache) and decode every reference image before anything is paid for.

    Tasks are fetched eight at a time; an image decoded by an earlier run (same size and time) is not
    decoded again.  ``progress(done, total)`` is told as tasks are ready."""
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

    checked = CheckedImages(run.cache_dir / "checked-images.json")
    jobs = [(task, run.images_base_for(split)) for split in run.splits for task in split.tasks]
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="hypeedit-fetch") as fetcher:
        futures = [fetcher.submit(reference_image_paths, task, base, run.cache_dir, verify=True, checked=checked)
                   for task, base in jobs]
        pending, done = set(futures), 0
        while pending:
            finished, pending = wait(pending, timeout=0.2, return_when=FIRST_EXCEPTION)
            done += len(finished)
            failed = next((f for f in futures if f.done() and f.exception() is not None), None)
            if failed is not None:
                fetcher.shutdown(cancel_futures=True)
                checked.save()
                failed.result()  # the ImageError naming the file and the task
            if progress is not None:
                progress(done, len(futures))
    checked.save()


def startup_progress(config: pytest.Config):
    """A line saying how far the reference images are, when fetching them takes a moment (none under -q)."""
    import time

    from ..report.progress import LineWriter

    if config.get_verbosity() < 0:
        return None
    started, shown = time.monotonic(), {}

    def show(done: int, total: int) -> None:
        elapsed = time.monotonic() - started
        if elapsed < 0.5 and not shown:
            return  # a quick start (everything cached) says nothing
        writer = shown.setdefault("writer", LineWriter())
        final = done >= total
        writer.draw(f"hypeedit: reference images of {done}/{total} tasks ready ({elapsed:.1f} s)", final=final)
        if final:
            writer.close()

    return show


def check_keys(run: RunConfig, runner: Runner) -> None:
    """A route that must be called needs its key now, before any call; a run from disk needs none."""
    from ..secrets import key_for

    for spec in run.models:
        if any(runner.needs_call(*key) for key in candidate_keys(run, spec)):
            provider_class = type(runner.provider(spec))
            if provider_class.key_env:
                key_for(spec.route, provider_class.key_env)


def check_retirements(config: pytest.Config, run: RunConfig, runner: Runner) -> None:
    """A model whose provider id is past its shutdown date (retirements.yaml) is a usage error when some of
    its candidates still need a call; one within 30 days of it is warned about at the start of the run."""
    from .. import retirements
    from .retirement import RetirementNotice

    models, day, warnings = list(run.registry.models.values()), retirements.today(), []
    for spec in run.models:
        state, found = retirements.check(spec, models, day)
        if state == "retired" and any(runner.needs_call(*key) for key in candidate_keys(run, spec)):
            raise found
        if state == "retiring":
            warnings.append(found)
    if warnings:
        config.pluginmanager.register(RetirementNotice(warnings), "hypeedit-retirements")


def check_judge(run: RunConfig, runner: Runner) -> None:
    """The judge's key and what it reads (the upstream judge script, downloaded and checked) are needed
    only when some candidate still has to be judged: a replay from disk needs neither."""
    judge = runner.judge
    if pending_verdicts(run, runner):
        check_judge_keys(judge)
        judge.prepare()  # a judge script that is not the pinned one is refused here, before any call


def check_judge_keys(judge: Judge) -> None:
    from ..secrets import find_key

    keyed = [juror for juror in getattr(judge, "jurors", [judge]) if juror.key_env]
    missing = [juror for juror in keyed if find_key(juror.key_env) is None]
    if missing:
        juror = missing[0]
        raise ConfigError(
            f"judge {juror.id} needs an API key: set {' or '.join(juror.key_env)} in the environment "
            "(or choose another --judge, e.g. labels:RATER.json)"
        )


def candidate_keys(run: RunConfig, spec: ModelSpec):
    for split in run.splits:
        for task in split.tasks:
            for repeat in range(1, run.repeats + 1):
                yield split.name, spec.name, task.task_id, repeat


def pending_verdicts(run: RunConfig, runner: Runner) -> bool:
    """Whether some candidate of the run still has to be judged (the judge's key is needed)."""
    for spec in run.models:
        for key in candidate_keys(run, spec):
            record = runner.store.read_record(*key)
            if record is None or not (refused(record) or runner.reusable_verdict(record)):
                return True
    return False
