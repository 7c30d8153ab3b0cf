"""The SVG bar charts: six panels, bars in proportion, whiskers for intervals, labels escaped."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from pytest_hypeedit.report.charts import CHART_METRICS, metric_charts_svg

SVG = "{http://www.w3.org/2000/svg}"


def rows():
    return [
        {"model": "seedream-4.5", "pass_rate": 0.25, "pass_at_4": 0.6, "pass_at_10": 0.8, "expected_attempts": 2.5,
         "effective_cost": 1.2, "hype_gap": 0.4, "intervals": {"pass_rate": [0.2, 0.3]}},
        {"model": "<script>alert(1)</script>", "pass_rate": 0.5, "pass_at_4": 0.9, "pass_at_10": 1.0,
         "expected_attempts": 1.4, "effective_cost": None, "hype_gap": 0.1},
    ]


def bars(svg):
    root = ET.fromstring(svg)
    return [r for r in root.iter(f"{SVG}rect") if r.get("class") == "bar"]


def test_six_panels_with_one_bar_per_model():
    svg = metric_charts_svg(rows(), title="public")
    assert len(bars(svg)) == 6 * 2
    for _, title, _ in CHART_METRICS:
        assert title in svg


def test_bar_lengths_are_in_proportion_to_the_values():
    found = bars(metric_charts_svg(rows()))
    pass_rate = [float(b.get("width")) for b in found[:2]]  # first panel: pass rate 25% and 50%
    assert pass_rate[1] == 2 * pass_rate[0] > 0


def test_a_missing_value_draws_no_bar_and_says_n_a():
    svg = metric_charts_svg(rows())
    cost_panel = bars(svg)[8:10]
    assert float(cost_panel[1].get("width")) == 0
    assert "n/a" in svg


def test_intervals_are_drawn_as_whiskers():
    svg = metric_charts_svg(rows())
    assert len(re.findall(r'class="ci"', svg)) == 1
    assert "95% CI 20.0% to 30.0%" in svg


def test_labels_from_the_run_are_escaped():
    svg = metric_charts_svg(rows(), title="a & <b>")
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    ET.fromstring(svg)  # still well-formed XML


def test_no_rows_no_chart():
    assert metric_charts_svg([]) == ""
