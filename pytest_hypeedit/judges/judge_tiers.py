"""``--judge-tier``: the price tier the judge's calls are asked at, and which judges have which.

- ``standard`` (the default): the list price, as every judge has always been asked.
- ``flex``: Gemini's Flex tier, the same synchronous ``generateContent`` at 50% of the standard price, with minutes
  of latency, and requests that may be shed under load (503 UNAVAILABLE or 429) and are then retried on Flex with
  backoff, never upgraded to standard (ai.google.dev/gemini-api/docs/flex-inference: "the system won't
  automatically upgrade a Flex request to the Standard tier"; docs/reference/providers.md section 11.6).
- ``flex-or-standard``: Flex, and a verdict whose Flex request was still shed after its retries is asked once more
  at standard (billed at standard and recorded so): the user's explicit choice, never a silent one.
- ``batch``: not supported yet for the judge (a run does not accept it and names the tiers it has).

A judge says which of these it has in ``Judge.tiers``; asked for another, the run stops before anything is paid
with a usage error naming the judge and its tiers.  Only the Gemini judge has Flex: the OpenAI-compatible judge
talks to any chat-completions server, human labels cost nothing, and a majority's one recorded tier could not
stand for jurors served at different tiers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.records import FLEX, STANDARD
from ..errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from .base import Judge

#: ``--judge-tier flex-or-standard``: Flex, falling back to standard for a verdict Flex kept shedding.
FLEX_OR_STANDARD = "flex-or-standard"
BATCH = "batch"
#: The tiers a run can be asked at today (``batch`` is not accepted until it is built).
SUPPORTED = (STANDARD, FLEX, FLEX_OR_STANDARD)


def parse_judge_tier(value: object) -> str:
    """``--judge-tier`` (or ini ``hypeedit_judge_tier``) -> one of SUPPORTED; unset: standard."""
    text = STANDARD if value is None or value == "" else str(value).strip().lower()
    if text == BATCH:
        raise ConfigError(f"--judge-tier {BATCH}: the judge has no batch tier yet; give one of "
                          f"{', '.join(SUPPORTED)} (Gemini Flex is 50% of the standard price too)")
    if text not in SUPPORTED:
        raise ConfigError(f"--judge-tier {value!s:.40}: give one of {', '.join(SUPPORTED)} (default {STANDARD})")
    return text


def asked_tier(choice: str) -> str:
    """The tier a judge is asked at first for ``--judge-tier choice``: flex-or-standard asks Flex first."""
    return FLEX if choice == FLEX_OR_STANDARD else choice


def check_judge_tier(judge: Judge, choice: str) -> None:
    """A ConfigError (a usage error: nothing paid yet) when ``judge`` has no tier ``choice``."""
    if asked_tier(choice) not in judge.tiers:
        have = ", ".join(judge.tiers) or "none"
        what = f"a majority of several judges ({judge.id})" if judge.name == "majority" else f"judge {judge.id}"
        raise ConfigError(f"--judge-tier {choice}: {what} has only the tier(s) {have}; "
                          f"use --judge-tier {STANDARD}, or one judge with Flex (gemini-3-flash, gemini:MODEL)")
