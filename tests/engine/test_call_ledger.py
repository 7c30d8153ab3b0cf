"""The call ledger of a candidate (engine/call_ledger.py): its entries' states move only as the table says, every
figure of spend is derived from the entries, a record written by an earlier version (its money in ``cost``,
``judge_cost``, ``judge_verdicts_cost``, ``judge_failed_cost``, ``resubmitted_cost``, ``possibly_paid``,
``pending``, ``spent_by_run``) is read with nothing it recorded as paid forgotten, and a doctored ledger is
counted, never a crash and never a lost paid record."""

from __future__ import annotations

import itertools
import json

import pytest

from pytest_hypeedit.analysis.metrics import MetricSettings
from pytest_hypeedit.engine import call_ledger as ledger, journal as paid
from pytest_hypeedit.engine.call_ledger import Call
from pytest_hypeedit.engine.records import MalformedRecord, Record, implausible_amounts
from pytest_hypeedit.errors import LifecycleError
from pytest_hypeedit.registry import ModelSpec
from pytest_hypeedit.report.results import build_results

BASE = {"split": "s", "model": "m", "task_id": "t", "repeat": 1}
SPEC = ModelSpec("m", "openai", "gpt-image-2", 0.19, batch_price=0.095)


# --------------------------------------------------------------------------- the states


def test_every_move_the_table_allows_is_taken_and_every_other_is_not_accepted():
    allowed = {(state, to) for state, moves in ledger.MOVES.items() for to in moves}
    assert set(ledger.MOVES) == set(ledger.STATES)
    for state, to in itertools.product(ledger.STATES, repeat=2):
        if (state, to) in allowed:
            assert ledger.move(state, to, "c") == to
        else:
            with pytest.raises(LifecycleError, match=f"c: its paid call cannot move from {state} to {to}"):
                ledger.move(state, to, "c")


def test_a_gathering_line_never_becomes_possibly_paid_and_a_paid_call_never_leaves_the_ledger():
    # the two rules of the module docstring, as the table says them
    assert ledger.LOST not in ledger.MOVES[ledger.GATHERING]
    assert ledger.MOVES[ledger.GATHERING] == {ledger.SENT, ledger.NOT_SENT}
    for state in ledger.PAID_STATES | {ledger.LOST}:  # once counted, only ever to a state that is counted too
        assert ledger.MOVES[state] <= ledger.COUNTED


def test_the_invariant_of_an_entry_is_checked():
    ledger.check(Call(ledger.BATCH_LINE, ledger.BILLED, 0.095, ledger.BATCH))
    ledger.check(Call(ledger.GENERATION, ledger.LOST, 0.19, worst=True))
    for wrong in (Call("lunch", ledger.BILLED, 1.0), Call(ledger.VERDICT, "maybe", 1.0),
                  Call(ledger.VERDICT, ledger.BILLED, float("nan")), Call(ledger.VERDICT, ledger.BILLED, -1.0),
                  Call(ledger.GENERATION, ledger.BILLED, 0.19, worst=True)):  # a bill known is no worst case
        with pytest.raises(LifecycleError):
            ledger.check(wrong)


def test_a_gathering_entry_is_not_accepted_as_possibly_paid():
    """journal.abandon moves the pending entry to lost through the ledger: a batch line that was never sent cannot
    be made possibly paid (planted: the move removed from abandon, the gathering line became a $0.19 possibly paid
    call: caught)."""
    line = paid.sending(paid.GENERATE, route="openai", price=0.19, call_id="x", state=paid.GATHERING)
    record = Record(**BASE, calls=[line])
    with pytest.raises(LifecycleError, match="cannot move from gathering to lost"):
        paid.abandon(record, "its run ended")
    assert record.calls == [line] and record.spent == 0 and record.open_call == line
    sync = Record(**BASE, calls=[paid.sending(paid.GENERATE, route="openai", price=0.19, call_id="y")])
    paid.abandon(sync, "its run ended")
    assert sync.spent == pytest.approx(0.19)  # a journaled call may have left: possibly paid
    assert ledger.open_price({"price": 0.19, "state": paid.GATHERING}) == 0
    assert ledger.open_price({"price": 0.19, "state": "journaled"}) == pytest.approx(0.19)
    assert ledger.open_price({"price": 0.19, "state": "unbilled"}) == ledger.open_price({"price": 0.19}) == 0
    assert ledger.open_price({"price": "lots"}) == ledger.open_price([0.19]) == 0


# --------------------------------------------------------------------------- records of earlier versions


