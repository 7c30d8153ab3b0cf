"""The failure browser's HTML: the style sheet, the shell the script fills, the data and the script.  Pure.

The page is still pytest-html's: this HTML goes into its summary (``pytest_html_results_summary``).
The style sheet and the script are package data inlined here, so nothing of ours can go missing
from a copied report folder, and a self-contained report needs no other path.  The data is a
``<script type="application/json">`` block with ``<``, ``>`` and ``&`` escaped as ``\\u00XX``: no
string from a record can close the block or start markup.
"""

from __future__ import annotations

import base64
import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import quote

from ..assets import ASSETS_DIR, Built

_MIME = {"jpg": "image/jpeg", "webp": "image/webp", "png": "image/png"}

SHELL = """<section class="hx-browser" id="hx-browser" aria-label="Failure browser">
<h2>Failure browser</h2>
<p class="hx-help">One card per task: its references, then a row per model with every repeat in order.
Click a candidate for its full view, the judge's reasoning, the human votes and its facts.
Keys: <kbd>j</kbd>/<kbd>k</kbd> next/previous task, <kbd>Enter</kbd> open, <kbd>&larr;</kbd>/<kbd>&rarr;</kbd>
previous/next candidate, <kbd>Esc</kbd> close. The address keeps the filters and the open candidate: copy it to share
the view.</p>
<div class="hx-filters" id="hx-filters"></div>
<p class="hx-status" id="hx-status" aria-live="polite"></p>
<div class="hx-list" id="hx-list"></div>
<div class="hx-more" id="hx-more"></div>
<noscript><p>The failure browser needs JavaScript; the metrics above and pytest-html's table below do not.</p></noscript>
</section>
<dialog class="hx-viewer" id="hx-viewer" aria-label="Candidate"></dialog>"""


class Urls:
    """The URL of a built file: a path relative to the report (each segment quoted), or a data URI for a
    self-contained report, which has thumbnails only."""

    def __init__(self, root: Path, inline: bool):
        self.root, self.inline = root, inline

    def of(self, built: Built) -> str | None:
        if built.error:
            return None
        if self.inline:
            if ".full." in built.name:
                return None  # a self-contained file holds no full-size views
            suffix = built.name.rsplit(".", 1)[-1]
            data = (self.root / built.name).read_bytes()
            return f"data:{_MIME.get(suffix, 'application/octet-stream')};base64,{base64.b64encode(data).decode('ascii')}"
        return f"{ASSETS_DIR}/{quote(built.name, safe='/')}"


def data_script(data: Mapping[str, Any]) -> str:
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="hx-data">{text}</script>'


def browser_html(data: Mapping[str, Any]) -> str:
    """The browser: its shell, its data and its script (the style sheet comes with ``style_html``)."""
    return f"{SHELL}{data_script(data)}<script>{_asset('browser.js')}</script>"


def style_html() -> str:
    """Our one style sheet, on top of pytest-html's."""
    return f'<style id="hx-style">{_asset("browser.css")}</style>'


@cache
def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
