"""pytest glue for the ini file: every option can be set there (options.py declares them).

A plugin module of its own (plugin.py lists it in ``pytest_plugins``) because
it must run first: its ``pytest_configure`` is ``tryfirst`` so that every later
hook, ours and other plugins', sees the options with the ini file's values
filled in, while plugin.py's own ``pytest_configure`` runs last.
"""

from __future__ import annotations

import pytest

from ..errors import ConfigError
from ..options import apply_ini, asked_for_help
from .stash import INI_ORIGINS_KEY


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if asked_for_help(config):  # pytest --help must work even with a bad value in the ini file
        return
    try:
        config.stash[INI_ORIGINS_KEY] = apply_ini(config)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
