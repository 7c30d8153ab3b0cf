"""Retired and retiring provider model ids (``retirements.yaml``): their shutdown dates and successors.

Providers turn model ids off (Google shut down ``gemini-3-pro-image-preview`` on 2026-06-25, OpenAI
shuts down ``gpt-image-1.5`` on 2026-12-01).  The table shipped beside ``models.yaml`` says which id, on
which route, goes when, what the provider names as its successor, and where that is written.  It decides:

- a run that must call a model whose id is past its shutdown date is a usage error that names the date
  and the successor (glue/startup.py), before anything is paid for;
- a model within ``WARN_DAYS`` of its shutdown gets a warning at the start of the run;
- a provider's "this model does not exist" reply (``ModelGone``) says the date and the successor when the
  table knows the id, else what to do.

``today()`` is the clock every decision reads: tests move it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import yaml

from .errors import ConfigError, ModelGone

if TYPE_CHECKING:
    from .registry import ModelSpec

#: The retirement table: (route, provider model id) -> its entry.
Table = Mapping[tuple[str, str], "Retirement"]

RETIREMENTS = Path(__file__).resolve().parent / "retirements.yaml"
#: A model this many days or fewer before its shutdown is warned about at the start of a run.
WARN_DAYS = 30
_KEYS = {"route", "provider_model", "shutdown", "successor", "source", "announced", "note"}
_REQUIRED = ("route", "provider_model", "source")


@dataclass(frozen=True)
class Retirement:
    route: str
    provider_model: str
    shutdown: dt.date | None  # None: no shutdown announced (the entry only names a successor)
    successors: tuple[str, ...]  # in the provider's order; () when none is documented
    source: str
    announced: dt.date | None = None
    note: str | None = None

    @property
    def successor(self) -> str | None:
        """The first successor the provider names (OpenAI names two for gpt-image-1.5)."""
        return self.successors[0] if self.successors else None

    def is_retired(self, day: dt.date) -> bool:
        return self.shutdown is not None and day >= self.shutdown

    def days_left(self, day: dt.date) -> int | None:
        return None if self.shutdown is None else (self.shutdown - day).days


def today() -> dt.date:
    """The date every retirement decision is made on (UTC): the seam tests move."""
    return dt.datetime.now(dt.timezone.utc).date()


# --------------------------------------------------------------------------- the table


@lru_cache(maxsize=4)
def load_table(path: Path = RETIREMENTS) -> Mapping[tuple[str, str], Retirement]:
    """The table as (route, provider_model) -> Retirement; a malformed file is a ConfigError naming the entry."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the retirement table ({exc})") from None
    entries = data.get("retirements") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: expected a 'retirements:' list of entries")
    table = {}
    for index, entry in enumerate(entries):
        item = _entry(entry, f"{path}: retirements[{index}]")
        table[(item.route, item.provider_model)] = item
    return MappingProxyType(table)


def _entry(entry: Any, where: str) -> Retirement:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: each entry is a mapping of {sorted(_KEYS)}")
    unknown = sorted(set(entry) - _KEYS)
    missing = [key for key in _REQUIRED if not isinstance(entry.get(key), str) or not entry[key]]
    if unknown or missing:
        raise ConfigError(f"{where}: unknown keys {unknown} or missing text for {missing}; keys: {sorted(_KEYS)}")
    return Retirement(route=entry["route"], provider_model=entry["provider_model"],
                      shutdown=_date(entry.get("shutdown"), f"{where}.shutdown"),
                      successors=_successors(entry.get("successor"), f"{where}.successor"), source=entry["source"],
                      announced=_date(entry.get("announced"), f"{where}.announced"), note=entry.get("note"))


def _successors(value: Any, where: str) -> tuple[str, ...]:
    """One id, a list of ids (the provider names several: any of them replaces the model), or null."""
    if value is None or value == "":
        return ()
    names = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if names is None or not all(isinstance(name, str) and name for name in names):
        raise ConfigError(f"{where}: {value!r} is not a model id, a list of model ids, or null")
    return tuple(names)


def _date(value: Any, where: str) -> dt.date | None:
    if value is None or isinstance(value, dt.date):
        return value  # YAML reads an unquoted YYYY-MM-DD as a date already
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise ConfigError(f"{where}: {value!r} is not a date (YYYY-MM-DD) or null") from None


def lookup(route: str, provider_model: str, table: Table | None = None) -> Retirement | None:
    return (load_table() if table is None else table).get((route, provider_model))


# --------------------------------------------------------------------------- what it means for a run


