import json
import os
import random
import time

import pytest
from forked import fork, killed_when_done, run_forked

from pytest_hypeedit.engine.budget import Budget
from pytest_hypeedit.errors import BudgetExceeded


def test_twenty_five_at_four_cents_fit_one_dollar_exactly(tmp_path):
    budget = Budget(tmp_path, 1.0)
    for i in range(25):
        budget.reserve(0.04, f"candidate {i}").commit(0.04)
    with pytest.raises(BudgetExceeded, match=r"--budget 1 USD reached.*candidate 25"):
        budget.reserve(0.04, "candidate 25")
    assert budget.spent() == pytest.approx(1.0)


def test_reservations_in_flight_count_against_the_cap(tmp_path):
    budget = Budget(tmp_path, 0.10)
    first = budget.reserve(0.06, "a")
    with pytest.raises(BudgetExceeded):
        budget.reserve(0.06, "b")
    first.release()
    budget.reserve(0.06, "b").commit(0.05)
    assert budget.spent() == pytest.approx(0.05) and budget.reserved() == 0


def test_commit_records_the_actual_cost_and_is_idempotent(tmp_path):
    budget = Budget(tmp_path, None)
    reservation = budget.reserve(0.10, "flux")
    reservation.commit(0.13)
    reservation.commit(0.13)
    reservation.release()
    assert budget.spent() == pytest.approx(0.13)
    log = [json.loads(line) for line in (tmp_path / "budget.log.jsonl").read_text().splitlines()]
    assert log == [{"what": "flux", "usd": 0.13, "pid": os.getpid()}]


def test_no_cap_never_skips(tmp_path):
    budget = Budget(tmp_path, None)
    for _ in range(50):
        budget.reserve(100.0, "x")
    assert budget.reserved() == pytest.approx(5000.0)


def test_zero_budget_skips_paid_calls_but_not_free_ones(tmp_path):
    budget = Budget(tmp_path, 0)
    budget.reserve(0.0, "identity").commit(0.0)
    with pytest.raises(BudgetExceeded):
        budget.reserve(0.01, "paid")


def test_unreadable_ledger_stops_spending(tmp_path):
    (tmp_path / "budget.json").write_text("{torn")
    with pytest.raises(BudgetExceeded, match="unreadable"):
        Budget(tmp_path, 5).reserve(0.01, "x")


def _reserve_and_die(ledger, ready):
    Budget(ledger, 1.0).reserve(0.5, "lost in a crash")
    ready.set()
    time.sleep(60)


def test_a_dead_workers_reservation_counts_as_spent(tmp_path):
    with killed_when_done(_reserve_and_die, tmp_path, bound=20):
        pass
    budget = Budget(tmp_path, 1.0)
    assert budget.spent() == pytest.approx(0.5)
    budget.reserve(0.5, "fits")
    with pytest.raises(BudgetExceeded):
        budget.reserve(0.01, "does not")


def _spend(ledger, cap, price, attempts, results):
    budget, paid = Budget(ledger, cap), 0
    for i in range(attempts):
        try:
            reservation = budget.reserve(price, f"{os.getpid()}-{i}")
        except BudgetExceeded:
            continue
        time.sleep(random.random() * 0.005)  # the "call", overlapping other workers'
        reservation.commit(price)
        paid += 1
    results.put(paid)


def test_concurrent_workers_never_pass_the_cap(tmp_path):
    results = fork.Queue()
    assert run_forked(_spend, (tmp_path, 1.0, 0.04, 15, results), 4, bound=30) == [0] * 4
    paid = [results.get(timeout=30) for _ in range(4)]
    # 60 attempts for a cap that fits 25: every reservation that fit was paid, no more.
    assert sum(paid) == 25
    assert Budget(tmp_path, 1.0).spent() == pytest.approx(1.0)
