"""The report's section on the judge's controls (``--judge-controls``): per judge and kind, how often it passed a
control whose right verdict is FAIL, then the controls it passed, each with its image and the judge's reasoning.

Small on purpose: at most ``SHOWN`` controls, each a thumbnail inlined as a data URI (the report's folder stays
complete on its own), read from the outputs folder the results name (``settings.outputs``).
"""

from __future__ import annotations

import base64
import io
from html import escape
from pathlib import Path
from typing import Any, Mapping

from ..analysis.judge_controls import KIND_TEXT

#: Controls shown with their image, over every judge and kind.
SHOWN = 24
#: The longer side of a thumbnail, in pixels.
THUMB_SIDE = 160


def _text(value: Any) -> str:
    return escape("" if value is None else str(value))


def _percent(value: Any) -> str:
    return f"{value * 100:.1f}%" if isinstance(value, (int, float)) else "n/a"


def thumbnail(path: Path) -> str:
    """A JPEG data URI of the image at ``path``, or "" when it cannot be read."""
    try:
        from PIL import Image

        with Image.open(path) as opened:
            image = opened.convert("RGB")
            image.thumbnail((THUMB_SIDE, THUMB_SIDE))
            buffer = io.BytesIO()
            image.save(buffer, format="JPEG", quality=80)
    except (OSError, ValueError):
        return ""
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def judge_controls_html(results: Mapping[str, Any]) -> str:
    controls = results.get("judge_controls")
    judges = controls.get("judges") if isinstance(controls, Mapping) else None
    if not isinstance(judges, Mapping) or not judges:
        return ""
    settings = results.get("settings")
    outputs = settings.get("outputs") if isinstance(settings, Mapping) else None
    parts, shown = ['<h3 id="hx-judge-controls">Judge controls</h3><p>Candidates whose right verdict is known '
                    '(in no model\'s figures): how often the judge got them wrong, with the exact 95% interval.</p>'], 0
    for judge, entry in judges.items():
        if not isinstance(entry, Mapping):
            continue
        lines = []
        for kind, item in (entry.get("kinds") or {}).items():
            interval = item.get("interval") or [None, None]
            wrong = "false FAIL" if item.get("right") == "PASS" else "false PASS"
            lines.append(f"<tr><th scope=\"row\">{_text(KIND_TEXT.get(kind, kind))}</th><td>{_text(item.get('wrong'))} "
                         f"{wrong} of {_text(item.get('judged'))}</td><td>{_percent(item.get('rate'))} "
                         f"[{_percent(interval[0])}, {_percent(interval[1])}]</td></tr>")
        versions = ", ".join(f"{v} ({n})" for v, n in (entry.get("versions") or {}).items()) or "none named"
        parts.append(f"<h4>Judge {_text(judge)} (served: {_text(versions)})</h4><table><thead><tr><th>Control</th>"
                     f"<th>Wrong verdicts</th><th>Share</th></tr></thead><tbody>{''.join(lines)}</tbody></table>")
        cards = []
        for kind, item in (entry.get("kinds") or {}).items():
            for wrong in item.get("wrong_controls") or []:
                if shown >= SHOWN:
                    break
                shown += 1
                source = thumbnail(Path(outputs) / wrong["image"]) if outputs and wrong.get("image") else ""
                image = f'<img src="{source}" alt="{_text(kind)} control of {_text(wrong.get("task"))}">' if source else ""
                cards.append(f'<li class="hx-control">{image}<p><b>{_text(wrong.get("task"))}</b>: '
                             f'{_text(KIND_TEXT.get(kind, kind))}, judged {"PASS" if item.get("right") == "FAIL" else "FAIL"}: '
                             f'{_text(wrong.get("reasoning"))}</p></li>')
        if cards:
            parts.append(f"<details open><summary>Controls judge {_text(judge)} passed</summary>"
                         f"<ul class=\"hx-controls\">{''.join(cards)}</ul></details>")
    return "".join(parts)