OLD = {  # a record as the version before the ledger wrote it: every money field it had
    **BASE, "schema": "hypeedit-record/1", "outcome": "pass", "candidate": "001.png", "route": "openai",
    "tier": "standard", "cost": 0.19, "request_id": "req_1",
    "judge": "gemini-3-flash", "verdict": "PASS", "judge_tier": "flex", "judge_cost": 0.002,
    "judge_verdicts_cost": 0.009,  # this verdict, one replaced by --rejudge (0.003), re-judgements (0.004)
    "judge_failed_cost": 0.0015, "resubmitted_cost": 0.38,  # two purchases that left no image
    "possibly_paid": [{"call": "generate", "route": "openai", "id": "c1", "sent_at": "2026-11-20T10:00:00+00:00",
                       "price": 0.19, "why": "read timeout", "found_at": "2026-11-20T10:10:00+00:00",
                       "rebought": True},
                      {"call": "judge", "route": "gemini-judge", "id": None, "price": 0.004, "rebought": False}],
    "pending": {"call": "judge", "route": "gemini-judge", "id": "c2", "sent_at": "2026-11-21T09:00:00+00:00",
                "price": 0.004},
    "spent_by_run": {"run-a": 0.574, "run-b": 0.0135},
    "extra": {"stability": {"judge": "gemini-3-flash", "candidate": "001.png", "original": "PASS",
                            "verdicts": ["PASS", "FAIL"], "cost": 0.004},
              "lost_candidates": [{"file": "001.png", "cost": 0.19, "judge_cost": 0.002}],
              "left_behind_jobs": [{"id": "j1", "kind": "batch", "cost": 0.19}]},
}


def test_a_record_of_the_earlier_version_counts_everything_it_recorded_as_paid_once():
    record = Record.from_json(json.dumps(OLD))
    calls = ledger.calls_of(record)
    recorded = 0.19 + 0.009 + 0.0015 + 0.38 + 0.19 + 0.004  # every amount the fields hold, each once
    assert record.spent == ledger.spent(calls) == pytest.approx(recorded)
    assert record.spent_breakdown == pytest.approx({"generation": 0.19, "judge": 0.0105, "resubmitted": 0.38,
                                                    "possibly_paid": 0.194})
    # resubmitted_cost itemized: the batch line left behind, the lost image; the generation possibly paid
    assert ledger.by_kind(calls) == pytest.approx({"generation": 0.19 + 0.19 + 0.19, "batch_line": 0.19,
                                                   "verdict": 0.005 + 0.004, "rejudgement": 0.004,
                                                   "judge_call": 0.0015})
    assert sum(ledger.by_kind(calls).values()) == pytest.approx(record.spent)
    tiers = ledger.by_tier(calls)
    assert tiers["generation"] == pytest.approx({"standard": 0.19})
    assert tiers["judge"] == pytest.approx({"flex": 0.0105})
    lost = ledger.possibly_paid(calls)
    assert [(c.kind, c.id, c.worst, c.rebought) for c in lost] == [("generation", "c1", True, True),
                                                                   ("verdict", None, True, False)]
    assert ledger.bought_again(calls) == 3  # the possibly paid generation, the batch line left behind, the lost image
    # spent_by_run is read no more (what each earlier run bought, counted by the entries above): no run of this
    # version has their ids
    assert ledger.spent_in_run(record, "run-a") == ledger.spent_in_run(record, "run-b") == 0
    # the pending judge call is the open call of the run that sent it, not in spent until found abandoned
    assert record.open_call["entry"] == "call.c2" and record.open_call["state"] == "journaled"
    assert ledger.open_price(record.open_call) == pytest.approx(0.004)
    paid.abandon(record, paid.RUN_ENDED)
    assert record.spent == pytest.approx(recorded + 0.004)
    assert implausible_amounts(record) == 0
    for entry in calls:
        ledger.check(entry)


def test_a_record_written_before_the_verdicts_cost_was_kept_counts_its_verdict_and_re_judgements():
    older = {key: value for key, value in OLD.items() if key != "judge_verdicts_cost"}
    record = Record.from_json(json.dumps(older))
    calls = ledger.calls_of(record)
    assert ledger.by_kind(calls)["verdict"] == pytest.approx(0.002 + 0.004)  # the verdict, the lost judge call
    assert ledger.by_kind(calls)["rejudgement"] == pytest.approx(0.004)
    assert record.spent_breakdown["judge"] == pytest.approx(0.002 + 0.004 + 0.0015)


def test_what_resubmitted_cost_sums_is_itemized_and_never_more_than_it_says():
    """Planted: the items not capped by resubmitted_cost, a doctored left_behind_jobs entry of $5 made spent $5.38
    (caught); the items dropped, the batch line left behind was filed as a generation (caught)."""
    extra = {"left_behind_jobs": [{"id": "j1", "kind": "batch", "route": "openai", "cost": 0.095}],
             "lost_candidates": [{"file": "001.png", "cost": 0.19}]}
    record = Record.from_dict({**BASE, "resubmitted_cost": 0.38, "extra": extra})
    calls = ledger.calls_of(record)
    assert ledger.by_kind(calls) == pytest.approx({"batch_line": 0.095, "generation": 0.19 + 0.095})
    assert [(c.kind, c.tier, c.id) for c in calls if c.state == ledger.LEFT_BEHIND] == [
        ("batch_line", "batch", "j1"), ("generation", "unknown", None), ("generation", "unknown", None)]
    assert record.spent == pytest.approx(0.38) and ledger.bought_again(calls) == 3
    doctored = Record.from_dict({**BASE, "resubmitted_cost": 0.38, "extra": {
        "left_behind_jobs": [{"kind": "batch", "cost": 5.0}, "junk", {"cost": "lots"}], "lost_candidates": 7}})
    assert doctored.spent == pytest.approx(0.38)
    assert ledger.by_kind(ledger.calls_of(doctored)) == pytest.approx({"batch_line": 0.38})


