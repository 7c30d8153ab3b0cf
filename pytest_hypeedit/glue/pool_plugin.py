"""pytest glue of the pool (engine/pool.py): many candidates in flight from each process.

- ``PoolPlugin`` (every process that runs items: the serial session, or each
  xdist worker) starts the pool when the run loop starts, hands it the items
  this process will run, in order, stops it on ``-x``/``--maxfail``, Ctrl-C,
  SIGTERM or the controller's stop file, and gives running calls their
  grace at the end so what they bought is saved (glue/stopping.py).
- ``StopSignal`` (the xdist controller) turns ``--maxfail``, Ctrl-C and SIGTERM
  into a stop file every worker's pool watches: workers were dealt their items
  up front, so without it they would go on paying for them.
- ``DealAllScheduling`` (the xdist controller, ``--dist load``, the default of
  ``-n``): every item is dealt at once, round robin, so each worker's pool can
  work ahead on its whole share.  xdist's own load scheduling hands a worker a
  few items at a time, which would starve the pool at the end of the run.
  It and every other read of xdist's internals live in glue/xdist_internals.py.

The one rule that holds it together: each process's pool gets a share of
``--concurrency`` through cross-process candidate slots, and each route's limits
through cross-process route slots, so the totals hold with and without ``-n``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generator, Iterable

import pytest

from ..analysis.sequential import is_sequential_stop
from ..engine.limits import SlotSet
from ..engine.pool import CandidatePool, PoolState
from ..engine.routes import RouteAdmission
from ..errors import ConfigError
from ..files import atomic_write_bytes
from ..options import settings_of
from ..report.progress import LineWriter, Progress, duration
from .early_stop import look_ahead
from .items import CandidateItem
from .stash import POOL_KEY, RUN_KEY, RUNNER_KEY, RUNTIME_KEY
from .stopping import (
    GRACE_SECONDS,  # noqa: F401 - the grace lived here; glue/stopping.py is its home now
    STOP_FILE,  # noqa: F401 - as GRACE_SECONDS
    Stopper,
    grace_seconds,
    in_flight,
    leaving,
    left_line,
    read_stop,
    state_dir,
    stopping_line,
    write_leave,
    write_stop,
)
from .warm_up import FOR_ANSWERS, FOR_RESULTS, warm_up
from .xdist_internals import unsupported, worker_queue

if TYPE_CHECKING:
    from ..engine.jobs import Entry
    from ..engine.limits import RouteLimiter
    from ..providers.runtime import Runtime
    from ..registry import ModelSpec

#: How often the live line is redrawn on a terminal, and printed as a plain line otherwise (seconds).
REDRAW_EVERY, PLAIN_EVERY = 0.5, 30.0
STATUS_DIR = "status"


# --------------------------------------------------------------------------- every process that runs items


#: A worker's first signal this soon after its pool was stopped is the signal that stopped it, come the other
#: way (the controller's stop file): see PoolPlugin._first_signal_may_wait.
SAME_SIGNAL_S = 2.0


class PoolPlugin:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.pool: CandidatePool | None = None
        self.session: pytest.Session | None = None
        self.admissions: dict[tuple[str, int], RouteAdmission] = {}
        self.folder = state_dir(config)
        self.grace = _grace(config)
        self.stopper = Stopper(self._stop_now, self._first_signal_may_wait)
        self._announced = False

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, None]:
        if not runs_items(session):  # --collect-only, or collection errors: nothing may be bought
            yield
            return
        self.session, self.pool = session, self._make_pool(session)
        self.config.stash[POOL_KEY] = self.pool
        self.stopper.install()  # until the process is done with its calls (pytest_unconfigure)
        self.pool.start()
        # what the answers and (in this process's own session) the results need, imported while the calls wait
        warm_up(FOR_ANSWERS if hasattr(self.config, "workerinput") else FOR_ANSWERS + FOR_RESULTS)
        try:
            yield
        finally:
            self._report(self.pool.state())  # the final figures, for the live line's last word

    def _first_signal_may_wait(self) -> bool:
        """Whether this process's first signal gives the calls in flight their grace.  Not when the run was
        stopped a while ago (the controller's first signal, through the stop file, or --maxfail): then this
        signal is the user's second.  But a signal sent to the whole process group (a terminal's Ctrl-C, a CI
        runner's kill of the group) reaches the controller and this worker together, and under load the stop
        file the controller writes may stop this pool before this process runs its own handler: the same
        signal, seen twice, is no reason to leave (a second one sent to the group reaches the controller too,
        which then tells every worker to leave)."""
        if self.pool is None:
            return False
        stopped_for = self.pool.stopped_for()
        return stopped_for is None or stopped_for < SAME_SIGNAL_S

    def _stop_now(self, reason: str) -> None:
        """The first Ctrl-C or SIGTERM (in the main thread): stop starting calls, everywhere in the run, and end
        the run loop after the item at hand, which waits for its call within the grace."""
        assert self.pool is not None and self.session is not None  # the stopper is installed after both are set
        self.pool.stop(reason)
        write_stop(self.config, reason)
        self.session.shouldstop = reason
        self._announce(self.pool.state())

    @pytest.hookimpl(tryfirst=True)  # before pytest's own, which may take seconds to draw the traceback
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        reason = interrupt_reason(excinfo)
        if self.pool is not None:
            self.pool.stop(reason)
        write_stop(self.config, reason)
        if self.stopper.leaving:
            write_leave(self.folder)

    def finish(self) -> None:
        """The session finishes (glue/session.py end_of_run, first): the calls in flight end within their grace,
        before the results are built."""
        if self.pool is None:
            return
        state = self.pool.state()
        if not self._leaving():
            self._announce(state)
        try:
            left = self.pool.shutdown(wait=not self._leaving())
        except KeyboardInterrupt:  # a second Ctrl-C or SIGTERM while waiting: leave now
            left = self.pool.shutdown(wait=False)
        final = self.pool.state()
        if left:
            self._say(left_line(final.running, final.resumable, final.unanswered, final.unanswered_cost))
        self._report(final, final=True)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.stopper.uninstall()

    def _announce(self, state: PoolState) -> None:
        """Say once what stopping does with the calls in flight, and what leaving now would cost."""
        if state.running and not self._announced:
            self._announced = True
            assert self.pool is not None  # a state to announce comes from the pool
            grace = max(0.0, self.pool.grace - self._stopped_for())
            self._say(stopping_line(state.running, state.resumable, state.unanswered, state.unanswered_cost, grace))

    def _leaving(self) -> bool:
        return self.stopper.leaving or leaving(self.folder)

    def _stopped_for(self) -> float:
        assert self.pool is not None  # called by _announce only
        return self.pool.stopped_for() or 0.0

    def _say(self, line: str) -> None:
        _say(self.config, line)

    # ------------------------------------------------------------------ building the pool
    def _make_pool(self, session: pytest.Session) -> CandidatePool:
        run, runner = self.config.stash[RUN_KEY], self.config.stash[RUNNER_KEY]
        slots = SlotSet(self.folder / "pool", "candidates", run.concurrency)
        return CandidatePool(
            runner, concurrency=run.concurrency, slots=slots, admission_for=self._model_admission,
            judge_admissions=lambda: [self._route_admission(route) for route in runner.judge.routes],
            source=self._source(session), should_stop=lambda: self._should_stop(session),
            on_report=self._report, grace=self.grace, should_leave=lambda: leaving(self.folder),
            ahead=look_ahead(self.config, run.concurrency),  # --sequential: glue/early_stop.py
        )

    def _model_admission(self, spec: ModelSpec) -> RouteAdmission:
        return self._admission_of(spec.route, self._runtime().limiter_for(spec))

    def _route_admission(self, route: str) -> RouteAdmission:
        from ..registry import ModelSpec

        # The judges build their limiter the same way (judges/prompting.py http_plumbing): one per route.
        spec = ModelSpec(name=f"judge-{route}", route=route, provider_model=route, price=0.0)
        return self._admission_of(route, self._runtime().limiter_for(spec))

    def _runtime(self) -> Runtime:
        """The run's provider runtime (glue/startup.py configure_runtime), passed in through the stash."""
        return self.config.stash[RUNTIME_KEY]

    def _admission_of(self, route: str, limiter: RouteLimiter | None) -> RouteAdmission:
        key = (route, id(limiter))
        if key not in self.admissions:
            run = self.config.stash[RUN_KEY]
            self.admissions[key] = RouteAdmission(route, limiter, ceiling=run.concurrency, adaptive=run.adaptive)
        return self.admissions[key]

    def _source(self, session: pytest.Session) -> Callable[[], list[Entry]] | None:
        def entries(items: Iterable[pytest.Item]) -> list[Entry]:
            return [(item.task, item.spec, item.repeat) for item in items if isinstance(item, CandidateItem)]

        # The dispatcher asks every TICK; each entry is given once (the pool never forgets a job), so that a poll
        # costs nothing once everything is planned: handing the 7,000 items of a serial replay over again at each
        # poll, under the pool's lock, took a second of the interpreter from pytest.
        if not hasattr(self.config, "workerinput"):
            planned = [entries(session.items)]  # the serial session runs every selected item, in this order
            return lambda: planned.pop() if planned else []
        dealt = worker_queue(self.config)
        if dealt is None:
            return None  # unknown xdist internals: the pool works on each item as pytest reaches it
        given: set[int] = set()

        def newly_dealt() -> list[Entry]:
            fresh = [i for i in dealt() if i not in given]
            given.update(fresh)
            return entries(session.items[i] for i in fresh)

        return newly_dealt

    def _should_stop(self, session: pytest.Session) -> str | None:
        reason = read_stop(self.folder)
        if is_sequential_stop(reason) and self.pool is not None:  # a decision, no emergency: glue/early_stop.py
            self.pool.grace = math.inf
        elif reason and hasattr(self.config, "workerinput"):
            session.shouldstop = reason
        if reason:
            return reason
        if session.shouldfail or session.shouldstop:  # -x / --maxfail in this process
            return str(session.shouldfail or session.shouldstop)
        return None

    def _report(self, state: PoolState, final: bool = False) -> None:
        try:
            write_status(self.folder, state, final=final, batches=self._runtime().batches.tally())
        except OSError:  # e.g. the cache's disk is full: the live line misses an update, the run goes on
            pass


def _grace(config: pytest.Config) -> float:
    try:
        return grace_seconds()
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


def runs_items(session: pytest.Session) -> bool:
    """Whether pytest's run loop will run the items (the same tests as _pytest/main.py's pytest_runtestloop)."""
    settings = settings_of(session.config)
    if settings.collect_only:
        return False
    return not (session.testsfailed and not settings.continue_on_collection_errors)


def write_status(folder: Path, state: PoolState, *, final: bool = False,
                 batches: dict[str, list[int]] | None = None) -> None:
    """This process's pool state, for the controller's live line and stopping messages; ``final`` once its calls
    are done with (finished, or left).  ``batches``: the run's batches in this process by state (--tier batch,
    providers/batching.py ``Collectors.tally``)."""
    document = {
        "at": time.time(), "planned": state.planned, "done": state.done, "running": state.running,
        "errors": state.errors, "refused": state.refused, "skipped": state.skipped, "spent": state.spent,
        "resumable": state.resumable, "unanswered": state.unanswered, "unanswered_cost": state.unanswered_cost,
        "final": final,
        "routes": [{"route": g.route, "in_flight": g.in_flight, "level": g.level, "ceiling": g.ceiling,
                    "adaptive": g.adaptive, "throttled": g.throttled} for g in state.routes],
        "batches": batches or {},
    }
    atomic_write_bytes(folder / STATUS_DIR / f"{os.getpid()}.json", json.dumps(document).encode("utf-8"))


def read_statuses(folder: Path) -> list[dict[str, Any]]:
    statuses = []
    for path in sorted((folder / STATUS_DIR).glob("*.json")):
        try:
            statuses.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue  # being replaced right now: the next tick reads it
    return statuses


# --------------------------------------------------------------------------- the xdist controller


class StopSignal:
    """``--maxfail``/``-x``, Ctrl-C and SIGTERM on the controller become a stop file the workers' pools watch;
    a second Ctrl-C or SIGTERM, a leave file (glue/stopping.py)."""

    def __init__(self, config: pytest.Config):
        self.config, self.failures = config, 0
        self.folder, self.grace = state_dir(config), _grace(config)
        # The controller has no calls of its own: the first signal stops the workers, which finish their
        # calls within the grace and end the run (xdist's loop ends when they do).
        self.stopper = Stopper(self._stop_workers, lambda: True)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, None]:
        self.stopper.install()
        untested = unsupported()
        if untested:
            _say(self.config, untested)
        yield

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.stopper.uninstall()

    def _stop_workers(self, reason: str) -> None:
        write_stop(self.config, reason)
        running, jobs, waiting, cost = in_flight(read_statuses(self.folder))
        _say(self.config, stopping_line(running, jobs, waiting, cost, self.grace, where=" in the workers"))

    def finish(self) -> None:
        """The session finishes (glue/session.py end_of_run, last): after a signal, what the workers left."""
        if self.stopper.signals:
            statuses = self._final_statuses()
            running, jobs, waiting, cost = in_flight(statuses)
            if running:
                _say(self.config, left_line(running, jobs, waiting, cost))

    def _final_statuses(self, patience: float = 2.0) -> list[dict[str, Any]]:
        """The workers' statuses once each says its calls are done with (a leaving worker is quick)."""
        deadline = time.monotonic() + patience
        statuses = read_statuses(self.folder)
        while any(not s.get("final") for s in statuses) and time.monotonic() < deadline:
            time.sleep(0.05)
            statuses = read_statuses(self.folder)
        return statuses

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        maxfail = settings_of(self.config).maxfail
        if report.failed:
            self.failures += 1
            if maxfail and self.failures >= maxfail:
                write_stop(self.config, f"stopping after {self.failures} failures (--maxfail {maxfail})")

    @pytest.hookimpl(tryfirst=True)  # the workers hear it before pytest draws the traceback
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        write_stop(self.config, interrupt_reason(excinfo))
        if self.stopper.leaving:
            write_leave(self.folder)


