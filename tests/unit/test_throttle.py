"""Linked rate windows: exact sliding-window admission, delays, waits and scaling."""

from __future__ import annotations

import bisect
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.venue.errors import ParameterError
from bot.venue.throttle import RateWindow, Throttle


class FakeClock:
    def __init__(self, t: float = 0.0) -> None:
        self.t = t
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds


def test_full_window_refuses_then_frees_exactly_after_seconds() -> None:
    th = Throttle([RateWindow(3, 10.0)])
    assert all(th.try_take(1, now=t) for t in (0.0, 1.0, 2.0))
    assert not th.try_take(1, now=9.999)
    assert th.delay(1, now=5.0) == pytest.approx(5.0)
    assert th.available(now=9.999) == 0
    assert th.try_take(1, now=10.0)  # the take at 0.0 left the window at 10.0
    assert th.available(now=11.0) == 1


def test_no_double_burst_at_window_edge() -> None:
    """A full bucket refilled at the edge would allow 2x capacity; the sliding log does not."""
    th = Throttle([RateWindow(5, 10.0)])
    assert th.try_take(5, now=9.0)
    assert not th.try_take(1, now=10.5)
    assert th.delay(5, now=10.5) == pytest.approx(8.5)


def test_linked_windows_all_or_nothing() -> None:
    th = Throttle([RateWindow(4, 1.0), RateWindow(6, 60.0)])
    assert th.try_take(4, now=0.0)
    assert not th.try_take(1, now=0.5)  # burst full
    assert th.try_take(2, now=1.0)
    # burst has 2 left but sustained is full: nothing is taken from either
    assert not th.try_take(1, now=1.5)
    assert th.available(now=1.5) == 0
    assert th.delay(1, now=1.5) == pytest.approx(58.5)
    assert th.taken == 6


def test_batch_counts_n_tokens_and_oversize_is_a_parameter_error() -> None:
    th = Throttle([RateWindow(15, 10.0)])
    assert th.try_take(15, now=0.0)
    with pytest.raises(ParameterError, match="^n: "):
        th.delay(16, now=0.0)
    with pytest.raises(ParameterError, match="^n: "):
        th.try_take(0, now=0.0)


def test_take_raises_when_full() -> None:
    th = Throttle([RateWindow(1, 1.0)])
    th.take(1, now=0.0)
    with pytest.raises(RuntimeError):
        th.take(1, now=0.5)


def test_window_validation_names_parameter() -> None:
    with pytest.raises(ParameterError, match="capacity"):
        RateWindow(0, 1.0)
    with pytest.raises(ParameterError, match="seconds"):
        RateWindow(1, 0.0)


def test_scaled_reduces_every_capacity() -> None:
    th = Throttle([RateWindow(2400, 10.0), RateWindow(24000, 600.0)], name="order")
    small = th.scaled(0.01)
    assert [w.capacity for w in small.windows] == [24, 240]
    assert [w.seconds for w in small.windows] == [10.0, 600.0]
    assert small.name == "order"
    assert RateWindow(3, 1.0).scaled(0.01).capacity == 1


@pytest.mark.anyio
async def test_acquire_waits_on_injected_sleep_and_reports() -> None:
    clock = FakeClock()
    seen: list[tuple[str, float]] = []
    th = Throttle([RateWindow(2, 10.0)], clock, name="book", on_wait=lambda r, s: seen.append((r, s)),
                  sleep=clock.sleep)
    assert await th.acquire() == 0.0
    clock.t = 3.0
    assert await th.acquire() == 0.0
    clock.t = 4.0
    waited = await th.acquire()
    assert waited == pytest.approx(6.0)
    assert clock.t == pytest.approx(10.0)
    assert seen == [("book", pytest.approx(6.0))]
    assert th.waits == 1 and th.waited_seconds == pytest.approx(6.0)
    assert not th.try_take(1, now=clock.t)  # takes at 3.0 and 10.0 are still in the window


