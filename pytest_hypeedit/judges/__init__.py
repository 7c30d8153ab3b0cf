"""Judges behind one interface: Gemini 3 Flash (the default: the upstream judge), any
OpenAI-compatible vision model, human labels, and a majority of several.

``gemini-3-flash`` and ``openai:MODEL`` ask with the upstream judge's prompt (judges/upstream.py);
``gemini-3-flash-rubric`` and ``openai-rubric:MODEL`` with the project's own rubric (prompt.txt).

``--judge`` grammar (``parse_judge_spec``)::

    SPEC   := JUROR ("," JUROR)*            several jurors: the majority decides
    JUROR  := NAME [":" ARGUMENT]
    labels := "labels:" PATH ("," PATH)*    one file per rater

Examples: ``gemini-3-flash``; ``gemini-3-flash-rubric``; ``openai:qwen2.5-vl``; ``openai:Qwen/Qwen2.5-VL-72B``;
``labels:a.json,b.json,c.json``; ``gemini-3-flash,openai:gpt-4.1,openai:qwen2.5-vl``;
``labels:a.json,b.json,gemini-3-flash``.

A ``labels`` juror's argument holds commas itself, so after ``labels:`` the
comma-separated parts that follow are further label files until one reads as
a juror.  A part reads as a juror when the text before its first ``:`` is a
known judge name, or when it is a plain name (letters, digits, ``-_.``) that
does not look like a file: no ``/`` or ``\\``, not ending in ``.json``, not
starting with ``.`` or ``~``.  So write a label folder as ``./labels`` and a
judge from a conftest.py by its plain name.  A path can never hold a comma.

The built-ins below are the ``trylast`` default of the ``pytest_hypeedit_make_judge``
hook, so a conftest.py can add a judge or replace one.  Modules are imported
lazily: ``--judge labels:...`` never imports google-genai.

Same file names by design: base.py, gemini.py (providers/ has both too: the folder says which side of a
call it is, here the judge's interface and the Gemini judge, there the image provider's and its Gemini route).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from ..errors import ConfigError
from .base import Judge, JudgeRequest, Verdict

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.limits import RouteLimiter
    from ..providers.runtime import Runtime
    from ..transport.http import RetryPolicy

__all__ = ["Judge", "JudgeRequest", "Verdict", "JudgeOptions", "BUILTIN_JUDGES", "DEFAULT_JUDGE",
           "parse_judge_spec", "builtin_judge", "make_judge"]

DEFAULT_JUDGE = "gemini-3-flash"

#: judge name -> "module:Class".
BUILTIN_JUDGES: dict[str, str] = {
    "gemini-3-flash": "pytest_hypeedit.judges.gemini:GeminiJudge",
    "gemini-3-flash-rubric": "pytest_hypeedit.judges.gemini:GeminiJudge",  # the same judge, our rubric's prompt
    "gemini": "pytest_hypeedit.judges.gemini:GeminiJudge",  # gemini:MODEL, any Gemini model as the judge
    "openai": "pytest_hypeedit.judges.openai_compat:OpenAICompatJudge",
    "openai-rubric": "pytest_hypeedit.judges.openai_compat:OpenAICompatJudge",
    "labels": "pytest_hypeedit.judges.labels_judge:LabelsJudge",
}

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]*$")


@dataclass(frozen=True)
class JudgeOptions:
    """What the built-in judges need beyond their name and argument."""

    #: Base URL of the chat-completions server for ``openai:MODEL`` (``--judge-base-url``);
    #: None: HYPEEDIT_OPENAI_BASE_URL, else OpenAI's.
    openai_base_url: str | None = None
    #: Model names a labels file may use (labels files map M01.. to names).
    known_models: tuple[str, ...] | None = None
    #: Seconds per read of a judge call: openai-python's default, 600 s (``_constants.py``); google-genai sets
    #: none (providers/genai_client.py PAID_CALL_TIMEOUT_S).  A verdict is paid: one timed out early may be
    #: paid for twice.
    timeout_s: float = 600.0
    #: Sampling temperature of ``openai:MODEL``; None sends none (models that take only their default).
    temperature: float | None = 0.0
    #: The HTTP retry policy; None: the runtime's (``runtime`` below).
    policy: RetryPolicy | None = None
    #: route -> RouteLimiter or None; None: the runtime's limiter for the judge's route, whose limits come
    #: from models.yaml ``routes:`` ("gemini-judge", "openai-judge"), shared by all workers.
    limiter_for: Callable[[str], RouteLimiter | None] | None = None
    #: Where the upstream judge script is downloaded once (``--cache-dir``); None: the default cache.
    cache_dir: Path | None = None
    #: ``--judge-tier`` (judges/judge_tiers.py): standard, flex or flex-or-standard; a judge without it does not accept it.
    tier: str = "standard"
    #: The run's runtime (providers/runtime.py: its retry policy, route limiters, prepared-image folder), which the
    #: glue passes in; None: each judge made with these options makes one of its own, never another run's.
    runtime: Runtime | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        url = self.openai_base_url
        if url is not None and not re.match(r"^https?://[^/\s]+", url):
            raise ConfigError(f"--judge-base-url {url!r}: give an http:// or https:// URL, e.g. http://localhost:8000/v1")
        if not self.timeout_s > 0:
            raise ConfigError(f"judge timeout must be a positive number of seconds, got {self.timeout_s!r}")


def parse_judge_spec(text: str, names: Iterable[str] = ()) -> list[tuple[str, str | None]]:
    """``--judge`` text -> [(name, argument or None), ...] (grammar in the module docstring).

    ``names`` adds judge names from plugins (they read as jurors after a labels list).
    """
    known = set(BUILTIN_JUDGES) | set(names)
    jurors: list[tuple[str, str | None]] = []
    for part in (p.strip() for p in (text or "").split(",")):
        if not part:
            raise ConfigError(f"--judge {text!r}: an empty juror; separate jurors with single commas")
        if jurors and jurors[-1][0] == "labels" and not _reads_as_juror(part, known):
            jurors[-1] = ("labels", f"{jurors[-1][1]},{part}")
            continue
        jurors.append(_juror(part, text))
    return jurors


def _reads_as_juror(part: str, known: set[str]) -> bool:
    head = part.partition(":")[0]
    if head in known:
        return True
    looks_like_path = "/" in part or "\\" in part or part.lower().endswith(".json") or part.startswith((".", "~"))
    return not looks_like_path and bool(_NAME.match(head))


def _juror(part: str, text: str) -> tuple[str, str | None]:
    name, colon, argument = part.partition(":")
    name, argument = name.strip(), argument.strip()
    if not _NAME.match(name):
        raise ConfigError(f"--judge {text!r}: {part!r} is not NAME or NAME:ARGUMENT "
                          f"(built-in judges: {', '.join(sorted(BUILTIN_JUDGES))})")
    if colon and not argument:
        raise ConfigError(f"--judge {text!r}: {name}: is missing its argument after the colon")
    return name, argument or None


def builtin_judge(name: str, argument: str | None, options: JudgeOptions) -> Judge:
    """The built-in judge ``name`` (see BUILTIN_JUDGES); a ConfigError naming what is allowed otherwise."""
    build = _BUILDERS.get(name)
    if build is None:
        raise ConfigError(f"--judge: unknown judge {name!r}. Built-in judges: gemini-3-flash (default), "
                          "gemini-3-flash-rubric, gemini:MODEL, openai:MODEL, openai-rubric:MODEL, "
                          "labels:PATH[,PATH...]; a conftest.py can add one with the "
                          "pytest_hypeedit_make_judge hook. (A label folder is written ./NAME.)")
    return build(argument, options)


def make_judge(text: str, options: JudgeOptions,
               factory: Callable[[str, str | None], Judge | None] | None = None) -> Judge:
    """The judge of a whole ``--judge`` spec: one juror, or a MajorityJudge of several.

    ``factory(name, argument)`` builds one juror (the plugin passes its hook); None: the built-ins.
    """
    jurors = []
    for name, argument in parse_judge_spec(text):
        juror = factory(name, argument) if factory else builtin_judge(name, argument, options)
        if juror is None:
            raise ConfigError(f"--judge {text}: unknown judge {name!r}")
        jurors.append(juror)
    from .judge_tiers import check_judge_tier
    from .majority import MajorityJudge

    judge = jurors[0] if len(jurors) == 1 else MajorityJudge(jurors)
    check_judge_tier(judge, options.tier)
    return judge


def _load(name: str) -> Callable[..., Judge]:
    """The class of a built-in judge (each takes its own arguments: see the builders below)."""
    module_name, class_name = BUILTIN_JUDGES[name].split(":")
    judge_class: Callable[..., Judge] = getattr(importlib.import_module(module_name), class_name)  # BUILTIN_JUDGES names judges
    return judge_class


def _no_argument(name: str, argument: str | None) -> None:
    if argument is not None:
        raise ConfigError(f"--judge {name}:{argument}: {name} takes no argument (did you mean gemini:{argument}?)")


def _needs_argument(name: str, argument: str | None, example: str) -> str:
    if not argument:
        raise ConfigError(f"--judge {name}: needs an argument, e.g. --judge {example}")
    return argument


def _gemini_flash(argument: str | None, options: JudgeOptions) -> Judge:
    _no_argument("gemini-3-flash", argument)
    return _load("gemini-3-flash")(options)


def _gemini_flash_rubric(argument: str | None, options: JudgeOptions) -> Judge:
    _no_argument("gemini-3-flash-rubric", argument)
    return _load("gemini-3-flash-rubric")(options, prompt="rubric")


def _gemini_model(argument: str | None, options: JudgeOptions) -> Judge:
    return _load("gemini")(options, model=_needs_argument("gemini", argument, "gemini:gemini-3-flash-preview"))


def _openai(argument: str | None, options: JudgeOptions) -> Judge:
    return _load("openai")(_needs_argument("openai", argument, "openai:gpt-4.1"), options)


def _openai_rubric(argument: str | None, options: JudgeOptions) -> Judge:
    model = _needs_argument("openai-rubric", argument, "openai-rubric:gpt-4.1")
    return _load("openai-rubric")(model, options, prompt="rubric")


def _labels(argument: str | None, options: JudgeOptions) -> Judge:
    paths = [p.strip() for p in _needs_argument("labels", argument, "labels:rater1.json,rater2.json").split(",")]
    return _load("labels")(paths, options.known_models)


_BUILDERS: dict[str, Callable[[str | None, JudgeOptions], Judge]] = {
    "gemini-3-flash": _gemini_flash,
    "gemini-3-flash-rubric": _gemini_flash_rubric,
    "gemini": _gemini_model,
    "openai": _openai,
    "openai-rubric": _openai_rubric,
    "labels": _labels,
}
