"""Putting a run together at configure time: config, markers, runner, up-front checks.

Everything that can be wrong before the first paid call is checked here, on
the controller, so a bad task file, a missing image, a labels file naming an
unknown model or a missing API key is one clear usage error, not 500 errors.

The order: the options and the judge (a bad labels file), then every API key the run surely needs, before
anything is downloaded; then the task files (a download, for the public split); then the keys the tasks
show are needed (a model whose candidates are all on disk needs none), each proved with its provider's free
call (transport/keycheck.py: once per run, here on the controller, before any xdist worker starts); then the
judge's script (a download) and the reference images (downloads).  Nothing is paid for before all of it holds.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import pytest

from ..config import RunConfig, load_splits, run_config_of, split_sources
from ..engine.budget import Budget
from ..engine.means import Means
from ..engine.runner import Runner, refused
from ..engine.store import Store, probe_writable
from ..engine.survey import Survey
from ..errors import ConfigError
from ..judges.base import Judge
from ..options import settings_of
from ..providers.base import Provider
from ..registry import ModelSpec
from ..secrets import register_key_variables
from ..tasks import CheckedImages, Task, all_task_types, reference_image_paths
from ..transport.addresses import check_request_settings
from ..transport.keycheck import KeyProbe, prove_keys, rejections, warnings_of
from .releases import claim_folders, place_releases
from .stash import RUN_KEY, RUNNER_KEY, RUNTIME_KEY, SURVEY_KEY, run_id

if TYPE_CHECKING:
    from ..engine.jobs import Key
    from ..engine.records import Record
    from ..judges import JudgeOptions


def configure_run(config: pytest.Config, *, controller: bool) -> RunConfig:
    extra = [entry for entries in config.hook.pytest_hypeedit_add_models(config=config) for entry in entries or []]
    settings = settings_of(config)
    checking = controller and not settings.collect_only
    run = run_config_of(config, extra, load_tasks=False)
    config.stash[RUN_KEY] = run  # the judge's options come from it
    configure_runtime(config, run)  # and their runtime: the run's, passed in to the judge made below
    if controller:
        check_gates(config, run)  # a gate on a model, split or metric the run lacks: before any key, download or call
    if checking:  # a setting no request can be made with: a usage error naming it, not a call possibly paid
        check_request_settings(run.models, settings.judge_base_url)
    judge = make_judge(config, run) if checking else None  # a bad labels file or judge spec: a usage error now
    paying = checking and not settings.estimate  # an estimate needs no key
    if paying and judge is not None:  # paying implies checking, which made the judge
        check_keys_before_downloads(config, run, judge)
    run = dataclasses.replace(run, splits=load_splits(list(settings.tasks) or None, run.cache_dir))
    run = place_releases(config, run)  # each model's release in its own folder (engine/release.py)
    config.stash[RUN_KEY] = run
    for task_type in all_task_types(run.splits):
        config.addinivalue_line("markers", f"{task_type}: HYPE-EDIT-1 tasks of type {task_type!r}")
    if checking:
        check_state_writable(run, run_state_dir(config, run))  # before the runner makes its ledger there
    runner = build_runner(config, run, judge)
    config.stash[RUNNER_KEY] = runner
    if checking:
        # every check below, and the price line, asks the disk about the same candidates: each is read once
        disk = config.stash[SURVEY_KEY] = Survey(runner.planning)
        check_retirements(config, run, disk)  # before any image is fetched: nothing to do for a retired id
        if paying:
            check_keys(run, runner, disk, config)
        check_judge(run, runner, disk)
        check_outputs_writable(run, runner, disk)
        check_reference_images(run, progress=startup_progress(config))
        if paying:
            claim_folders(run)  # last: a run not accepted above has written nothing
    return run


def check_gates(config: pytest.Config, run: RunConfig) -> None:
    """Every ``--gate`` parses and names a model, split and metric this run measures (analysis/gates.py)."""
    from ..analysis.gates import RunScope, check_gates_apply, parse_gates

    settings = settings_of(config)
    scope = RunScope(models=tuple(spec.name for spec in run.models),
                     splits=tuple(source.name for source in split_sources(list(settings.tasks) or None)),
                     repeats=run.repeats, calibrated=bool(settings.calibrate),
                     intervals=settings.bootstrap > 0,
                     judge_controls=settings.judge_controls,
                     baseline=bool(settings.baseline),
                     labels=bool(settings.calibrate or settings.agreement))
    gates = parse_gates(list(settings.gates))
    check_gates_apply(gates, scope)
    if settings.sequential and gates:  # not accepted here, before any outputs folder is marked for a release
        from .early_stop import check_decidable

        check_decidable(gates)


def build_runner(config: pytest.Config, run: RunConfig, judge: Judge | None = None) -> Runner:
    images: dict[str, list[Path]] = {}

    def references(task: Task) -> list[Path]:
        key = f"{task.split}/{task.task_id}"
        if key not in images:  # once per task and process, not once per repeat
            split = next(s for s in run.splits if s.name == task.split)
            images[key] = reference_image_paths(task, run.images_base_for(split), run.cache_dir, verify=False)
        return images[key]

    state_dir = run_state_dir(config, run)
    return Runner(Means(
        store=Store(run.outputs, folders=run.folders),
        make_provider=lambda spec: make_provider(config, spec),
        make_judge=lambda: judge_of_the_run(config, run, judge),
        references=references,
        rejudge=run.rejudge,
        budget=Budget(state_dir / "budget", run.budget) if run.budget is not None else None,
        on_possibly_paid=run.possibly_paid,
        stability=stability_for(config, run),
        signals_from_disk=settings_of(config).signals,
        cache_dir=run.cache_dir,
        run_id=run_id(config),  # what the run bought: each ledger entry its calls write names it
    ))


def judge_of_the_run(config: pytest.Config, run: RunConfig, judge: Judge | None) -> Judge:
    """The judge each process (the controller, every xdist worker) judges with: ``judge`` (made at start-up on the
    controller) or one made now, its labels keyed for the releases ``run`` measures (its folders placed)."""
    from .human_labels import judge_for_this_run  # the labels' module, imported only when a judge is asked for

    return judge_for_this_run(judge if judge is not None else make_judge(config, run), run)


def stability_for(config: pytest.Config, run: RunConfig) -> dict[Key, int]:
    """--judge-stability N[xK]: which candidates are re-judged, the same in every process (seeded)."""
    from ..engine.stability import parse_stability_option, stability_sample

    wanted = parse_stability_option(settings_of(config).judge_stability)
    if wanted is None:
        return {}
    keys = [key for spec in run.models for key in candidate_keys(run, spec)]
    return stability_sample(keys, *wanted, seed=settings_of(config).bootstrap_seed or 0)


def configure_runtime(config: pytest.Config, run: RunConfig) -> None:
    """The run's provider runtime (its limits, folders, tier and batch collectors), kept in ``config.stash`` for
    the adapters, judges and route admissions the plugin makes; its state folder is the per-run directory every
    xdist worker shares (budget ledger, rate-limiter files), named by the run id the controller hands out."""
    from ..providers import runtime

    config.stash[RUNTIME_KEY] = runtime.Runtime(state_dir=run_state_dir(config, run),
                                                cache_dir=run.cache_dir / "prepared", limits=run.limits_for,
                                                tier=run.tier)


def run_state_dir(config: pytest.Config, run: RunConfig) -> Path:
    return run.cache_dir / "runs" / run_id(config)


# --------------------------------------------------------------------------- can the run keep what it buys?


def check_state_writable(run: RunConfig, state_dir: Path) -> None:
    """The cache and the run's state folder (budget ledger, limits, downloads land there first) take writes."""
    for folder, what in ((run.cache_dir, "the cache folder"), (state_dir, "the run's state folder")):
        _check_writable(folder, what, "--cache-dir DIR (or HYPEEDIT_CACHE_DIR)")


