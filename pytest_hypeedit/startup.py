"""Putting a run together at configure time: config, markers, runner, up-front checks.

Everything that can be wrong before the first paid call is checked here, on
the controller, so a bad task file, a missing image, a labels file naming an
unknown model or a missing API key is one clear usage error, not 500 errors.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .engine.budget import Budget
from .config import RunConfig, build_run_config
from .errors import ConfigError
from .judges.base import Judge
from .providers.base import Provider
from .registry import ModelSpec
from .secrets import register_key_variables
from .engine.runner import Runner, refused
from .stash import RUN_KEY, RUNNER_KEY, run_id
from .engine.store import Store
from .tasks import Task, all_task_types, reference_image_paths


def configure_run(config: pytest.Config, *, controller: bool) -> RunConfig:
    extra = [entry for entries in config.hook.pytest_hypeedit_add_models(config=config) for entry in entries or []]
    run = build_run_config(config.option, Path(config.rootpath), extra)
    config.stash[RUN_KEY] = run
    for task_type in all_task_types(run.splits):
        config.addinivalue_line("markers", f"{task_type}: HYPE-EDIT-1 tasks of type {task_type!r}")
    runner = build_runner(config, run)
    config.stash[RUNNER_KEY] = runner
    if controller and not config.option.collectonly:
        check_reference_images(run)
        check_keys(run, runner)
        check_judge_keys(run, runner)  # builds the judge now: a bad labels file or judge spec is a usage error
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
    from .providers import runtime

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
    from . import judges

    def juror(name: str, argument: str | None) -> Judge | None:
        judge = config.hook.pytest_hypeedit_make_judge(config=config, name=name, argument=argument)
        if judge is not None:
            register_key_variables(judge.key_env)
        return judge

    return judges.make_judge(run.judge, judge_options(config, run), factory=juror)


def judge_options(config: pytest.Config, run: RunConfig):
    from .judges import JudgeOptions

    return JudgeOptions(openai_base_url=config.option.hypeedit_judge_base_url, known_models=tuple(run.registry.models))


def builtin_judge_for(config: pytest.Config, name: str, argument: str | None) -> Judge:
    from . import judges

    return judges.builtin_judge(name, argument, judge_options(config, config.stash[RUN_KEY]))


def check_reference_images(run: RunConfig) -> None:
    """Fetch (once, into the cache) and decode every reference image before anything is paid for."""
    for split in run.splits:
        base = run.images_base_for(split)
        for task in split.tasks:
            reference_image_paths(task, base, run.cache_dir, verify=True)


def check_keys(run: RunConfig, runner: Runner) -> None:
    """A route that must be called needs its key now, before any call; a run from disk needs none."""
    from .secrets import key_for

    for spec in run.models:
        if any(runner.needs_call(*key) for key in candidate_keys(run, spec)):
            provider_class = type(runner.provider(spec))
            if provider_class.key_env:
                key_for(spec.route, provider_class.key_env)


def check_judge_keys(run: RunConfig, runner: Runner) -> None:
    """The judge's key too is needed only when some candidate still has to be judged."""
    from .secrets import find_key

    judge = runner.judge
    keyed = [juror for juror in getattr(judge, "jurors", [judge]) if juror.key_env]
    missing = [juror for juror in keyed if find_key(juror.key_env) is None]
    if missing and pending_verdicts(run, runner):
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