def test_an_earlier_resubmitted_cost_is_converted_once_whoever_reads_writes_or_merges_it():
    """Planted: the conversion made on every read (its check of the fixed ids removed): the record read back counted
    $0.76 for $0.38 (caught)."""
    from pytest_hypeedit.engine.record_spend import add_left_behind

    extra = {"left_behind_jobs": [{"id": "j1", "kind": "batch", "route": "openai", "cost": 0.095}],
             "lost_candidates": [{"file": "001.png", "cost": 0.19}]}
    old = {**BASE, "resubmitted_cost": 0.38, "extra": extra}
    record = Record.from_dict(old)
    assert "resubmitted_cost" not in json.loads(record.to_json())  # the field is gone: its entries hold it
    assert [(c["entry"], c["kind"], c["price"]) for c in record.calls] == [
        ("resubmitted_cost.1", "batch_line", 0.095), ("resubmitted_cost.2", "generation", 0.19),
        ("resubmitted_cost", "generation", 0.095)]
    again = Record.from_json(record.to_json())  # read, written, read again
    assert again.calls == record.calls and again.spent == pytest.approx(0.38)
    # a second writer read the same old record, and left a job behind of its own since: merged, each once
    theirs = Record.from_dict(old)
    add_left_behind(theirs, 0.19, tier="standard", route="openai", id="j2", run="run-b")
    both = Record(**BASE, calls=ledger.merged(theirs.calls, again.calls))
    assert both.spent == pytest.approx(0.38 + 0.19) and ledger.bought_again(ledger.calls_of(both)) == 4
    assert Record.from_json(both.to_json()).spent == pytest.approx(0.57)
    # an old record mixing its field with entries already converted (a later version wrote it back): once
    assert Record.from_dict({**old, "calls": record.calls}).spent == pytest.approx(0.38)
    odd = Record.from_dict({**BASE, "resubmitted_cost": -3})  # not believable: counted 0, and said
    assert odd.spent == 0 and implausible_amounts(odd) == 1
    with pytest.raises(MalformedRecord, match="'resubmitted_cost' must be a whole number or a number, not text"):
        Record.from_dict({**BASE, "resubmitted_cost": "0.38"})


def test_a_purchase_that_left_no_image_is_written_as_a_left_behind_entry():
    from pytest_hypeedit.engine.record_spend import add_left_behind

    record = Record(**BASE)
    assert add_left_behind(record, 0.095, tier="batch", route="openai", id="batch_1", run="run-a") == 0.095
    assert add_left_behind(record, 0.19, tier="standard") == 0.19
    assert add_left_behind(record, "lots", tier="batch") == 0 and add_left_behind(record, 0, tier="batch") == 0
    assert [(c["kind"], c["state"], c["tier"], c.get("id")) for c in record.calls] == [
        ("batch_line", "left_behind", "batch", "batch_1"), ("generation", "left_behind", "standard", None)]
    calls = ledger.calls_of(record)
    assert record.spent_breakdown["resubmitted"] == pytest.approx(0.285) and ledger.bought_again(calls) == 2
    assert ledger.by_tier(calls)["generation"] == {"standard": 0}  # left behind: resubmitted, not the image's


def test_earlier_verdicts_costs_are_converted_once_and_new_verdicts_are_entries():
    """Planted: the conversion made on every read (its check of the fixed id removed): a record holding the field
    beside its entries counted $0.018 for $0.009 (caught); keep_verdicts_cost with an id of its own each time: two processes that both gave a
    verdict to an older record counted its first verdict twice (caught)."""
    from pytest_hypeedit.engine.record_spend import add_verdict_cost

    old = {**BASE, "judge_cost": 0.002, "judge_tier": "flex", "judge_verdicts_cost": 0.009,
           "extra": {"stability": {"cost": 0.004}}}
    record = Record.from_dict(old)
    assert "judge_verdicts_cost" not in json.loads(record.to_json())  # the field is gone: its entries hold it
    assert [(c["kind"], c["price"], c["tier"]) for c in record.calls] == [("verdict", 0.005, "flex"),
                                                                           ("rejudgement", 0.004, "flex")]
    again = Record.from_json(record.to_json())  # read, written, read again: judge_cost is not counted beside them
    assert again.calls == record.calls and again.spent == pytest.approx(0.009)
    # the field beside the entries it was converted into (a later version's entries kept by an earlier one): once
    assert Record.from_dict({**old, "calls": record.calls}).spent == pytest.approx(0.009)
    theirs = Record.from_dict(old)  # a second writer read the same record and gave a new verdict
    assert add_verdict_cost(theirs, 0.003, "run-b") == 0.003
    merged = Record.from_json(Record(**BASE, calls=ledger.merged(theirs.calls, again.calls)).to_json())
    assert merged.spent == pytest.approx(0.012) and ledger.by_kind(ledger.calls_of(merged)) == pytest.approx(
        {"verdict": 0.008, "rejudgement": 0.004})
    # older still (no judge_verdicts_cost): judge_cost and the re-judgements count until a verdict is written; then
    # they are kept as entries (ids fixed: two processes keeping them count them once) and judge_cost no longer
    older = Record.from_dict({**BASE, "judge_cost": 0.002, "extra": {"stability": {"cost": 0.004}}})
    assert older.calls == [] and older.spent == pytest.approx(0.006)
    one, two = Record.from_json(older.to_json()), Record.from_json(older.to_json())
    add_verdict_cost(one, 0.003, "run-a")
    add_verdict_cost(two, 0.001, "run-b", kind=ledger.REJUDGEMENT)
    one.judge_cost = 0.003  # the verdict it holds now
    both = Record.from_json(Record(**BASE, judge_cost=0.003, calls=ledger.merged(one.calls, two.calls)).to_json())
    assert both.spent == pytest.approx(0.006 + 0.003 + 0.001)
    assert ledger.by_kind(ledger.calls_of(both)) == pytest.approx({"verdict": 0.005, "rejudgement": 0.005})
    with pytest.raises(MalformedRecord, match="'judge_verdicts_cost' must be a whole number or a number, not text"):
        Record.from_dict({**BASE, "judge_verdicts_cost": "0.5"})