@pytest.mark.anyio
async def test_acquire_default_sleep_with_zero_delay_does_not_wait() -> None:
    th = Throttle([RateWindow(5, 10.0)])
    assert await th.acquire(5) == 0.0
    assert th.waits == 0


# -- the limits table and the route limiter ------------------------------------------------------

from bot.venue.limits import LimitsConfig, RouteLimiter  # noqa: E402


def test_trading_writes_are_charged_per_order_with_burst_and_sustained() -> None:
    lim = RouteLimiter(LimitsConfig(scale=0.01), "clob", clock=lambda: 0.0)
    names = {th.name: per for th, per in lim.throttles("POST", "/orders")}
    assert names == {"clob:all": False, "orders": True}
    orders = lim.throttle("orders")
    assert [(w.capacity, w.seconds) for w in orders.windows] == [(24, 10.0), (240, 600.0)]
    assert lim.try_acquire("POST", "/orders", items=15, now=0.0)
    assert not lim.try_acquire("POST", "/orders", items=10, now=1.0)  # 25 > 24 burst
    assert lim.try_acquire("POST", "/order", items=9, now=1.0)
    assert orders.available(now=1.0) == 0 and lim.throttle("clob:all").available(now=1.0) == 50 - 2
    assert lim.try_acquire("DELETE", "/order", now=1.0)  # cancels have their own scope


def test_per_request_counting_option() -> None:
    lim = RouteLimiter(LimitsConfig(scale=0.01, count_per_order=False), "clob", clock=lambda: 0.0)
    assert lim.try_acquire("POST", "/orders", items=15, now=0.0)
    assert lim.throttle("orders").available(now=0.0) == 23


def test_catalog_listing_scopes_are_linked() -> None:
    lim = RouteLimiter(LimitsConfig(scale=0.01), "catalog", clock=lambda: 0.0)
    assert {t.name for t, _ in lim.throttles("GET", "/markets")} == {
        "catalog:all", "catalog:markets", "catalog:listings"}
    assert {t.name for t, _ in lim.throttles("GET", "/markets/slug/x")} == {"catalog:all"}
    for _ in range(3):  # /markets 300 -> 3
        assert lim.try_acquire("GET", "/markets", now=0.0)
    assert not lim.try_acquire("GET", "/markets", now=0.0)
    for _ in range(5):  # /events 500 -> 5, listings 900 -> 9: 3 + 5 = 8 fit
        assert lim.try_acquire("GET", "/events", now=0.0)
    assert lim.try_acquire("GET", "/events/slug/x", now=0.0)  # not a listing
    assert lim.delay("GET", "/events", now=0.0) == pytest.approx(10.0)


def test_path_parameters_and_query_do_not_escape_scopes() -> None:
    lim = RouteLimiter(LimitsConfig(), "clob", clock=lambda: 0.0)
    assert {t.name for t, _ in lim.throttles("GET", "/book?token_id=1")} == {"clob:all", "clob:book"}
    assert {t.name for t, _ in lim.throttles("get", "/data/trades")} == {"clob:all", "clob:trades"}


def test_limits_config_validation() -> None:
    with pytest.raises(ParameterError, match="scale"):
        LimitsConfig(scale=0)
    with pytest.raises(ParameterError, match="surface"):
        RouteLimiter(LimitsConfig(), "nope")
    import msgspec

    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"scale": 1.0, "bogus": 1}, LimitsConfig)


def test_disabled_limits_let_everything_through() -> None:
    lim = RouteLimiter(LimitsConfig(scale=0.01, enabled=False), "clob", clock=lambda: 0.0)
    assert all(lim.try_acquire("GET", "/", now=0.0) for _ in range(100))


def test_take_up_to_takes_what_every_window_allows() -> None:
    th = Throttle([RateWindow(4, 1.0), RateWindow(6, 60.0)])
    assert th.take_up_to(10, now=0.0) == 4  # burst window bounds it
    assert th.take_up_to(1, now=0.5) == 0  # nothing taken when full
    assert th.take_up_to(10, now=1.0) == 2  # sustained window bounds it
    assert th.taken == 6 and th.available(now=1.0) == 0
    with pytest.raises(ParameterError, match="^n: "):
        th.take_up_to(0, now=2.0)


