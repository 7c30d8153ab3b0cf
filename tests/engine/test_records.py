"""A record survives its trip on a pytest report whole, and says what counts in the metrics."""

from __future__ import annotations

import json

import pytest

from pytest_hypeedit.engine.records import (
    ERROR,
    FAIL,
    OUTCOMES,
    PASS,
    PROPERTY_KEY,
    RECORD_SCHEMA,
    REFUSED,
    SKIPPED,
    MalformedRecord,
    Record,
    implausible_amounts,
    record_to_property,
    records_from_properties,
)


def full_record() -> Record:
    return Record(split="public", model="seedream-4.5", task_id="t-1", repeat=7, task_types=["remove", "change"],
                  outcome=FAIL, candidate="007.png", route="ark", provider_model="seedream-4-5-251128", seed=42,
                  request_id="req-1", latency_s=1.5, generated_at="2026-01-01T00:00:00+00:00",
                  resubmitted=1, verdict="FAIL", reasoning="the car is there",
                  judge="gemini-3-flash", votes=[{"judge": "a", "verdict": "FAIL"}], judge_cost=0.002,
                  judged_at="2026-01-01T00:00:01+00:00",
                  judgements={"gemini-3-flash": {"verdict": "FAIL", "judge": "gemini-3-flash", "reasoning": "the car is there",
                                                   "votes": [], "judged_at": "2026-01-01T00:00:01+00:00"}},
                  reused_candidate=True, extra={"size": "2K"},
                  calls=[{"entry": "g", "kind": "generation", "state": "billed", "price": 0.04, "tier": "standard",
                          "job": {"id": "j1", "polling_url": None}}])


def test_a_record_rides_on_user_properties_as_json_and_comes_back_equal():
    record = full_record()
    name, value = record_to_property(record)
    assert name == PROPERTY_KEY and isinstance(value, str)  # execnet copies only builtins: a JSON string
    properties = [("other", "x"), (name, value), ("hypeedit_other", "{}")]
    assert records_from_properties(properties) == [record]


def test_the_json_names_its_schema_and_every_field():
    data = json.loads(full_record().to_json())
    assert data["schema"] == RECORD_SCHEMA
    assert (data["split"], data["model"], data["task_id"], data["repeat"]) == ("public", "seedream-4.5", "t-1", 7)


def test_unknown_keys_from_a_newer_writer_are_ignored():
    data = {**full_record().to_dict(), "added_later": {"x": 1}}
    assert Record.from_dict(data) == full_record()


def test_the_key_is_split_model_task_repeat():
    assert full_record().key == ("public", "seedream-4.5", "t-1", 7)


@pytest.mark.parametrize("outcome, judged, passed", [
    (PASS, True, True), (FAIL, True, False), (REFUSED, True, False), (ERROR, False, False),
    (SKIPPED, False, False), (None, False, False),
])
def test_what_counts_in_the_metrics(outcome, judged, passed):
    record = Record("s", "m", "t", 1, outcome=outcome)
    assert (record.judged, record.passed) == (judged, passed)
    assert outcome is None or outcome in OUTCOMES


def test_spent_is_the_candidate_and_its_verdict():
    assert full_record().spent == pytest.approx(0.042)
    assert Record.from_dict({**vars(Record("s", "m", "t", 1)), "cost": None, "judge_cost": None}).spent == 0


def test_what_failed_judge_calls_cost_is_judge_spend_and_read_as_untrusted():
    base = {"split": "s", "model": "m", "task_id": "t", "repeat": 1}
    # a record of an earlier version: its judge_failed_cost is converted once into an entry of its call ledger
    record = Record.from_dict({**base, "cost": 0.04, "judge_cost": 0.002, "judge_failed_cost": 0.003})
    assert record.spent_breakdown["judge"] == pytest.approx(0.005) and record.spent == pytest.approx(0.045)
    assert [(c["kind"], c["price"]) for c in record.calls] == [("judge_call", 0.003), ("generation", 0.04)]
    again = Record.from_json(record.to_json())  # read back (a worker's report, the disk): converted once only
    assert again.calls == record.calls and again.spent == pytest.approx(0.045)
    with pytest.raises(MalformedRecord, match="'judge_failed_cost' must be a whole number or a number, not text"):
        Record.from_dict({**base, "judge_failed_cost": "0.5"})
    assert Record.from_dict({**base, "judge_failed_cost": None}).spent == 0  # a null amount counts 0
    for made_up in (-1, float("inf"), 1e308):
        doctored = Record.from_dict({**base, "judge_failed_cost": made_up})
        assert doctored.spent == 0 and implausible_amounts(doctored) == 1


def test_what_every_verdict_cost_is_judge_spend_and_read_as_untrusted():
    base = {"split": "s", "model": "m", "task_id": "t", "repeat": 1}
    # a record of an earlier version: its judge_verdicts_cost is converted once into entries of its call ledger
    record = Record.from_dict({**base, "cost": 0.04, "judge_cost": 0.002, "judge_verdicts_cost": 0.006})
    assert record.spent_breakdown["judge"] == pytest.approx(0.006) and record.spent == pytest.approx(0.046)
    again = Record.from_json(record.to_json())  # read back: converted once only, judge_cost not counted again
    assert again.calls == record.calls and again.spent == pytest.approx(0.046)
    # a record written before it was kept counts what it counted: its verdict and its re-judgements
    older = Record("s", "m", "t", 1, judge_cost=0.002, extra={"stability": {"cost": 0.004}})
    assert older.spent_breakdown["judge"] == pytest.approx(0.006)
    with pytest.raises(MalformedRecord, match="'judge_verdicts_cost' must be a whole number or a number, not text"):
        Record.from_dict({**base, "judge_verdicts_cost": "0.5"})
    assert Record.from_dict({**base, "judge_verdicts_cost": None, "judge_cost": 0.002}).spent == 0.002
    for made_up in (-1, float("inf"), 1e308):
        doctored = Record.from_dict({**base, "judge_verdicts_cost": made_up, "judge_cost": 0.002})
        assert doctored.spent == 0 and implausible_amounts(doctored) == 1
    assert Record.from_dict({**base, "extra": {"stability": {"cost": "lots"}}}).spent == 0


def test_what_each_run_bought_is_read_from_its_entries_as_untrusted():
    from pytest_hypeedit.engine.call_ledger import spent_in_run

    base = {"split": "s", "model": "m", "task_id": "t", "repeat": 1}
    entries = [{"kind": "generation", "state": "billed", "price": 0.04, "run": "run-a"},
               {"kind": "verdict", "state": "billed", "price": 0.003, "run": "run-b"},
               {"kind": "generation", "state": "not_sent", "price": 0.04, "run": "run-b"},  # never sent: nothing
               {"kind": "verdict", "state": "billed", "price": float("inf"), "run": "run-c"}]
    record = Record.from_dict({**base, "calls": entries})
    assert spent_in_run(record, "run-a") == 0.04 and spent_in_run(record, "run-b") == 0.003
    assert spent_in_run(record, "run-c") == spent_in_run(record, "run-d") == spent_in_run(record, None) == 0
    assert implausible_amounts(record) == 1
    # a record of an earlier version: its spent_by_run (what each earlier run's calls were settled with) is read no
    # more; its amounts are counted by the entries its money fields became, and no later run has their ids
    old = Record.from_dict({**base, "cost": 0.04, "spent_by_run": {"run-a": 0.04, "run-b": "lots"}})
    assert "spent_by_run" not in json.loads(old.to_json()) and old.spent == pytest.approx(0.04)
    assert spent_in_run(old, "run-a") == 0 and implausible_amounts(old) == 0
