"""Every call says what it cost and at which tier: records carry ``tier`` and ``judge_tier`` (a value on disk that
is no tier name is unknown, counted, never believed), results rows show spend by tier, the effective cost is at
the price the run paid and says so, with the list price's beside it; the terminal, the HTML "What ran" and the
leaderboard say which."""

from __future__ import annotations

import json

import pytest

from pytest_hypeedit.analysis.metrics import MetricSettings
from pytest_hypeedit.engine.call_ledger import BATCH_LINE, BILLED, GENERATION, new_entry
from pytest_hypeedit.engine.records import Record, verdict_tier
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.report.leaderboard import results_markdown
from pytest_hypeedit.report.results import build_results
from pytest_hypeedit.report.spend_tiers import spend_by_tier_text, tiers_text
from pytest_hypeedit.report.summary import run_facts_html
from pytest_hypeedit.report.terminal_table import summary_lines

SPEC = ModelSpec("gemini-3-pro", "gemini", "gemini-3-pro-image", 0.134, batch_price=0.067)


def record(task: str, repeat: int, *, passed: bool, tier: str = "standard", judge_tier: str = "standard",
           cost: float = 0.134, judge_cost: float = 0.002) -> Record:
    generation = new_entry(BATCH_LINE if tier == "batch" else GENERATION, BILLED, cost, tier=tier)  # its own
    return Record("public", SPEC.name, task, repeat, ["edit"], outcome="pass" if passed else "fail",
                  candidate=f"{repeat:03d}.png", calls=[generation], verdict="PASS" if passed else "FAIL",
                  judge="gemini-3-flash", judge_cost=judge_cost, judge_tier=judge_tier)


def row_of(records: list[Record]) -> dict:
    results = build_results(records, models=[SPEC], split_names=["public"], settings=MetricSettings(),
                            settings_json={"retry_cap": 4, "judge": "gemini-3-flash"})
    return results["rows"][0]


def mixed() -> list[Record]:
    return [record("a", 1, passed=True, tier="batch", cost=0.067, judge_tier="flex", judge_cost=0.001),
            record("a", 2, passed=False, tier="batch", cost=0.067, judge_tier="flex", judge_cost=0.001),
            record("b", 1, passed=False, judge_tier="flex", judge_cost=0.001),
            record("b", 2, passed=True)]


def test_a_row_shows_generation_and_judge_spend_by_the_tier_that_served_them():
    row = row_of(mixed())
    assert row["spend_by_tier"] == {"generation": {"batch": pytest.approx(0.134), "standard": pytest.approx(0.268)},
                                    "judge": {"flex": pytest.approx(0.003), "standard": pytest.approx(0.002)}}
    assert row["spent"] == pytest.approx(0.134 + 0.268 + 0.005)


def test_the_effective_cost_is_at_the_price_paid_and_at_list_price_beside_it():
    row = row_of(mixed())
    assert row["cost_per_candidate"] == 0.134
    assert row["cost_per_candidate_paid"] == pytest.approx((0.067 * 2 + 0.134 * 2) / 4)  # batch at 50% of list
    assert row["effective_cost_basis"] == "paid"
    attempts, pass_at_4, review = row["expected_attempts"], row["pass_at_4"], MetricSettings().review_cost
    assert row["effective_cost"] == pytest.approx(attempts * (row["cost_per_candidate_paid"] + review) / pass_at_4)
    assert row["effective_cost_list"] == pytest.approx(attempts * (0.134 + review) / pass_at_4)
    assert row["effective_cost"] < row["effective_cost_list"]


def test_a_run_at_standard_is_as_before():
    row = row_of([record("a", 1, passed=True), record("a", 2, passed=False)])
    assert row["cost_per_candidate_paid"] == row["cost_per_candidate"] == 0.134
    assert row["effective_cost"] == row["effective_cost_list"]
    assert row["spend_by_tier"] == {"generation": {"standard": 0.268}, "judge": {"standard": 0.004}}
    assert row["unknown_tiers"] == 0
    assert not any("tier" in line for line in summary_lines({"rows": [row], "complete": True, "settings": {}}))


