"""The failure gallery and the collages of the HTML report: static HTML, every string escaped.

A leaderboard-size run has thousands of failures.  pytest-html builds each result row
in the browser from a JSON blob (about a millisecond of script per row, before any
image), so the gallery is not made of pytest-html rows: it is plain HTML in the
report's summary, which the browser parses at its own speed.  It is grouped by split and
model in ``<details>`` elements (only the first group open: a closed group costs
parsing, not layout), and every image is lazy, with its size given, so the page lays
out once and loads only the images scrolled into view.

Imports no pytest.  Every string from a task, a provider or a judge goes through
``html.escape``; images come as ``Built`` files from ``assets.py``.
"""

from __future__ import annotations

import base64
from collections import Counter
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..engine.records import ERROR, FAIL, REFUSED, Record
from .assets import ASSETS_DIR, Built, ImagePair

GALLERY_OUTCOMES = (FAIL, REFUSED, ERROR)
THUMB_FALLBACK = 160  # a thumbnail's size when the cache did not record it
_MIME = {"jpg": "image/jpeg", "webp": "image/webp", "png": "image/png"}

STYLE = """<style>
.hypeedit-failures details{margin:4px 0}.hypeedit-failures summary{cursor:pointer;font-weight:bold;padding:2px 0}
.hypeedit-gallery{border-top:1px solid #ddd;padding:6px 0;display:flex;gap:12px;align-items:flex-start}
.hypeedit-gallery figure{display:inline-block;margin:2px;vertical-align:top;text-align:center;font-size:85%}
.hypeedit-gallery img{height:160px;width:auto;max-width:240px;object-fit:contain;border:4px solid #bbb;background:#eee}
.hypeedit-gallery figure.fail img{border-color:#c81e1e}.hypeedit-gallery figure.refused img{border-color:#963c96}
.hypeedit-gallery .noimage{display:inline-block;width:160px;height:100px;line-height:100px;background:#eee;border:4px solid #6e6e6e}
.hypeedit-gallery .text{min-width:0}.hypeedit-gallery p{margin:2px 0}.hypeedit-gallery .facts{color:#444;font-size:90%}
.hypeedit-gallery .reasoning{white-space:pre-wrap;max-width:900px}
.hypeedit-collages figure{display:inline-block;margin:4px;vertical-align:top}
.hypeedit-collages img{width:auto;height:auto;max-width:640px;border:1px solid #ccc}
</style>"""


@dataclass(frozen=True)
class EntryImages:
    """The images of one gallery entry, as built by ``AssetBuilder.image_pair``."""

    references: Sequence[tuple[str, ImagePair | None]] = ()  # (file name, its pair)
    candidate: ImagePair | None = None


class Urls:
    """The URL of a built file: a path relative to the report, or a data URI for a self-contained one."""

    def __init__(self, root: Path, inline: bool):
        self.root, self.inline = root, inline

    def of(self, built: Built) -> str:
        if self.inline:
            suffix = built.name.rsplit(".", 1)[-1]
            data = (self.root / built.name).read_bytes()
            return f"data:{_MIME.get(suffix, 'application/octet-stream')};base64,{base64.b64encode(data).decode('ascii')}"
        return f"{ASSETS_DIR}/{built.name}"

    def link(self, built: Built | None) -> str:
        """A full-size view's link; none inline (a self-contained file holds thumbnails only)."""
        return "" if self.inline or built is None or built.error else self.of(built)


# --------------------------------------------------------------------------- one entry


def entry_id(record: Record) -> str:
    """The anchor of a record's entry (the pytest-html row links to it)."""
    return f"hx-{record.split}-{record.model}-{record.task_id}-r{record.repeat:03d}"


def entry_html(record: Record, instruction: str, images: EntryImages, urls: Urls) -> str:
    """One failed, refused or errored candidate: reference(s) and candidate, instruction, facts, reasoning."""
    outcome = record.outcome or ""
    figures = [_figure(pair, f"reference {i}: {name}", "reference", urls)
               for i, (name, pair) in enumerate(images.references, start=1)]
    figures.append(_figure(images.candidate, f"candidate r{record.repeat:03d}: {outcome.upper()}", outcome, urls))
    return (
        f'<div class="hypeedit-gallery {escape(outcome)}" id="{escape(entry_id(record))}" data-outcome="{escape(outcome)}">'
        f'<div class="images">{"".join(figures)}</div><div class="text">'
        f"<p><b>Instruction:</b> {_text(instruction)}</p>{_facts(record)}{_reasoning(record)}</div></div>"
    )


def _figure(pair: ImagePair | None, caption: str, css_class: str, urls: Urls) -> str:
    if pair is None:
        return _no_image("no image", caption, css_class)
    if pair.thumb.error:
        return _no_image("unreadable", f"{caption}: {pair.thumb.error}", css_class)
    width, height = pair.thumb.size or (THUMB_FALLBACK, THUMB_FALLBACK)
    image = (f'<img src="{escape(urls.of(pair.thumb))}" alt="{escape(caption)}" width="{width}" height="{height}" '
             f'loading="lazy" decoding="async">')
    link = urls.link(pair.view)
    if link:
        view_w, view_h = pair.view.size or (0, 0)
        image = f'<a href="{escape(link)}" target="_blank" title="full size, {view_w}x{view_h} px">{image}</a>'
    return f'<figure class="{escape(css_class)}">{image}<figcaption>{_text(caption)}</figcaption></figure>'