def test_a_batch_line_is_filed_as_one_at_its_tier():
    record = Record.from_dict({**BASE, "outcome": "pass", "candidate": "001.png", "tier": "batch", "cost": 0.095})
    calls = ledger.calls_of(record)
    assert ledger.by_kind(calls) == {"batch_line": 0.095}
    assert ledger.by_tier(calls)["generation"] == {"batch": 0.095}


def test_results_derive_every_spend_figure_from_the_ledgers():
    records = [Record.from_json(json.dumps(OLD)),
               Record.from_dict({**BASE, "repeat": 2, "outcome": "pass", "candidate": "002.png", "tier": "batch",
                                 "cost": 0.095}),
               Record(**{**BASE, "repeat": 3}, calls=[ledger.new_entry(ledger.BATCH_LINE, ledger.BILLED, 0.095,
                                                                       tier=ledger.BATCH, run="run-a")])]
    row = build_results(records, models=[SPEC], split_names=["s"], settings=MetricSettings(),
                        settings_json={"retry_cap": 4}, run_id="run-a")["rows"][0]
    calls = [call for record in records for call in ledger.calls_of(record)]
    assert row["spent"] == pytest.approx(ledger.spent(calls))
    assert row["spend_by_kind"] == pytest.approx({kind: value for kind, value in ledger.by_kind(calls).items()})
    assert sum(row["spend_by_kind"].values()) == pytest.approx(row["spent"])
    assert sum(row["spent_breakdown"].values()) == pytest.approx(row["spent"])
    assert (row["possibly_paid"], row["possibly_paid_cost"]) == (1, pytest.approx(0.194))
    assert row["spent_this_run"] == pytest.approx(0.095)  # run-a's entry; OLD's spent_by_run is read no more


# --------------------------------------------------------------------------- untrusted ledgers


def test_a_doctored_ledger_is_counted_never_a_crash_never_a_lost_paid_record():
    with pytest.raises(MalformedRecord, match="every item of 'possibly_paid' must be an object, not a number"):
        Record.from_dict({**BASE, "possibly_paid": [0.19]})
    with pytest.raises(MalformedRecord, match="'possibly_paid' must be a list, not an object"):
        Record.from_dict({**BASE, "possibly_paid": {"price": 0.19}})
    odd = Record.from_dict({**BASE, "cost": 0.19, "possibly_paid": [
        {"price": "lots"}, {"price": float("inf")}, {"price": 0.19, "call": ["judge"], "id": 7, "rebought": "yes"}]})
    assert odd.spent == pytest.approx(0.38)  # the paid generation and the believable lost call, kept
    assert implausible_amounts(odd) == 2
    assert [c.kind for c in ledger.possibly_paid(ledger.calls_of(odd))] == ["generation"] * 3
    assert ledger.bought_again(ledger.calls_of(odd)) == 0  # "yes" is no true


def test_the_ledger_read_from_a_record_is_bounded():
    many = [{"call": "generate", "price": 0.01, "rebought": True}] * (ledger.MAX_CALLS + 500)
    record = Record.from_dict({**BASE, "possibly_paid": many})
    assert len(ledger.possibly_paid(ledger.calls_of(record))) == ledger.MAX_CALLS
    assert record.spent == pytest.approx(0.01 * ledger.MAX_CALLS)
    assert implausible_amounts(record) == 500  # said, not silently dropped


# --------------------------------------------------------------------------- entries written as entries


def test_a_judge_call_paid_without_a_verdict_is_an_entry_of_the_ledger_and_merges_append_only():
    from pytest_hypeedit.engine.record_spend import add_failed_judge_cost

    record = Record(**BASE, judge_tier="flex")
    assert add_failed_judge_cost(record, 0.003, "run-a") == 0.003
    assert add_failed_judge_cost(record, "lots") == 0 and add_failed_judge_cost(record, 0) == 0  # nothing added
    [entry] = record.calls
    assert (entry["kind"], entry["state"], entry["price"], entry["tier"], entry["run"]) == (
        "judge_call", "answered", 0.003, "flex", "run-a")
    theirs = Record(**BASE)  # another process's record of the candidate, with a failed call of its own
    add_failed_judge_cost(theirs, 0.002)
    both = ledger.merged(theirs.calls, record.calls)
    assert ledger.merged(both, record.calls) == both  # an entry is kept once, whoever merges
    assert Record(**BASE, calls=both).spent == pytest.approx(0.005)  # each process's call counted, none lost
    back = Record.from_json(Record(**BASE, calls=both).to_json())
    assert back.calls == both


