"""The options, in the sections of pytest --help: each is a command-line flag and an ini-file key at once.

Kept apart from the hooks and free of heavy imports: every pytest process
(each xdist worker too) reads it, benchmark run or not.

One ``add(...)`` line declares an option (the arguments of argparse's
``add_argument``); it gives the flag and the ini key named after its ``dest``
(``--repeats`` -> ``hypeedit_repeats``), which ``pytest --help`` lists.  A
repeatable option takes a list in the ini file (``args``: separated as in a
shell, or one per line; ``linelist`` for gates, which may hold spaces).

``apply_ini`` runs first thing at configure time (glue/ini.py): every option the
command line left unset takes the ini file's value, converted by the option's
own ``type`` (the same conversion argparse applies to the flag), else its
default.  So the command line wins, as pytest users expect, and every later
check sees one value wherever it came from.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping

import pytest

from .errors import ConfigError

if TYPE_CHECKING:
    import pytest

#: pytest --help's sections of the plugin's options: (group name, title), in the order shown.
GROUPS = (
    ("hypeedit", "HYPE-EDIT-1 benchmark: run (what to run, where it goes)"),
    ("hypeedit-money", "HYPE-EDIT-1 benchmark: models and money"),
    ("hypeedit-judges", "HYPE-EDIT-1 benchmark: judges and human labels"),
    ("hypeedit-statistics", "HYPE-EDIT-1 benchmark: statistics and CI gates"),
    ("hypeedit-reports", "HYPE-EDIT-1 benchmark: reports"),
)
#: Each option's section of pytest --help (a group name of GROUPS).  A new option gets a line here; the
#: reference (docs/reference/options.md) has one table per section, in the same order.
GROUP_OF = {
    "--model": "hypeedit", "--tasks": "hypeedit", "--images-base": "hypeedit", "--repeats": "hypeedit",
    "--outputs": "hypeedit", "--results": "hypeedit", "--cache-dir": "hypeedit", "--release": "hypeedit",
    "--models-file": "hypeedit-money", "--budget": "hypeedit-money", "--estimate": "hypeedit-money", "--possibly-paid": "hypeedit-money",
    "--tier": "hypeedit-money",
    "--concurrency": "hypeedit-money", "--rate-limit": "hypeedit-money",
    "--judge": "hypeedit-judges", "--judge-base-url": "hypeedit-judges", "--rejudge": "hypeedit-judges",
    "--judge-tier": "hypeedit-judges", "--agreement": "hypeedit-judges", "--calibrate": "hypeedit-judges", "--judge-stability": "hypeedit-judges",
    "--judge-controls": "hypeedit-judges",
    "--retry-cap": "hypeedit-statistics", "--review-seconds": "hypeedit-statistics",
    "--review-rate": "hypeedit-statistics", "--gate": "hypeedit-statistics",
    "--allow-incomplete": "hypeedit-statistics", "--bootstrap": "hypeedit-statistics",
    "--bootstrap-seed": "hypeedit-statistics", "--baseline": "hypeedit-statistics",
    "--sequential": "hypeedit-statistics", "--gate-alpha": "hypeedit-statistics",
    "--html-views": "hypeedit-reports", "--html-max-mb": "hypeedit-reports",
    "--html-full-resolution": "hypeedit-reports", "--baseline-outputs": "hypeedit-reports",
    "--signals": "hypeedit-reports",
}
#: An option not in GROUP_OF yet is still listed, in the first section, rather than lost.
DEFAULT_GROUP = GROUPS[0][0]

#: Printed after pytest --help's own text (pytest has no place for a plugin's environment variables).
HELP_EPILOGUE = """HYPE-EDIT-1 benchmark: environment variables
  provider keys            {keys}
  HYPEEDIT_<PROVIDER>_BASE_URL  move a provider's API (a proxy, a regional endpoint), e.g. HYPEEDIT_ARK_BASE_URL
  HYPEEDIT_JUDGE_API_KEY   the key of an openai:MODEL judge on a server of your own (--judge-base-url)
  HYPEEDIT_JUDGE_SCRIPT_URL  a mirror (URL or path) of the upstream judge script; its sha256 pin holds
  HYPEEDIT_PUBLIC_SPLIT_URL  a mirror of the public task file; its sha256 pin holds
  HYPEEDIT_CACHE_DIR       the cache folder (default: the user cache dir; --cache-dir wins)
  HYPEEDIT_STOP_GRACE_S    seconds calls in flight get to finish after Ctrl-C or SIGTERM (default 10)
