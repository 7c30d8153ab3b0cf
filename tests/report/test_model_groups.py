"""Groups of models that cannot be told apart, as the HTML report shows them (report/model_groups.py)."""

from __future__ import annotations

from pytest_hypeedit.report.model_groups import groups_by_metric, groups_html, letter_groups
from pytest_hypeedit.report.summary import summary_html


def entry(a: str, b: str, significant: bool, metric: str = "pass_rate", split: str = "mini") -> dict:
    return {"split": split, "a": a, "b": b, "metric": metric, "significant": significant}


def test_models_that_differ_get_different_letters_and_a_bridge_gets_both():
    assert letter_groups(["x", "y", "z"], {frozenset(("x", "y")), frozenset(("x", "z")),
                                           frozenset(("y", "z"))}) == {"x": "a", "y": "b", "z": "c"}
    assert letter_groups(["x", "y", "z"], set()) == {"x": "a", "y": "a", "z": "a"}
    # x ~ y and y ~ z, but x and z differ: y bridges the two groups
    assert letter_groups(["x", "y", "z"], {frozenset(("x", "z"))}) == {"x": "a", "y": "ab", "z": "b"}


def test_groups_per_headline_metric_ordered_best_first():
    rows = [{"model": "twin-a", "split": "mini", "pass_rate": 0.75, "effective_cost": 1.0},
            {"model": "weaker", "split": "mini", "pass_rate": 0.25, "effective_cost": 3.0},
            {"model": "twin-b", "split": "mini", "pass_rate": 0.75, "effective_cost": 0.9}]
    pairwise = [entry("twin-a", "twin-b", False), entry("twin-a", "weaker", True), entry("twin-b", "weaker", True),
                entry("twin-a", "weaker", True, "effective_cost"), entry("twin-b", "weaker", False, "effective_cost"),
                entry("twin-a", "twin-b", False, "effective_cost"), entry("x", "y", True, split="other")]
    groups = {key: letters for key, _, letters in groups_by_metric("mini", rows, pairwise)}
    assert groups["pass_rate"] == {"twin-a": "a", "twin-b": "a", "weaker": "b"}
    # the cheapest first: twin-b ~ both, twin-a and weaker differ
    assert groups["effective_cost"] == {"twin-b": "ab", "twin-a": "a", "weaker": "b"}
    assert set(groups) == {"pass_rate", "effective_cost"}


def test_the_report_summary_shows_the_groups_escaped_and_only_with_comparisons():
    rows = [{"model": "<b>m1</b>", "split": "mini", "pass_rate": 0.7, "candidates": 4, "judged": 4},
            {"model": "m2", "split": "mini", "pass_rate": 0.2, "candidates": 4, "judged": 4}]
    page = summary_html({"rows": rows, "pairwise": [entry("<b>m1</b>", "m2", True)]}, [])
    assert "Which differences are real" in page and "&lt;b&gt;m1&lt;/b&gt;" in page and "<b>m1</b>" not in page
    assert '<td>Pass rate</td><td class="hx-group">a</td><td class="hx-group">b</td>' in page
    assert "Which differences are real" not in summary_html({"rows": rows}, [])
    assert groups_html("mini", rows, []) == ""
