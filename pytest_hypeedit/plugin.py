"""pytest entry point: options, hook registration, and the one session object.

Thin on purpose (like pytest-xdist's plugin.py): the work lives in
config.py (options -> RunConfig), items.py (the items), runner.py (one
candidate), session.py (aggregation on the controller) and report/.

The plugin is inert unless ``--model`` is given; then the run is a
benchmark run and collects only benchmark items (``pytest tests`` never
collects any).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from .errors import HypeEditError
from .session import SESSION_KEY, BenchmarkSession
from .setup import RUN_KEY
RUN_ID_KEY = "hypeedit_run_id"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hypeedit", "HYPE-EDIT-1 image-editing benchmark")
    add = group.addoption
    add("--model", action="append", dest="hypeedit_models", default=[], metavar="NAME",
        help="run the benchmark on this model (repeatable); see models.yaml")
    add("--tasks", action="append", dest="hypeedit_tasks", default=[], metavar="[NAME=]PATH|URL",
        help="task file of a split (repeatable; default: the public split, downloaded at its pinned commit)")
    add("--images-base", dest="hypeedit_images_base", metavar="DIR|URL",
        help="where reference images live: <base>/<task_id>/<file> (default: the split's own, else upstream CDN)")
    add("--repeats", dest="hypeedit_repeats", type=int, default=10, metavar="N",
        help="candidates per task and model (default 10)")
    add("--outputs", dest="hypeedit_outputs", metavar="DIR",
        help="where candidates and records go (default ./hypeedit-outputs)")
    add("--results", dest="hypeedit_results", metavar="PATH",
        help="results JSON (default <outputs>/results.json; a Markdown table is written beside it)")
    add("--judge", dest="hypeedit_judge", metavar="SPEC",
        help="judge: gemini-3-flash (default), openai:MODEL, labels:PATH[,PATH...], or several for a majority")
    add("--judge-base-url", dest="hypeedit_judge_base_url", metavar="URL",
        help="chat-completions server of an openai:MODEL judge, e.g. http://localhost:8000/v1 (vLLM, Ollama)")
    add("--rejudge", dest="hypeedit_rejudge", action="store_true",
        help="judge again candidates whose verdict is already on disk")
    add("--models-file", action="append", dest="hypeedit_models_files", default=[], metavar="PATH",
        help="YAML file of extra models or overrides, same shape as models.yaml (repeatable)")
    add("--cache-dir", dest="hypeedit_cache_dir", metavar="DIR",
        help="cache of task files and reference images (default: the user cache dir, or $HYPEEDIT_CACHE_DIR)")
    add("--retry-cap", dest="hypeedit_retry_cap", type=int, default=4, metavar="A",
        help="attempts a user makes at most, for expected attempts and effective cost (default 4)")
    add("--review-seconds", dest="hypeedit_review_seconds", type=float, default=20.0, metavar="S",
        help="human review time per candidate, for effective cost (default 20)")
    add("--review-rate", dest="hypeedit_review_rate", type=float, default=50.0, metavar="USD",
        help="reviewer cost per hour, for effective cost (default 50)")
    add("--rate-limit", action="append", dest="hypeedit_rate_limits", default=[], metavar="ROUTE=RPM[/INFLIGHT]",
        help="requests per minute and in flight for a route, across all workers (repeatable; overrides models.yaml)")
    add("--budget", dest="hypeedit_budget", type=float, default=None, metavar="USD",
        help="hard cap on money spent by this run across all workers")
    from .ci import add_options as add_ci_options  # --gate, --allow-incomplete, --bootstrap, --baseline

    add_ci_options(group)
    add("--agreement", dest="hypeedit_agreement", metavar="labels:PATH[,PATH...]",
        help="compare the judge with a human panel (rater files or a folder of them): agreement, "
             "Cohen's kappa, false-fail/false-pass by task type; into the results JSON under 'agreement'")


def benchmark_mode(config: pytest.Config) -> bool:
    return bool(config.getoption("hypeedit_models", default=None))


def is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if not benchmark_mode(config):
        return
    from .setup import configure_run

    try:
        run = configure_run(config, controller=is_controller(config))
    except HypeEditError as exc:
        raise pytest.UsageError(str(exc)) from None
    if is_controller(config):
        session = BenchmarkSession(config, run)
        config.stash[SESSION_KEY] = session
        config.pluginmanager.register(session, "hypeedit-session")
        from .agreement_plugin import register_agreement

        register_agreement(config, run)
    from .ci import register as register_ci  # gates, statistics, junit properties, HTML gallery

    register_ci(config, run, controller=is_controller(config))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # A benchmark run collects benchmark items only, never the project's tests.
    return True if benchmark_mode(config) else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    if benchmark_mode(config):
        from .items import make_items

        items[:] = make_items(session, config.stash[RUN_KEY])


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist controller: give every worker the run id, so they share one budget and one rate limit."""
    if benchmark_mode(node.config):
        node.workerinput[RUN_ID_KEY] = run_id(node.config)


def run_id(config: pytest.Config) -> str:
    if hasattr(config, "workerinput"):
        return config.workerinput.get(RUN_ID_KEY) or "worker"
    if not hasattr(config, "_hypeedit_run_id"):
        config._hypeedit_run_id = uuid.uuid4().hex[:12]
    return config._hypeedit_run_id


def pytest_unconfigure(config: pytest.Config) -> None:
    from .items import RUNNER_KEY

    runner = config.stash.get(RUNNER_KEY, None)
    if runner is not None:
        runner.close()


@pytest.hookimpl(trylast=True)
def pytest_hypeedit_make_provider(config: pytest.Config, spec):
    from .providers import builtin_provider

    return builtin_provider(spec)


@pytest.hookimpl(trylast=True)
def pytest_hypeedit_make_judge(config: pytest.Config, name: str, argument: str | None):
    from .setup import builtin_judge_for

    return builtin_judge_for(config, name, argument)