HYPE-EDIT-1 benchmark: commands
  hypeedit-leaderboard     merge results JSON files into one RESULTS.md table (--with-published, --index)
  hypeedit-review          the human review web app: label candidates PASS/FAIL (--sample for calibration)
  the keyless try-out      pytest --model identity --tasks example --judge labels:example
"""


class NotFinite(argparse.ArgumentTypeError, ValueError):
    """A number option given as nan or inf: argparse prints the message as it is (an ArgumentTypeError), and
    the ini file's conversion catches it as any bad value (a ValueError)."""


def finite_float(text: str) -> float:
    """argparse's ``float``, not accepting nan and inf: ``--budget nan`` would pass every comparison with the cap
    (nan < x is False), ``--budget inf`` is no cap, and both broke every item later."""
    value = float(text)
    if not math.isfinite(value):
        raise NotFinite(f"{text!r} is not a finite number; give a plain number such as 5 or 0.5")
    return value


def _declare_all(add: Callable[..., None]) -> None:
    """Every option of the plugin, one ``add`` call each."""
    add("--model", action="append", dest="hypeedit_models", default=[], metavar="NAME",
        help="run the benchmark on this model (repeatable); see models.yaml. NAME@ROUTE: the model on another of its "
             "routes (its routes: in a models file), as a row of its own")
    add("--tasks", action="append", dest="hypeedit_tasks", default=[], metavar="[NAME=]PATH|URL",
        help="task file of a split (repeatable; default: the public split, downloaded at its pinned commit)")
    add("--images-base", dest="hypeedit_images_base", metavar="DIR|URL",
        help="where reference images live: <base>/<task_id>/<file> (default: the split's own, else upstream CDN)")
    add("--repeats", dest="hypeedit_repeats", type=int, default=10, metavar="N",
        help="candidates per task and model (default 10)")
    add("--outputs", dest="hypeedit_outputs", metavar="DIR",
        help="where candidates and records go (default ./hypeedit-outputs)")
    add("--release", action="append", dest="hypeedit_releases", default=[], metavar="[MODEL=]LABEL",
        help="label of the release the models answer from (e.g. 2026-11-28, v1.4.0): recorded and part of "
             "the release's identity, so candidates of another release are never counted; MODEL=LABEL for one model "
             "(repeatable; wins over a models file's release:)")
    add("--results", dest="hypeedit_results", metavar="PATH",
        help="results JSON (default <outputs>/results.json; a Markdown table is written beside it)")
    add("--judge", dest="hypeedit_judge", metavar="SPEC",
        help="judge: gemini-3-flash (default: the upstream judge, its own prompt and settings), "
             "gemini-3-flash-rubric, gemini:MODEL, openai:MODEL, openai-rubric:MODEL, labels:PATH[,PATH...], "
             "or several separated by commas for a majority")
    add("--judge-base-url", dest="hypeedit_judge_base_url", metavar="URL",
        help="chat-completions server of an openai:MODEL judge, e.g. http://localhost:8000/v1 (vLLM, Ollama)")
    add("--judge-tier", dest="hypeedit_judge_tier", default=None, metavar="standard|flex|flex-or-standard",
        help="price tier of the judge's calls: standard (default), flex (Gemini Flex, 50%% of the standard "
             "price, minutes per verdict; shed requests are retried on Flex) or flex-or-standard (a verdict Flex "
             "keeps shedding is asked once more at standard); batch is not supported yet")
    add("--rejudge", dest="hypeedit_rejudge", action="store_true",
        help="judge again candidates whose verdict is already on disk")
    add("--models-file", action="append", dest="hypeedit_models_files", default=[], metavar="PATH",
        help="YAML file of extra models or overrides, same shape as models.yaml (repeatable)")
    add("--cache-dir", dest="hypeedit_cache_dir", metavar="DIR",
        help="cache of task files and reference images (default: the user cache dir, or $HYPEEDIT_CACHE_DIR)")
    add("--retry-cap", dest="hypeedit_retry_cap", type=int, default=4, metavar="A",
        help="attempts a user makes at most, for expected attempts and effective cost (default 4)")
    add("--review-seconds", dest="hypeedit_review_seconds", type=finite_float, default=20.0, metavar="S",
        help="human review time per candidate, for effective cost (default 20)")
    add("--review-rate", dest="hypeedit_review_rate", type=finite_float, default=50.0, metavar="USD",
        help="reviewer cost per hour, for effective cost (default 50)")
    add("--rate-limit", action="append", dest="hypeedit_rate_limits", default=[], metavar="ROUTE=RPM[/INFLIGHT]",
        help="requests per minute and in flight for a route, across all workers (repeatable; overrides models.yaml)")
    add("--budget", dest="hypeedit_budget", type=finite_float, default=None, metavar="USD",
        help="hard cap on money spent by this run across all workers")
    add("--estimate", dest="hypeedit_estimate", action="store_true",
        help="print what the run would buy, the most it can cost and about how long it takes, per model and "
             "route, then exit 0 without calling any provider (no API key needed)")
    add("--possibly-paid", dest="hypeedit_possibly_paid", default=None, metavar="rebuy|review",
        help="a candidate whose paid call may have been paid but whose reply never came (a kill, a lost "
             "connection): buy it again and count it as possibly paid (rebuy, the default), or leave it as an "
             "error for review (review)")
    add("--tier", dest="hypeedit_tier", default=None, metavar="standard|batch",
        help="the price tier candidates are bought at: standard (the default), or batch: models whose route "
             "has a batch tier (OpenAI's Batch API, Gemini's Batch mode; about half price, results within hours) "
             "buy through it, the others at standard (the run says which at the start)")
    add("--concurrency", dest="hypeedit_concurrency", default=None, metavar="N|auto",
        help="candidates in progress at once (generating or being judged) across the whole run, -n workers "
             "included (default 32); each route's own limits still cap it. 'auto': each route's calls in "
             "flight grow while the provider keeps up and are cut back on 429")
    add("--signals", dest="hypeedit_signals", action="store_true",
        help="also measure the pixel signals (size, SSIM, colour difference) of candidates read back from disk "
             "whose records lack them: a full decode of each, minutes for thousands of large images (a candidate "
             "bought by the run is always measured)")
    add("--html-views", dest="hypeedit_html_views", type=int, default=1280, metavar="PX",
        help="with --html: the report folder keeps a full-size view (WebP) of every failure, at most PX pixels "
             "on its long side (default 1280); 0 keeps none (thumbnails only)")
    add("--html-max-mb", dest="hypeedit_html_max_mb", type=finite_float, default=None, metavar="MB",
        help="with --html: the report folder's size goal (default: 55 up to 500 candidates, 13 KB more per "
             "candidate beyond, at most 140); the views share what the page and the thumbnails leave, each down "
             "to 320 px; 0: no goal, every view at --html-views")
    add("--html-full-resolution", dest="hypeedit_html_full_resolution", action="store_true",
        help="with --html: keep every full-size view at its original's resolution (the original itself when a "
             "browser shows it), with no size goal: a heavy report folder")
    _declare_ci(add)
    add("--agreement", dest="hypeedit_agreement", metavar="labels:PATH[,PATH...]",
        help="compare the judge with a human panel (rater files or a folder of them): agreement, "
             "Cohen's kappa, false-fail/false-pass by task type; into the results JSON under 'agreement'")
    add("--judge-stability", dest="hypeedit_judge_stability", metavar="N[xK]",
        help="re-judge N candidates (stratified by model and split) K more times each (default K 2): paid calls, "
             "in --budget, kept in the records; reports how often the same judge flips its verdict")
    add("--judge-controls", dest="hypeedit_judge_controls", action="store_true",
        help="before the items, show the judge candidates whose right verdict is FAIL without a person (per task: "
             "the reference unchanged, a flat image, another task's reference, the reference mirrored): paid once, "
             "in --budget, kept under <outputs>/_judge_controls, in no model's figures; with --agreement/--calibrate "
             "labels also a candidate people passed (right verdict PASS); results 'judge_controls', gates "
             "judge_false_pass, judge_false_fail and (with --baseline) judge_drift")
    add("--calibrate", dest="hypeedit_calibrate", metavar="labels:PATH[,PATH...]",
        help="correct every metric for the judge's errors with a random human sample (rater files, or their "
             "folder with the sample-design.json of hypeedit-review --sample): calibrated figures with 95%% "
             "intervals, first in the table; labels without a design are taken as a simple random sample")


