"""pytest entry point: options, hook registration, and the one session object.

Thin on purpose (like pytest-xdist's plugin.py): the work lives in
config.py (options -> RunConfig), glue/ (the rest of the pytest side: the run
put together, the items, the pool's hooks, the controller's session, CI
output), engine/ (each candidate from task to verdict), analysis/ (the
numbers) and report/.

The plugin is inert unless ``--model`` is given; then the run is a
benchmark run and collects only benchmark items (``pytest tests`` never
collects any).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator

import pytest

from .errors import HypeEditError
from .glue.stash import INI_ORIGINS_KEY, RUN_ID_KEY, RUN_KEY, RUNNER_KEY, RUNTIME_KEY, SESSION_KEY, run_id

if TYPE_CHECKING:  # names only: see below
    from .config import RunConfig
    from .judges.base import Judge
    from .providers.base import Provider
    from .registry import ModelSpec

#: Every option can be set in the ini file; that plugin fills them in before any other hook reads them.
pytest_plugins = ["pytest_hypeedit.glue.ini"]

# Only pytest is imported at module level: this module loads in every pytest
# process, benchmark or not, and each of -n 16 workers pays for what it imports.


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    from .options import add_options

    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """Before any conftest or the cache plugin uses the rootdir: stop if one of our values moved it."""
    from .glue.rootdir_guard import check_rootdir

    try:
        check_rootdir(early_config, args)
    except HypeEditError as exc:
        raise pytest.UsageError(str(exc)) from None


def benchmark_mode(config: pytest.Config) -> bool:
    from .options import settings_of

    return bool(settings_of(config).models)


def is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if not benchmark_mode(config):
        return
    from .engine.memory import limit_malloc_arenas, map_large_blocks, skip_exit_collection

    limit_malloc_arenas()  # before any thread of ours allocates: see engine/memory.py
    map_large_blocks()
    skip_exit_collection()
    from .glue.price_line import estimating, register_price
    from .glue.startup import configure_run
    from .options import settings_of, with_ini_origin

    prefer_one_line_failures(config)
    try:
        check_test_paths(config)  # the controller checks first: workers get the same arguments
        run = configure_run(config, controller=is_controller(config))
        if is_controller(config):
            register_price(config, run)
            if estimating(config):
                return  # the price alone: no item runs, nothing is paid for, no results are written
            register_controller_plugins(config, run)
    except (HypeEditError, pytest.UsageError) as exc:
        # A bad value from the ini file gets the same message as from the command line, plus where it came from.
        origins: dict[str, str] = config.stash.get(INI_ORIGINS_KEY, {})
        raise pytest.UsageError(with_ini_origin(str(exc), origins)) from None
    register_pool_plugins(config)
    if settings_of(config).html_path:  # pytest-html's --html: the failure gallery
        from .glue.html_report import register_gallery

        register_gallery(config, controller=is_controller(config))


def check_test_paths(config: pytest.Config) -> None:
    """``pytest tests --model X``: the paths given on the command line (not the ini file's testpaths, which
    pytest uses only when none are given) would not run; say so before anything is read or paid for."""
    from .glue.rootdir_guard import test_paths_message
    from .options import settings_of

    settings = settings_of(config)
    message = test_paths_message(list(settings.file_or_dir), list(settings.models))
    if message:
        raise pytest.UsageError(message)


def prefer_one_line_failures(config: pytest.Config) -> None:
    """``--tb=line`` unless the user chose a style: a benchmark's FAILs are verdicts, not bugs.

    Each failure's message is already the judge's one-line reasoning, and pytest's
    long styles scan every report once per failure for teardown sections
    (quadratic: ~33 s of a 7,000-candidate replay). ``auto`` is pytest's default,
    so it counts as not chosen.
    """
    from .options import set_traceback_style, traceback_style

    if traceback_style(config) == "auto":
        set_traceback_style(config, "line")


def register_controller_plugins(config: pytest.Config, run: RunConfig) -> None:
    """The session object (records -> results), CI gates and statistics, the end of session's layout
    (the answer last), the judge-panel agreement."""
    from .glue.agreement_plugin import register_agreement
    from .glue.ci import CiPlugin
    from .glue.session import BenchmarkSession
    from .glue.terminal_layout import BenchmarkTerminal

    ci = CiPlugin(config, run)
    session = BenchmarkSession(config, run, ci)
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(session, "hypeedit-session")
    config.pluginmanager.register(ci, "hypeedit-ci")
    config.pluginmanager.register(BenchmarkTerminal(config), "hypeedit-terminal")
    session.agreement = register_agreement(config, run)
    from .glue.human_labels import register_calibration

    session.calibration = register_calibration(config, run)  # record.human from the labels of the run; --calibrate
    from .glue.control_run import register_controls

    session.controls = register_controls(config, run)  # --judge-controls


def register_pool_plugins(config: pytest.Config) -> None:
    """The pool in every process that runs items; on the controller, the live line and (under -n) the
    stop file for the workers and the warm-up of the results' imports."""
    from .glue.pool_plugin import LiveLine, PoolPlugin, StopSignal, live_line_wanted, prepare_terminal

    # pytest-xdist's controller of -n N (its own test, xdist/plugin.py pytest_configure; "dist" is "load"
    # once -n is given, and the option is absent with -p no:xdist)
    from .options import settings_of

    distributing = is_controller(config) and settings_of(config).distributing
    if not distributing:
        config.pluginmanager.register(PoolPlugin(config), "hypeedit-pool")
    if is_controller(config):
        if distributing:
            from .glue.warm_up import ResultsWarmUp

            config.pluginmanager.register(StopSignal(config), "hypeedit-stop")
            config.pluginmanager.register(ResultsWarmUp(), "hypeedit-warm-up")  # the results' imports, ahead
        if live_line_wanted(config):
            prepare_terminal(config)
            config.pluginmanager.register(LiveLine(config), "hypeedit-live-line")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:  # xdist's logger and scheduler
    """Under -n (``--dist load``), deal every item at once so each worker's pool can work ahead."""
    from .options import settings_of

    if benchmark_mode(config) and settings_of(config).dist == "load":
        from .glue.xdist_internals import deal_all_scheduler

        return deal_all_scheduler(config, log)
    return None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # A benchmark run collects benchmark items only, never the project's tests.
    return True if benchmark_mode(config) else None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> Generator[None, None, None]:
    # A wrapper, and the items made before it yields: before every plugin's own pass over them, so a plugin
    # that reorders (pytest-randomly, -p random_order) or deselects (-k, -m, --lf) works on the benchmark's
    # items instead of having its order replaced.  The pool buys in the order pytest runs them.
    if benchmark_mode(config):
        from .glue.items import make_items

        candidates = make_items(session, config.stash[RUN_KEY])
        from .options import settings_of

        if settings_of(config).sequential:  # an order that can decide early, the same in every process
            from .glue.early_stop import buying_order

            candidates = buying_order(candidates, config)
        items[:] = candidates
    return (yield)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:  # xdist's WorkerController (xdist has no types)
    """xdist controller: give every worker the run id, so they share one budget and one rate limit."""
    if benchmark_mode(node.config):
        node.workerinput[RUN_ID_KEY] = run_id(node.config)
        from .glue.releases import FOLDERS_KEY, worker_folders

        node.workerinput[FOLDERS_KEY] = worker_folders(node.config)  # the folders of the run's releases


@pytest.hookimpl(tryfirst=True)  # before junitxml and pytest-html write their files from what it adds
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The package's one session finish: the end of the run in order, as plain calls (glue/session.py)."""
    if benchmark_mode(session.config):
        from .glue.session import end_of_run

        end_of_run(session)


def pytest_unconfigure(config: pytest.Config) -> None:
    from .options import asked_for_help, help_epilogue

    if asked_for_help(config):  # pytest --help unconfigures right after printing its text

        config.get_terminal_writer().write("\n" + help_epilogue())
    runner = config.stash.get(RUNNER_KEY, None)
    if runner is not None:
        runner.close()


@pytest.hookimpl(trylast=True)
def pytest_hypeedit_make_provider(config: pytest.Config, spec: ModelSpec) -> Provider:
    from .providers import builtin_provider

    return builtin_provider(spec, runtime=config.stash.get(RUNTIME_KEY, None))  # the run's, passed in


@pytest.hookimpl(trylast=True)
def pytest_hypeedit_make_judge(config: pytest.Config, name: str, argument: str | None) -> Judge:
    from .glue.startup import builtin_judge_for

    return builtin_judge_for(config, name, argument)
