"""Linked rate windows: exact sliding-window admission, delays, waits and scaling."""

from __future__ import annotations

import pytest

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
