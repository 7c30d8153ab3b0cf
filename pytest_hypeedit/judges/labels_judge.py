"""``--judge labels:PATH[,PATH...]``: human labels as the judge (the paper's ground truth).

One file per rater in the upstream schema (labels.py); several raters are
combined by majority, a tie counts as FAIL and is said so in the reasoning.
Each vote keeps its rater's note (``votes[].note``), and the reasoning quotes
the notes, so the FAIL line in the terminal says what the rater saw.
A candidate that nobody labelled is an error naming the task, model and
repeat, never a FAIL: the panel has not judged it yet.  In a run the panel is
keyed for the release each model's candidates are of (glue/human_labels.py
``judge_for_this_run``), so a candidate of a release nobody labelled is not
labelled, whatever verdicts people gave another release of the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from ..errors import JudgeError
from ..labels import Panel, read_panel
from .base import Judge, JudgeRequest, Verdict


class LabelsJudge(Judge):
    name = "labels"
    needs_images = False
    reuse_verdicts = False
    routes = ()  # read from files: free and instant
    tiers = ("standard",)  # nothing is bought: no cheaper tier to ask for

    def __init__(self, paths: Iterable[Path], known_models: Iterable[str] | None = None):
        self.paths = [Path(p) for p in paths]
        #: The panel as its files name the models: a release bought aside as ``<model>@<release id>``.
        self.as_read: Panel = read_panel(self.paths, known_models)
        #: The panel verdicts are looked up in: a record names only the model, so the glue keys ``as_read`` for
        #: the releases the run measures (glue/human_labels.py ``judge_for_this_run``); as read outside a run.
        self.panel: Panel = self.as_read

    @property
    def id(self) -> str:
        return f"labels[{len(self.panel.raters)} rater{'s' if len(self.panel.raters) != 1 else ''}]"

    def judge(self, request: JudgeRequest) -> Verdict:
        verdict = self.panel.verdict(request.task.task_id, request.model, request.repeat)
        if verdict is None:
            # No task, model or repeat here: the item's line names the candidate once (glue/items.py).
            raise JudgeError(
                f"no rater labelled this candidate in {', '.join(str(p) for p in self.paths)}; "
                "label it (hypeedit-review) or deselect it",
                retryable=False,
            )
        passes = sum(1 for _, passed in verdict.votes if passed)
        summary = f"human panel: {passes} PASS / {len(verdict.votes) - passes} FAIL"
        if verdict.tie:
            summary += " (a tie counts as FAIL)"
        votes = [{"judge": v["rater"], "verdict": v["verdict"], "note": v["note"]} for v in verdict.vote_entries()]
        return Verdict(passed=verdict.passed, reasoning=summary + notes_text(votes), judge=self.id, votes=votes,
                       extra={"tie": verdict.tie})


#: How much of each note the one-line reasoning quotes (the whole note stays in the vote).
NOTE_IN_REASONING = 160


def notes_text(votes: list[dict[str, Any]]) -> str:
    """The raters' notes for the reasoning (so a FAIL line in the terminal says why): ``; ann: "..."``."""
    quoted = []
    for vote in votes:
        note = vote.get("note")
        if note:
            short = note if len(note) <= NOTE_IN_REASONING else note[: NOTE_IN_REASONING - 1] + "…"
            quoted.append(f'{vote["judge"]} ({vote["verdict"]}): "{short}"')
    return ("; " + "; ".join(quoted)) if quoted else ""