def check_outputs_writable(run: RunConfig, runner: Runner, disk: Survey) -> None:
    """Every folder a candidate, a record or a claim is written into takes writes, before anything is paid for.
    A run with nothing to buy may read a read-only outputs folder (a replay); the results file is always written."""
    _check_writable(run.results.parent, "the results folder", "--results PATH")
    blocked = next(((folder, problem) for folder in output_folders(run, runner.store)
                    if (problem := probe_writable(folder)) is not None), None)
    if blocked is not None and buys_anything(run, runner, disk):
        _not_writable(*blocked, "the outputs folder", "--outputs DIR")


def output_folders(run: RunConfig, store: Store) -> list[Path]:
    """The outputs folder, its claims folder, and each split, model and task folder that exists already."""
    folders = [run.outputs, store.claims_dir]
    for split in run.splits:
        for spec in run.models:
            model_dir = run.outputs / split.name / store.folder(split.name, spec.name)
            folders += [run.outputs / split.name, model_dir]
            folders += [store.task_dir(split.name, spec.name, t.task_id) for t in split.tasks]
    seen = dict.fromkeys(folders)
    return [folder for folder in seen if folder in (run.outputs, store.claims_dir) or folder.is_dir()]


def buys_anything(run: RunConfig, runner: Runner, disk: Survey) -> bool:
    """Whether some candidate still needs a paid call: its generation, or a paid judge's verdict."""
    for spec in run.models:
        for key in candidate_keys(run, spec):
            if disk.needs_call(key):
                return True
            record = disk.record(key)
            if record is not None and not refused(record) and runner.paid_verdict_needed(record):
                return True
    return False


