"""Command-line options -> one frozen, validated ``RunConfig``.

Built once per process (the controller and every xdist worker build the same
one from the same options), so every process agrees on the models, splits,
repeats and folders.  Errors are ``ConfigError``s naming the option, the bad
value and what is allowed; the plugin turns them into pytest usage errors.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .errors import ConfigError
from .registry import ModelSpec, Registry, RouteLimits, load_registry, parse_rate_limit
from .tasks import Split, SplitSource, default_sources, load_split, parse_tasks_option

if TYPE_CHECKING:
    from .analysis.metrics import MetricSettings
    from .report.results_model import RunSettings

DEFAULT_JUDGE = "gemini-3-flash"
#: Candidates in progress at once.  32 keeps one or two models' routes at their default limits (8 in flight
#: on most routes) plus the judge busy, with memory to spare on a small CI runner; a run of the seven
#: models, whose routes allow about 60 calls in flight together, wants --concurrency 64.
DEFAULT_CONCURRENCY = 32
AUTO = "auto"
DEFAULT_IMAGES_BASE = "https://cdn.sourceful.com/research/benchmarks/hype-edit-1/tasks"


@dataclass(frozen=True)
class RunConfig:
    models: tuple[ModelSpec, ...]
    splits: tuple[Split, ...]
    repeats: int
    outputs: Path
    results: Path
    judge: str
    rejudge: bool
    images_base: str | None  # --images-base; None: each split's own base, else the upstream CDN
    cache_dir: Path
    retry_cap: int
    review_seconds: float
    review_rate: float
    budget: float | None
    registry: Registry
    rate_limits: Mapping[str, RouteLimits]  # --rate-limit overrides, by route
    concurrency: int = DEFAULT_CONCURRENCY  # candidates in progress at once across the run
    adaptive: bool = False  # --concurrency auto: each route's level follows the provider (AIMD)
    possibly_paid: str = "rebuy"  # --possibly-paid: rebuy a possibly paid candidate, or hold it for review
    judge_tier: str = "standard"  # --judge-tier (judges/judge_tiers.py): standard, flex or flex-or-standard
    tier: str = "standard"  # --tier: the price tier candidates are bought at, where the model's route sells it
    #: (split, model) -> the folder of the release this run buys from (engine/release.py), chosen on the
    #: controller before anything is bought and handed to every worker; empty: each model's own folder
    folders: Mapping[tuple[str, str], str] = dataclasses.field(default_factory=dict)

    def limits_for(self, spec: ModelSpec) -> RouteLimits:
        """A route's limits: --rate-limit wins over the model's own, which win over models.yaml's routes.  A model
        bought on its batch tier (--tier batch) keeps its route's requests per minute but may have many candidates
        in flight: they wait together for their batch (providers/batching.py), and its few calls are the
        collector's, not theirs."""
        limits = self.rate_limits.get(spec.route) or self.registry.limits_for(spec)
        if spec.has_tier(self.tier) and self.tier != "standard" and spec.route not in self.rate_limits:
            from .providers.batching import BATCH_INFLIGHT

            return RouteLimits(rpm=limits.rpm, inflight=BATCH_INFLIGHT)
        return limits

    @property
    def metric_settings(self) -> MetricSettings:
        from .analysis.metrics import MetricSettings, review_cost  # numpy: only where metrics are computed

        return MetricSettings(retry_cap=self.retry_cap, review_cost=review_cost(self.review_seconds, self.review_rate))

    def images_base_for(self, split: Split) -> str:
        return self.images_base or split.source.images_base or DEFAULT_IMAGES_BASE

    def settings_json(self) -> RunSettings:
        return {
            "repeats": self.repeats,
            "retry_cap": self.retry_cap,
            "review_cost": self.metric_settings.review_cost,
            "review_seconds": self.review_seconds,
            "review_rate": self.review_rate,
            "judge": self.judge,
            "judge_tier": self.judge_tier,
            "budget": self.budget,
            "splits": {s.name: {"location": s.source.location, "sha256": s.source.sha256} for s in self.splits},
            # where the candidates are: a later run given this file as --baseline shows them beside its own
            "outputs": str(self.outputs.resolve()),
        }


def default_cache_dir() -> Path:
    if os.environ.get("HYPEEDIT_CACHE_DIR"):
        return Path(os.environ["HYPEEDIT_CACHE_DIR"])
    import platformdirs

    return Path(platformdirs.user_cache_dir("pytest-hypeedit"))


def run_config_of(config: Any, extra_models: Sequence[dict[str, Any]] = (), *, load_tasks: bool = True) -> RunConfig:
    """The run's config from a pytest config's options (``build_run_config``), relative to where pytest was
    started."""
    return build_run_config(config.option, Path(config.invocation_params.dir), extra_models, load_tasks=load_tasks)