# -- exactness and refusals ------------------------------------------------------------------------

import math  # noqa: E402
import random  # noqa: E402


def test_ready_at_is_the_first_instant_a_take_leaves_the_window() -> None:
    """Exact to the float step, for any stamp (negative ones included: an injected clock may
    start anywhere) and any window length."""
    rng = random.Random(5)
    cases = [(0.1, 0.2), (1.0, 1e-17), (100.3, 0.7), (1e15 + 0.5, 0.3), (-5.5, 1.0), (-0.1, 0.3),
             (-628.1874682105646, 600.0), (0.0, 10.0)]
    cases += [(rng.uniform(-1e3, 1e3), rng.choice([0.1, 0.3, 0.7, 10.0, 600.0, rng.uniform(1e-6, 1.0)]))
              for _ in range(1500)]
    for stamp, seconds in cases:
        th = Throttle([RateWindow(1, seconds)])
        assert th.try_take(1, now=stamp)
        t = th.ready_at(1, now=stamp)
        assert t >= stamp and t - seconds >= stamp, (stamp, seconds)
        before = math.nextafter(t, -math.inf)
        if before >= stamp:  # the clock never runs back past the take
            assert not th.try_take(1, now=before), (stamp, seconds)
        assert stamp + th.delay(1, now=stamp) >= t
        assert th.try_take(1, now=t), (stamp, seconds)


def test_delay_is_exact_when_the_difference_is() -> None:
    th = Throttle([RateWindow(1, 10.0)])
    assert th.try_take(1, now=0.0)
    assert th.ready_at(1, now=5.0) == 10.0
    assert th.delay(1, now=5.0) == 5.0 and th.delay(1, now=10.0) == 0.0 and th.delay(1, now=12.0) == 0.0


def test_windows_refuse_what_is_not_a_count_or_a_length() -> None:
    for bad in (0, -1, True, 2.5, "3"):
        with pytest.raises(ParameterError, match=rf"^capacity: must be an integer >= 1, got {bad!r}$"):
            RateWindow(bad, 1.0)
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ParameterError, match="^seconds: must be a finite number > 0, got "):
            RateWindow(1, bad)
    for bad in (0, 0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ParameterError, match="^factor: must be a finite number > 0, got "):
            RateWindow(3, 1.0).scaled(bad)
    with pytest.raises(ParameterError, match="^windows: at least one RateWindow is required$"):
        Throttle([])


def test_token_counts_must_be_whole_and_fit() -> None:
    th = Throttle([RateWindow(15, 10.0)])
    for bad in (0, True, 1.5):
        with pytest.raises(ParameterError, match=rf"^n: must be an integer >= 1, got {bad!r}$"):
            th.try_take(bad, now=0.0)
        with pytest.raises(ParameterError, match=rf"^n: must be an integer >= 1, got {bad!r}$"):
            th.take_up_to(bad, now=0.0)
    with pytest.raises(ParameterError, match=r"^n: 16 tokens can never pass Throttle\(-: 15/10s\)$"):
        th.try_take(16, now=0.0)
    th.take(15, now=0.0)
    with pytest.raises(RuntimeError, match=r"^Throttle\(-: 15/10s\) has no room for 1 tokens$"):
        th.take(1, now=1.0)
    assert repr(Throttle([RateWindow(2, 10.0), RateWindow(6, 0.5)], name="book")) == "Throttle(book: 2/10s, 6/0.5s)"


def test_an_explicit_now_wins_and_the_clock_is_read_without_one() -> None:
    t = [100.0]
    th = Throttle([RateWindow(2, 1.0)], clock=lambda: t[0])
    th.take(1, now=0.0)
    th.take(1, now=1.0)  # the take at 0.0 has left the window at 1.0, whatever the clock says
    assert th.take_up_to(5, now=1.5) == 1 and th.available(now=1.5) == 0
    assert th.available() == 2 and th.ready_at() == 100.0 and th.delay() == 0.0
    assert th.try_take(1) and th.take_up_to(5) == 1 and th.available() == 0
    t[0] = 100.5
    assert th.ready_at() == 101.0 and th.delay() == 0.5 and not th.try_take(1)
    assert th.taken == 5


