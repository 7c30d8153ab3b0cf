"""The failure browser's data: records and built images in, one JSON-able dict out.  Pure, no pytest.

Shape (keys left out when empty, to keep 7,000 candidates light)::

    {"models": [...], "splits": [...], "types": [...], "outcomes": [...], "flags": [[key, label], ...],
     "selfContained": bool, "baseline": bool (some row has a baseline),
     "tasks": [{"key": "<split>/<task_id>", "split", "id", "types": [...], "instruction", "refs": [image]}],
     "rows":  [{"t": task index, "m": model index, "pass": k, "judged": n, "c": [candidate],
                "b": {"m": baseline model, "pass", "judged", "c": [{"r", "o", "img"}]} (--baseline)}]}

    candidate = {"r": repeat, "o": outcome, "img": image, "verdict", "judge", "reasoning", "votes": [vote],
                 "human": {"verdict", "votes": [vote] (left out when they are the judge's: a labels judge)}, "signals": {...}, "flags": [...], "facts": [[label, text]],
                 "refusal", "error", "diff": URL of its difference from the baseline's counterpart}
    image = {"src", "w", "h", "view", "vw", "vh", "name"} or {"error": why}
    vote = {"who", "verdict", "reasoning", "note", "other": [[key, text]]}

Everything here comes from records (untrusted: a restored CI cache can hold a doctored one), so it
is coerced to plain strings, numbers and booleans; the page puts it into the DOM as text only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ...engine.records import FAIL, OUTCOMES, PASS, SKIPPED, Record
from ...finite import finite_number
from ..assets import Built, ImagePair

#: The diagnostic filters, in the order the page offers them; each only when a candidate has it.
FLAGS = (
    ("disagree", "judge and humans disagree"),
    ("unchanged_pass", "judged PASS but unchanged"),
    ("unchanged", "unchanged from the reference"),
    ("size_mismatch", "size differs from the reference"),
    ("aspect_mismatch", "aspect ratio differs"),
)
SIGNAL_KEYS = ("width", "height", "size_match", "aspect_match", "unchanged", "ssim", "delta_e")
#: A text longer than this (a runaway reasoning) is cut: the page stays light, the record keeps it all.
MAX_TEXT = 4000


@dataclass(frozen=True)
class Images:
    """What ``assets.py`` built: per record key its thumbnail (and view), per (split, task) its references."""

    candidates: Mapping[tuple[str, str, str, int], ImagePair] = field(default_factory=dict)
    references: Mapping[tuple[str, str], Sequence[tuple[str, ImagePair | None]]] = field(default_factory=dict)
    #: --baseline: (split, model, task) -> (the baseline model, [(its record, its images)] by repeat)
    baseline: Mapping[tuple[str, str, str], tuple[str, Sequence[tuple[Record, ImagePair | None]]]] = \
        field(default_factory=dict)
    #: record key -> the difference image from its baseline counterpart
    diffs: Mapping[tuple[str, str, str, int], Built] = field(default_factory=dict)


def browser_data(records: Iterable[Record], *, instruction: Callable[[Record], str], images: Images,
                 url: Callable[[Built], str | None], models: Sequence[str] = (), splits: Sequence[str] = (),
                 self_contained: bool = False, task_order: Mapping[tuple[str, str], int] | None = None) -> dict[str, Any]:
    """The JSON the page renders from: tasks in split order, then in their task file's order (``task_order``:
    (split, task id) -> position; a task it lacks comes after, by id), models in run order, repeats in order."""
    records = [r for r in records if isinstance(r, Record)]
    model_order = _order(models, (r.model for r in records))
    split_order = _order(splits, (r.split for r in records))
    groups = _group(records, split_order, model_order, task_order or {})
    tasks, rows, types, flags = [], [], set(), set[str]()
    for (split, task_id), by_model in groups.items():
        first = next(iter(by_model.values()))[0]
        types.update(first.task_types)
        tasks.append(_task(split, task_id, first, instruction, images.references.get((split, task_id), ()), url))
        for model, group in by_model.items():
            row = _row(len(tasks) - 1, model_order.index(model), group, images, url)
            flags.update(flag for c in row["c"] for flag in c.get("flags", ()))
            rows.append(row)
    return {"models": model_order, "splits": split_order, "types": sorted(types),
            "outcomes": [o for o in OUTCOMES if any(r.outcome == o for r in records)],
            "flags": [[key, label] for key, label in FLAGS if key in flags],
            "selfContained": self_contained, "baseline": any("b" in row for row in rows), "tasks": tasks, "rows": rows}


def _order(given: Sequence[str], seen: Iterable[str]) -> list[str]:
    found = list(dict.fromkeys(seen))
    return [name for name in given if name in found] + [name for name in found if name not in given]


def _group(records: list[Record], splits: list[str], models: list[str],
           task_order: Mapping[tuple[str, str], int]) -> dict[tuple[str, str], dict[str, list[Record]]]:
    """(split, task) -> model -> records by repeat; tasks in split order then in file order, models in run order."""
    unknown = len(task_order)
    ordered = sorted(records, key=lambda r: (splits.index(r.split), task_order.get((r.split, r.task_id), unknown),
                                             r.task_id, models.index(r.model), r.repeat))
    groups: dict[tuple[str, str], dict[str, list[Record]]] = {}
    for record in ordered:
        groups.setdefault((record.split, record.task_id), {}).setdefault(record.model, []).append(record)
    return groups


def _task(split: str, task_id: str, first: Record, instruction: Callable[[Record], str],
          references: Sequence[tuple[str, ImagePair | None]], url: Callable[[Built], str | None]) -> dict[str, Any]:
    return {"key": f"{split}/{task_id}", "split": split, "id": task_id, "types": [str(t) for t in first.task_types],
            "instruction": _clip(_safe_text(instruction, first)),
            "refs": [{"name": name, **image_json(pair, url)} for name, pair in references]}


def _safe_text(instruction: Callable[[Record], str], record: Record) -> str:
    try:
        return str(instruction(record) or "")
    except Exception:  # a task the run no longer has: the row shows no instruction rather than no report
        return ""


def _row(task: int, model: int, group: list[Record], images: Images, url: Callable[[Built], str | None]) -> dict[str, Any]:
    row = {"t": task, "m": model, "pass": sum(r.outcome == PASS for r in group),
           "judged": sum(r.judged for r in group),
           "c": [_with_diff(candidate_json(r, images.candidates.get(r.key), url), images.diffs.get(r.key), url)
                 for r in group]}
    first = group[0]
    old = images.baseline.get((first.split, first.model, first.task_id))
    if old is not None:
        row["b"] = baseline_row_json(*old, url)
    return row


def baseline_row_json(model: str, entries: Sequence[tuple[Record, ImagePair | None]],
                      url: Callable[[Built], str | None]) -> dict[str, Any]:
    """The baseline release's candidates of a task: its model, PASS count, and each repeat's outcome and image."""
    return {"m": model, "pass": sum(r.outcome == PASS for r, _ in entries),
            "judged": sum(r.judged for r, _ in entries),
            "c": [{"r": r.repeat, "o": r.outcome if r.outcome in OUTCOMES else SKIPPED, "img": image_json(pair, url)}
                  for r, pair in entries]}


def _with_diff(entry: dict[str, Any], diff: Built | None, url: Callable[[Built], str | None]) -> dict[str, Any]:
    if diff is not None and not diff.error and url(diff):
        entry["diff"] = url(diff)
    return entry


def image_json(pair: ImagePair | None, url: Callable[[Built], str | None]) -> dict[str, Any]:
    """A thumbnail and, when there is one, its full-size view; or why there is no picture."""
    if pair is None:
        return {}
    if pair.thumb.error:
        return {"error": pair.thumb.error}
    image: dict[str, Any] = {"src": url(pair.thumb)}
    image["w"], image["h"] = pair.thumb.size or (0, 0)
    view = pair.view
    if view is not None and not view.error and url(view):
        image["view"] = url(view)
        image["vw"], image["vh"] = view.size or (0, 0)
    return image


# --------------------------------------------------------------------------- one candidate


def candidate_json(record: Record, pair: ImagePair | None, url: Callable[[Built], str | None]) -> dict[str, Any]:
    human = human_json(record.human)
    signals = signals_json(record.signals)
    votes = votes_json(record.votes)
    flags = flags_of(record, human, signals)
    if human and human["votes"] and human["votes"] == votes:  # the judge is the panel (labels): its votes are not written twice
        human = {"verdict": human["verdict"]}
    entry = {"r": record.repeat, "o": record.outcome or SKIPPED, "img": image_json(pair, url),
             "verdict": record.verdict, "judge": record.judge, "reasoning": _clip(record.reasoning),
             "votes": votes, "human": human, "signals": signals, "flags": flags, "facts": facts_of(record),
             "refusal": _clip(record.refusal), "error": _clip(record.error)}
    return {key: value for key, value in entry.items() if value not in (None, "", [], {})}


def flags_of(record: Record, human: Mapping[str, Any] | None, signals: Mapping[str, Any] | None) -> list[str]:
    """The diagnostic flags a filter can select this candidate by (keys of ``FLAGS``)."""
    flags = []
    judged = record.verdict if record.outcome in (PASS, FAIL) else None
    if human and human.get("verdict") in ("PASS", "FAIL") and judged in ("PASS", "FAIL") and human["verdict"] != judged:
        flags.append("disagree")
    signals = signals or {}
    if signals.get("unchanged") is True:
        flags += ["unchanged_pass"] if record.outcome == PASS else []
        flags.append("unchanged")
    if signals.get("size_match") is False:
        flags.append("size_mismatch")
    if signals.get("aspect_match") is False:
        flags.append("aspect_mismatch")
    return flags


def human_json(human: Any) -> dict[str, Any] | None:
    """The human panel's labels (CONTRACTS.md: ``{"verdict", "votes": [{"rater", "verdict", "note"}]}``)."""
    if not isinstance(human, Mapping):
        return None
    verdict = human.get("verdict") if human.get("verdict") in ("PASS", "FAIL") else None
    return {"verdict": verdict, "votes": votes_json(human.get("votes"))}