def interrupt_reason(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """What stopped the run: pytest's own stop (--sw's "Test failed, continuing from this test next run.") is a
    KeyboardInterrupt too, and the results say which it was."""
    if isinstance(excinfo.value, pytest.Session.Interrupted) and str(excinfo.value):
        return str(excinfo.value)
    return "interrupted (Ctrl-C)"


def _say(config: pytest.Config, line: str) -> None:
    """A line on the terminal, also from a signal handler while an item runs (its output is captured then)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.get_verbosity() < 0:
        return
    capture = config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        reporter.ensure_newline()
        reporter.write_line(line)


# --------------------------------------------------------------------------- the live line (controller)


class LiveLine:
    """One line of progress while calls are in flight: rewritten in place on a terminal, a plain line every
    30 s otherwise (a CI log), none under ``-q``.  It replaces pytest's dot per item, which says nothing
    of a benchmark's calls; pytest's own counts and summary are unchanged."""

    def __init__(self, config: pytest.Config):
        self.config, self.folder = config, state_dir(config)
        self.progress = Progress(started=time.monotonic())
        self.session: pytest.Session | None = None
        self.writer = LineWriter()
        # under -n, done is what the controller saw reported (report/progress.py Progress.line says why)
        self.reported: int | None = 0 if settings_of(config).distributing else None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    # tryfirst and registered after the pool's: the outermost wrapper, so the last line sees the final figures
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, None]:
        self.session, self.progress.started = session, time.monotonic()
        self._thread = threading.Thread(target=self._draw_loop, name="hypeedit-live-line", daemon=True)
        self._thread.start()
        try:
            yield
        finally:
            self._done.set()
            self._thread.join(2)
            self._draw(final=True)

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport,
                                 config: pytest.Config) -> tuple[str, str, str] | None:
        if not report.nodeid.startswith("hypeedit::"):
            return None
        # The category (the counts) and the word (the summaries) stay; the letter goes: the live line is
        # the progress.
        if report.when == "call":
            return report.outcome, "", report.outcome.upper()
        if report.failed:
            return "error", "", "ERROR"
        if report.skipped:
            return "skipped", "", "SKIPPED"
        return "", "", ""

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.reported is not None and report.when == "teardown" and report.nodeid.startswith("hypeedit::"):
            self.reported += 1

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.writer.close()

    def _draw_loop(self) -> None:
        every = REDRAW_EVERY if self.writer.tty else PLAIN_EVERY
        while not self._done.wait(every):
            self._draw()

    def _draw(self, final: bool = False) -> None:
        session = self.session
        if session is not None:  # the xdist controller has no items of its own, only their count
            self.progress.total = len(session.items) or getattr(session, "testscollected", 0)
        now = time.monotonic()
        line = self.progress.line(read_statuses(self.folder), now, self.reported)
        if final:
            line += f" | in {duration(now - self.progress.started)}"
        self.writer.draw(line, final=final)


def live_line_wanted(config: pytest.Config) -> bool:
    """At the default verbosity only: -q asks for silence, -v prints a line per item already."""
    return config.get_verbosity() == 0 and not settings_of(config).collect_only


def prepare_terminal(config: pytest.Config) -> None:
    """No per-item progress of pytest's own beside the live line (its percentages and file names)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.showfspath = False
        if hasattr(reporter, "_show_progress_info"):
            reporter._show_progress_info = False