def _check_writable(folder: Path, what: str, option: str) -> None:
    problem = probe_writable(folder)
    if problem is not None:
        _not_writable(folder, problem, what, option)


def _not_writable(folder: Path, problem: OSError, what: str, option: str) -> None:
    reason = problem.strerror or type(problem).__name__
    raise ConfigError(f"cannot write into {what} {folder} ({reason}): a run that cannot keep what it buys does not "
                      f"buy, and nothing was paid. Make it writable, or choose another with {option}, then rerun.")


def make_provider(config: pytest.Config, spec: ModelSpec) -> Provider:
    provider: Provider | None = config.hook.pytest_hypeedit_make_provider(config=config, spec=spec)
    if provider is None:
        raise ConfigError(f"model {spec.name}: no provider for route {spec.route!r}")
    register_key_variables(provider.key_env)  # a plugin's route may read its key from a variable of its own
    return provider


def make_judge(config: pytest.Config, run: RunConfig) -> Judge:
    """The judge of ``--judge``: each juror through the make-judge hook, a majority when several."""
    from .. import judges

    def juror(name: str, argument: str | None) -> Judge | None:
        judge: Judge | None = config.hook.pytest_hypeedit_make_judge(config=config, name=name, argument=argument)
        if judge is not None:
            register_key_variables(judge.key_env)
        return judge

    return judges.make_judge(run.judge, judge_options(config, run), factory=juror)


def judge_options(config: pytest.Config, run: RunConfig) -> JudgeOptions:
    from ..judges import JudgeOptions

    return JudgeOptions(openai_base_url=settings_of(config).judge_base_url, known_models=tuple(run.registry.models),
                        cache_dir=run.cache_dir, tier=run.judge_tier, runtime=config.stash.get(RUNTIME_KEY, None))


def builtin_judge_for(config: pytest.Config, name: str, argument: str | None) -> Judge:
    from .. import judges

    return judges.builtin_judge(name, argument, judge_options(config, config.stash[RUN_KEY]))


def check_reference_images(run: RunConfig, progress: Callable[[int, int], None] | None = None) -> None:
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


def startup_progress(config: pytest.Config) -> Callable[[int, int], None] | None:
    """A line saying how far the reference images are, when fetching them takes a moment (none under -q)."""
    import time

    from ..report.progress import LineWriter

    if config.get_verbosity() < 0:
        return None
    started, shown = time.monotonic(), dict[str, LineWriter]()

    def show(done: int, total: int) -> None:
        elapsed = time.monotonic() - started
        if elapsed < 0.5 and not shown:
            return  # a quick start (everything cached) says nothing
        if "writer" not in shown:  # once: each LineWriter opens its own copy of stdout, closed at the end
            shown["writer"] = LineWriter()
        writer = shown["writer"]
        final = done >= total
        writer.draw(f"hypeedit: reference images of {done}/{total} tasks ready ({elapsed:.1f} s)", final=final)
        if final:
            writer.close()

    return show


def check_keys_before_downloads(config: pytest.Config, run: RunConfig, judge: Judge) -> None:
    """Before any task file, judge script or reference image is fetched: a model with nothing in its outputs
    folders will be called, so its key must be set; when no model has anything there, every candidate needs
    a verdict, so the judge's key too.  A model with something on disk may need no call at all: it is checked
    once its tasks are known (check_keys)."""
    splits = [source.name for source in split_sources(list(settings_of(config).tasks) or None)]
    fresh = [spec for spec in run.models if not any(_has_entries(run.outputs / split / spec.name) for split in splits)]
    missing = [_missing_model_key(spec, make_provider(config, spec)) for spec in fresh]
    if len(fresh) == len(run.models):
        missing += _missing_judge_keys(judge)
    _check_keys_set(missing, "nothing was downloaded or paid for")


def check_keys(run: RunConfig, runner: Runner, disk: Survey, config: pytest.Config | None = None) -> None:
    """Every key the run needs, now the tasks are known: a route that must be called, and the judge when some
    candidate still has to be judged.  A run whose candidates and verdicts are all on disk needs none.  Each
    key that is set is then proved with its provider's free call (``prove_keys``)."""
    calling = [runner.provider(spec) for spec in run.models
               if any(disk.needs_call(key) for key in candidate_keys(run, spec))]
    missing = [_missing_model_key(provider.spec, provider) for provider in calling]
    judging = pending_verdicts(run, runner, disk)
    if judging:
        missing += _missing_judge_keys(runner.judge)
    _check_keys_set(missing, "nothing was paid for")
    jurors = list(getattr(runner.judge, "jurors", [runner.judge])) if judging else []
    prove_run_keys(config, [*calling, *jurors])


