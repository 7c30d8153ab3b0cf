"""The price before paying: the line a paid run starts with, and ``--estimate``, which prints it and stops.

The price is that of the items the run will run (``-k``, ``-m`` and ``--lf`` applied), so it is stated once
they are known and before the pool starts the first call: after the collection of a serial run, and under
-n on the controller when the first worker has collected (the workers start nothing before the controller
deals them the items).  Nothing is printed when the run pays for nothing (a replay, a free model with a free
judge).  ``--estimate`` runs the same up-front checks, bar the API keys (an estimate calls nothing), collects
the items in this process (no worker is started), prints the price per model and route, and runs no item:
nothing is paid for or sent to a provider, and pytest exits 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pytest

from ..config import RunConfig
from ..options import settings_of, stop_distributing
from .items import parse_nodeid
from .stash import RUNNER_KEY, SURVEY_KEY

if TYPE_CHECKING:
    from ..engine.estimate import Estimate
    from ..engine.jobs import Key


def estimating(config: pytest.Config) -> bool:
    return settings_of(config).estimate


class PriceLine:
    """The paid run's first line(s), on the controller (once under -n)."""

    def __init__(self, config: pytest.Config, run: RunConfig):
        self.config, self.run, self.stated = config, run, False

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not settings_of(self.config).collect_only:  # the xdist controller collects nothing: see below
            self.state([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # every worker collects the same items: the first one's say what the run will buy (and how many workers)
        self.state(ids, workers=int(getattr(node, "workerinput", {}).get("workercount", 1) or 1))

    def state(self, nodeids: Iterable[str], workers: int = 1) -> None:
        from ..report.price_text import price_lines, tier_lines

        keys = {key for key in map(parse_nodeid, nodeids) if key is not None}
        if self.stated or not keys:
            return
        self.stated = True
        price = run_price(self.config, self.run, keys)
        if SURVEY_KEY in self.config.stash:  # a view of the disk before the run: not to be asked again
            del self.config.stash[SURVEY_KEY]
        if price.paid:
            write_lines(self.config, tier_lines(self.run.tier, self.run.models, workers) + price_lines(price))


class EstimateOnly:
    """``--estimate``: the price of the collected items per model and route, in place of running them."""

    def __init__(self, config: pytest.Config, run: RunConfig):
        self.config, self.run = config, run

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        from ..report.price_text import estimate_lines, tier_lines

        keys = {key for key in (parse_nodeid(item.nodeid) for item in session.items) if key is not None}
        from .control_run import estimate_lines as control_lines

        write_lines(self.config, tier_lines(self.run.tier, self.run.models)
                    + estimate_lines(run_price(self.config, self.run, keys)) + control_lines(self.config, self.run))
        return True  # no item runs


def register_price(config: pytest.Config, run: RunConfig) -> None:
    """On the controller: the price line of a paid run, or ``--estimate`` alone (no xdist worker, no pool)."""
    if estimating(config):
        # No xdist worker is started: its controller ("dsession") is made by xdist's pytest_configure, which runs
        # after ours (both trylast) unless asked not to distribute, or before it, when it is taken away again.
        stop_distributing(config)
        if config.pluginmanager.has_plugin("dsession"):
            config.pluginmanager.unregister(name="dsession")
        config.pluginmanager.register(EstimateOnly(config, run), "hypeedit-estimate")
    else:
        config.pluginmanager.register(PriceLine(config, run), "hypeedit-price")


def run_price(config: pytest.Config, run: RunConfig, keys: set[Key] | None) -> Estimate:
    """The price of the run's items; a worst case that cannot be said (a reference that cannot be read) is a
    usage error naming it, before anything is paid for."""
    from ..engine.estimate import estimate
    from ..errors import HypeEditError

    try:
        return estimate(config.stash[RUNNER_KEY], run.models, run.splits, run.repeats, limits_for=run.limits_for,
                        concurrency=run.concurrency, selected=keys, disk=config.stash.get(SURVEY_KEY, None),
                        tier=run.tier, judge_tier=run.judge_tier)
    except HypeEditError as exc:
        raise pytest.UsageError(f"the run's price cannot be stated: {exc}; nothing was paid for") from None


def write_lines(config: pytest.Config, lines: list[str]) -> None:
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    for line in lines:
        if terminal is not None:
            terminal.write_line(line)
        else:
            print(line)
