"""The paper's published table (report/published.yaml) and hypeedit-leaderboard --with-published."""

from __future__ import annotations

import json
from itertools import product

import pytest
import yaml

from pytest_hypeedit.analysis.metrics import format_metric
from pytest_hypeedit.errors import InputError
from pytest_hypeedit.registry import load_registry
from pytest_hypeedit.report.leaderboard import main
from pytest_hypeedit.report.published import DATA, METRICS, load_published
from pytest_hypeedit.report.tables import COLUMNS

PUBLISHED = load_published()
PAPER_MODELS = {"gemini-3-pro-preview", "seedream-4.5", "seedream-4.0", "gpt-image-1.5", "flux-2-max",
                "riverflow-2-b1", "qwen-image-edit-2511"}


def row(split: str, model: str) -> dict:
    [found] = [r for r in PUBLISHED.rows if r["split"] == split and r["model"] == model]
    return found


def cells(split: str, model: str) -> dict[str, str]:
    return {key: format_metric(row(split, model)[key], kind) for key, _, kind in COLUMNS}


# --------------------------------------------------------------------------- the data file


def test_the_source_is_the_pinned_upstream_results_file():
    assert PUBLISHED.source["commit"] == "268591e7f7e73435cecb1dc5308aa4c1da27d478"
    assert PUBLISHED.source["url"] == (f"{PUBLISHED.source['repository']}/blob/{PUBLISHED.source['commit']}/"
                                       f"{PUBLISHED.source['file']}")
    assert PUBLISHED.source["repository"] == "https://github.com/sourceful-official/hype-edit-1-benchmark"


def test_every_split_has_each_paper_model_once():
    assert PUBLISHED.splits == ["public", "private", "combined"]
    for split in PUBLISHED.splits:
        assert sorted(r["model"] for r in PUBLISHED.rows_of(split)) == sorted(PAPER_MODELS)
    assert PAPER_MODELS <= set(load_registry([]).models)  # the names our models.yaml runs


def test_figures_keep_the_published_precision():
    raw = yaml.safe_load(DATA.read_text())
    for entry, key in product(raw["rows"], METRICS):
        decimals = 1 if raw["units"][key] == "percent" else 2
        assert round(entry[key], decimals) == entry[key], (entry["model"], entry["split"], key)


def test_each_row_is_consistent_with_the_metric_definitions():
    for r in PUBLISHED.rows:
        where = (r["model"], r["split"])
        assert 0 <= r["pass_rate"] <= r["pass_at_4"] <= r["pass_at_10"] <= 1, where  # 1-(1-p)^4 >= p; k >= 1 if p > 0
        assert 1 <= r["expected_attempts"] <= 4, where
        # Pass@10 and the hype gap count tasks; the pass rate counts images (every task fully judged).
        for key, count in (("pass_at_10", r["tasks"]), ("hype_gap", r["tasks"]), ("pass_rate", r["candidates"])):
            assert r[key] * count == pytest.approx(round(r[key] * count), abs=1e-6), (where, key)


def test_effective_cost_follows_from_attempts_price_and_pass_at_4_within_rounding():
    registry, review = load_registry([]), PUBLISHED.settings["review_cost"]
    for r in PUBLISHED.rows:
        price = registry.get(r["model"]).price  # the paper's Table 3 prices
        # every published figure is rounded: the cost lies between the extremes its rounded inputs allow
        low = (r["expected_attempts"] - 0.005) * (price + review) / (r["pass_at_4"] + 0.0005)
        high = (r["expected_attempts"] + 0.005) * (price + review) / (r["pass_at_4"] - 0.0005)
        assert low - 0.005 <= r["effective_cost"] <= high + 0.005, (r["model"], r["split"], low, high)


def test_combined_rows_pool_the_two_splits_of_fifty_tasks_within_rounding():
    for model in PAPER_MODELS:
        public, private, combined = (row(split, model) for split in ("public", "private", "combined"))
        for key, tolerance in (("pass_rate", 0.001), ("pass_at_4", 0.001), ("pass_at_10", 0.001),
                               ("hype_gap", 0.001), ("expected_attempts", 0.01)):
            assert combined[key] == pytest.approx((public[key] + private[key]) / 2, abs=tolerance), (model, key)


def test_figures_checked_by_hand_against_the_upstream_table():
    # Read off RESULTS.md at commit 268591e by eye, one figure from each column and split.
    assert cells("public", "riverflow-2-b1")["pass_rate"] == "84.8%"
    assert cells("public", "seedream-4.5")["hype_gap"] == "46.0%"
    assert cells("private", "gpt-image-1.5")["effective_cost"] == "$1.52"
    assert cells("private", "seedream-4.5")["pass_at_10"] == "70.0%"
    assert cells("combined", "qwen-image-edit-2511")["expected_attempts"] == "2.48"
    assert cells("combined", "gemini-3-pro-preview")["pass_at_4"] == "79.9%"


def test_a_broken_data_file_names_the_file_and_the_row(tmp_path):
    broken = tmp_path / "published.yaml"
    broken.write_text(DATA.read_text().replace("pass_at_4: 65.3, pass_at_10: 84.0", "pass_at_4: n/a, pass_at_10: 84.0"))
    with pytest.raises(InputError, match=r"published.yaml: row 7 \(seedream-4.5, public\): pass_at_4 must be a number"):
        load_published(broken)