def test_a_doctored_entry_is_named_or_counted_never_a_crash():
    for wrong, said in (([0.19], "every item of 'calls' must be an object"), ([{"price": "0.19"}], "calls\\[0\\]: price"),
                        ([{}, {"kind": 7}], "calls\\[1\\]: kind must be text"),
                        ([{"worst": "yes"}], "calls\\[0\\]: worst must be true or false")):
        with pytest.raises(MalformedRecord, match=said):
            Record.from_dict({**BASE, "calls": wrong})
    odd = Record.from_dict({**BASE, "calls": [{"kind": "lunch", "state": "billed", "price": 0.5},
                                              {"kind": "verdict", "state": "maybe", "price": 0.25},
                                              {"kind": "verdict", "state": "billed", "price": float("inf")}]})
    assert odd.spent == pytest.approx(0.75)  # a kind or state that is none still counts its price
    assert ledger.by_kind(ledger.calls_of(odd)) == pytest.approx({"unknown": 0.5, "verdict": 0.25})
    assert odd.spent_breakdown["possibly_paid"] == pytest.approx(0.25)  # an unknown state: possibly paid
    assert implausible_amounts(odd) == 3  # the unknown kind, the unknown state, the made-up amount


def test_the_entries_read_are_bounded():
    many = [{"kind": "judge_call", "state": "answered", "price": 0.001}] * (ledger.MAX_CALLS + 10)
    record = Record.from_dict({**BASE, "calls": many})
    assert record.spent == pytest.approx(0.001 * ledger.MAX_CALLS) and implausible_amounts(record) == 10


# --------------------------------------------------------------------------- the candidate's own generation


def test_an_earlier_generation_cost_and_tier_are_converted_once_whoever_reads_writes_or_merges_them():
    """Planted: the conversion made on every read (its check of the fixed id removed): the record read back counted
    its $0.095 batch line twice (caught); the conversion skipped: the generation counted $0 (caught)."""
    from pytest_hypeedit.engine.record_spend import add_verdict_cost

    old = {**BASE, "outcome": "pass", "candidate": "001.png", "route": "openai", "request_id": "req_1",
           "cost": 0.095, "tier": "batch"}
    record = Record.from_dict(old)
    data = json.loads(record.to_json())
    assert "cost" not in data and "tier" not in data  # the fields are gone: their entry holds them
    assert [(c["entry"], c["kind"], c["state"], c["price"], c["tier"], c["route"], c["id"]) for c in record.calls] == [
        ("generation-v1", "batch_line", "billed", 0.095, "batch", "openai", "req_1")]
    assert (record.cost, record.tier, record.spent) == (pytest.approx(0.095), "batch", pytest.approx(0.095))
    again = Record.from_json(record.to_json())  # read, written, read again
    assert again.calls == record.calls and again.spent == pytest.approx(0.095) and again.tier == "batch"
    # the field beside the entry it was converted into (a later version's entry kept by an earlier one): once
    assert Record.from_dict({**old, "calls": record.calls}).spent == pytest.approx(0.095)
    theirs = Record.from_dict(old)  # a second writer read the same old record and gave it a verdict
    add_verdict_cost(theirs, 0.003, "run-b")
    both = Record.from_json(Record(**BASE, calls=ledger.merged(theirs.calls, again.calls)).to_json())
    assert both.spent == pytest.approx(0.098) and both.cost == pytest.approx(0.095)
    assert ledger.by_tier(ledger.calls_of(both))["generation"] == pytest.approx({"batch": 0.095})
    # an old record's tier that is no tier is counted unknown; an amount not believable, 0 and said; a wrong type
    odd = Record.from_dict({**BASE, "cost": -1, "tier": 7})
    assert (odd.cost, odd.tier, implausible_amounts(odd)) == (0, ledger.UNKNOWN_TIER, 1)
    assert Record.from_dict({**BASE, "cost": None}).spent == 0
    with pytest.raises(MalformedRecord, match="'cost' must be a whole number or a number, not text"):
        Record.from_dict({**BASE, "cost": "0.19"})


def test_a_purchase_is_one_entry_updated_while_it_goes_on_then_left_behind_and_the_next_is_its_own():
    """The journaled job, its image, its loss and the purchase that replaces it: one entry each purchase, nothing
    counted twice (planted: set_generation appending a new entry each time: the job and its image counted $0.19
    for $0.095, caught; merged keeping the disk's copy of an entry whatever its state: the lost image's entry,
    merged from a stale copy, was billed again, caught)."""
    from pytest_hypeedit.engine.record_spend import leave_generation_behind, set_generation

    record = Record(**BASE)
    set_generation(record, 0.095, tier="batch", route="openai", id="batch_1", run="run-a", always=False)  # the job
    set_generation(record, 0.095, tier="batch", route="openai", id="req_1")  # its image: the same purchase
    assert [(c["kind"], c["state"], c["price"], c["run"], c["id"]) for c in record.calls] == [
        ("batch_line", "billed", 0.095, "run-a", "req_1")]
    assert (record.cost, record.tier, record.spent) == (pytest.approx(0.095), "batch", pytest.approx(0.095))
    read = Record.from_json(record.to_json())  # another process reads it, then finds its image lost
    leave_generation_behind(read, read.cost, tier=read.tier, run="run-b")
    set_generation(read, 0.19, tier="standard", route="openai", run="run-b")  # bought again, at standard
    assert [(c["kind"], c["state"], c["price"]) for c in read.calls] == [
        ("batch_line", "left_behind", 0.095), ("generation", "billed", 0.19)]
    assert (read.cost, read.tier, read.spent) == (pytest.approx(0.19), "standard", pytest.approx(0.285))
    assert ledger.bought_again(ledger.calls_of(read)) == 1
    # merged either way round, the entry left behind stays left behind (a copy never moves an entry back)
    for merged in (ledger.merged(record.calls, read.calls), ledger.merged(read.calls, record.calls)):
        assert Record(**BASE, calls=merged).spent == pytest.approx(0.285)
        assert Record(**BASE, calls=merged).cost == pytest.approx(0.19)
    # a job forgotten (the provider says it failed, unbilled) is set to $0; none is added for a job never counted
    job = Record(**BASE)
    assert set_generation(job, 0.0, tier="standard", always=False) == 0 and job.calls == []
    set_generation(job, 0.04, tier="standard", always=False)
    set_generation(job, 0.0, tier="standard", always=False)
    assert job.spent == 0 and len(job.calls) == 1
    assert leave_generation_behind(job, 0, tier="standard") == 0 and job.calls[0]["state"] == "billed"