def usage_error(spec: ModelSpec, entry: Retirement, models: Iterable[ModelSpec], day: dt.date | None = None) -> ConfigError:
    """The error for a run that would call ``spec`` past its id's shutdown date."""
    return ConfigError(f"--model {spec.name}: {entry.route} shut down {entry.provider_model} on {entry.shutdown} "
                       f"({entry.source}). {successor_advice(spec, entry, models, day)} Candidates of {spec.name} "
                       "already on disk need no call and are reused.")


def warning(spec: ModelSpec, entry: Retirement, day: dt.date, models: Iterable[ModelSpec]) -> str:
    """The start-of-run warning for a model within WARN_DAYS of its shutdown."""
    left = entry.days_left(day)
    when = "tomorrow" if left == 1 else f"in {left} days"
    return (f"{spec.name} ({entry.route} {entry.provider_model}) shuts down on {entry.shutdown}, {when} "
            f"({entry.source}); from that day a run that must call it is not accepted. "
            f"{successor_advice(spec, entry, models, day)}")


def check(spec: ModelSpec, models: Iterable[ModelSpec], day: dt.date | None = None, table: Table | None = None) -> tuple[str, Any]:
    """("retired", ConfigError) | ("retiring", warning text) | ("", None) for a model on ``day``."""
    entry = lookup(spec.route, spec.provider_model, table)
    day = today() if day is None else day
    if entry is None or entry.shutdown is None:
        return "", None
    if entry.is_retired(day):
        return "retired", usage_error(spec, entry, models, day)
    left = entry.days_left(day)  # an int: shutdown is set
    if left is not None and left <= WARN_DAYS:
        return "retiring", warning(spec, entry, day, models)
    return "", None


def successor_advice(spec: ModelSpec, entry: Retirement, models: Iterable[ModelSpec], day: dt.date | None = None) -> str:
    """What to run instead: a named model serving one of the successors still served on ``day`` (a successor
    shut down itself since is replaced by its own) when there is one."""
    if not entry.successors:
        return f"No successor is documented: choose another --model than {spec.name}."
    documented = (f"Its documented successor is {entry.successor}" if len(entry.successors) == 1 else
                  f"Its documented successors are {' or '.join(entry.successors)}")
    current = served_successors(entry, today() if day is None else day)
    if current != entry.successors:
        gone = [name for name in entry.successors if name not in current]
        documented += f" ({', '.join(gone)} shut down since; now {' or '.join(current)})"
    models = list(models)
    named = [m.name for successor in current for m in models
             if (m.route, m.provider_model) == (entry.route, successor) and m.name != spec.name]
    if named:
        return (f"{documented}: run --model {named[0]} instead (or point {spec.name} at another id with "
                "--models-file).")
    return (f"{documented}: point {spec.name} at it with --models-file "
            f"({spec.name}: {{provider_model: {current[0]}}}), or choose another --model.")


def served_successors(entry: Retirement, day: dt.date, seen: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The entry's successors as served on ``day``: one shut down by then stands for its own successors."""
    served: list[str] = []
    for name in entry.successors:
        later = lookup(entry.route, name)
        if later is not None and later.is_retired(day) and later.successors and name not in seen:
            served += served_successors(later, day, (*seen, entry.provider_model, name))
        else:
            served.append(name)
    return tuple(dict.fromkeys(served))


# --------------------------------------------------------------------------- a provider's "no such model"


def model_gone(spec: ModelSpec, reply: str, models: Iterable[ModelSpec] | None = None, *, status: int | None = None) -> ModelGone:
    """The final error for a provider's "this model does not exist / was retired" reply (``reply`` says which,
    already redacted): the date and the successor when the table knows the id, else what to do."""
    head = f"{spec.name} ({spec.provider_model}) via {spec.route}: {reply}: the provider says this model id " \
           "does not exist or was retired"
    entry = lookup(spec.route, spec.provider_model)
    if entry is None:
        advice = ("it is not in the plugin's retirement table (pytest_hypeedit/retirements.yaml): check the "
                  "provider's model list and deprecations page, then point the model at a current id with "
                  "--models-file")
    else:
        when = f"it was shut down on {entry.shutdown}" if entry.shutdown else "no shutdown date is announced"
        advice = f"{when} ({entry.source}). " + successor_advice(
            spec, entry, _builtin_models() if models is None else models)
    return ModelGone(f"{head}; {advice} Not retried: no call of this model id can succeed.", status=status)


def _builtin_models() -> list[ModelSpec]:
    from .registry import load_registry

    try:
        return list(load_registry().models.values())
    except ConfigError:
        return []