def _declare_ci(add: Callable[..., None]) -> None:
    """What CI reads: gates, statistics, a baseline."""
    add("--gate", action="append", dest="hypeedit_gates", default=[], metavar="[MODEL[@SPLIT]:]METRIC OP VALUE",
        ini="linelist",  # one gate per line: a gate may be written with spaces ("pass_rate >= 0.6")
        help="a metric gate, e.g. 'pass_rate>=0.6', 'seedream-4.5:pass_at_4>=0.65', 'pass_rate>=baseline-0.02' "
             "(repeatable). With gates, the exit status is 0 when all pass (even if items failed), 1 otherwise")
    add("--sequential", dest="hypeedit_sequential", action="store_true",
        help="with pass-rate gates: buy candidates in a random order over tasks (drawn once per outputs folder, "
             "kept there for reruns) and stop buying once every gate is decided at its share of --gate-alpha "
             "(an anytime-valid betting test); the rest are skipped")
    add("--gate-alpha", dest="hypeedit_gate_alpha", type=finite_float, default=0.05, metavar="ALPHA",
        help="with --sequential: the chance at most, per run, that an early decision differs from the full "
             "run's on the same task set, split over the run's gates (default 0.05)")
    add("--allow-incomplete", dest="hypeedit_allow_incomplete", action="store_true",
        help="let gates pass on a run with errors, budget skips or missing verdicts (default: they fail)")
    add("--bootstrap", dest="hypeedit_bootstrap", type=int, default=1000, metavar="N",
        help="bootstrap resamples over tasks for the 95%% intervals of every metric (default 1000; 0 disables)")
    add("--bootstrap-seed", dest="hypeedit_bootstrap_seed", type=int, default=0, metavar="SEED",
        help="seed of the bootstrap, so intervals are reproducible (default 0)")
    add("--baseline", dest="hypeedit_baseline", metavar="RESULTS.json",
        help="results JSON of an earlier release on the same tasks: paired per-task comparison, and gates "
             "like 'pass_rate>=baseline-0.02'; with --html its candidates are shown beside this run's")
    add("--baseline-outputs", dest="hypeedit_baseline_outputs", metavar="DIR",
        help="with --baseline and --html: the baseline's outputs folder (default: where its results file says, "
             "else the results file's own folder)")