def test_take_up_to_takes_nothing_from_a_full_window() -> None:
    th = Throttle([RateWindow(2, 10.0)])
    assert th.take_up_to(5, now=0.0) == 2
    assert th.take_up_to(5, now=1.0) == 0 and th.taken == 2
    assert th.take_up_to(1, now=10.0) == 1


@pytest.mark.anyio
async def test_every_wait_is_counted_and_summed() -> None:
    clock = FakeClock()
    seen: list[tuple[str, float]] = []
    th = Throttle([RateWindow(1, 0.5)], clock, name="x", on_wait=lambda r, s: seen.append((r, s)), sleep=clock.sleep)
    assert await th.acquire() == 0.0
    assert await th.acquire() == 0.5
    assert await th.acquire() == 0.5
    assert th.waits == 2 and th.waited_seconds == 1.0 and seen == [("x", 0.5), ("x", 0.5)]
    small = th.scaled(0.5)  # the same clock, hooks and sleep
    assert small.windows == (RateWindow(1, 0.5),) and small.name == "x"
    clock.t = 10.0
    assert await small.acquire() == 0.0 and await small.acquire() == 0.5 and clock.t == 10.5
    assert small.waits == 1 and seen == [("x", 0.5)] * 3  # the scaled throttle tells the same hook


def test_one_token_is_the_default() -> None:
    th = Throttle([RateWindow(1, 1.0)])
    assert th.ready_at(now=0.0) == 0.0 and th.delay(now=0.0) == 0.0
    assert th.try_take(now=0.0) and not th.try_take(now=0.5)
    th.take(now=1.0)
    assert th.taken == 2


def test_delay_steps_up_when_the_difference_rounds_short() -> None:
    """0.2 + (0.9 - 0.2) < 0.9 in floats: the delay is the least float that reaches the instant."""
    for now, seconds in ((0.2, 0.9), (0.4, 1.7), (0.8, 3.1), (1.1, 5.2)):
        th = Throttle([RateWindow(1, seconds)])
        assert th.try_take(1, now=0.0)
        ready = th.ready_at(1, now=now)
        assert now + (ready - now) < ready  # the case at hand
        d = th.delay(1, now=now)
        assert now + d >= ready and now + math.nextafter(d, 0.0) < ready, (now, seconds)
        assert th.try_take(1, now=now + d)


# --- a live client's trading-write windows ----------------------------------------------------


def test_live_trading_writes_keep_headroom_and_pace_to_the_sustained_rate() -> None:
    from bot.venue.limits import LimitsConfig, paced_writes

    scopes = {sc.name: sc for sc in paced_writes(LimitsConfig()).clob.scopes}
    for name in ("orders", "cancels"):
        windows = {(w.capacity, w.seconds) for w in scopes[name].windows}
        # 2400 / 10 s and 24000 / 10 min at 0.9, and the 40 / s sustained rate at 0.9 over a
        # whole POST batch: 15 per 15 / 36 s
        assert windows == {(2160, 10.0), (21600, 600.0), (15, 15 / 36)}
    assert scopes["clob:all"] == {sc.name: sc for sc in LimitsConfig().clob.scopes}["clob:all"]
    assert paced_writes(LimitsConfig(write_headroom=1.0, pace_writes=False)) == LimitsConfig(
        write_headroom=1.0, pace_writes=False)


@given(capacity=st.integers(1, 10_000), seconds=st.integers(1, 100), factor=st.integers(1, 100),
       headroom=st.floats(0.05, 1.0))
