"""Metric gates: parsing --gate, evaluating against results rows, and what each line says."""

from __future__ import annotations

import pytest

from pytest_hypeedit.analysis.gates import all_pass, evaluate, incompleteness, parse_gate
from pytest_hypeedit.errors import ConfigError


def row(model="seedream-4.5", split="combined", **metrics):
    base = {"model": model, "split": split, "tasks": 50, "candidates": 500, "judged": 500, "errors": 0,
            "pass_rate": 0.62, "pass_at_4": 0.70, "pass_at_10": 0.84, "expected_attempts": 2.1,
            "effective_cost": 1.10, "first_attempt_pass_rate": 0.5, "hype_gap": 0.34}
    base.update(metrics)
    return base


def results(*rows):
    return {"schema": "hypeedit-results/1", "settings": {}, "rows": list(rows)}


@pytest.mark.parametrize("text, expected", [
    ("pass_rate>=0.6", dict(metric="pass_rate", op=">=", threshold=0.6, model=None, split=None)),
    ("effective_cost <= 1.2", dict(metric="effective_cost", op="<=", threshold=1.2)),
    ("seedream-4.5:pass_at_4>=0.65", dict(metric="pass_at_4", model="seedream-4.5", split=None)),
    ("seedream-4.5@public:pass_at_10>84%", dict(model="seedream-4.5", split="public", op=">", threshold=0.84)),
    ("pass_rate.low>=0.5", dict(bound="low", threshold=0.5)),
    ("pass_rate>=baseline-0.02", dict(relative_to_baseline=True, threshold=-0.02)),
    ("hype_gap<=baseline+2%", dict(relative_to_baseline=True, threshold=0.02)),
    ("expected_attempts<3", dict(metric="expected_attempts", threshold=3.0)),
])
def test_parse(text, expected):
    gate = parse_gate(text)
    for key, value in expected.items():
        assert getattr(gate, key) == pytest.approx(value) if isinstance(value, float) else getattr(gate, key) == value


@pytest.mark.parametrize("text, problem", [
    ("pass_rate=0.6", "expected \\[MODEL"),
    ("accuracy>=0.6", "unknown metric 'accuracy'"),
    ("pass_rate>=60", "write 60% or 0.6"),
    ("pass_rate>=lots", "threshold 'lots'"),
    ("@public:pass_rate>=0.6", "MODEL or MODEL@SPLIT"),
])
def test_bad_gates_name_the_option_and_what_is_allowed(text, problem):
    with pytest.raises(ConfigError, match=problem) as info:
        parse_gate(text)
    assert str(info.value).startswith(f"--gate {text!r}")
    assert "pass_at_4" in str(info.value) and "effective_cost" in str(info.value)


def test_gate_passes_and_fails_with_value_threshold_and_margin():
    run = results(row(pass_rate=0.62))
    held = evaluate([parse_gate("pass_rate>=0.6")], run)
    assert all_pass(held)
    assert held[0].margin == pytest.approx(0.02)
    assert held[0].line() == "PASS gate 'pass_rate>=0.6' on seedream-4.5 (combined): pass_rate = 62.0%, threshold >= 60.0%, margin +2.0 points"
    failed = evaluate([parse_gate("effective_cost<=1.0")], run)
    assert not all_pass(failed)
    assert failed[0].margin == pytest.approx(-0.10)
    assert "FAIL gate 'effective_cost<=1.0'" in failed[0].line() and "effective_cost = $1.10" in failed[0].line()
    assert "margin -$0.10" in failed[0].line()


def test_unscoped_gate_checks_every_models_combined_row():
    run = results(row("a", "public", pass_rate=0.1), row("a"), row("b", pass_rate=0.4), row("b", "public"))
    checked = evaluate([parse_gate("pass_rate>=0.5")], run)
    assert [(r.model, r.split, r.passed) for r in checked] == [("a", "combined", True), ("b", "combined", False)]


def test_without_combined_every_split_is_checked_and_a_scope_narrows():
    run = results(row("a", "public", pass_rate=0.7), row("b", "public", pass_rate=0.3))
    assert [r.passed for r in evaluate([parse_gate("pass_rate>=0.5")], run)] == [True, False]
    assert all_pass(evaluate([parse_gate("a:pass_rate>=0.5")], run))
    assert all_pass(evaluate([parse_gate("a@public:pass_rate>=0.5")], run))


def test_a_gate_on_a_model_not_in_the_run_fails_and_says_what_there_is():
    [result] = evaluate([parse_gate("flux-2-max:pass_rate>=0.5")], results(row("a", "public")))
    assert not result.passed
    assert "no results row matches (rows in this run: a@public)" in result.line()