# --------------------------------------------------------------------------- declarations


#: pytest's addini types the options use.
IniType = Literal["string", "args", "linelist", "bool"]
#: An option's ini type by its argparse action (else "string").
_INI_TYPE_OF_ACTION: dict[str, IniType] = {"append": "args", "store_true": "bool"}


@dataclass(frozen=True)
class Declared:
    """One option: its flag, its ``dest`` (also its ini key) and argparse's keyword arguments."""

    flag: str
    dest: str
    argparse: Mapping[str, Any]
    ini_type: IniType

    @classmethod
    def of(cls, flag: str, *, ini: IniType | None = None, **argparse: Any) -> "Declared":
        action = argparse.get("action")
        ini_type = ini or _INI_TYPE_OF_ACTION.get(str(action), "string")
        return cls(flag, argparse["dest"], argparse, ini_type)

    @property
    def repeatable(self) -> bool:
        return self.argparse.get("action") == "append"

    @property
    def is_flag(self) -> bool:
        return self.argparse.get("action") == "store_true"

    def unset(self) -> Any:
        """What argparse leaves when the flag is not given: the value that lets the ini file fill it."""
        return [] if self.repeatable else False if self.is_flag else None

    def default(self) -> Any:
        value = self.argparse.get("default", self.unset())
        return list(value) if isinstance(value, list) else value

    def given(self, value: Any) -> bool:
        return not _blank(value)

    def ini_help(self) -> str:
        metavar = self.argparse.get("metavar")
        usage = f"{self.flag} {metavar}" if metavar else self.flag
        if self.repeatable:
            layout = "one per line" if self.ini_type == "linelist" else "separated by spaces or lines"
            return f"same as {usage}, a list ({layout}); the command line wins"
        return f"same as {usage}; the command line wins"

    def register(self, parser: pytest.Parser, group: pytest.OptionGroup) -> None:
        group.addoption(self.flag, **{**self.argparse, "default": self.unset()})
        ini_type = _scalar_ini_type() if self.ini_type == "string" else self.ini_type
        parser.addini(self.dest, self.ini_help(), type=ini_type, default=None)

    def from_ini(self, raw: Any, source: str) -> Any:
        """The ini file's value converted as argparse converts the flag's (its ``type``)."""
        if self.is_flag:
            return bool(raw)
        convert = self.argparse.get("type", str)
        if self.repeatable:
            return [_convert(self, item, convert, source) for item in raw]
        return _convert(self, raw, convert, source)


