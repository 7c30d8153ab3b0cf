"""Bar charts of the six headline metrics across the models of a run (the paper's Figure 3).

Pure: result rows in, an SVG string out.  No I/O, no pytest.  Every label that
comes from a run (model names, split names) is escaped, because the SVG is
inlined into the HTML report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any, Iterable, Mapping

from ..finite import finite_number, format_metric
from .tables import (
    metric_labels,
    row_repeats,
)

#: (results key, panel title, kind): kind decides the axis and the number format.
CHART_METRICS: tuple[tuple[str, str, str], ...] = (
    ("pass_rate", "Pass rate (P@1)", "percent"),
    ("pass_at_4", "Pass@4", "percent"),
    ("pass_at_10", "Pass@10", "percent"),
    ("expected_attempts", "Expected attempts", "attempts"),
    ("effective_cost", "Effective cost per success (USD)", "dollars"),
    ("hype_gap", "Hype gap (P@10 - first attempt)", "percent"),
)



def chart_metrics(repeats: int | None = None) -> tuple[tuple[str, str, str], ...]:
    """CHART_METRICS titled for what they measure at ``repeats`` images per task (Pass@k, the hype gap on it)."""
    labels = metric_labels(repeats)
    if labels["pass_at_10"] == "Pass@10":
        return CHART_METRICS
    k = labels["pass_at_10"]
    at = k.split()[0].replace("Pass", "P")  # "P@2"
    titles = {"pass_at_10": k, "hype_gap": f"{labels['hype_gap']} ({at} - first attempt)"}
    return tuple((key, titles.get(key, title), kind) for key, title, kind in CHART_METRICS)


def rows_repeats(rows: Iterable[Mapping[str, Any]]) -> int | None:
    """The images per task of a run's rows (they share it), None when they do not say."""
    found = {row_repeats(row) for row in rows}
    return found.pop() if len(found) == 1 else None


#: Colour-blind-safe palette (Okabe-Ito); a model keeps its colour in every panel.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")

PANEL_WIDTH, LABEL_WIDTH, BAR_HEIGHT, BAR_GAP, PANEL_TOP, PANEL_BOTTOM = 380, 130, 16, 6, 28, 22
COLUMNS = 3


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None
    interval: tuple[float, float] | None
    colour: str


def metric_charts_svg(rows: Iterable[Mapping[str, Any]], *, title: str = "") -> str:
    """One SVG holding six small bar charts (one per metric), one bar per row.

    ``rows`` are results rows (``model``, the metric keys, optionally
    ``intervals`` {metric: [lo, hi]} drawn as whiskers).  Returns "" for no rows.
    """
    rows = list(rows)
    if not rows:
        return ""
    colours = {row["model"]: PALETTE[i % len(PALETTE)] for i, row in enumerate(rows)}
    panels = [_panel(rows, metric, name, kind, colours) for metric, name, kind in chart_metrics(rows_repeats(rows))]
    panel_height = PANEL_TOP + len(rows) * (BAR_HEIGHT + BAR_GAP) + PANEL_BOTTOM
    width = COLUMNS * PANEL_WIDTH
    height = math.ceil(len(panels) / COLUMNS) * panel_height + (24 if title else 0)
    body = [_title(title)] if title else []
    for index, panel in enumerate(panels):
        x = (index % COLUMNS) * PANEL_WIDTH
        y = (index // COLUMNS) * panel_height + (24 if title else 0)
        body.append(f'<g transform="translate({x},{y})">{panel}</g>')
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="hypeedit-chart" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'font-family="sans-serif" font-size="11">'
        f"<title>{escape(title or 'HYPE-EDIT metrics by model')}</title>{''.join(body)}</svg>"
    )


def _title(title: str) -> str:
    return f'<text x="4" y="16" font-size="14" font-weight="bold">{escape(title)}</text>'


