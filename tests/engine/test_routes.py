"""The route gate's adaptive level (AIMD) and its admission rules, with no network and no clock."""

from pytest_hypeedit.engine.limits import RouteLimiter
from pytest_hypeedit.engine.routes import START_LEVEL, RouteGate


def enter(gate: RouteGate, n: int) -> list:
    taken = [gate.try_enter() for _ in range(n)]
    return [release for release in taken if release is not None]


def test_a_fixed_gate_admits_its_ceiling_and_no_more():
    gate = RouteGate("r", None, ceiling=3)
    held = enter(gate, 5)
    assert len(held) == 3 and gate.state().in_flight == 3
    held.pop().release()
    assert len(enter(gate, 2)) == 1


def test_a_fixed_gate_ignores_429s():
    gate = RouteGate("r", None, ceiling=6)
    for _ in range(5):
        gate.observe(429)
    assert gate.state().level == 6


def test_adaptive_level_grows_one_per_success_until_the_first_429_then_halves():
    gate = RouteGate("r", None, ceiling=16, adaptive=True)
    assert gate.state().level == START_LEVEL
    for _ in range(6):
        gate.observe(200)
    assert gate.state().level == START_LEVEL + 6
    gate.observe(429)
    assert gate.state().level == (START_LEVEL + 6) // 2


def test_after_a_cut_growth_is_additive_one_per_window():
    gate = RouteGate("r", None, ceiling=16, adaptive=True)
    gate.observe(429)  # 4 -> 2, congestion avoidance from now on
    assert gate.state().level == 2
    for _ in range(2):  # a window of 2 successes adds one
        gate.observe(200)
    assert gate.state().level == 3
    for _ in range(3):
        gate.observe(200)
    assert gate.state().level == 4


def test_one_burst_of_429s_is_one_cut():
    gate = RouteGate("r", None, ceiling=16, adaptive=True)
    for _ in range(4):
        gate.observe(200)  # level 8
    held = enter(gate, 8)
    gate.observe(429)  # cut to 4; the other 7 requests in flight were sent before it
    for _ in range(7):
        gate.observe(429)
    assert gate.state().level == 4 and gate.state().throttled == 8
    gate.observe(429)  # a reply to a request sent after the cut: a new cut
    assert gate.state().level == 2
    for release in held:
        release.release()


def test_the_level_never_passes_the_ceiling_nor_falls_below_one():
    gate = RouteGate("r", None, ceiling=5, adaptive=True)
    for _ in range(50):
        gate.observe(200)
    assert gate.state().level == 5
    for _ in range(10):
        gate.observe(429)
        gate._stale_replies = 0  # each a new window
    assert gate.state().level == 1


def test_the_routes_in_flight_limit_is_the_ceiling_and_holds_across_gates(tmp_path):
    first = RouteGate("r", RouteLimiter(tmp_path, "r", rpm=None, inflight=2), ceiling=32, adaptive=True)
    second = RouteGate("r", RouteLimiter(tmp_path, "r", rpm=None, inflight=2), ceiling=32)  # another process
    assert first.state().ceiling == 2
    held = enter(first, 1) + enter(second, 3)
    assert len(held) == 2  # the slot files hold the total


def test_a_full_requests_per_minute_window_closes_the_gate_and_says_for_how_long(tmp_path):
    now = [1000.0]
    limiter = RouteLimiter(tmp_path, "r", rpm=2, inflight=None, period=60, margin=0.0, clock=lambda: now[0])
    gate = RouteGate("r", limiter, ceiling=8, clock=lambda: now[0])
    for _ in range(2):
        with limiter.slot():
            pass
    assert gate.try_enter() is None
    assert abs(gate.wait_hint(now[0]) - 60) < 0.01
    now[0] += 61
    assert gate.try_enter() is not None
