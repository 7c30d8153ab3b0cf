"""pytest's rootdir trap: ``--tasks /elsewhere/private.json`` must not move the rootdir.

pytest chooses the rootdir and the config file (``determine_setup`` in
``_pytest/config/findpaths.py``) while it parses the command line for the first
time, before it loads plugins (``Config.parse``, ``Config._preparse`` before
9.0).  Our options are unknown then, so in ``--tasks /elsewhere/private.json``
the value is taken for a test path, and the rootdir becomes the common ancestor
of the working directory and ``/elsewhere``.  The project's ini file is then
not found (``--rootdir=.`` alone brings the rootdir back, not the ini file), and
``.pytest_cache``, the conftest.py files that load, ``-p`` plugins and every ini
setting follow the task file.  ``--tasks=/elsewhere/private.json`` is never
taken for a path: pytest skips arguments that start with ``-``.

Correcting the rootdir in place is not safe: by the time a plugin runs, pytest has
already applied the wrong ini file's ``addopts``, ``pythonpath``,
``required_plugins`` and ``minversion``, and what it keeps them in differs
between pytest 8.4 and 9.x.  So when one of our options' values is what moved
the rootdir or the config file, the run stops with one usage error that says to
write the option with ``=``, before any conftest or the cache plugin uses them.

Nothing else of ours depends on the rootdir: the default ``--outputs`` is the
invocation directory and node ids are ``hypeedit::...``.
"""

from __future__ import annotations

import inspect
import shlex
from pathlib import Path
from typing import Any, Sequence

from ..errors import ConfigError

#: Every option of the plugin keeps its value under a ``hypeedit_`` dest (options.py).
DEST_PREFIX = "hypeedit_"

Setup = tuple[Path, "Path | None"]  # (rootdir, config file)


def check_rootdir(early_config: Any, args: Sequence[str]) -> None:
    """Raise ConfigError when a value of our options, given as a separate argument, moved the rootdir
    or the config file pytest chose.  ``early_config`` is the Config of ``pytest_load_initial_conftests``."""
    namespace = early_config.known_args_namespace
    invocation_dir = Path(early_config.invocation_params.dir)
    trapped = [(option, value) for option, value in trapped_values(args, our_values(namespace))
               if existing_path(value, invocation_dir)]  # pytest ignores the rest (get_dirs_from_args)
    if not trapped:
        return
    test_paths = [str(arg) for arg in getattr(namespace, "file_or_dir", None) or []]
    without = pytest_setup(test_paths, namespace, invocation_dir)
    with_ours = pytest_setup(test_paths + [value for _, value in trapped], namespace, invocation_dir)
    chosen = (Path(early_config.rootpath), _path_or_none(early_config.inipath))
    if without is None or chosen == without or chosen != with_ours:
        return  # not moved, or not by our values (or pytest's internals changed: nothing to compare)
    # trapped keeps only values that name an existing path (above)
    outside = [pair for pair in trapped
               if without[0] not in existing_path(pair[1], invocation_dir).parents]  # type: ignore[union-attr]
    raise ConfigError(trap_message(outside or trapped, chosen, without))


def our_values(namespace: Any) -> set[str]:
    """The string values of the plugin's options, as pytest parsed them once the plugin was loaded."""
    values: set[str] = set()
    for dest, value in vars(namespace).items():
        if dest.startswith(DEST_PREFIX):
            items = value if isinstance(value, (list, tuple)) else [value]
            values.update(item for item in items if isinstance(item, str) and item)
    return values


def trapped_values(args: Sequence[str], values: set[str]) -> list[tuple[str, str]]:
    """(option, value) pairs written as two arguments (``--tasks PATH``): pytest's first parse took the
    value for a test path.  ``--tasks=PATH`` is one argument starting with ``-``, which it skips."""
    args = [str(arg) for arg in args]
    return [(option, value) for option, value in zip(args, args[1:])
            if value in values and option.startswith("--") and "=" not in option]


def existing_path(value: str, invocation_dir: Path) -> Path | None:
    """The absolute path ``value`` names when it exists (as pytest's first parse would see it), else None."""
    try:
        path = (invocation_dir / value.split("::")[0]).resolve()
        return path if path.exists() else None
    except (OSError, ValueError):
        return None


def pytest_setup(test_paths: list[str], namespace: Any, invocation_dir: Path) -> Setup | None:
    """The (rootdir, config file) pytest chooses for these test paths; None if its internals changed."""
    try:
        from _pytest.config.findpaths import determine_setup  # private, so every failure is tolerated

        kwargs: dict[str, Any] = {"inifile": getattr(namespace, "inifilename", None), "args": test_paths,
                  "rootdir_cmd_arg": getattr(namespace, "rootdir", None) or None, "invocation_dir": invocation_dir}
        if "override_ini" in inspect.signature(determine_setup).parameters:  # pytest >= 9.0
            kwargs["override_ini"] = getattr(namespace, "override_ini", None)
        rootdir, inipath = determine_setup(**kwargs)[:2]
    except Exception:  # noqa: BLE001 - an unknown pytest must not stop a run over a check
        return None
    return Path(rootdir), _path_or_none(inipath)


def trap_message(trapped: list[tuple[str, str]], chosen: Setup, expected: Setup) -> str:
    options = ", ".join(f"{option} {value}" for option, value in trapped)
    fixed = " ".join(f"{option}={value}" for option, value in trapped)
    changes = []
    if chosen[0] != expected[0]:
        changes.append(f"moved the rootdir from {expected[0]} to {chosen[0]}")
    if chosen[1] != expected[1]:
        changes.append(f"ignored the config file {expected[1]}" if chosen[1] is None
                       else f"used the config file {chosen[1]} instead of {expected[1] or 'none'}")
    what = "the value as a test path" if len(trapped) == 1 else "these values as test paths"
    return (f"{options}: pytest read {what} before the plugin was loaded, and "
            f"{' and '.join(changes)}; .pytest_cache, conftest.py files and ini settings would follow. "
            f"Write the option with '=': {fixed}")


def _path_or_none(path: Any) -> Path | None:
    return Path(path) if path else None


def test_paths_message(paths: Sequence[str], models: Sequence[str]) -> str | None:
    """Test paths given with ``--model``: a benchmark run collects its own items only (plugin.py's
    ``pytest_ignore_collect``), so ``pytest tests --model X`` would drop the folder without a word and
    ``pytest tests/test_x.py --model X`` would count the file's tests as collected and run none of them.
    The message says so and what to run instead; None when no path was given."""
    if not paths:
        return None
    given = shlex.join(paths)
    model_args = " ".join(f"--model {model}" for model in models)
    return (f"test paths given with --model: {given}: a benchmark run collects only the benchmark's items, so "
            f"these tests would not run. Run your own tests in a pytest run of their own, without --model "
            f"(pytest {given}), and the benchmark without test paths (pytest {model_args} ...); to choose "
            "benchmark items use -k, -m, --deselect or --lf. Nothing was run or paid for.")
