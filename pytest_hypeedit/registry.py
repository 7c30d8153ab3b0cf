"""models.yaml -> validated, frozen model specs (route, provider model id, price).

The built-in ``models.yaml`` lists the paper's seven models and ``identity``.
A user's own files (``--models-file``) and the ``pytest_hypeedit_add_models``
hook add models, or replace keys of an existing one (e.g. its route) without
renaming it, so its results keep the paper's name.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from .errors import ConfigError
from .finite import finite_number
from .untrusted import MODELS_BYTES, UntrustedInput, load_yaml_file

BUILTIN_MODELS = Path(__file__).resolve().parent / "models.yaml"
_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
_ENTRY_KEYS = {"route", "provider_model", "price", "batch_price", "options", "limits", "note", "release", "routes"}
#: What a model's other route (``routes: {ROUTE: {...}}``) may set; price and release are the model's unless given,
#: options are not (they are the adapter's own, and another route has another adapter).
_ROUTE_KEYS = {"provider_model", "price", "batch_price", "options", "limits", "note", "release"}
#: Between a model's name and one of its routes: ``--model qwen-image-edit-2511@dashscope`` (its own row).
ROUTE_SEPARATOR = "@"
#: The price tiers a run can buy at (``--tier``): the synchronous list price, or a provider's batch tier.
STANDARD, BATCH = "standard", "batch"
TIERS = (STANDARD, BATCH)


@dataclass(frozen=True)
class RouteLimits:
    """Requests per minute and requests in flight for one route, across all workers."""

    rpm: float | None = None
    inflight: int | None = None


@dataclass(frozen=True)
class ModelSpec:
    name: str
    route: str
    provider_model: str
    price: float  # USD per candidate
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    limits: RouteLimits = RouteLimits()
    note: str | None = None
    #: USD per candidate on the provider's batch tier (models.yaml ``batch_price``, cited there); None: the
    #: model's route sells no batch tier, so ``--tier batch`` buys it at the standard price.
    batch_price: float | None = None
    #: The team's label of the release this entry buys from (models file ``release:``, or ``--release``), part
    #: of the release's identity (engine/release.py); None: no label.
    release: str | None = None
    #: The model on its other routes (models file ``routes:``), each a spec named ``NAME@ROUTE``: ``--model
    #: NAME@ROUTE`` runs one as its own row (``Registry.get``).
    routes: Mapping[str, "ModelSpec"] = field(default_factory=lambda: MappingProxyType({}))

    def route_names(self) -> list[str]:
        """The routes the model can be bought through: its own first, then the others, sorted."""
        return [self.route] + sorted(route for route in self.routes if route != self.route)

    def has_tier(self, tier: str) -> bool:
        return tier == STANDARD or (tier == BATCH and self.batch_price is not None)

    def price_at(self, tier: str) -> float:
        """The one place that answers what a candidate costs at a tier: the batch price on the batch tier
        where the model has one, else the standard list price."""
        if tier == BATCH and self.batch_price is not None:
            return self.batch_price
        return self.price

    def on_route(self, route: str) -> "ModelSpec":
        """This model on ``route``, named ``NAME@ROUTE``; a ConfigError naming the routes it has when it has not
        that one."""
        named = f"{self.name}{ROUTE_SEPARATOR}{route}"
        if route == self.route:
            return replace(self, name=named, routes=MappingProxyType({}))
        if route not in self.routes:
            raise ConfigError(f"--model {named}: model {self.name} has no route {route!r}; its routes: "
                              f"{', '.join(self.route_names())}. Add one under 'routes:' of the model in a "
                              "--models-file (docs/how-to/serving.md)")
        return self.routes[route]

    def tier_factor(self, tier: str) -> float:
        """What the tier charges for what the standard tier charges 1 (0.5: half price), for prices the
        adapter computes from the reply's usage."""
        return self.price_at(tier) / self.price if self.price else 1.0


@dataclass(frozen=True)
class Registry:
    models: Mapping[str, ModelSpec]
    route_limits: Mapping[str, RouteLimits]

    def get(self, name: str) -> ModelSpec:
        """The model ``--model`` names: ``NAME``, or ``NAME@ROUTE`` for the model on another of its routes (a row of
        its own, named so, in its own folder and release)."""
        model, route = parse_model_name(name)
        if route is not None:
            return self.get(model).on_route(route)
        if name not in self.models:
            known = ", ".join(sorted(self.models))
            raise ConfigError(
                f"--model {name}: unknown model. Known models: {known}. "
                "Add your own with --models-file FILE.yaml or the pytest_hypeedit_add_models hook."
            )
        return self.models[name]

    def limits_for(self, spec: ModelSpec) -> RouteLimits:
        route = self.route_limits.get(spec.route, RouteLimits())
        return RouteLimits(
            rpm=spec.limits.rpm if spec.limits.rpm is not None else route.rpm,
            inflight=spec.limits.inflight if spec.limits.inflight is not None else route.inflight,
        )


