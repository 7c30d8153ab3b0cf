"""``serving.runs`` (one model between two runs) and ``serving.routes`` shown: the terminal lines and HTML of a run
with ``--baseline`` (report/serving_view.py), and the leaderboard merge (report/results_files.py), which compares
every two files holding one model on one split and a model's routes, in its JSON and its Markdown."""

from __future__ import annotations

import json

from pytest_hypeedit.report.leaderboard import main
from pytest_hypeedit.report.leaderboard_markdown import results_markdown
from pytest_hypeedit.report.results_files import merge_results
from pytest_hypeedit.report.serving_view import serving_html, serving_lines, serving_title

LIMITS = {"runs": "a change between two runs on the same tasks", "routes": "the routes served these tasks"}


def entry(**overrides):
    found = {"split": "mini", "model": "served", "run_a": "this run", "run_b": "out1/results.json",
             "metric": "pass_rate", "difference": -0.3, "interval": [-0.42, -0.18], "level": 0.95,
             "p_adjusted": 0.001, "significant": True, "tasks": 12, "judged_a": 120, "judged_b": 118,
             "judges": {"a": {"judge": "gemini:g", "versions": ["g-002"]}, "b": {"judge": "gemini:g", "versions": []}},
             "judge_changed": False, "releases": {"a": None, "b": None},
             "sentence": "served passed 30.0 points less in this run than in the baseline run of 2026-11-20 (...)"}
    return found | overrides


def test_the_terminal_says_each_comparison_between_runs_and_the_sentence_of_a_significant_one():
    lines = serving_lines({"serving": {"routes": [], "drift": [], "runs": [entry()], "limits": LIMITS}})
    assert lines[0] == ("served (mini, 12 tasks; 120 and 118 verdicts): this run - out1/results.json: pass rate "
                        "-30.0 points [-42.0, -18.0], significant")
    assert lines[1] == "  served passed 30.0 points less in this run than in the baseline run of 2026-11-20 (...)"
    assert "  (runs: a change between two runs on the same tasks)" in lines


def test_a_comparison_that_is_not_significant_prints_no_sentence_and_a_changed_judge_is_said():
    quiet = entry(significant=False, interval=[-0.1, 0.05], difference=-0.02, judge_changed=True)
    lines = serving_lines({"serving": {"runs": [quiet], "limits": LIMITS}})
    assert lines[0].endswith("pass rate -2.0 points [-10.0, +5.0], not significant; the judge differs between the runs")
    assert not any("passed" in line for line in lines)
    assert serving_lines({"serving": {"routes": [], "drift": [], "runs": [], "limits": LIMITS}}) == []


def test_the_terminal_title_names_only_what_the_section_holds():
    only_runs = {"serving": {"routes": [], "drift": [], "runs": [entry()], "limits": LIMITS}}
    assert serving_title(only_runs) == "serving: between runs (not a model's score; results: serving)"
    drift = {"by": "latency", "significant": True, "sentence": "served passed less when slow"}
    both = {"serving": {"routes": [], "drift": [drift, dict(drift, by="time", significant=False)], "runs": [entry()],
                        "limits": LIMITS}}
    assert serving_title(both) == "serving: drift and between runs (not a model's score; results: serving)"


def test_the_report_shows_the_runs_side_by_side_with_their_judges_escaped():
    page = serving_html({"serving": {"runs": [entry(run_b="<b>old</b>.json")], "limits": LIMITS}})
    assert "<h4>Between runs, on the same tasks</h4>" in page
    assert "this run - &lt;b&gt;old&lt;/b&gt;.json" in page and "<b>old" not in page
    assert "this run: gemini:g (g-002); &lt;b&gt;old&lt;/b&gt;.json: gemini:g" in page
    assert "12 (120 and 118 verdicts)" in page and "-30.0 points [-42.0, -18.0], significant<br>served passed" in page
    assert "a change between two runs on the same tasks" in page


# --- the leaderboard ----------------------------------------------------------------------------------


def tallies(passes, judged=10):
    return [{"task_id": f"t{i:02d}", "passes": k, "judged": judged, "first_passed": bool(k), "task_types": []}
            for i, k in enumerate(passes)]


def row(model, passes, route="serve-a", release="a00000000000"):
    rate = sum(passes) / (10 * len(passes))
    return {"model": model, "split": "mini", "tasks": len(passes), "candidates": 10 * len(passes),
            "judged": 10 * len(passes), "errors": 0, "refusals": 0, "cost_per_candidate": 0.04, "spent": 0.0,
            "pass_rate": rate, "task_tallies": tallies(passes),
            "release": {"id": release, "label": None, "route": route, "provider_model": "p"}}