# --------------------------------------------------------------------------- what each run bought


def test_what_a_run_bought_is_its_entries_whoever_merges_and_a_lost_call_is_the_run_s_that_sent_it():
    """spent_this_run is derived from the entries' run: a second writer's entries stay theirs after a merge, a job
    resumed stays the run's that submitted it, and a call whose reply was lost is the sending run's (its pending
    entry names the run).  Planted: _lost without the entry's run (a lost call counted for no run: caught);
    spent_in_run counting every run's entries ($0.289 for run-a: caught)."""
    from pytest_hypeedit.engine.record_spend import add_verdict_cost, set_generation

    ours = Record(**BASE)
    set_generation(ours, 0.095, tier="batch", run="run-a", always=False)  # run-a's job, journaled
    theirs = Record.from_json(ours.to_json())
    set_generation(theirs, 0.095, tier="batch")  # run-b resumed it: its image, the same purchase, still run-a's
    add_verdict_cost(theirs, 0.004, "run-b")
    theirs.calls = [*theirs.calls, paid.sending(paid.JUDGE, route="gemini-judge", price=0.19, call_id="c1", run="run-b")]
    paid.abandon(theirs, "read timeout")  # its reply lost: possibly paid, by run-b
    both = Record(**BASE, calls=ledger.merged(theirs.calls, ours.calls))
    for record in (both, Record.from_json(both.to_json())):
        assert ledger.spent_in_run(record, "run-a") == pytest.approx(0.095)
        assert ledger.spent_in_run(record, "run-b") == pytest.approx(0.004 + 0.19)
        assert record.spent == pytest.approx(0.289)


# --------------------------------------------------------------------------- calls lost without their reply


def test_a_call_abandoned_is_a_lost_entry_of_the_ledger_at_its_worst_case():
    record = Record(**BASE)
    record.calls = [paid.sending(paid.JUDGE, route="gemini-judge", price=0.04, call_id="c9", run="run-a",
                                 judge="gemini-3-flash")]
    entry = paid.abandon(record, "read timeout")
    assert record.open_call is None and record.calls == [entry]
    assert {key: entry[key] for key in ("entry", "kind", "state", "price", "worst", "route", "id", "run", "why")} == {
        "entry": "call.c9", "kind": "verdict", "state": "lost", "price": 0.04, "worst": True,
        "route": "gemini-judge", "id": "c9", "run": "run-a", "why": "read timeout"}
    assert record.spent_breakdown["possibly_paid"] == pytest.approx(0.04)
    assert ledger.spent_in_run(record, "run-a") == pytest.approx(0.04)
    assert paid.unresolved(record, paid.JUDGE) == [entry] and paid.unresolved(record, paid.GENERATE) == []
    assert "1 paid judge call(s) for it may have been paid (up to $0.04)" in paid.held_message(record, paid.JUDGE)
    # a lost judge call gave no verdict: an older record still counts its judge_cost until one is written
    older = Record(**BASE, judge_cost=0.002, calls=[entry])
    assert older.spent == pytest.approx(0.042)
    shared = list(record.calls)
    assert paid.mark_rebought(record, paid.JUDGE) == 1 and paid.mark_rebought(record, paid.JUDGE) == 0
    assert shared[0].get("rebought") is None  # a new copy in its place: the entry read is not changed under a reader
    assert ledger.bought_again(ledger.calls_of(record)) == 1 and record.spent == pytest.approx(0.04)
    back = Record.from_json(record.to_json())
    assert back.calls == record.calls and back.possibly_paid_calls == record.calls