def parse_model_name(text: str) -> tuple[str, str | None]:
    """``--model NAME`` or ``NAME@ROUTE`` -> (name, route or None): the one reading of a model's name."""
    name, at, route = str(text).partition(ROUTE_SEPARATOR)
    if (at and not (name and route)) or ROUTE_SEPARATOR in route:
        raise ConfigError(f"--model {text}: give NAME or NAME@ROUTE (one route), e.g. qwen-image-edit-2511@dashscope")
    return name, (route if at else None)


def parse_rate_limit(text: str) -> tuple[str, RouteLimits]:
    """``--rate-limit ROUTE=RPM[/INFLIGHT]``, e.g. ``ark=120/8``, ``fal=/2`` (in flight only)."""
    match = re.match(r"^([A-Za-z0-9_.\-]+)=(\d+(?:\.\d+)?)?(?:/(\d+))?$", text.strip())
    if not match or not (match.group(2) or match.group(3)):
        raise ConfigError(f"--rate-limit {text}: expected ROUTE=RPM[/INFLIGHT], e.g. ark=120/8 or fal=/2")
    route, rpm, inflight = match.groups()
    # A part left out means no limit of that kind; a part given as 0 is an error (_limits), never "no limit":
    # ark=0/0 once removed the route's limits silently.
    given = {"rpm": rpm and float(rpm), "inflight": inflight and int(inflight)}
    return route, _limits({k: v for k, v in given.items() if v is not None}, f"--rate-limit {text}")


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = load_yaml_file(Path(path), MODELS_BYTES) or {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read models file ({exc.strerror})") from None
    except UntrustedInput as exc:
        raise ConfigError(f"{path}: models file not accepted: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("models") or {}, dict):
        raise ConfigError(f"{path}: a models file is a mapping with a 'models:' mapping of name -> entry")
    if not isinstance(data.get("routes") or {}, dict):
        raise ConfigError(f"{path}: 'routes:' must be a mapping of route -> limits (rpm, inflight)")
    return data


def build_registry(sources: Iterable[tuple[str, Mapping[str, Any]]]) -> Registry:
    """Merge raw model tables in order (later entries replace keys), then validate them all.

    ``sources`` are (where, data) pairs; ``data`` has ``models`` and optionally ``routes``.
    """
    raw_models: dict[str, dict[str, Any]] = {}
    origin: dict[str, str] = {}
    raw_routes: dict[str, dict[str, Any]] = {}
    for where, data in sources:
        for name, entry in (data.get("models") or {}).items():
            if not isinstance(entry, dict):
                raise ConfigError(f"{where}: model {name!r} must be a mapping of {sorted(_ENTRY_KEYS)}")
            raw_models[str(name)] = {**raw_models.get(str(name), {}), **entry}
            origin[str(name)] = where
        for route, limits in (data.get("routes") or {}).items():
            if not isinstance(limits or {}, dict):
                raise ConfigError(f"{where}: routes.{route} must be a mapping of 'rpm' and 'inflight'")
            raw_routes[str(route)] = {**raw_routes.get(str(route), {}), **(limits or {})}
    models = {name: _model_spec(name, entry, origin[name]) for name, entry in raw_models.items()}
    routes = {route: _limits(limits, f"routes.{route}") for route, limits in raw_routes.items()}
    return Registry(MappingProxyType(models), MappingProxyType(routes))


def _model_spec(name: str, entry: dict[str, Any], where: str, plain: bool = True) -> ModelSpec:
    if plain and not _MODEL_NAME.fullmatch(name):  # "$" alone would let a trailing newline into a folder name
        raise ConfigError(f"{where}: model name {name!r} is not a plain name; it becomes a folder name")
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise ConfigError(f"{where}: model {name}: unknown keys {sorted(unknown)}; allowed: {sorted(_ENTRY_KEYS)}")
    route, provider_model, price = entry.get("route"), entry.get("provider_model"), entry.get("price")
    if not isinstance(route, str) or not route:
        raise ConfigError(f"{where}: model {name}: 'route' must name a provider route (e.g. gemini, ark, identity)")
    if not finite_number(price) or price < 0:
        raise ConfigError(f"{where}: model {name}: 'price' must be a finite number >= 0 (USD per candidate), "
                          f"got {price!r}")
    batch_price = entry.get("batch_price")
    if batch_price is not None and (not finite_number(batch_price) or batch_price < 0):
        raise ConfigError(f"{where}: model {name}: 'batch_price' must be a finite number >= 0 (USD per candidate "
                          f"on the provider's batch tier), or left out when there is none; got {batch_price!r}")
    for key in ("provider_model", "note"):
        if entry.get(key) is not None and not isinstance(entry[key], str):
            raise ConfigError(f"{where}: model {name}: {key!r} must be text, got {type(entry[key]).__name__}")
    from .engine.release import check_label

    release = check_label(entry.get("release"), f"{where}: model {name}: 'release'")
    options = entry.get("options") or {}
    if not isinstance(options, dict):
        raise ConfigError(f"{where}: model {name}: 'options' must be a mapping")
    _check_finite(options, f"{where}: model {name}: options")
    spec = ModelSpec(
        name=name,
        route=route,
        provider_model=str(provider_model or name),
        price=float(price),
        options=MappingProxyType(dict(options)),
        limits=_limits(entry.get("limits") or {}, f"{where}: model {name}: limits"),
        note=entry.get("note"),
        batch_price=None if batch_price is None else float(batch_price),
        release=release,
    )
    return replace(spec, routes=MappingProxyType(_other_routes(spec, entry.get("routes"), where)))


def _other_routes(spec: ModelSpec, routes: Any, where: str) -> dict[str, ModelSpec]:
    """A model's ``routes: {ROUTE: {provider_model, price, ...}}``: each a spec named ``NAME@ROUTE`` taking the
    model's price and release unless it gives its own, and only its own options."""
    if routes is None:
        return {}
    if not isinstance(routes, dict) or not all(isinstance(v, dict) for v in routes.values()):
        raise ConfigError(f"{where}: model {spec.name}: 'routes' must be a mapping of route -> "
                          f"{{{', '.join(sorted(_ROUTE_KEYS))}}}")
    found = {}
    for route, given in routes.items():
        if not _MODEL_NAME.fullmatch(str(route)) or str(route) == spec.route:
            raise ConfigError(f"{where}: model {spec.name}: routes.{route}: give another route than the model's own "
                              f"({spec.route}), as a plain name (it becomes part of a folder name)")
        unknown = set(given) - _ROUTE_KEYS
        if unknown:
            raise ConfigError(f"{where}: model {spec.name}: routes.{route}: unknown keys {sorted(unknown)}; "
                              f"allowed: {sorted(_ROUTE_KEYS)}")
        entry = {"route": str(route), "price": spec.price, "release": spec.release, **given}
        named = f"{spec.name}{ROUTE_SEPARATOR}{route}"
        found[str(route)] = _model_spec(named, entry, where, plain=False)
    return found


def _limits(data: Any, where: str) -> RouteLimits:
    if not isinstance(data, dict) or set(data) - {"rpm", "inflight"}:
        raise ConfigError(f"{where}: limits take 'rpm' (requests per minute) and 'inflight' (requests at once)")
    rpm, inflight = data.get("rpm"), data.get("inflight")
    for key, value in (("rpm", rpm), ("inflight", inflight)):
        if value is not None and (not finite_number(value) or value <= 0):
            raise ConfigError(f"{where}: {key} must be a finite number > 0 (leave it out for no limit), got {value!r}")
    if inflight is not None and int(inflight) < 1:
        raise ConfigError(f"{where}: inflight must be a whole number >= 1, got {inflight!r}")
    return RouteLimits(rpm=None if rpm is None else float(rpm), inflight=None if inflight is None else int(inflight))


def _check_finite(value: Any, where: str) -> None:
    """No nan or inf anywhere in a model's options: an adapter computes sizes, waits and prices from them."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: {value!r} is not a finite number")
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        _check_finite(item, f"{where}.{key}")


def load_registry(extra_files: Iterable[Path] = (), extra_entries: Iterable[Mapping[str, Any]] = ()) -> Registry:
    """The built-in models, then the user's files, then entries from the add-models hook."""
    sources: list[tuple[str, Mapping[str, Any]]] = [(str(BUILTIN_MODELS), read_yaml(BUILTIN_MODELS))]
    sources += [(str(path), read_yaml(path)) for path in extra_files]
    for given in extra_entries:
        entry = dict(given)
        name = entry.pop("name", None)
        if not name:
            raise ConfigError(f"pytest_hypeedit_add_models: every entry needs a 'name', got {entry!r}")
        sources.append(("pytest_hypeedit_add_models hook", {"models": {name: entry}}))
    return build_registry(sources)
