"""report/serving_view.py: the results' ``serving`` in the terminal (only when it applies) and in the report."""

from __future__ import annotations

from pytest_hypeedit.analysis.serving import LIMITS
from pytest_hypeedit.report.serving_view import serving_html, serving_lines
from pytest_hypeedit.report.summary import summary_html


def route(metric, difference, interval, significant, a="q", b="q@dashscope"):
    return {"split": "public", "model": "q", "a": a, "b": b, "route_a": "fal", "route_b": "dashscope",
            "metric": metric, "difference": difference, "interval": interval, "level": 0.99,
            "p_adjusted": 0.01 if significant else 0.4, "significant": significant, "tasks": 100}


DRIFT_FOUND = {"model": "s<4>", "by": "latency", "candidates": 600, "tasks": 60, "limits": LIMITS["latency"],
               "thirds": [{"third": "fastest", "candidates": 200, "pass_rate": 0.6, "from": 1.0, "to": 2.0},
                          {"third": "middle", "candidates": 200, "pass_rate": 0.55, "from": 2.0, "to": 3.0},
                          {"third": "slowest", "candidates": 200, "pass_rate": 0.48, "from": 3.0, "to": 9.0}],
               "difference": -0.12, "interval": [-0.2, -0.04], "p_value": 0.001, "p_adjusted": 0.004,
               "significant": True, "sentence": "s<4> passed 12 points less in the slowest third of replies"}
DRIFT_FLAT = {**DRIFT_FOUND, "by": "time", "significant": False, "p_adjusted": 0.8}
DRIFT_THIN = {"model": "t", "by": "time", "candidates": 4, "tasks": 2, "limits": LIMITS["time"],
              "note": "not enough data: 4 usable candidates"}


def results(routes=(), drift=()):
    return {"serving": {"routes": list(routes), "drift": list(drift), "limits": dict(LIMITS)}}


def test_nothing_is_printed_when_no_model_has_two_routes_and_nothing_drifts():
    assert serving_lines(results(drift=[DRIFT_FLAT, DRIFT_THIN])) == []
    assert serving_lines({}) == []


def test_a_serving_that_is_not_an_object_shows_nothing():
    # a results file from disk is read through the results model, but a foreign or hand-edited one may hold anything
    for serving in (["routes"], "routes", 3, None):
        assert serving_lines({"serving": serving}) == []
        assert serving_html({"serving": serving}) == ""


def test_a_route_pair_is_one_line_with_pass_rate_and_latency_and_what_else_differs():
    lines = serving_lines(results(routes=[route("pass_rate", -0.061, [-0.11, -0.012], True),
                                          route("pass_at_4", -0.02, [-0.05, 0.01], False),
                                          route("hype_gap", 0.1, [0.02, 0.2], True),
                                          route("latency_s", 2.31, [1.8, 2.9], True)]))
    assert lines[0] == ("q via fal vs via dashscope (q - q@dashscope, public, 100 tasks): pass rate -6.1 points "
                        "[-11.0, -1.2], significant; latency +2.31 s [+1.80, +2.90], significant; also differ: "
                        "hype_gap")
    assert lines[1] == f"  (routes: {LIMITS['routes']})"


def test_a_significant_drift_is_its_sentence_and_its_limit():
    lines = serving_lines(results(drift=[DRIFT_FOUND, DRIFT_FLAT]))
    assert lines[:2] == [DRIFT_FOUND["sentence"], f"  (latency: {LIMITS['latency']})"]


def test_an_unbounded_side_says_so():
    lines = serving_lines(results(routes=[route("pass_rate", 0.3, [0.1, None], True)]))
    assert "pass rate +30.0 points [+10.0, unbounded], significant" in lines[0]


def test_the_report_shows_thirds_per_model_and_the_route_table_escaped():
    html = serving_html(results(routes=[route("pass_rate", -0.061, [-0.11, -0.012], True, a="<q>")],
                                drift=[DRIFT_FOUND, DRIFT_THIN]))
    assert "<q>" not in html and "&lt;q&gt; - q@dashscope" in html and "s&lt;4&gt;: PASS rate by third" in html
    assert "fastest: 60.0% (200)" in html and "slowest: 48.0% (200)" in html and "-12.0 points" in html
    assert "not enough data: 4 usable candidates" in html and "latency is a proxy" in html
    assert serving_html(results()) == "" and serving_html({}) == ""


def test_the_summary_carries_the_serving_section():
    found = results(drift=[DRIFT_FOUND])
    found["rows"] = [{"model": "s<4>", "split": "public", "pass_rate": 0.55, "tasks": 60, "candidates": 600}]
    assert 'id="hx-serving"' in summary_html(found, [])