def build_run_config(option: Any, invocation_dir: Path, extra_models: Sequence[dict[str, Any]] = (), *,
                     load_tasks: bool = True) -> RunConfig:
    """Validate the options (``config.option``) and load the registry and the task files.

    ``invocation_dir`` is where pytest was started (``config.invocation_params.dir``), never the
    rootdir: pytest moves the rootdir when an option's value looks like a path (glue/rootdir_guard.py).
    ``load_tasks=False`` leaves ``splits`` empty: nothing is downloaded (the up-front key check runs first).
    """
    from .judges.judge_tiers import parse_judge_tier

    registry = load_registry([Path(p) for p in option.hypeedit_models_files or []], extra_models)
    models = with_release_labels(tuple(registry.get(name) for name in dict.fromkeys(option.hypeedit_models)),
                                 getattr(option, "hypeedit_releases", None) or [])
    cache_dir = Path(option.hypeedit_cache_dir) if option.hypeedit_cache_dir else default_cache_dir()
    outputs = Path(option.hypeedit_outputs or invocation_dir / "hypeedit-outputs")
    return RunConfig(
        models=models,
        splits=load_splits(option.hypeedit_tasks, cache_dir) if load_tasks else (),
        repeats=_at_least("--repeats", option.hypeedit_repeats, 1),
        outputs=outputs,
        results=Path(option.hypeedit_results) if option.hypeedit_results else outputs / "results.json",
        judge=option.hypeedit_judge or DEFAULT_JUDGE,
        rejudge=bool(option.hypeedit_rejudge),
        images_base=option.hypeedit_images_base,
        cache_dir=cache_dir,
        retry_cap=_at_least("--retry-cap", option.hypeedit_retry_cap, 1),
        review_seconds=_non_negative("--review-seconds", option.hypeedit_review_seconds),
        review_rate=_non_negative("--review-rate", option.hypeedit_review_rate),
        budget=None if option.hypeedit_budget is None else _budget(option.hypeedit_budget),
        registry=registry,
        rate_limits=dict(parse_rate_limit(text) for text in option.hypeedit_rate_limits or []),
        **parse_concurrency(getattr(option, "hypeedit_concurrency", None)),
        possibly_paid=parse_possibly_paid(getattr(option, "hypeedit_possibly_paid", None)),
        judge_tier=parse_judge_tier(getattr(option, "hypeedit_judge_tier", None)),
        tier=parse_tier(getattr(option, "hypeedit_tier", None)),
    )


def with_release_labels(models: tuple[ModelSpec, ...], values: Sequence[str]) -> tuple[ModelSpec, ...]:
    """``--release LABEL`` / ``--release MODEL=LABEL`` set the release label of the run's models (it wins over a
    models file's ``release:``)."""
    from .engine.release import parse_release_options

    labels = parse_release_options(values, [spec.name for spec in models])
    return tuple(dataclasses.replace(spec, release=labels[spec.name]) if spec.name in labels else spec
                 for spec in models)


def parse_tier(value: Any) -> str:
    """``--tier standard|batch``; unset: standard."""
    from .registry import STANDARD, TIERS

    text = STANDARD if value is None or value == "" else str(value).strip().lower()
    if text not in TIERS:
        raise ConfigError(f"--tier {value}: give standard (the synchronous list price) or batch (the providers' "
                          "batch tiers at about half price, for the models whose route has one)")
    return text


def parse_possibly_paid(value: Any) -> str:
    """``--possibly-paid rebuy|review`` (engine/journal.py); unset: rebuy."""
    from .engine.journal import POSSIBLY_PAID_CHOICES, REBUY

    text = REBUY if value is None or value == "" else str(value).strip().lower()
    if text not in POSSIBLY_PAID_CHOICES:
        raise ConfigError(f"--possibly-paid {value}: give rebuy (buy such a candidate again, counted as possibly "
                          "paid) or review (leave it as an error to check in the provider's dashboard first)")
    return text


def parse_concurrency(value: Any) -> dict[str, Any]:
    """``--concurrency N|auto`` -> the RunConfig fields ``concurrency`` and ``adaptive``."""
    if value is None or value == "":
        return {"concurrency": DEFAULT_CONCURRENCY, "adaptive": False}
    text = str(value).strip().lower()
    if text == AUTO:
        # The routes' own limits are the ceilings; this only bounds memory and threads.
        return {"concurrency": 256, "adaptive": True}
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise ConfigError(f"--concurrency {value}: give a whole number >= 1 (e.g. 32), or auto")
    return {"concurrency": number, "adaptive": False}


def split_sources(values: list[str] | None) -> list[SplitSource]:
    """Where each split of ``--tasks`` (default: the public split) comes from; nothing is read or downloaded."""
    return [parse_tasks_option(v) for v in values] if values else default_sources()


def load_splits(values: list[str] | None, cache_dir: Path) -> tuple[Split, ...]:
    sources = split_sources(values)
    names = [s.name for s in sources]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"--tasks: two task files make the split {duplicates[0]!r}; name one with --tasks NAME=PATH")
    return tuple(load_split(source, cache_dir) for source in sources)


def _at_least(option: str, value: int, minimum: int) -> int:
    if value is None or value < minimum:
        raise ConfigError(f"{option} {value}: must be a whole number >= {minimum}")
    return value


#: The largest --budget: the ledger counts integer micro-dollars (engine/budget.py), and a trillion dollars is
#: no cap anyone means.
MAX_BUDGET = 1e12


def _budget(value: float) -> float:
    value = _non_negative("--budget", value)
    if value > MAX_BUDGET:
        raise ConfigError(f"--budget {value:g}: must be at most {MAX_BUDGET:g} USD; leave --budget out for no cap")
    return value


def _non_negative(option: str, value: float) -> float:
    # not "value < 0" alone: nan passes it, and inf is no number of dollars or seconds
    if value is None or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{option} {value}: must be a finite number >= 0")
    return float(value)