def votes_json(votes: Any) -> list[dict[str, Any]]:
    """A judge's or a panel's votes: who, verdict, reasoning, the rater's note, anything else as text."""
    if not isinstance(votes, list):
        return []
    return [_vote(v) for v in votes]


def _vote(vote: Any) -> dict[str, Any]:
    if not isinstance(vote, Mapping):
        return {"other": [["vote", _clip(str(vote))]]}
    known = ("judge", "rater", "verdict", "reasoning", "note")
    entry = {"who": _clip(_str(vote.get("judge", vote.get("rater")))), "verdict": _str(vote.get("verdict")),
             "reasoning": _clip(_str(vote.get("reasoning"))), "note": _clip(_str(vote.get("note"))),
             "other": [[str(k), _clip(_str(v))] for k, v in vote.items() if k not in known and v not in (None, "")]}
    return {k: v for k, v in entry.items() if v not in (None, "", [])}


def signals_json(signals: Any) -> dict[str, Any] | None:
    if not isinstance(signals, Mapping):
        return None
    kept = {k: signals[k] for k in SIGNAL_KEYS if _plain_number(signals.get(k))}
    return kept or None


def _plain_number(value: Any) -> bool:
    """A bool or a finite number: JSON.parse does not accept NaN and Infinity."""
    return isinstance(value, bool) or finite_number(value)


def facts_of(record: Record) -> list[list[str]]:
    facts = [
        ("route", record.route), ("provider model", record.provider_model), ("seed", record.seed),
        ("cost", _dollars(record.cost)), ("judge cost", _dollars(record.judge_cost) if record.judge_cost else None),
        ("latency", f"{record.latency_s:.2f} s" if isinstance(record.latency_s, (int, float)) else None),
        ("request id", record.request_id), ("reused", _reused(record)),
    ]
    return [[name, _clip(str(value))] for name, value in facts if value not in (None, "")]


def _dollars(value: Any) -> str | None:
    return f"${value:.4f}" if isinstance(value, (int, float)) else None


def _reused(record: Record) -> str | None:
    parts = [name for name, flag in (("candidate", record.reused_candidate), ("verdict", record.reused_verdict)) if flag]
    return " and ".join(parts) + " from an earlier run" if parts else None


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _clip(value: Any) -> Any:
    if not isinstance(value, str) or len(value) <= MAX_TEXT:
        return value
    return value[:MAX_TEXT] + f"… ({len(value) - MAX_TEXT} more characters in the record)"