def results(*rows, day="2026-11-20", versions=("g-001",)):
    return {"schema": "hypeedit-results/1", "rows": list(rows),
            "settings": {"repeats": 10, "retry_cap": 4, "review_cost": 0.01, "judge": "gemini:g"},
            "judge_versions": {"gemini:g": {"answered": {v: 10 for v in versions}}},
            "serving": {"bought": {"first": f"{day}T08:00:00+00:00", "last": f"{day}T09:00:00+00:00"}}}


HIGH = [8, 9, 7, 8, 9, 8, 7, 9, 8, 8, 9, 7]
LOW = [5, 6, 4, 5, 5, 6, 4, 5, 6, 5, 5, 4]


def test_a_merge_of_two_runs_of_one_model_compares_them_on_the_same_tasks_whichever_the_tables_show():
    runs = [("a.json", results(row("served", HIGH), day="2026-11-20")),
            ("b.json", results(row("served", LOW), day="2026-11-27", versions=("g-002",)))]
    merged = merge_results(runs, prefer="last")
    assert [r["pass_rate"] for r in merged["rows"]] == [sum(LOW) / 120]  # the tables show b.json's
    [found] = merged["serving"]["runs"]
    assert (found["model"], found["run_a"], found["run_b"], found["tasks"]) == ("served", "b.json", "a.json", 12)
    assert abs(found["difference"] - (sum(LOW) - sum(HIGH)) / 120) < 1e-12 and found["significant"]
    assert found["judge_changed"] and found["judges"]["b"]["versions"] == ["g-001"]
    assert found["sentence"].startswith("served passed 30.8 points less in b.json (2026-11-27) than in a.json "
                                        "(2026-11-20) (paired over 12 tasks, p = ")
    assert set(merged["serving"]) == {"routes", "runs", "limits"}  # no drift: a file holds no purchase time
    text = results_markdown(merged)
    section = text[text.index("## Serving (not a model's score)"):]
    assert "- served (mini, 12 tasks): b.json - a.json: pass rate -30.8 points [" in section
    assert "significant. served passed 30.8 points less in b.json (2026-11-27)" in section
    assert "The judge differs between the runs." in section and "Runs: a change between two runs" in section


def test_three_files_of_one_model_are_compared_two_by_two_in_the_order_given():
    runs = [(name, results(row("served", passes))) for name, passes in (("a", HIGH), ("b", LOW), ("c", HIGH))]
    found = merge_results(runs, prefer="first")["serving"]["runs"]
    assert [(e["run_a"], e["run_b"]) for e in found] == [("b", "a"), ("c", "a"), ("c", "b")]
    assert [e["significant"] for e in found] == [True, False, True]
    assert found[1]["difference"] == 0


def test_a_merge_compares_the_routes_of_one_model_and_shows_them():
    merged = merge_results([("a.json", results(row("served", HIGH))),
                            ("b.json", results(row("served@serve-b", LOW, "serve-b", "b00000000000")))])
    routes = merged["serving"]["routes"]
    assert merged["serving"]["runs"] == []
    assert {e["metric"] for e in routes} == {"pass_rate", "pass_at_4", "pass_at_10", "expected_attempts",
                                             "effective_cost", "hype_gap"}  # no latency in a results file
    pass_rate = next(e for e in routes if e["metric"] == "pass_rate")
    assert (pass_rate["a"], pass_rate["b"], pass_rate["route_a"], pass_rate["route_b"]) == (
        "served", "served@serve-b", "serve-a", "serve-b")
    assert pass_rate["significant"]
    assert ("- served via serve-a vs via serve-b (served - served@serve-b, mini, 12 tasks): pass rate +30.8 points"
            in results_markdown(merged))


def test_a_merge_with_nothing_to_compare_has_no_serving(tmp_path):
    merged = merge_results([("a.json", results(row("served", HIGH))), ("b.json", results(row("other", LOW)))])
    assert "serving" not in merged and "## Serving" not in results_markdown(merged)


def test_the_leaderboard_command_writes_it_to_its_json_and_markdown(tmp_path):
    for name, passes in (("a", HIGH), ("b", LOW)):
        (tmp_path / f"{name}.json").write_text(json.dumps(results(row("served", passes))))
    out, merged = tmp_path / "RESULTS.md", tmp_path / "merged.json"
    assert main([str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--prefer", "last", "-o", str(out),
                 "--json", str(merged)]) == 0
    assert json.loads(merged.read_text())["serving"]["runs"][0]["significant"]
    assert "## Serving (not a model's score)" in out.read_text()