def test_a_lost_call_bought_again_stays_rebought_whoever_merges():
    """The merge's tie-break: of two copies of one lost entry, the one that says it was bought again is the later
    (planted: ``later`` keeping ours at equal states: run-b's stale copy merged last made the lost call open again,
    bought_again 0 and the results' possibly_paid_open 1: caught)."""
    killed = Record(**BASE, calls=[paid.sending(paid.GENERATE, route="openai", price=0.19, call_id="c1", run="run-a")])
    paid.abandon(killed, paid.RUN_ENDED)
    stale = Record.from_json(killed.to_json())  # another process read it before it was bought again
    bought = Record.from_json(killed.to_json())
    paid.mark_rebought(bought, paid.GENERATE)  # this process journals the purchase that buys it again
    for disk, ours in ((bought, stale), (stale, bought)):
        both = Record.from_json(Record(**BASE, calls=ledger.merged(disk.calls, ours.calls)).to_json())
        assert len(both.calls) == 1 and both.calls[0]["rebought"] is True
        assert ledger.bought_again(ledger.calls_of(both)) == 1 and both.spent == pytest.approx(0.19)
        assert paid.unresolved(both, paid.GENERATE) == []
        row = build_results([both], models=[SPEC], split_names=["s"], settings=MetricSettings(),
                            settings_json={"retry_cap": 4})["rows"][0]
        assert (row["possibly_paid"], row["possibly_paid_open"], row["possibly_paid_cost"]) == (1, 0, 0.19)
    # two processes that abandoned the same journaled call (its id fixed by the call's): one lost entry
    one, two = Record.from_json(killed.to_json()), Record.from_json(killed.to_json())
    for record in (one, two):
        record.calls = [paid.sending(paid.GENERATE, route="openai", price=0.19, call_id="c1")]
        paid.abandon(record, paid.RUN_ENDED)
    assert Record(**BASE, calls=ledger.merged(one.calls, two.calls)).spent == pytest.approx(0.19)


def test_an_earlier_possibly_paid_is_converted_once_whoever_reads_writes_or_merges_it():
    """Planted: the conversion made on every read (its check of the fixed ids removed): the record read back counted
    its lost calls twice, $0.388 for $0.194 (caught); the conversion skipped: the lost calls were forgotten, $0
    (caught)."""
    old = {key: OLD[key] for key in (*BASE, "possibly_paid")}
    record = Record.from_dict(old)
    assert "possibly_paid" not in json.loads(record.to_json())  # the field is gone: its entries hold it
    assert [(c["entry"], c["kind"], c["state"], c["price"], c.get("id"), c.get("rebought")) for c in record.calls] == [
        ("possibly_paid.1", "generation", "lost", 0.19, "c1", True),
        ("possibly_paid.2", "verdict", "lost", 0.004, None, None)]
    assert record.calls[0]["why"] == "read timeout" and record.calls[0]["found_at"] == "2026-11-20T10:10:00+00:00"
    assert record.spent == pytest.approx(0.194) and record.spent_breakdown["possibly_paid"] == pytest.approx(0.194)
    again = Record.from_json(record.to_json())  # read, written, read again
    assert again.calls == record.calls and again.spent == pytest.approx(0.194)
    # the field beside the entries it was converted into (a later version's entries kept by an earlier one): once
    assert Record.from_dict({**old, "calls": record.calls}).spent == pytest.approx(0.194)
    # two writers read the same old record; one bought the lost verdict again: merged either way, each call once,
    # and the one bought again stays so
    theirs, ours = Record.from_dict(old), Record.from_dict(old)
    assert paid.unresolved(theirs, paid.JUDGE) == [theirs.calls[1]]
    paid.mark_rebought(theirs, paid.JUDGE)
    for merged in (ledger.merged(theirs.calls, ours.calls), ledger.merged(ours.calls, theirs.calls)):
        both = Record.from_json(Record(**BASE, calls=merged).to_json())
        assert both.spent == pytest.approx(0.194) and ledger.bought_again(ledger.calls_of(both)) == 2
        assert paid.unresolved(both, paid.JUDGE) == paid.unresolved(both, paid.GENERATE) == []
    # a doctored entry: fields of the wrong type left out, a price that is no number counted 0 and said
    odd = Record.from_json(Record.from_dict({**BASE, "possibly_paid": [
        {"price": "lots", "call": ["judge"], "id": 7, "rebought": "yes", "tier": 3}, {"price": True}]}).to_json())
    assert odd.spent == 0 and implausible_amounts(odd) == 2 and ledger.bought_again(ledger.calls_of(odd)) == 0
    assert [(c["kind"], c["tier"], "id" in c) for c in odd.calls] == [("generation", "unknown", False),
                                                                      ("generation", "standard", False)]


# --------------------------------------------------------------------------- the open call and the job


EARLIER_OPEN = {  # a record as the version before this one wrote it: its job, and a judge call in flight
    **BASE, "candidate": "001.png", "route": "bfl",
    "calls": [{"entry": "g1", "kind": "generation", "state": "billed", "price": 0.07, "tier": "standard",
               "route": "bfl", "id": "job-1", "run": "run-a"}],
    "job": {"id": "job-1", "polling_url": "https://api.bfl.ai/v1/get_result?id=job-1", "route": "bfl",
            "cost": 0.07, "submitted_at": "2026-11-21T08:00:00+00:00", "finished_at": "2026-11-21T08:01:00+00:00"},
    "pending": {"call": "judge", "route": "gemini-judge", "id": "c2", "sent_at": "2026-11-21T09:00:00+00:00",
                "price": 0.004, "run": "run-a", "judge": "gemini-3-flash"},
}