def test_paced_write_windows_stay_inside_every_venue_window(capacity, seconds, factor, headroom) -> None:
    """Whatever the venue's two windows: each is kept, shrunk to the headroom (so the linked
    throttle never spends more in it), and the pace window refills no faster than the slowest."""
    from bot.venue.limits import CLOB_LIMITS, LimitsConfig, Scope, SurfaceLimits, paced_writes

    venue = (RateWindow(capacity, float(seconds)), RateWindow(capacity * factor, float(seconds * factor * 3)))
    clob = SurfaceLimits(scopes=tuple(Scope(sc.name, venue, sc.routes, True) if sc.name == "orders" else sc
                                      for sc in CLOB_LIMITS.scopes))
    paced = {sc.name: sc for sc in paced_writes(LimitsConfig(clob=clob, write_headroom=headroom)).clob.scopes}
    windows = paced["orders"].windows
    for w in venue:
        assert any(c.seconds == w.seconds and c.capacity <= max(1, w.capacity * headroom + 1e-6) for c in windows)
    slowest = min(w.capacity / w.seconds for w in venue)
    pace = windows[-1]
    assert pace.capacity >= 1 and pace.capacity / pace.seconds <= slowest * headroom + 1e-9
    assert all(c.capacity >= 1 for c in windows)


def test_scaled_limits_pace_from_the_scaled_sustained_window() -> None:
    """At scale 0.01 the sustained window is 240 / 10 min, 216 at 0.9 headroom: 0.36 orders a
    second, 15 at a time (not one per 83 ms, 12 a second, from the unscaled table)."""
    from bot.venue.limits import LimitsConfig, RouteLimiter, paced_writes

    paced = paced_writes(LimitsConfig(scale=0.01))
    assert paced.scale == 1.0
    orders = {sc.name: sc for sc in paced.clob.scopes}["orders"]
    assert [(w.capacity, w.seconds) for w in orders.windows[:2]] == [(21, 10.0), (216, 600.0)]
    assert orders.windows[2].capacity == 15 and orders.windows[2].seconds == pytest.approx(15 / 0.36)
    clock = [0.0]
    th = RouteLimiter(paced, "clob", clock=lambda: clock[0]).throttle("orders")
    assert th.try_take(15, 0.0) and not th.try_take(1, 0.0)
    assert th.delay(1, 0.0) == pytest.approx(15 / 0.36)


@given(scale=st.sampled_from([0.001, 0.004, 0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 10.0, 100.0]),
       burst=st.integers(1, 5_000), factor=st.integers(1, 50), seconds=st.integers(1, 30),
       headroom=st.floats(0.05, 1.0))
def test_a_greedy_spender_never_outruns_any_scaled_window_and_still_sends_whole_batches(
        scale, burst, factor, seconds, headroom) -> None:
    """Whatever the scale, the venue's windows and the headroom, a client that sends as much as the
    paced windows grant, as soon as they grant it, never puts more in any window of the venue's
    (scaled) table than its capacity at the headroom, holds the slowest of them over time, and
    gets a whole batch (up to 15, or the smallest window's capacity) in one grant."""
    from bot.venue.limits import CLOB_LIMITS, LimitsConfig, RouteLimiter, Scope, SurfaceLimits, paced_writes

    venue = (RateWindow(burst, float(seconds)), RateWindow(burst * factor, float(seconds * factor * 3)))
    clob = SurfaceLimits(scopes=tuple(Scope(sc.name, venue, sc.routes, True) if sc.name == "orders" else sc
                                      for sc in CLOB_LIMITS.scopes))
    limits = LimitsConfig(clob=clob, write_headroom=headroom, scale=scale)
    th = RouteLimiter(paced_writes(limits), "clob", clock=lambda: 0.0).throttle("orders")
    scaled = [w.scaled(scale) for w in venue]
    caps = [max(1, math.floor(w.capacity * headroom + 1e-9)) for w in scaled]
    batch = min(15, min(caps))
    now, sent = 0.0, []
    while len(sent) < 3 * batch + 40 and now < 1e7:
        n = batch
        while n > 0 and th.delay(n, now) > 0.0:
            n -= 1
        if n == 0:
            now += th.delay(1, now)
            continue
        assert th.try_take(n, now)
        sent.extend([now] * n)
        if len(sent) == n:
            assert n == batch  # the first grant is a whole batch
    for w, cap in zip(scaled, caps):
        for i, t in enumerate(sent):  # every window of the venue's length starting at a send
            assert bisect.bisect_left(sent, t + w.seconds) - i <= cap
    rate = min(w.capacity / w.seconds for w in scaled) * headroom  # the scaled sustained pace
    assert len(sent) <= rate * (sent[-1] - sent[0]) * (1 + 1e-9) + batch + 1e-6


