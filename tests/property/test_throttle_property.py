"""Property: a caller admitted by try_take never exceeds any window; delay() is exact."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.venue.throttle import RateWindow, Throttle

windows_st = st.lists(
    st.builds(RateWindow, st.integers(1, 8), st.sampled_from([0.5, 1.0, 2.5, 10.0])),
    min_size=1,
    max_size=3,
)
steps_st = st.lists(
    st.tuples(st.floats(0.0, 3.0, allow_nan=False), st.integers(1, 8)), min_size=1, max_size=60
)


@settings(max_examples=300, deadline=None)
@given(windows=windows_st, steps=steps_st)
def test_taken_tokens_never_exceed_capacity_in_any_window(windows, steps) -> None:
    th = Throttle(windows)
    cap = min(w.capacity for w in windows)
    now = 0.0
    taken: list[tuple[float, int]] = []
    for gap, n in steps:
        now += gap
        n = min(n, cap)
        if th.try_take(n, now=now):
            taken.append((now, n))
    # Every maximal window ends at some take; check (s - seconds, s] for each take s.
    for w in windows:
        for s, _ in taken:
            inside = sum(k for t, k in taken if s - w.seconds < t <= s)
            assert inside <= w.capacity


@settings(max_examples=300, deadline=None)
@given(windows=windows_st, steps=steps_st, probe=st.integers(1, 8))
def test_delay_is_exact(windows, steps, probe) -> None:
    th = Throttle(windows)
    cap = min(w.capacity for w in windows)
    now = 0.0
    for gap, n in steps:
        now += gap
        th.try_take(min(n, cap), now=now)
    n = min(probe, cap)
    ready = th.ready_at(n, now=now)
    d = th.delay(n, now=now)
    assert ready >= now and d >= 0.0
    assert (d == 0.0) == (ready == now)
    assert now + d >= ready
    if ready > now:
        before = math.nextafter(ready, -math.inf)
        assert th.delay(n, now=before) > 0.0
        assert not th.try_take(n, now=before)
    assert th.delay(n, now=ready) == 0.0
    assert th.delay(n, now=now + d) == 0.0
    assert th.try_take(n, now=now + d)


@settings(max_examples=200, deadline=None)
@given(windows=windows_st, steps=steps_st)
def test_available_agrees_with_try_take(windows, steps) -> None:
    th = Throttle(windows)
    cap = min(w.capacity for w in windows)
    now = 0.0
    for gap, n in steps:
        now += gap
        avail = th.available(now=now)
        n = min(n, cap)
        assert th.try_take(n, now=now) == (n <= avail)


@settings(max_examples=200, deadline=None)
@given(windows=windows_st, steps=steps_st)
def test_take_up_to_is_available_then_try_take(windows, steps) -> None:
    """``take_up_to(n)`` takes exactly what ``available`` then ``try_take`` would have taken."""
    one, two = Throttle(windows), Throttle(windows)
    now = 0.0
    for gap, n in steps:
        now += gap
        k = min(n, two.available(now=now))
        expected = k if k > 0 and two.try_take(k, now=now) else 0
        assert one.take_up_to(n, now=now) == expected
        assert one.taken == two.taken
        assert one.available(now=now) == two.available(now=now)


# stamps and spans of any size, and spans a few float steps of the stamp (where rounding ties)
_stamps = st.floats(-1e18, 1e18, allow_nan=False, allow_infinity=False)
_spans = st.floats(5e-324, 1e9, allow_nan=False, allow_infinity=False)


@st.composite
def _stamp_and_span(draw) -> tuple[float, float]:
    stamp = draw(_stamps)
    if draw(st.booleans()):
        return stamp, draw(_spans)
    return stamp, math.ulp(stamp) * draw(st.integers(1, 12)) / 4


@settings(max_examples=2000, deadline=None)
@given(case=_stamp_and_span())
def test_a_windows_leaving_time_found_near_the_sum_is_the_bisections_float(case) -> None:
    """The leaving time read next to ``stamp + seconds`` is the float the bisection finds (the
    smallest ``t`` above ``stamp`` with ``t - seconds >= stamp``, or ``stamp`` when the sum rounds
    to it), its sign included."""
    from bot.venue.throttle import _ready_at, _ready_at_searched

    stamp, seconds = case
    got, searched = _ready_at(stamp, seconds), _ready_at_searched(stamp, seconds)
    assert got == searched and math.copysign(1.0, got) == math.copysign(1.0, searched), (stamp, seconds)
    before = math.nextafter(got, -math.inf)
    assert got - seconds >= stamp and (before <= stamp or not before - seconds >= stamp)