@pytest.mark.parametrize("hostile", ["<script>alert(1)</script>", "FLEX", "free", 0.5, None, ["batch"], {"t": 1}])
def test_a_tier_from_disk_that_is_no_tier_name_is_unknown_counted_and_priced_at_list(hostile):
    data = json.loads(record("a", 1, passed=True).to_json())
    del data["calls"]  # a record of an earlier version: its generation in cost and tier
    data["cost"], data["tier"], data["judge_tier"] = 0.134, hostile, hostile
    loaded = Record.from_dict(data)  # a record on disk is untrusted: kept (its verdict was paid), the tier not
    assert loaded.tier == loaded.judge_tier == "unknown"
    row = row_of([loaded])
    assert row["unknown_tiers"] == 2
    assert row["spend_by_tier"] == {"generation": {"unknown": 0.134}, "judge": {"unknown": 0.002}}
    assert row["cost_per_candidate_paid"] == 0.134  # never less than the list price: not believed to be cheaper
    lines = summary_lines({"rows": [row], "complete": True, "settings": {}})
    assert any("2 tiers in records on disk not believed" in line for line in lines)


def test_a_verdict_entry_names_its_tier_only_when_it_is_one():
    assert verdict_tier({"extra": {"service_tier": "flex"}}) == "flex"
    assert verdict_tier({"extra": {}}) == "standard"  # a verdict given before tiers were recorded
    assert verdict_tier({"extra": {"service_tier": "cheap"}}) == "unknown"
    assert verdict_tier({"extra": "junk"}) == "standard"


def test_the_terminal_says_the_spend_by_tier_and_the_list_price_figure_within_100_columns():
    row = row_of(mixed())
    lines = summary_lines({"rows": [row], "complete": True, "settings": {"retry_cap": 4}})
    text = " ".join(" ".join(lines).split())
    assert "spend by tier: generation batch $0.13, standard $0.27; judge flex $0.00, standard $0.00" in text
    assert f"$/success at list price (to compare with runs at other tiers): gemini-3-pro (public) " \
           f"${row['effective_cost_list']:.2f}" in text
    assert "effective cost per success at the price paid" in text
    assert max(len(line) for line in lines) <= 100


def test_what_ran_names_the_tiers_actually_used():
    row = row_of(mixed())
    html = run_facts_html({"judge": "gemini-3-flash"}, None, [row])
    assert "<dt>Price tier</dt><dd>generation batch, standard; judge flex, standard</dd>" in html
    assert "<dt>Spend by tier</dt>" in html
    standard = row_of([record("a", 1, passed=True)])
    assert "<dt>Price tier</dt><dd>standard</dd>" in run_facts_html({}, None, [standard])
    assert tiers_text([], "batch") == "batch" and spend_by_tier_text([standard]) == ""


def test_the_leaderboard_compares_at_list_price_and_says_so():
    row = row_of(mixed())
    markdown = results_markdown({"rows": [row], "settings": {"retry_cap": 4}})
    assert f"${row['effective_cost_list']:.2f}" in markdown and f"${row['effective_cost']:.2f}" not in markdown
    assert "Effective cost per success is at each model's list price" in markdown
    plain = results_markdown({"rows": [row_of([record("a", 1, passed=True)])], "settings": {}})
    assert "list price" not in plain


def test_the_html_metrics_table_says_its_effective_cost_is_at_the_price_paid_escaped():
    from pytest_hypeedit.report.summary import metrics_table

    row = {**row_of(mixed()), "model": "<b>evil</b>"}
    html = metrics_table([row])
    assert "Effective cost is at the price paid (spend by tier: generation batch $0.13, standard $0.27" in html
    assert f"&lt;b&gt;evil&lt;/b&gt; (public) ${row['effective_cost_list']:.2f}" in html and "<b>evil" not in html
    assert "price paid" not in metrics_table([row_of([record("a", 1, passed=True)])])