# --------------------------------------------------------------------------- hypeedit-leaderboard --with-published


def run_results(tmp_path, retry_cap: int = 4) -> str:
    own = {"model": "seedream-4.5", "split": "public", "tasks": 50, "candidates": 500, "judged": 500, "errors": 0,
           "pass_rate": 0.40, "pass_at_4": 0.70, "pass_at_10": 0.86, "expected_attempts": 2.40,
           "effective_cost": 1.10, "first_attempt_pass_rate": 0.44, "hype_gap": 0.42}
    path = tmp_path / "seedream.json"
    settings = {"repeats": 10, "retry_cap": retry_cap, "review_cost": 0.27778, "judge": "gemini-3-flash"}
    path.write_text(json.dumps({"schema": "hypeedit-results/1", "settings": settings, "rows": [own]}))
    return str(path)


def sections(text: str) -> dict[str, list[str]]:
    """Markdown section title -> its table rows."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("## "):
            title = line[3:].split(" (")[0]
            found[title] = []
        elif line.startswith("| ") and found and not line.startswith(("| Model", "| ---")):
            found[title].append(line)
    return found


def test_with_published_puts_the_papers_rows_beside_the_runs_own(tmp_path):
    out = tmp_path / "RESULTS.md"
    assert main([run_results(tmp_path), "--with-published", "-o", str(out), "--json", str(tmp_path / "m.json")]) == 0
    text = out.read_text()
    tables = sections(text)
    assert list(tables) == ["Public", "Private", "Combined"]
    public = tables["Public"]
    assert len(public) == 8
    # sorted by pass rate together: the run's 40.0% sits between the paper's 50.2% and 36.4%
    # the run's figures are its judge's, and say so beside the people's
    assert public[5] == "| seedream-4.5 (judge) | 40.0% | 70.0% | 86.0% | 2.40 | $1.10 | 42.0% |"
    assert public[4].startswith("| flux-2-max (published) | 50.2% |")
    assert public[6] == "| seedream-4.0 (published) | 36.4% | 62.0% | 78.0% | 2.56 | $1.27 | 34.0% |"
    assert all(line.split(" | ")[0].endswith("(published)") for line in tables["Private"] + tables["Combined"])
    assert len(tables["Combined"]) == 7
    assert "RESULTS.md of github.com/sourceful-official/hype-edit-1-benchmark at commit 268591e" in text
    assert "not comparable" not in text  # same retry cap and review cost as the paper
    merged = json.loads((tmp_path / "m.json").read_text())
    assert [r["model"] for r in merged["rows"]] == ["seedream-4.5"]  # the published rows stay out of the JSON


def test_without_the_flag_no_published_row_appears(tmp_path, capsys):
    assert main([run_results(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "(published)" not in text and list(sections(text)) == ["Public"]


def test_a_run_with_other_settings_is_told_its_costs_are_not_comparable(tmp_path, capsys):
    assert main([run_results(tmp_path, retry_cap=2), "--with-published"]) == 0
    assert "effective cost are not comparable with the published rows" in capsys.readouterr().out


def test_the_published_table_alone(capsys):
    assert main(["--with-published"]) == 0
    text = capsys.readouterr().out
    assert [len(rows) for rows in sections(text).values()] == [7, 7, 7]
    assert "| riverflow-2-b1 (published) | 82.7% | 90.5% | 93.0% | 1.40 | $0.66 | 6.0% |" in text
    assert "No candidate was judged" not in text


def test_no_results_and_no_flag_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 2
    assert "give one or more results JSON files" in capsys.readouterr().err


def test_a_calibrated_run_shows_its_calibrated_figures_beside_the_published_and_its_judge_s_marked(tmp_path):
    path = run_results(tmp_path)
    results = json.loads(open(path).read())
    calibrated = {"pass_rate": 0.52, "pass_at_4": 0.66, "pass_at_10": 0.80, "expected_attempts": 2.2,
                  "effective_cost": 1.2, "first_attempt_pass_rate": 0.5, "hype_gap": 0.30}
    results["rows"][0]["calibrated"] = {k: {"value": v, "low": v - 0.1, "high": v + 0.1} for k, v in calibrated.items()}
    open(path, "w").write(json.dumps(results))
    out, index = tmp_path / "RESULTS.md", tmp_path / "index.html"
    assert main([path, "--with-published", "-o", str(out), "--index", str(index)]) == 0
    public = sections(out.read_text())["Public"]
    assert "| seedream-4.5 (calibrated) | 52.0% | 66.0% | 80.0% | 2.20 | $1.20 | 30.0% |" in public
    assert "| seedream-4.5 (judge) | 40.0% | 70.0% | 86.0% | 2.40 | $1.10 | 42.0% |" in public
    assert public.index("| seedream-4.5 (calibrated) | 52.0% | 66.0% | 80.0% | 2.20 | $1.20 | 30.0% |") == 4
    page = index.read_text()
    assert "seedream-4.5 (calibrated)" in page and "seedream-4.5 (judge)" in page
    assert main([path, "-o", str(out)]) == 0  # without the published rows nothing needs marking
    assert "(judge)" not in out.read_text()
