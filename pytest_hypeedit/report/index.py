"""One HTML page over several runs: the merged leaderboard, each model linked to its own report.

    hypeedit-leaderboard reports/*/results.json -o RESULTS.md --index reports/index.html

Made for CI with one job per model: each job leaves its results JSON and its
HTML report (pytest-html's ``--html``) in one folder, and the merge job writes
this page above those folders.  A model's "report" links go to every ``.html``
file beside a results file that holds the model, relative to the page, so the
folder can be uploaded, downloaded and opened anywhere.  Every string that
comes from a results file is escaped.
"""

from __future__ import annotations

import os
import urllib.parse
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..files import atomic_write_bytes
from .leaderboard_markdown import pairwise_lines, serving_section
from .tables import by_pass_rate, columns, leaderboard_cells, model_name, paid_elsewhere, repeats_note, sections

if TYPE_CHECKING:
    from .published import Published
    from .results_model import Results

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
table { border-collapse: collapse; margin-bottom: 2rem; }
th, td { border: 1px solid #ccc; padding: 0.3rem 0.6rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
tr.published { color: #666; font-style: italic; }
"""


def report_links(runs: Sequence[tuple[Path, Results]], index: Path) -> dict[str, list[str]]:
    """Model -> the relative URLs of the HTML reports beside the results files that hold it."""
    links: dict[str, list[str]] = {}
    for results_path, results in runs:
        pages = [p for p in sorted(Path(results_path).parent.glob("*.html")) if p.resolve() != index.resolve()]
        urls = [relative_url(page, index.parent) for page in pages]
        for row in results.get("rows") or []:
            found = links.setdefault(str(row.get("model")), [])
            found += [url for url in urls if url not in found]
    return links


def relative_url(page: Path, start: Path) -> str:
    return urllib.parse.quote(Path(os.path.relpath(page.resolve(), start.resolve())).as_posix())


def index_html(merged: Results, links: Mapping[str, list[str]], published: "Published | None" = None) -> str:
    """The same tables as the Markdown leaderboard (report/leaderboard_markdown.py), cell for cell: the same
    sections (a split's rows of each number of images per task apart, the paper's only beside its own number), the
    same model marks (release, judge/calibrated, incomplete, published) and the effective cost at list price."""
    rows = list(merged.get("rows") or [])
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>HYPE-EDIT-1 results</title>", f"<style>{STYLE}</style></head><body>",
             "<h1>HYPE-EDIT-1 results</h1>", _summary(merged, published)]
    tables = sections(rows, published, (merged.get("settings") or {}).get("repeats"))
    last = {section.split: section for section in tables if section.rows}
    for section in tables:
        ours: Sequence[Mapping[str, Any]] = section.rows
        if published:  # beside the published (human) figures, a run's own say whose they are
            from .published import beside_published

            ours = beside_published(ours)
        parts += [f"<h2>{escape(section.title)}</h2>",
                  _table(by_pass_rate([*ours, *section.published]), links, section.repeats)]
        if section.rows and repeats_note(section.repeats):
            parts.append(f"<p>{escape(repeats_note(section.repeats))}.</p>")
        if last.get(section.split) is section:  # under the split's last table of its own rows, as the Markdown
            parts.append(_from_markdown(pairwise_lines(section.split, merged)))
    parts.append(_from_markdown(serving_section(merged).splitlines()))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _from_markdown(lines: Sequence[str]) -> str:
    """The leaderboard's Markdown notes (which models cannot be told apart, serving) as HTML, escaped: a heading,
    paragraphs, and each run of ``- `` lines a list."""
    html: list[str] = []
    items: list[str] = []
    for line in [*lines, ""]:
        shown = line[2:] if line.startswith("- ") else line.removeprefix("## ")
        text = escape(shown.replace("\\|", "|"))  # the Markdown's escaped pipe, a plain one in HTML
        if line.startswith("- "):
            items.append(f"<li>{text}</li>")
            continue
        if items:
            html.append("<ul>" + "".join(items) + "</ul>")
            items = []
        if line.startswith("## "):
            html.append(f"<h2>{text}</h2>")
        elif line.strip():
            html.append(f"<p>{text}</p>")
    return "\n".join(html)


def _summary(merged: Results, published: "Published | None") -> str:
    settings = merged.get("settings") or {}
    lines = [f"Runs merged: {len(merged.get('runs') or [])}."]
    if settings.get("judge"):
        lines.append(f"Judge: {escape(str(settings['judge']))}.")
    if merged.get("generated_at"):
        lines.append(f"Generated at {escape(str(merged['generated_at']))}.")
    if published:
        lines.append(f"Rows marked (published): the paper's figures as published in {escape(published.citation())}.")
    if any(paid_elsewhere(row) for row in merged.get("rows") or []):
        lines.append("Effective cost per success is at each model's list price, whatever tier a run bought at, so "
                     "that runs compare; what a run paid is in its results JSON.")
    return "<p>" + " ".join(lines) + " Sorted by pass rate. Each model links to its own report.</p>"


def _table(rows: Sequence[Mapping[str, object]], links: Mapping[str, list[str]], repeats: int | None = None) -> str:
    # a run's rows and the paper's (report/published.py: results-shaped, not the results model)
    head = "".join(f"<th>{escape(title)}</th>" for _, title, _ in columns(repeats))
    body = [_row(row, links) for row in rows]
    return f"<table><thead><tr><th>Model</th>{head}</tr></thead><tbody>\n" + "\n".join(body) + "\n</tbody></table>"


def _row(row: Mapping[str, object], links: Mapping[str, list[str]]) -> str:
    name, css = escape(model_name(row)), ' class="published"' if row.get("published") else ""
    pages = [] if row.get("published") else links.get(str(row.get("model"))) or []
    reports = " ".join(f'<a href="{escape(url)}">{"report" if len(pages) == 1 else escape(url)}</a>' for url in pages)
    if reports:
        name += f' <span class="reports">({reports})</span>'
    cells = "".join(f"<td>{escape(cell)}</td>" for cell in leaderboard_cells(row))
    return f"<tr{css}><td>{name}</td>{cells}</tr>"


def write_index(path: Path, merged: Results, runs: Sequence[tuple[Path, Results]],
                published: "Published | None" = None) -> None:
    path = Path(path)
    atomic_write_bytes(path, index_html(merged, report_links(runs, path), published).encode("utf-8"))
