"""The money path's transition table (engine/lifecycle.py): every step is allowed from the stages it names and
raises from every other, before anything is written; a --budget reservation is settled exactly once."""

from __future__ import annotations

import pytest

from pytest_hypeedit.engine.lifecycle import STEPS, CallReservation, Lifecycle, Stage, Step
from pytest_hypeedit.errors import HypeEditError, LifecycleError

PAIRS = [(step, stage) for step in Step for stage in Stage]


def at(stage: Stage) -> Lifecycle:
    life = Lifecycle("m t1 r001")
    life.stage = stage
    return life


@pytest.mark.parametrize(("step", "stage"), PAIRS, ids=[f"{s.value}-from-{g.value}" for s, g in PAIRS])
def test_a_step_moves_only_from_the_stages_the_table_names(step, stage):
    allowed, to = STEPS[step]
    life, writes = at(stage), []
    if stage in allowed:
        life.write(step, lambda: writes.append(step))
        assert life.stage is (stage if to is None else to)
        assert writes == [step] and life.trail == [step]
    else:
        with pytest.raises(LifecycleError, match=f"m t1 r001: {step.value} is not allowed once {stage.value}"):
            life.write(step, lambda: writes.append(step))
        assert writes == [], "a forbidden step wrote before it raised"
        assert life.stage is stage and life.trail == []


def test_every_step_is_in_the_table_and_every_stage_is_reachable_and_can_end():
    assert set(STEPS) == set(Step)
    reached = {Stage.PLANNED} | {to for _, to in STEPS.values() if to is not None}
    assert reached == set(Stage)
    assert STEPS[Step.SETTLE][0] == frozenset(Stage) - {Stage.SETTLED}


def test_the_money_orders_are_in_the_table():
    """The crash-safety argument of the module's docstring, as the table has it."""
    assert STEPS[Step.SEND][0] == {Stage.JOURNALED}  # a paid request leaves only once journaled
    assert STEPS[Step.WRITE_SAVED][0] == {Stage.PAID}  # an image is written only once the provider answered
    assert STEPS[Step.REPLY][1] is Stage.PAID and STEPS[Step.WRITE_SAVED][1] is Stage.SAVED
    judging = [Step.WRITE_JUDGE_JOURNALED, Step.ASK_FREE, Step.REUSE]
    assert all(STEPS[step][0] == {Stage.SAVED} for step in judging)  # a judge only sees an image on disk
    assert STEPS[Step.ASK][0] == {Stage.JUDGE_JOURNALED}
    assert STEPS[Step.WRITE_FORGOTTEN][0] == {Stage.PLANNED}  # a lost image is forgotten before anything is bought
    # a re-judgement (--judge-stability) is of a judged candidate, and a paid one leaves only once journaled
    assert STEPS[Step.WRITE_REJUDGE_JOURNALED][0] == STEPS[Step.ASK_AGAIN_FREE][0] == {Stage.JUDGED}
    assert STEPS[Step.ASK_AGAIN][0] == {Stage.REJUDGE_JOURNALED}
    after_paid = {step for step, (allowed, _) in STEPS.items() if Stage.PAID in allowed}
    assert after_paid == {Step.WRITE_SAVED, Step.WRITE_FAILED, Step.SETTLE}


def test_a_write_that_fails_leaves_the_stage_as_the_disk_does():
    life = at(Stage.PAID)

    def full() -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        life.write(Step.WRITE_SAVED, full)
    assert life.stage is Stage.PAID and life.trail == []


def test_the_error_is_a_bug_no_handler_of_call_errors_swallows():
    assert issubclass(LifecycleError, AssertionError) and not issubclass(LifecycleError, HypeEditError)


class Spy:
    def __init__(self) -> None:
        self.done: list[tuple[str, float | None]] = []

    def commit(self, actual: float) -> None:
        self.done.append(("commit", actual))

    def release(self) -> None:
        self.done.append(("release", None))


class Ledger:
    def __init__(self) -> None:
        self.spies: list[Spy] = []

    def reserve(self, amount: float, what: str) -> Spy:
        self.spies.append(Spy())
        return self.spies[-1]


def test_a_hold_is_settled_once_with_what_its_call_cost():
    ledger = Ledger()
    life = Lifecycle("m t1 r001")
    hold = life.reserve(ledger, lambda: 0.04, "gen")  # type: ignore[arg-type]
    hold.settle(0.04)
    with pytest.raises(LifecycleError, match="gen: its --budget reservation was settled twice"):
        hold.settle(0.0)
    life.settle()
    assert ledger.spies[0].done == [("commit", 0.04)]


def test_a_hold_whose_call_never_left_is_released_when_the_handling_ends():
    ledger = Ledger()
    life = Lifecycle("m t1 r001")
    life.reserve(ledger, lambda: 0.04, "verdict")  # type: ignore[arg-type]
    life.settle()
    assert ledger.spies[0].done == [("release", None)]
    with pytest.raises(LifecycleError, match="settle is not allowed once settled"):
        life.settle()
    with pytest.raises(LifecycleError, match="after its handling ended"):
        life.reserve(ledger, lambda: 0.04, "late")  # type: ignore[arg-type]


def test_a_sent_call_whose_hold_was_never_settled_raises():
    ledger = Ledger()
    life = Lifecycle("m t1 r001")
    hold = life.reserve(ledger, lambda: 0.04, "gen")  # type: ignore[arg-type]
    life.move(Step.SEND_UNJOURNALED, hold)
    with pytest.raises(LifecycleError, match="the call for gen was sent and its --budget reservation never settled"):
        life.settle()
    assert ledger.spies[0].done == [], "what a sent call cost is not guessed"


def test_without_a_budget_the_hold_is_still_counted_and_the_amount_never_asked():
    life = Lifecycle("m t1 r001")

    def never() -> float:
        raise AssertionError("the worst case is asked only with a budget")

    hold = life.reserve(None, never, "gen")
    assert isinstance(hold, CallReservation) and hold.reservation is None
    hold.settle(0.04)
    with pytest.raises(LifecycleError):
        hold.settle(0.04)
