"""The WebSocket input budget of a client IP: a leaky bucket (``bot.exchange.ws.InputBudget``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.exchange.ws import InputBudget, leaked


def test_within_the_burst_a_client_is_read_at_once_and_beyond_it_waits_for_the_excess_to_leak():
    b = InputBudget(rate=1000.0, burst=5000.0)
    assert b.charge("a", 5000, now=0.0) == 0.0  # exactly the burst: no wait
    assert b.charge("a", 1000, now=0.0) == 1.0  # 1000 over it, leaking 1000 a second
    assert b.charge("b", 100, now=0.0) == 0.0  # another client has its own bucket
    assert b.charge("a", 0, now=1.0) == 0.0  # a second on, back at the burst
    assert b.charge("a", 0, now=100.0) == 0.0 and b.level["a"] == (0.0, 100.0)  # empty, never below
    b.forget("a")
    assert set(b.level) == {"b"}


@given(st.lists(st.tuples(st.integers(0, 300_000), st.floats(0, 5)), max_size=40),
       st.floats(1024, 1e7), st.floats(0, 1e7))
def test_what_is_read_never_outruns_the_rate_once_the_waits_are_kept(frames, rate, burst):
    """A client that sends only when told it may has been read at most ``burst + rate * elapsed``."""
    b = InputBudget(rate, burst)
    now, read = 0.0, 0
    for size, pause in frames:
        now += pause
        wait = b.charge("c", size, now)
        read += size
        assert read - size <= burst + rate * now + 1e-6 * (1 + read)  # all but this frame came within the budget
        now += wait
        assert b.charge("c", 0, now) <= 1e-9 * (1 + read)  # after its wait, it is within the burst again


def test_a_bucket_leaks_at_its_rate_and_no_further():
    assert leaked(10.0, 2.0, 3.0) == 4.0
    assert leaked(10.0, 5.0, 3.0) == 0.0
