"""The leaderboard: upstream RESULTS.md tables from results rows, and merging several runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pytest_hypeedit.errors import ConfigError, InputError
from pytest_hypeedit.report.leaderboard import main
from pytest_hypeedit.report.leaderboard_markdown import results_markdown
from pytest_hypeedit.report.results_files import load_results, merge_results, pooled_row

REVIEW = 50 * 20 / 3600
PRICE = {"riverflow-2-b1": 0.15, "gemini-3-pro-preview": 0.134, "seedream-4.5": 0.04}
# (pass_rate, pass_at_4, pass_at_10, expected_attempts, hype_gap) from the upstream RESULTS.md
UPSTREAM = {
    "public": {
        "riverflow-2-b1": (0.848, 0.926, 0.96, 1.35, 0.06),
        "gemini-3-pro-preview": (0.75, 0.903, 0.94, 1.52, 0.10),
        "seedream-4.5": (0.348, 0.653, 0.84, 2.55, 0.46),
    },
    "private": {
        "riverflow-2-b1": (0.806, 0.885, 0.90, 1.46, 0.06),
        "gemini-3-pro-preview": (0.526, 0.696, 0.80, 2.18, 0.24),
        "seedream-4.5": (0.34, 0.545, 0.70, 2.71, 0.28),
    },
}


def make_row(model, split, /, **overrides):
    rate, p4, p10, attempts, gap = UPSTREAM[split][model]
    row = {
        "model": model, "split": split, "tasks": 50, "candidates": 500, "judged": 500, "errors": 0,
        "refusals": 0, "cost_per_candidate": PRICE[model], "spent": 500 * PRICE[model],
        "pass_rate": rate, "pass_at_4": p4, "pass_at_10": p10, "expected_attempts": attempts,
        "effective_cost": attempts * (PRICE[model] + REVIEW) / p4,
        "first_attempt_pass_rate": p10 - gap, "hype_gap": gap,
    }
    row.update(overrides)
    return row


def results(*rows, review=REVIEW, judge="gemini-3-flash"):
    return {"schema": "hypeedit-results/1", "settings": {"repeats": 10, "retry_cap": 4, "review_cost": review, "judge": judge}, "rows": list(rows)}


def test_public_table_matches_upstream_rows_sorted_by_pass_rate():
    run = results(*(make_row(m, "public") for m in ("seedream-4.5", "riverflow-2-b1", "gemini-3-pro-preview")))
    text = results_markdown(run)
    expected = [
        "| Model | Pass rate | Pass@4 | Pass@10 | Expected attempts | Effective cost/success | Hype gap |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        "| riverflow-2-b1 | 84.8% | 92.6% | 96.0% | 1.35 | $0.62 | 6.0% |",
        "| gemini-3-pro-preview | 75.0% | 90.3% | 94.0% | 1.52 | $0.69 | 10.0% |",
        "| seedream-4.5 | 34.8% | 65.3% | 84.0% | 2.55 | $1.24 | 46.0% |",
    ]
    assert "\n".join(expected) in text
    assert "## Public" in text and "50 tasks, 10 images per task, 500 total images." in text
    assert "review cost per candidate is $0.2778" in text


def test_pooled_combined_row_matches_upstream_combined_figures():
    row = pooled_row("riverflow-2-b1", [make_row("riverflow-2-b1", "public"), make_row("riverflow-2-b1", "private")], REVIEW)
    assert row["tasks"] == 100 and row["candidates"] == 1000
    assert row["pass_rate"] == pytest.approx(0.827)
    assert row["pass_at_10"] == pytest.approx(0.93)
    assert row["hype_gap"] == pytest.approx(0.06)
    # upstream combined: $0.66 (E and P@4 pooled first, then the ratio)
    assert f"${row['effective_cost']:.2f}" == "$0.66"


def test_one_ci_job_per_model_merges_into_tables_per_split_and_combined():
    runs = [(f"runs/{m}.json", results(make_row(m, "public"), make_row(m, "private"))) for m in PRICE]
    merged = merge_results(runs)
    text = results_markdown(merged)
    assert [line.split("##")[1].strip() for line in text.splitlines() if line.startswith("## ")] == ["Public", "Private", "Combined"]
    combined = text.split("## Combined")[1]
    assert combined.index("riverflow-2-b1") < combined.index("gemini-3-pro-preview") < combined.index("seedream-4.5")
    assert "| gemini-3-pro-preview | 63.8% |" in combined


def test_a_runs_own_combined_row_is_kept_with_its_intervals():
    own = make_row("seedream-4.5", "public", split="combined", intervals={"pass_rate": [0.3, 0.4]})
    merged = merge_results([("a.json", results(make_row("seedream-4.5", "public"), make_row("seedream-4.5", "private"), own))])
    combined = [r for r in merged["rows"] if r["split"] == "combined"]
    assert combined == [own]
    assert "30.0% – 40.0%" in results_markdown(merged)


def test_an_interval_the_table_shows_as_n_a_says_why_under_it():
    noted = make_row("seedream-4.5", "public", intervals={"pass_rate": [0.3, 0.4]},
                     interval_notes={"effective_cost": "no candidate passed: no finite effective cost"})
    batch = make_row("gemini-3-pro-preview", "public", intervals={"pass_rate": [0.7, 0.8], "effective_cost": [1, 2]},
                     cost_per_candidate_paid=PRICE["gemini-3-pro-preview"] / 2)
    page = results_markdown(merge_results([("a.json", results(noted)), ("b.json", results(batch))]))
    assert "95% intervals over tasks (n/a: no interval, why below):" in page
    assert "- seedream-4.5, Effective cost/success: no candidate passed: no finite effective cost" in page
    assert "- seedream-4.5, Pass@4: the results file gives none" in page
    assert "- gemini-3-pro-preview, Effective cost/success: the run paid another price than the list price" in page
    assert "- gemini-3-pro-preview, Pass rate" not in page  # it has its interval


def test_same_model_and_split_twice_is_not_accepted_unless_told_which_wins():
    old, new = make_row("seedream-4.5", "public"), make_row("seedream-4.5", "public", pass_rate=0.5)
    runs = [("old.json", results(old)), ("new.json", results(new))]
    with pytest.raises(ConfigError, match=r"old.json and new.json both hold model 'seedream-4.5' on split 'public'.*--prefer"):
        merge_results(runs)
    assert merge_results(runs, prefer="last")["rows"][0]["pass_rate"] == 0.5
    assert merge_results(runs, prefer="first")["rows"][0]["pass_rate"] == 0.348
    assert merge_results(runs, prefer="old.json")["rows"][0]["pass_rate"] == 0.348
    with pytest.raises(ConfigError, match="--prefer 'other.json'"):
        merge_results(runs, prefer="other.json")


def test_runs_with_different_review_costs_are_not_merged_silently():
    runs = [("a.json", results(make_row("seedream-4.5", "public"))), ("b.json", results(make_row("riverflow-2-b1", "public"), review=0.5))]
    with pytest.raises(ConfigError, match="review_cost.*--allow-mixed-settings"):
        merge_results(runs)
    assert len(merge_results(runs, allow_mixed_settings=True)["rows"]) == 2


def test_names_cannot_break_the_table_and_incomplete_rows_are_flagged():
    row = make_row("seedream-4.5", "public", model="evil|model\nname", errors=3)
    text = results_markdown(results(row))
    assert "| evil\\|model name | 34.8%" in text
    assert "incomplete (3 errors)" in text


def test_cli_writes_markdown_and_does_not_accept_a_conflict(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(results(make_row("seedream-4.5", "public"))))
    b.write_text(json.dumps(results(make_row("seedream-4.5", "public"))))
    assert main([str(a), str(b)]) == 2
    assert "both hold model 'seedream-4.5'" in capsys.readouterr().err
    out = tmp_path / "RESULTS.md"
    assert main([str(a), str(b), "--prefer", "last", "-o", str(out), "--json", str(tmp_path / "m.json")]) == 0
    assert "| seedream-4.5 | 34.8%" in out.read_text()
    assert load_results(tmp_path / "m.json")["runs"] == [str(a), str(b)]


def test_python_dash_m_entry_point(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(results(make_row("riverflow-2-b1", "public"))))
    done = subprocess.run([sys.executable, "-m", "pytest_hypeedit.report.leaderboard", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "| riverflow-2-b1 | 84.8% | 92.6% | 96.0% | 1.35 | $0.62 | 6.0% |" in done.stdout


def test_a_file_that_is_not_results_is_named(tmp_path):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"schema_version": 2}))
    with pytest.raises(InputError, match="labels.json: not a results file"):
        load_results(path)


def test_an_incomplete_results_file_is_not_accepted_unless_taken_and_then_marked(tmp_path, capsys):
    full, partial = tmp_path / "full.json", tmp_path / "partial.json"
    full.write_text(json.dumps({**results(make_row("seedream-4.5", "public")), "complete": True}))
    cut = {**results(make_row("riverflow-2-b1", "public", complete=False), make_row("riverflow-2-b1", "private")),
           "complete": False, "coverage": {"reasons": [
               {"reason": "interrupted", "count": None, "detail": "interrupted (SIGTERM)"},
               {"reason": "without_record", "count": 250, "detail": "250 of 500 selected items ended without a record"}]}}
    partial.write_text(json.dumps(cut))
    assert main([str(full), str(partial)]) == 2
    err = capsys.readouterr().err
    assert f"{partial}: the results of an incomplete run (interrupted (SIGTERM); 250 of 500" in err
    assert "--allow-incomplete" in err and str(full) not in err
    merged = tmp_path / "merged.json"
    assert main([str(full), str(partial), "--allow-incomplete", "--json", str(merged)]) == 0
    out = capsys.readouterr().out
    assert "| riverflow-2-b1 (incomplete) | 84.8%" in out and "| riverflow-2-b1 (incomplete) | 80.6%" in out
    assert "| seedream-4.5 | 34.8%" in out
    rows = {(r["model"], r["split"]): r for r in load_results(merged)["rows"]}
    assert rows[("riverflow-2-b1", "public")]["incomplete"] is True
    assert rows[("riverflow-2-b1", "combined")]["incomplete"] is True
    assert "incomplete" not in rows[("seedream-4.5", "public")]
