"""Which model answered a judge: the version each reply names, against the model id the judge asked for.

Google serves a retired Gemini id with a newer model without an error (the reply's ``modelVersion`` names
the model that answered; google-genai reads it as ``GenerateContentResponse.model_version``), and OpenAI's
chat completions name theirs in the reply's ``model`` (a dated snapshot of an alias).  A judge swapped that
way would change every verdict and show nowhere, so each verdict keeps the version that answered in its
``extra["model_version"]`` (None when the reply named none) beside ``extra["judge_model"]``, the id asked
for; the run's results count them (``judge_versions``) and a judge answered by another model than the one
asked is warned about once at the end of the run.

Pure: records in, counts and warning lines out (a reply's version is masked of known keys).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Iterable, Mapping, TypedDict

from ..secrets import redact

if TYPE_CHECKING:  # pragma: no cover
    from ..engine.records import Record

#: The key of a verdict's ``extra`` that names the model version that answered.
MODEL_VERSION = "model_version"
#: The key of a verdict's ``extra`` that names the model id the judge asked for.
JUDGE_MODEL = "judge_model"
#: A model version is an identifier: anything longer is not one (a reply is untrusted).
_MAX_LENGTH = 200


def answering_model(value: Any) -> str | None:
    """The model version a reply names, or None when it names none (or something that is no identifier); a
    known key in it is masked, as in everything else a reply says."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or len(value) > _MAX_LENGTH or not value.isprintable():
        return None
    return redact(value)


class JudgeVersions(TypedDict):
    """One judge's verdicts by the model they asked for and the model that answered (results: ``judge_versions``)."""

    asked: dict[str, int]  # model id -> verdicts
    answered: dict[str, int]  # model version -> verdicts
    unnamed: int  # verdicts whose reply named no version
    differs: int  # verdicts answered by another model than the one asked


class _Tally(TypedDict):
    """A judge's counts while the records are read (JudgeVersions once sorted)."""

    asked: Counter[str]
    answered: Counter[str]
    unnamed: int
    differs: int


def judge_versions(records: Iterable[Record]) -> dict[str, JudgeVersions]:
    """For each judge whose verdicts count in these records (a panel's jurors each on their own):
    ``{"asked": {model id: verdicts}, "answered": {model version: verdicts}, "unnamed": verdicts whose reply
    named no version, "differs": verdicts answered by another model than the one asked}``."""
    seen: dict[str, _Tally] = {}
    for record in records:
        entry = (getattr(record, "judgements", None) or {}).get(getattr(record, "judge", None) or "")
        extra = entry.get("extra") if isinstance(entry, dict) else None
        for judge_id, verdict_extra in _verdict_extras(entry.get("judge") if entry else None, extra):
            _count(seen.setdefault(judge_id, {"asked": Counter(), "answered": Counter(), "unnamed": 0,
                                              "differs": 0}), verdict_extra)
    return {judge_id: {"asked": dict(sorted(c["asked"].items())), "answered": dict(sorted(c["answered"].items())),
                       "unnamed": c["unnamed"], "differs": c["differs"]}
            for judge_id, c in sorted(seen.items())}


def _verdict_extras(judge_id: Any, extra: Any) -> list[tuple[str, dict[str, Any]]]:
    """(judge id, its verdict's extra) of a verdict, or of each juror of a panel's verdict (majority.py keeps
    each juror's extra under ``extra["jurors"]``); only verdicts of judges that ask a model."""
    if not isinstance(extra, dict):
        return []
    jurors = extra.get("jurors")
    if isinstance(jurors, dict):
        return [pair for juror, juror_extra in jurors.items() for pair in _verdict_extras(juror, juror_extra)]
    if isinstance(judge_id, str) and isinstance(extra.get(JUDGE_MODEL), str) and MODEL_VERSION in extra:
        return [(judge_id, extra)]
    return []  # a judge that asks no model (labels, a plugin's), or a verdict recorded before versions were kept


def _count(counts: _Tally, extra: dict[str, Any]) -> None:
    asked, answered = extra[JUDGE_MODEL], answering_model(extra.get(MODEL_VERSION))
    counts["asked"][asked] += 1
    if answered is None:
        counts["unnamed"] += 1
        return
    counts["answered"][answered] += 1
    if not same_model(asked, answered):
        counts["differs"] += 1


def same_model(asked: str, answered: str) -> bool:
    """Whether the version that answered is the model asked for: the same id, or a version of it (Google
    answers ``models/…`` ids in some replies, and a dated or numbered snapshot of an alias, e.g.
    ``gpt-4.1-2025-04-14`` for ``gpt-4.1`` or ``gemini-2.0-flash-001`` for ``gemini-2.0-flash``)."""
    asked, answered = asked.removeprefix("models/"), answered.removeprefix("models/")
    return answered == asked or (answered.startswith(asked + "-") and answered[len(asked) + 1:][:1].isdigit())


def version_warnings(versions: Mapping[str, JudgeVersions]) -> list[str]:
    """One line per judge answered by another model than the one it asked for."""
    lines = []
    for judge_id, counts in versions.items():
        if not counts["differs"]:
            continue
        asked = ", ".join(counts["asked"])
        others = ", ".join(f"{version} ({n})" for version, n in counts["answered"].items()
                           if not any(same_model(a, version) for a in counts["asked"]))
        total = sum(counts["asked"].values())
        lines.append(f"hypeedit: warning: judge {judge_id} asked for {asked} but {counts['differs']} of its {total} "
                     f"verdicts were answered by another model: {others}. The provider routed the id to a "
                     "newer model; these verdicts are not comparable with ones given by the model asked for "
                     "(results: judge_versions). Ask for the answering model by its own id (--judge "
                     "gemini:MODEL or openai:MODEL) to compare like with like.")
    return lines