def _panel(rows: list[Mapping[str, Any]], metric: str, name: str, kind: str, colours: dict[str, str]) -> str:
    bars = [_bar(row, metric, colours) for row in rows]
    scale_max = _axis_max(bars, kind)
    plot_width = PANEL_WIDTH - LABEL_WIDTH - 60
    parts = [f'<text x="4" y="16" font-weight="bold">{escape(name)}</text>']
    for index, bar in enumerate(bars):
        y = PANEL_TOP + index * (BAR_HEIGHT + BAR_GAP)
        parts.append(_bar_svg(bar, y, kind, scale_max, plot_width))
    axis_y = PANEL_TOP + len(bars) * (BAR_HEIGHT + BAR_GAP)
    parts.append(_axis_svg(axis_y, kind, scale_max, plot_width))
    return "".join(parts)


def _bar(row: Mapping[str, Any], metric: str, colours: dict[str, str]) -> Bar:
    value = row.get(metric)
    value = float(value) if finite_number(value) else None
    interval = (row.get("intervals") or {}).get(metric)
    interval = tuple(interval) if interval and all(finite_number(v) for v in interval) else None
    return Bar(_row_label(row), value, interval, colours[row["model"]])


def _row_label(row: Mapping[str, Any]) -> str:
    return str(row["model"])


def _axis_max(bars: list[Bar], kind: str) -> float:
    if kind == "percent":
        return 1.0
    highest = max([b.value or 0.0 for b in bars] + [b.interval[1] for b in bars if b.interval] + [0.0])
    return _nice_ceiling(highest)


def _nice_ceiling(value: float) -> float:
    """The next 1/2/5 x 10^k at or above value, so the axis ends on a round number."""
    if value <= 0:
        return 1.0
    magnitude: float = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


def _bar_svg(bar: Bar, y: int, kind: str, scale_max: float, plot_width: int) -> str:
    label = escape(bar.label)
    text = escape(format_metric(bar.value, kind))
    shown = f"{label}: {text}"
    if bar.interval:
        shown += f" (95% CI {escape(format_metric(bar.interval[0], kind))} to {escape(format_metric(bar.interval[1], kind))})"
    parts = [
        f'<text x="{LABEL_WIDTH - 6}" y="{y + BAR_HEIGHT - 4}" text-anchor="end">{escape(_clip(bar.label))}</text>'
    ]
    width = 0.0 if bar.value is None else max(0.0, min(bar.value / scale_max, 1.0)) * plot_width
    parts.append(
        f'<rect class="bar" x="{LABEL_WIDTH}" y="{y}" width="{width:.1f}" height="{BAR_HEIGHT}" '
        f'fill="{bar.colour}"><title>{shown}</title></rect>'
    )
    text_x = LABEL_WIDTH + width + 4
    if bar.interval:
        parts.append(_whisker(bar.interval, y, scale_max, plot_width))
        # the value goes right of the whisker, so the two never overlap
        text_x = max(text_x, LABEL_WIDTH + min(bar.interval[1] / scale_max, 1.0) * plot_width + 4)
    parts.append(f'<text x="{text_x:.1f}" y="{y + BAR_HEIGHT - 4}">{text}</text>')
    return "".join(parts)


def _clip(label: str, limit: int = 20) -> str:
    # Long model names would run into the bars; the full name stays in the bar's tooltip.
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _whisker(interval: tuple[float, float], y: int, scale_max: float, plot_width: int) -> str:
    low, high = (LABEL_WIDTH + max(0.0, min(v / scale_max, 1.0)) * plot_width for v in interval)
    mid = y + BAR_HEIGHT / 2
    return (
        f'<path class="ci" d="M{low:.1f},{mid - 4}v8M{low:.1f},{mid}H{high:.1f}M{high:.1f},{mid - 4}v8" '
        f'stroke="#333" stroke-width="1.2" fill="none"/>'
    )


def _axis_svg(y: int, kind: str, scale_max: float, plot_width: int) -> str:
    parts = [f'<path d="M{LABEL_WIDTH},{y}H{LABEL_WIDTH + plot_width}" stroke="#999"/>']
    for fraction in (0, 0.5, 1):
        x = LABEL_WIDTH + fraction * plot_width
        tick = format_metric(fraction * scale_max, kind).replace(".0%", "%")
        parts.append(f'<text x="{x:.1f}" y="{y + 14}" text-anchor="middle" fill="#555">{escape(tick)}</text>')
    return "".join(parts)