def test_an_incomplete_run_fails_every_gate_unless_allowed():
    run = results(row(errors=3, judged=497))
    [result] = evaluate([parse_gate("pass_rate>=0.1")], run)
    assert not result.passed
    assert "incomplete run (3 errors)" in result.line() and "--allow-incomplete" in result.line()
    assert all_pass(evaluate([parse_gate("pass_rate>=0.1")], run, allow_incomplete=True))
    [crashed] = evaluate([parse_gate("pass_rate>=0.1")], results(row()), incomplete_reasons=["2 items ended without a record"])
    assert not crashed.passed and "2 items ended without a record" in crashed.line()


def test_incompleteness_counts_missing_verdicts_and_budget_skips():
    assert incompleteness(row()) == []
    assert incompleteness(row(judged=490)) == ["10 of 500 candidates without a verdict"]
    assert incompleteness(row(skipped=4, judged=496)) == ["4 skipped (budget)"]


def test_baseline_gate_uses_the_paired_comparison_on_shared_tasks():
    paired = {"pass_rate": {"current": 0.62, "baseline": 0.63, "difference": -0.01, "low": -0.05, "high": 0.03, "tasks": 50}}
    run = results(row(baseline=paired))
    [held] = evaluate([parse_gate("pass_rate>=baseline-0.02")], run)
    assert held.passed and held.threshold == pytest.approx(0.61) and held.margin == pytest.approx(0.01)
    assert "baseline 63.0% on 50 shared tasks" in held.line()
    [failed] = evaluate([parse_gate("pass_rate>=baseline")], run)
    assert not failed.passed


def test_baseline_gate_falls_back_to_baseline_rows_and_fails_without_one():
    run = results(row(pass_rate=0.62))
    [held] = evaluate([parse_gate("pass_rate>=baseline-0.02")], run, baseline_rows=[row(pass_rate=0.60)])
    assert held.passed
    [missing] = evaluate([parse_gate("pass_rate>=baseline-0.02")], run, baseline_rows=[row("other")])
    assert not missing.passed and "no baseline row for seedream-4.5 (combined)" in missing.line()


def test_interval_bound_gate_and_undefined_value():
    run = results(row(intervals={"pass_rate": [0.55, 0.69]}, effective_cost=None))
    assert all_pass(evaluate([parse_gate("pass_rate.low>=0.5")], run))
    assert not all_pass(evaluate([parse_gate("pass_rate.low>=0.6")], run))
    [undefined] = evaluate([parse_gate("effective_cost<=2")], run)
    assert not undefined.passed and "effective_cost = n/a" in undefined.line()


def test_a_calibrated_gate_on_a_withheld_figure_fails_and_gives_the_reason():
    reason = "needs at least 8 human PASS and 8 human FAIL labels of this model's own"
    run = results(row(calibrated={"pass_rate": {"value": 0.6, "low": 0.5, "high": 0.7},
                                  "pass_at_4": {"value": None, "low": None, "high": None, "reason": reason}}))
    [withheld] = evaluate([parse_gate("calibrated.pass_at_4>=0.5")], run)
    assert not withheld.passed and f"is not defined for this row ({reason})" in withheld.line()
    assert all_pass(evaluate([parse_gate("calibrated.pass_rate>=0.5")], run))


def test_a_gate_on_a_model_on_another_route_reads_its_scope_as_that_model():
    """--model NAME@ROUTE makes rows named NAME@ROUTE: 'NAME@ROUTE:metric' gates them (all their rows, the combined
    one when there are several splits), 'NAME@ROUTE@SPLIT:metric' one split; NAME@SPLIT keeps its meaning.
    (Planted: evaluate without route_scoped: the NAME@ROUTE gate matched no row and failed: caught.)"""
    from pytest_hypeedit.analysis.gates import RunScope, check_gates_apply, route_scoped

    rows = [{"model": "q", "split": "public", "pass_rate": 0.8, "judged": 10, "candidates": 10},
            {"model": "q@dashscope", "split": "public", "pass_rate": 0.5, "judged": 10, "candidates": 10}]
    on_route, on_split, both = (parse_gate(text) for text in ("q@dashscope:pass_rate>=0.6",
                                                              "q@public:pass_rate>=0.6",
                                                              "q@dashscope@public:pass_rate>=0.4"))
    assert (both.model, both.split) == ("q@dashscope", "public")
    assert route_scoped(on_route, ["q", "q@dashscope"]).model == "q@dashscope"
    assert route_scoped(on_split, ["q", "q@dashscope"]) == on_split
    found = evaluate([on_route, on_split, both], {"rows": rows})
    assert [(r.gate, r.model, r.value, r.passed) for r in found] == [
        (on_route, "q@dashscope", 0.5, False), (on_split, "q", 0.8, True), (both, "q@dashscope", 0.5, True)]
    check_gates_apply([on_route, on_split, both], RunScope(models=("q", "q@dashscope"), splits=("public",), repeats=10))