def _scalar_ini_type() -> Any:
    """A single value's ini type: a string, or (pytest >= 9.2) also a TOML number, so that in pytest 9's
    native ``[tool.pytest]`` table ``hypeedit_repeats = 3`` works as in ``[tool.pytest.ini_options]``."""
    from pytest import version_tuple

    return str | int | float if version_tuple >= (9, 2) else "string"


def _convert(option: Declared, raw: Any, convert: Callable[[str], Any], source: str) -> Any:
    text = raw.strip() if isinstance(raw, str) else raw
    try:
        return convert(text)
    except NotFinite as exc:
        raise ConfigError(f"{source}: {option.dest} = {raw!r}: {exc} for {option.flag}; fix the ini file, or give "
                          f"{option.flag} on the command line") from None
    except (TypeError, ValueError):
        kind = getattr(convert, "__name__", "value")
        raise ConfigError(
            f"{source}: {option.dest} = {raw!r}: invalid {kind} value for {option.flag} "
            f"{option.argparse.get('metavar', '')}".rstrip()
            + f"; fix the ini file, or give {option.flag} on the command line"
        ) from None


def declared_options() -> tuple[Declared, ...]:
    found: list[Declared] = []
    _declare_all(lambda flag, **kwargs: found.append(Declared.of(flag, **kwargs)))
    return tuple(found)


def add_options(parser: pytest.Parser) -> None:
    """Every option of the plugin (pytest --help lists the flags in the sections of GROUPS, and the ini keys)."""
    groups = {name: parser.getgroup(name, title) for name, title in GROUPS}
    for option in declared_options():
        option.register(parser, groups[GROUP_OF.get(option.flag, DEFAULT_GROUP)])


def help_epilogue() -> str:
    """The environment variables and the commands, for the end of pytest --help."""
    from .secrets import KEY_ENV

    keys = ", ".join(dict.fromkeys(name for names in KEY_ENV.values() for name in names))
    return HELP_EPILOGUE.format(keys=keys)