def test_an_earlier_pending_and_job_are_converted_once_whoever_reads_writes_or_merges_them():
    """A record of the version before this one: its ``job`` goes into its generation's entry, its ``pending`` becomes
    the open entry "call.c2" (not in spent: the run that sent it ended, the next one abandons it), once however
    often it is read, written or merged.  Planted: the conversion skipped (the job forgotten, the candidate bought
    again: caught); the open entry's id random (two processes abandoning the one call counted it twice: caught)."""
    record = Record.from_dict(EARLIER_OPEN)
    written = json.loads(record.to_json())
    assert "pending" not in written and "job" not in written  # the fields are gone: the ledger holds them
    assert record.job == EARLIER_OPEN["job"] and written["calls"][0]["job"] == EARLIER_OPEN["job"]
    opened = record.open_call
    assert opened is not None and {key: opened.get(key) for key in ("entry", "kind", "state", "price", "worst",
                                                                     "id", "run", "judge")} == {
        "entry": "call.c2", "kind": "verdict", "state": "journaled", "price": 0.004, "worst": True, "id": "c2",
        "run": "run-a", "judge": "gemini-3-flash"}
    assert record.spent == pytest.approx(0.07) and paid.pending_call(record) == paid.JUDGE
    back = Record.from_json(record.to_json())
    assert back.calls == record.calls and back.job == record.job  # read, written, read again: converted once
    again = Record.from_dict({**json.loads(record.to_json()), "pending": EARLIER_OPEN["pending"]})
    assert again.calls == record.calls  # its entry is there already: an earlier writer beside this one
    other = Record.from_dict(EARLIER_OPEN)  # a second process converted it too
    both = Record(**BASE, calls=ledger.merged(back.calls, other.calls))
    assert both.calls == record.calls and both.spent == pytest.approx(0.07)
    for one in (back, other):  # each found the judge call abandoned: possibly paid, once
        paid.abandon(one, paid.RUN_ENDED)
    both = Record.from_json(Record(**BASE, calls=ledger.merged(back.calls, other.calls)).to_json())
    assert both.open_call is None and both.spent == pytest.approx(0.074)
    assert [entry["entry"] for entry in both.possibly_paid_calls] == ["call.c2"]
    # the disk's copy abandoned, ours still open: the further state wins, whoever merges
    stale = Record.from_dict(EARLIER_OPEN)
    for disk, ours in ((back, stale), (stale, back)):
        merged = Record(**BASE, calls=ledger.merged(disk.calls, ours.calls))
        assert merged.open_call is None and merged.spent == pytest.approx(0.074)


def test_an_earlier_gathering_line_costs_nothing_and_is_never_possibly_paid():
    """A batch line still gathering in a record of the version before this one: an open entry that costs nothing,
    never moved to lost (planted: abandon without the ledger's move: the line became a $0.095 possibly paid call:
    caught)."""
    gathering = Record.from_dict({**BASE, "pending": {"call": "generate", "route": "openai", "id": "g1",
                                                      "price": 0.095, "state": "gathering", "run": "run-a"}})
    line = gathering.open_call
    assert line is not None and (line["entry"], line["kind"], line["state"]) == ("call.g1", "batch_line",
                                                                                 "gathering")
    assert gathering.spent == 0 and ledger.open_price(line) == 0 and ledger.spent_in_run(gathering, "run-a") == 0
    with pytest.raises(LifecycleError, match="cannot move from gathering to lost"):
        paid.abandon(gathering, paid.RUN_ENDED)
    assert paid.end_open(gathering, ledger.NOT_SENT)["state"] == "not_sent"
    assert gathering.open_call is None and gathering.spent == 0 and not gathering.possibly_paid_calls


def test_a_call_ends_in_its_own_entry():
    """The open entry is the call's one entry: an error reply ends it unbilled at $0, the answer bills it in place
    (its worst case dropped), and a job journaled is kept in it (planted: set_generation appending a second entry:
    the purchase counted at its worst case and its bill: caught)."""
    from pytest_hypeedit.engine.record_spend import add_verdict_cost, set_generation, set_job

    record = Record(**BASE, calls=[paid.sending(paid.GENERATE, route="bfl", price=0.08, call_id="c1", run="run-a")])
    set_job(record, {"id": "job-1", "route": "bfl", "cost": 0.07})
    set_generation(record, 0.07, tier="standard", route="bfl", id="job-1", always=False)
    assert [(c["entry"], c["state"], c["price"], "worst" in c) for c in record.calls] == [
        ("call.c1", "billed", 0.07, False)]
    assert record.job == {"id": "job-1", "route": "bfl", "cost": 0.07} and record.spent == pytest.approx(0.07)
    record.calls = [*record.calls, paid.sending(paid.JUDGE, route="gemini-judge", price=0.04, call_id="c2")]
    failed = paid.end_open(record, ledger.UNBILLED)
    assert failed is not None and (failed["state"], failed["price"]) == ("unbilled", 0.0)
    record.calls = [*record.calls, paid.sending(paid.JUDGE, route="gemini-judge", price=0.04, call_id="c3")]
    add_verdict_cost(record, 0.003, "run-a", tier="flex")
    assert [(c["entry"], c["kind"], c["state"], c["price"]) for c in record.calls[1:]] == [
        ("call.c2", "verdict", "unbilled", 0.0), ("call.c3", "verdict", "billed", 0.003)]
    assert record.open_call is None and record.spent == pytest.approx(0.073)