def _no_image(label: str, caption: str, css_class: str) -> str:
    return (f'<figure class="{escape(css_class)}"><span class="noimage">{label}</span>'
            f"<figcaption>{_text(caption)}</figcaption></figure>")


def _facts(record: Record) -> str:
    facts = [
        ("model", record.model), ("split", record.split), ("task", record.task_id), ("repeat", f"{record.repeat:03d}"),
        ("route", record.route), ("provider model", record.provider_model), ("seed", record.seed),
        ("cost", None if record.cost is None else f"${record.cost:.4f}"),
        ("judge cost", f"${record.judge_cost:.4f}" if record.judge_cost else None),
        ("latency", None if record.latency_s is None else f"{record.latency_s:.2f} s"),
        ("request id", record.request_id), ("judge", record.judge),
    ]
    text = " · ".join(f"{name} {_text(value)}" for name, value in facts if value not in (None, ""))
    return f'<p class="facts">{text}</p>'


def _reasoning(record: Record) -> str:
    parts = []
    if record.refusal:
        parts.append(f'<p><b>Refusal:</b> <span class="reasoning">{_text(record.refusal)}</span></p>')
    if record.error:
        parts.append(f'<p><b>Error:</b> <span class="reasoning">{_text(record.error)}</span></p>')
    if record.reasoning:
        parts.append(f'<p><b>Judge reasoning:</b></p><div class="reasoning">{_text(record.reasoning)}</div>')
    if record.votes:
        parts.append("<p><b>Votes:</b></p><ul>" + "".join(_vote(v) for v in record.votes) + "</ul>")
    return "".join(parts)


def _vote(vote: Any) -> str:
    if not isinstance(vote, Mapping):
        return f"<li>{_text(vote)}</li>"
    head = f"<b>{_text(vote.get('judge', '?'))}</b>: {_text(vote.get('verdict', '?'))}"
    rest = "".join(
        f'<div class="reasoning">{_text(k)}: {_text(v)}</div>' for k, v in vote.items() if k not in ("judge", "verdict")
    )
    return f"<li>{head}{rest}</li>"


def _text(value: Any) -> str:
    return escape("" if value is None else str(value))


# --------------------------------------------------------------------------- the gallery


def gallery_html(records: Iterable[Record], entries: Mapping[tuple, str]) -> str:
    """Every entry, grouped by split and model; ``entries`` maps a record's key to its ``entry_html``."""
    by_group: dict[tuple[str, str], list[Record]] = {}
    for record in sorted(records, key=lambda r: r.key):
        by_group.setdefault((record.split, record.model), []).append(record)
    shown = sum(1 for r in by_group.values() for rec in r if rec.key in entries)
    if not shown:
        return ""
    groups, first = [], True
    for (split, model), group in by_group.items():
        body = [entries[r.key] for r in group if r.key in entries]
        if body:
            groups.append(_group(split, model, group, body, open_=first))
            first = False
    return (f'<div class="hypeedit-failures"><h3 id="hypeedit-failures">Failures ({shown})</h3>'
            '<p class="ci">Every failed, refused or errored candidate, by split and model; click a group to open it, '
            "a picture to see it full size.</p>" + "".join(groups) + "</div>")


def _group(split: str, model: str, records: list[Record], body: list[str], *, open_: bool) -> str:
    counts = Counter(r.outcome for r in records)
    tally = ", ".join(f"{counts[o]} {label}" for o, label in ((FAIL, "failed"), (REFUSED, "refused"), (ERROR, "errors"))
                      if counts[o])
    head = f"{_text(split)} · {_text(model)}: {tally} of {len(records)} candidates"
    return f'<details{" open" if open_ else ""}><summary>{head}</summary>{"".join(body)}</details>'


def collage_section(collages: list[tuple[str, Built]], urls: Urls) -> str:
    """``collages``: (caption, built collage) per task with a failure, linked to the file itself."""
    figures = []
    for caption, built in collages:
        if built.error:
            continue
        url = urls.of(built)
        width, height = built.size or (640, 480)
        image = (f'<img src="{escape(url)}" alt="{escape(caption)}" width="{width}" height="{height}" '
                 f'loading="lazy" decoding="async">')
        if not urls.inline:
            image = f'<a href="{escape(url)}" target="_blank">{image}</a>'
        figures.append(f"<figure>{image}<figcaption>{_text(caption)}</figcaption></figure>")
    if not figures:
        return ""
    return (f'<h3>Collages: tasks with at least one failure ({len(figures)})</h3>'
            f'<div class="hypeedit-collages">{"".join(figures)}</div>')