# --------------------------------------------------------------------------- the ini file


def apply_ini(config: pytest.Config) -> dict[str, str]:
    """Fill each option the command line left unset from the ini file, else its default.

    Returns ``{flag: where its value came from}`` for the values taken from the
    ini file, so an error about one can say where to fix it.
    """
    origins: dict[str, str] = {}
    for option in declared_options():
        if option.given(getattr(config.option, option.dest, None)):
            continue  # the command line wins
        raw = _read_ini(config, option)
        if _blank(raw):
            setattr(config.option, option.dest, option.default())
            continue
        source = ini_source(config, option.dest)
        setattr(config.option, option.dest, option.from_ini(raw, source))
        origins[option.flag] = source if source.startswith("-o ") else f"{option.dest} in {source}"
    return origins


def _blank(value: Any) -> bool:
    # Identity, not equality: 0 (--bootstrap 0, --budget 0) is a value, not "unset".
    return value is None or value is False or (isinstance(value, (str, list)) and not value)


def _read_ini(config: pytest.Config, option: Declared) -> Any:
    from pytest import UsageError  # pytest reports a value of the wrong type in the file as a UsageError

    try:
        return config.getini(option.dest)
    except (UsageError, ValueError) as exc:
        source, message = ini_source(config, option.dest), str(exc)
        where = "" if message.startswith(source) else f"{source}: "  # pytest names the file itself
        raise ConfigError(f"{where}{message}; {option.dest} takes the same value as {option.flag}"
                          + (" (a list)" if option.repeatable else "")) from None


def ini_source(config: pytest.Config, key: str) -> str:
    """Where an ini key's value came from: ``-o KEY=...`` on the command line, or the ini file."""
    overrides = getattr(config.option, "override_ini", None) or []
    if any(str(entry).split("=", 1)[0].strip() == key for entry in overrides):
        return f"-o {key}=..."
    return str(config.inipath) if config.inipath else "the ini file"