def test_a_full_window_searches_each_stamps_leaving_time_once(monkeypatch) -> None:
    """Asked again and again while it waits (a backtest asks at every event), a window searches
    when its oldest take leaves once per take, and answers the same instant every time."""
    import bot.venue.throttle as throttle_module

    searched: list[float] = []
    real = throttle_module._ready_at

    def counting(stamp: float, seconds: float) -> float:
        searched.append(stamp)
        return real(stamp, seconds)

    monkeypatch.setattr(throttle_module, "_ready_at", counting)
    th = Throttle([RateWindow(2, 0.3), RateWindow(3, 10.0)])
    assert th.try_take(2, now=0.1) and not th.try_take(1, now=0.2)
    first = [th.ready_at(1, now=0.1 + k / 1000) for k in range(50)]
    assert set(first) == {real(0.1, 0.3)} and searched == [0.1]
    assert th.try_take(1, now=first[0]) and not th.try_take(1, now=first[0])  # now the 10 s window is full
    assert th.ready_at(1, now=1.0) == th.ready_at(1, now=2.0) == real(0.1, 10.0)
    assert searched == [0.1, 0.1]  # the same stamp, another window: searched there once


def test_a_clock_stamps_leaving_time_is_read_without_the_bisection(monkeypatch) -> None:
    """For a clock's stamps and a window's span the answer lies next to ``stamp + seconds``:
    the bisection over the floats' bit patterns (``_unkey`` at every step) is not run, and the
    answer is the one it gives."""
    import bot.venue.throttle as throttle_module

    rng = random.Random(11)
    cases = [(rng.choice([0.0, 1_700_000_000.0, 50_000.0]) + rng.uniform(0.0, 1e4),
              rng.choice([0.1, 0.3, 1.0, 10.0, 600.0, rng.uniform(1e-3, 1e3)])) for _ in range(2000)]
    bisected = [throttle_module._ready_at_searched(stamp, seconds) for stamp, seconds in cases]
    answer = throttle_module._ready_at_searched(1_700_000_000.1, 10.0)

    def refused(key: int) -> float:
        raise AssertionError("bisected")

    monkeypatch.setattr(throttle_module, "_unkey", refused)
    assert [throttle_module._ready_at(stamp, seconds) for stamp, seconds in cases] == bisected
    th = Throttle([RateWindow(1, 10.0)])
    assert th.try_take(1, now=1_700_000_000.1) and th.ready_at(1, now=1_700_000_001.0) == answer


def test_ready_at_is_exact_where_the_answer_is_a_round_number():
    """A window whose free instant is exactly 1.0: the answer is that instant, not a neighbour."""
    t = Throttle([RateWindow(1, 0.5)])
    t.take(1, 0.5)
    assert t.ready_at(1, 0.6) == 1.0


def test_ready_at_waits_for_as_many_takes_as_must_leave():
    t = Throttle([RateWindow(2, 1.0)])
    t.take(1, 0.0)
    t.take(1, 0.3)
    assert t.ready_at(2, 0.4) == 1.3  # both must leave: the later one decides
    assert t.ready_at(1, 0.4) == 1.0


def test_ready_at_is_exact_where_the_first_free_float_above_an_unfree_sum_is_a_round_number():
    """A stamp and a span whose float sum is not free, and whose first free float above it is
    exactly 1.0: the answer is 1.0."""
    stamp, seconds = 0.04405693496512832, 0.9559430650348716
    t = Throttle([RateWindow(1, seconds)])
    t.take(1, stamp)
    assert t.ready_at(1, 0.5) == 1.0
