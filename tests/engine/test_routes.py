"""The route admission's adaptive level (AIMD) and its admission rules, with no network and no clock."""

from pytest_hypeedit.engine.limits import RouteLimiter
from pytest_hypeedit.engine.routes import START_LEVEL, RouteAdmission


def enter(admission: RouteAdmission, n: int) -> list:
    taken = [admission.try_enter() for _ in range(n)]
    return [release for release in taken if release is not None]


def test_a_fixed_gate_admits_its_ceiling_and_no_more():
    admission = RouteAdmission("r", None, ceiling=3)
    held = enter(admission, 5)
    assert len(held) == 3 and admission.state().in_flight == 3
    held.pop().release()
    assert len(enter(admission, 2)) == 1


def test_a_fixed_gate_ignores_429s():
    admission = RouteAdmission("r", None, ceiling=6)
    for _ in range(5):
        admission.observe(429)
    assert admission.state().level == 6


def test_adaptive_level_grows_one_per_success_until_the_first_429_then_halves():
    admission = RouteAdmission("r", None, ceiling=16, adaptive=True)
    assert admission.state().level == START_LEVEL
    for _ in range(6):
        admission.observe(200)
    assert admission.state().level == START_LEVEL + 6
    admission.observe(429)
    assert admission.state().level == (START_LEVEL + 6) // 2


def test_after_a_cut_growth_is_additive_one_per_window():
    admission = RouteAdmission("r", None, ceiling=16, adaptive=True)
    admission.observe(429)  # 4 -> 2, congestion avoidance from now on
    assert admission.state().level == 2
    for _ in range(2):  # a window of 2 successes adds one
        admission.observe(200)
    assert admission.state().level == 3
    for _ in range(3):
        admission.observe(200)
    assert admission.state().level == 4


def test_one_burst_of_429s_is_one_cut():
    admission = RouteAdmission("r", None, ceiling=16, adaptive=True)
    for _ in range(4):
        admission.observe(200)  # level 8
    held = enter(admission, 8)
    admission.observe(429)  # cut to 4; the other 7 requests in flight were sent before it
    for _ in range(7):
        admission.observe(429)
    assert admission.state().level == 4 and admission.state().throttled == 8
    admission.observe(429)  # a reply to a request sent after the cut: a new cut
    assert admission.state().level == 2
    for release in held:
        release.release()


def test_the_level_never_passes_the_ceiling_nor_falls_below_one():
    admission = RouteAdmission("r", None, ceiling=5, adaptive=True)
    for _ in range(50):
        admission.observe(200)
    assert admission.state().level == 5
    for _ in range(10):
        admission.observe(429)
        admission._stale_replies = 0  # each a new window
    assert admission.state().level == 1


def test_the_routes_in_flight_limit_is_the_ceiling_and_holds_across_gates(tmp_path):
    first = RouteAdmission("r", RouteLimiter(tmp_path, "r", rpm=None, inflight=2), ceiling=32, adaptive=True)
    second = RouteAdmission("r", RouteLimiter(tmp_path, "r", rpm=None, inflight=2), ceiling=32)  # another process
    assert first.state().ceiling == 2
    held = enter(first, 1) + enter(second, 3)
    assert len(held) == 2  # the slot files hold the total


def test_a_full_requests_per_minute_window_closes_the_gate_and_says_for_how_long(tmp_path):
    now = [1000.0]
    limiter = RouteLimiter(tmp_path, "r", rpm=2, inflight=None, period=60, margin=0.0, clock=lambda: now[0])
    admission = RouteAdmission("r", limiter, ceiling=8, clock=lambda: now[0])
    for _ in range(2):
        with limiter.slot():
            pass
    assert admission.try_enter() is None
    assert abs(admission.wait_hint(now[0]) - 60) < 0.01
    now[0] += 61
    assert admission.try_enter() is not None