def with_ini_origin(message: str, origins: Mapping[str, str]) -> str:
    """An error message, plus where each option it names got its value, when that was the ini file."""
    notes = [f"{flag} came from {origin}" for flag, origin in origins.items()
             if re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", message)]
    if not notes:
        return message
    return f"{message} ({'; '.join(notes)}; the flag on the command line overrides it)"


# --------------------------------------------------------------------------- the settings, read once


@dataclass(frozen=True)
class Settings:
    """What the plugin reads of the options, besides the run itself (config.py ``RunConfig``): read once per
    process, once the ini file has filled them in (``settings_of``), and the only place anything reads
    ``config.option`` or ``config.getoption`` (tests/package/test_option_reads.py).  pytest's own options are
    here as the plugin reads them."""

    models: tuple[str, ...] = ()  # --model: none means the plugin is inert (plugin.py benchmark_mode)
    tasks: tuple[str, ...] = ()  # --tasks, as given (config.py split_sources reads them)
    judge_base_url: str | None = None  # --judge-base-url
    estimate: bool = False  # --estimate
    signals: bool = False  # --signals
    judge_stability: str | None = None  # --judge-stability
    judge_controls: bool = False  # --judge-controls
    agreement: str | None = None  # --agreement
    calibrate: str | None = None  # --calibrate
    gates: tuple[str, ...] = ()  # --gate
    sequential: bool = False  # --sequential
    gate_alpha: float = 0.05  # --gate-alpha
    allow_incomplete: bool = False  # --allow-incomplete
    bootstrap: int = 1000  # --bootstrap
    bootstrap_seed: int = 0  # --bootstrap-seed
    baseline: str | None = None  # --baseline
    baseline_outputs: str | None = None  # --baseline-outputs
    html_views: Any = None  # --html-views (glue/html_report.py reads its number)
    html_max_mb: Any = None  # --html-max-mb
    html_full_resolution: bool = False  # --html-full-resolution
    # pytest's and its plugins' own
    collect_only: bool = False  # --collect-only
    continue_on_collection_errors: bool = False
    maxfail: int = 0  # -x, --maxfail
    dist: str = "no"  # pytest-xdist's --dist ("load" once -n is given); absent with -p no:xdist
    html_path: str | None = None  # pytest-html's --html
    self_contained_html: bool = False  # pytest-html's --self-contained-html
    file_or_dir: tuple[str, ...] = ()  # the paths on the command line
    no_summary: bool = False  # --no-summary

    @property
    def distributing(self) -> bool:
        """Under -n: pytest-xdist's controller deals the items to workers."""
        return self.dist != "no"

    @classmethod
    def of(cls, option: Any) -> Settings:
        """From ``config.option`` (an argparse namespace); an option a disabled plugin did not declare is its
        default."""

        def value(name: str, default: Any = None) -> Any:
            found = getattr(option, name, default)
            return default if found is None else found

        return cls(
            models=tuple(value("hypeedit_models", ())), tasks=tuple(value("hypeedit_tasks", ())),
            judge_base_url=value("hypeedit_judge_base_url"), estimate=bool(value("hypeedit_estimate", False)),
            signals=bool(value("hypeedit_signals", False)), judge_stability=value("hypeedit_judge_stability"),
            judge_controls=bool(value("hypeedit_judge_controls", False)), agreement=value("hypeedit_agreement"),
            calibrate=value("hypeedit_calibrate"), gates=tuple(value("hypeedit_gates", ())),
            sequential=bool(value("hypeedit_sequential", False)), gate_alpha=value("hypeedit_gate_alpha", 0.05),
            allow_incomplete=bool(value("hypeedit_allow_incomplete", False)),
            bootstrap=value("hypeedit_bootstrap", 1000), bootstrap_seed=value("hypeedit_bootstrap_seed", 0),
            baseline=value("hypeedit_baseline"), baseline_outputs=value("hypeedit_baseline_outputs"),
            html_views=value("hypeedit_html_views"), html_max_mb=value("hypeedit_html_max_mb"),
            html_full_resolution=bool(value("hypeedit_html_full_resolution", False)),
            collect_only=bool(value("collectonly", False)),
            continue_on_collection_errors=bool(value("continue_on_collection_errors", False)),
            maxfail=int(value("maxfail", 0)), dist=str(value("dist", "no")), html_path=value("htmlpath"),
            self_contained_html=bool(value("self_contained_html", False)),
            file_or_dir=tuple(str(path) for path in value("file_or_dir", ())),
            no_summary=bool(value("no_summary", False)),
        )


_SETTINGS_KEY = pytest.StashKey[Settings]()


def settings_of(config: pytest.Config) -> Settings:
    """The settings of this process, read from its options the first time they are asked for (after the ini
    file filled them in: glue/ini.py runs first)."""
    found = config.stash.get(_SETTINGS_KEY, None)
    if found is None:
        found = config.stash[_SETTINGS_KEY] = Settings.of(config.option)
    return found


def stop_distributing(config: pytest.Config) -> None:
    """``--estimate`` under -n: no worker is started (glue/price_line.py); the settings say so too."""
    config.option.dist, config.option.tx = "no", []
    config.stash[_SETTINGS_KEY] = dataclasses.replace(settings_of(config), dist="no")


def asked_for_help(config: pytest.Config) -> bool:
    """``pytest --help``: read apart from the settings, which a bad value in the ini file must not stop."""
    return bool(getattr(config.option, "help", False))


def traceback_style(config: pytest.Config) -> str:
    """pytest's ``--tb``, which the plugin sets for a benchmark's run (plugin.py) and, while pytest prints its
    summary, to ``no`` (glue/terminal_layout.py): a value that changes, not a setting."""
    return str(config.option.tbstyle)


def set_traceback_style(config: pytest.Config, style: str) -> None:
    config.option.tbstyle = style