def prove_run_keys(config: pytest.Config | None, users: list[object]) -> None:
    """Send each model route's and judge's free key check at once (transport/keycheck.py): a rejected key is one
    usage error per variable, before anything is paid; a check that cannot tell is a warning, and the run goes
    on (its own calls stop at the first rejected key)."""
    from .retirement import RetirementNotice

    probes = [probe for user in users if (probe := _probe_of(user)) is not None]
    checks = prove_keys(probes)
    rejected = rejections(checks)
    if rejected:
        raise ConfigError("; ".join(rejected) + "; nothing was paid for")
    warnings = warnings_of(checks)
    if warnings and config is not None:
        # the same start-of-run warning as a retiring model's, written also under -q
        config.pluginmanager.register(RetirementNotice(warnings), "hypeedit-key-checks")


def _probe_of(user: object) -> KeyProbe | None:
    """The user's key check; None for one that names none (``key_probe`` is optional: a provider or judge of a
    conftest.py that does not derive from the public ``Provider`` or ``Judge`` may lack the method)."""
    probe = getattr(user, "key_probe", None)
    found = probe() if callable(probe) else None
    return found if isinstance(found, KeyProbe) else None


def check_retirements(config: pytest.Config, run: RunConfig, disk: Survey) -> None:
    """A model whose provider id is past its shutdown date (retirements.yaml) is a usage error when some of
    its candidates still need a call; one within 30 days of it is warned about at the start of the run."""
    from .. import retirements
    from .retirement import RetirementNotice

    models, day, warnings = list(run.registry.models.values()), retirements.today(), []
    for spec in run.models:
        state, found = retirements.check(spec, models, day)
        if state == "retired" and any(disk.needs_call(key) for key in candidate_keys(run, spec)):
            raise found
        if state == "retiring":
            warnings.append(found)
    if warnings:
        config.pluginmanager.register(RetirementNotice(warnings), "hypeedit-retirements")


def check_judge(run: RunConfig, runner: Runner, disk: Survey) -> None:
    """What the judge reads (the upstream judge script, downloaded and checked) is needed only when some
    candidate still has to be judged: a replay from disk needs none."""
    if pending_verdicts(run, runner, disk):
        runner.judge.prepare()  # a judge script that is not the pinned one is not accepted here, before any call


def _has_entries(folder: Path) -> bool:
    return folder.is_dir() and any(folder.iterdir())


def _missing_model_key(spec: ModelSpec, provider: Provider) -> str | None:
    from ..secrets import find_key

    variables = type(provider).key_env
    if not variables or find_key(variables) is not None:
        return None
    return (f"route {spec.route} needs an API key: set {' or '.join(variables)} in the environment "
            "(or choose a model on another route with --model)")


def _missing_judge_keys(judge: Judge) -> list[str]:
    from ..secrets import find_key

    return [f"judge {juror.id} needs an API key: set {' or '.join(juror.key_env)} in the environment "
            "(or choose another --judge, e.g. labels:RATER.json)"
            for juror in getattr(judge, "jurors", [judge]) if juror.key_env and find_key(juror.key_env) is None]


def _check_keys_set(problems: list[str | None], done: str) -> None:
    """One usage error naming every missing key (each route once), and what has not happened yet."""
    named = list(dict.fromkeys(p for p in problems if p))
    if named:
        raise ConfigError("; ".join(named) + f"; {done}")


def candidate_keys(run: RunConfig, spec: ModelSpec) -> Iterator[Key]:
    for split in run.splits:
        for task in split.tasks:
            for repeat in range(1, run.repeats + 1):
                yield split.name, spec.name, task.task_id, repeat


def pending_verdicts(run: RunConfig, runner: Runner, disk: Survey) -> bool:
    """Whether some candidate of the run still has to be judged (the judge's key is needed)."""
    for spec in run.models:
        for key in candidate_keys(run, spec):
            record = disk.record(key)
            if record is None or not (refused(record) or runner.reusable_verdict(record)):
                return True
            if runner.stability.get(key) and _stability_missing(record, runner):
                return True
    return False


def _stability_missing(record: Record, runner: Runner) -> bool:
    from ..engine.stability import kept

    entry = kept(record, runner.judge.id)
    return record.outcome in ("pass", "fail") and (entry is None or len(entry["verdicts"]) < runner.stability[record.key])
