"""Rate windows shared on a real Redis: the in-memory throttle's burst and sustained semantics
across processes, and an unreachable Redis stopping everything but the reserved cancels."""

from __future__ import annotations

import time

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.ops.config import ConfigError, decode_bot_config
from bot.venue.limits import LimitsConfig, RouteLimiter
from bot.venue.shared_throttle import RedisThrottle, SharedLimitsConfig, SharedThrottles, api_key_id
from bot.venue.throttle import RateWindow, Throttle
from tests.services import RedisServer, free_port, redis_server  # noqa: F401  (pytest fixture)

pytestmark = pytest.mark.integration

BURST = RateWindow(6, 0.4)  # short: the refill test waits for it
SUSTAINED = RateWindow(9, 30.0)
WIDE_BURST = RateWindow(6, 10.0)  # no refill while one example runs, however loaded the machine
_keys = iter(range(10**9))


def client(server):
    return redis.Redis.from_url(server.url, socket_timeout=1.0)


def fresh_key() -> str:
    return f"test:{time.time_ns()}:{next(_keys)}"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4), st.sampled_from(["take", "upto"])),
                min_size=1, max_size=30))
def test_processes_sharing_windows_never_exceed_them_and_a_full_window_is_used(redis_server, takes):
    """Three throttles on one key (three processes) spend one set of windows: whatever they ask,
    they are granted exactly what the in-memory throttle grants one process asking the same."""
    key = fresh_key()
    shared = [RedisThrottle([WIDE_BURST, SUSTAINED], client(redis_server), key) for _ in range(3)]
    alone = Throttle([WIDE_BURST, SUSTAINED])
    t0 = time.monotonic()
    granted = expected = 0
    for who, n, op in takes:
        if op == "take":
            granted += n if shared[who].try_take(n) else 0
            expected += n if alone.try_take(n, 0.0) else 0
        else:
            granted += shared[who].take_up_to(n)
            expected += alone.take_up_to(n, 0.0)
    assert time.monotonic() - t0 < WIDE_BURST.seconds  # all takes fell within one window
    assert granted == expected <= WIDE_BURST.capacity


def test_burst_refills_after_its_window_and_sustained_window_still_binds(redis_server):
    a = RedisThrottle([BURST, SUSTAINED], client(redis_server), fresh_key())
    b = RedisThrottle([BURST, SUSTAINED], client(redis_server), a.key)
    assert a.take_up_to(10) == 6
    assert not b.try_take(1)
    wait = b.delay(1)
    assert 0.0 < wait <= BURST.seconds + 0.01
    assert b.available() == 0  # saturated: answered locally until the delay has passed
    time.sleep(wait + 0.02)
    assert b.take_up_to(10) == 3  # the burst window is free again, the sustained one holds 9
    assert not a.try_take(1)
    assert a.delay(1) > 1.0  # the sustained window frees only 30 s after the first takes


def test_scopes_of_one_api_key_are_shared_and_named_without_the_key(redis_server):
    config = SharedLimitsConfig(backend="redis", redis_url=redis_server.url, processes=3)
    limits = LimitsConfig(scale=0.01)
    one = RouteLimiter(limits, "clob", make_throttle=SharedThrottles(config, "my-api-key"))
    two = RouteLimiter(limits, "clob", make_throttle=SharedThrottles(config, "my-api-key"))
    other = RouteLimiter(limits, "clob", make_throttle=SharedThrottles(config, "another-key"))
    book = one.throttle("clob:book").capacity
    assert sum(one.try_acquire("GET", "/book") or 0 for _ in range(book)) == book
    assert not two.try_acquire("GET", "/book")
    assert other.try_acquire("GET", "/book")
    names = [k.decode() for k in client(redis_server).keys("pmbot:*")]
    assert names and all("my-api-key" not in n for n in names)
    assert any(api_key_id("my-api-key") in n for n in names)


def test_unreachable_redis_stops_places_and_reads_and_keeps_a_cancel_reserve(redis_server, caplog):
    dead = SharedLimitsConfig(backend="redis", redis_url=f"redis://127.0.0.1:{free_port()}/0", processes=2,
                              cancel_reserve=0.2, retry_s=0.2, timeout_s=0.2)
    shared = SharedThrottles(dead, "k")
    events: list[tuple[str, str | None]] = []
    shared.on_state = lambda name, reason: events.append((name, reason))
    limiter = RouteLimiter(LimitsConfig(scale=0.01), "clob", make_throttle=shared)
    orders, cancels = limiter.throttle("orders"), limiter.throttle("cancels")
    assert not orders.try_take(1) and orders.available() == 0 and orders.take_up_to(5) == 0
    assert orders.delay(1) > 0.0
    assert not limiter.try_acquire("GET", "/book")
    assert not shared.up and orders.down and "Connection" in orders.down
    # cancels: 20% of the 24-token window kept aside, 4 tokens, split between 2 processes
    assert cancels.take_up_to(10) == 2 and cancels.take_up_to(10) == 0
    assert {name for name, reason in events if reason} >= {"orders", "cancels", "clob:book"}
    assert cancels.capacity == 24 - 4  # the shared budget is what the reserves leave


def test_shared_throttle_comes_back_when_redis_answers_again(redis_server):
    port = free_port()
    config = SharedLimitsConfig(backend="redis", redis_url=f"redis://127.0.0.1:{port}/0", retry_s=0.05,
                                timeout_s=0.2)
    shared = SharedThrottles(config, "k")
    th = shared("clob", "orders", [RateWindow(5, 1.0)])
    assert not th.try_take(1) and not shared.up
    server = RedisServer(port)
    try:
        time.sleep(0.06)  # past retry_s: the next call asks Redis again
        assert th.try_take(1) and th.down is None and shared.up
    finally:
        server.stop()


def test_config_chooses_the_backend_and_refuses_bad_urls():
    config = decode_bot_config('[throttle]\nbackend = "redis"\nredis_url = "redis://10.0.0.1:6380/2"\nprocesses = 3\n')
    assert config.throttle.backend == "redis" and config.throttle.processes == 3
    assert decode_bot_config("").throttle.backend == "memory"
    with pytest.raises(ConfigError, match="throttle"):
        decode_bot_config('[throttle]\nbackend = "redis"\nredis_url = "http://x"\n')
    with pytest.raises(ConfigError, match="BOT_REDIS_PASSWORD"):
        decode_bot_config('[throttle]\nredis_url = "redis://:hunter2@cache:6379/0"\n')
    with pytest.raises(ConfigError, match="backend"):
        decode_bot_config('[throttle]\nbackend = "memcached"\n')


def test_a_live_bot_whose_redis_goes_away_stops_placing_says_why_and_still_cancels_everything(tmp_path):
    """A running bot on the shared throttle: Redis stops, no order is placed from then on, the
    gauge and the log say why, and the stop still cancels every order (from the reserve)."""
    from anyio.from_thread import start_blocking_portal
    from structlog.testing import capture_logs

    from bot.live.assembly import make_engine

    from bot.live.markets import load_markets

    from bot.live.positions import seed_positions

    from bot.live.shell import LiveShell

    from bot.live.venue import Venue
    from bot.ops.config import ShellConfig
    from bot.ops.metrics import Metrics
    from strategies.market_maker import MarketMaker, Params
    from tests.integration.exchange_fixture import start_exchange, wait_for
    from tests.integration.test_live_trading import open_orders

    from bot.exchange.config import ServerFlowConfig

    server = RedisServer()
    ex = start_exchange(flow=ServerFlowConfig(enabled=True, interval_s=0.05, speed=20.0))  # books move: requotes
    try:
        acct = ex.demo_account
        config = SharedLimitsConfig(backend="redis", redis_url=server.url, retry_s=0.2, timeout_s=0.2)
        metrics = Metrics()
        with capture_logs() as logs, start_blocking_portal() as portal:
            venue = portal.call(lambda: Venue(clob_url=ex.urls.clob, data_url=ex.urls.data, ws_url=ex.urls.ws,
                                              creds=acct.creds, address=acct.address, shared=config))
            markets = portal.call(load_markets, venue.clob, (), 1)
            engine = make_engine(MarketMaker(Params(half_spread_ticks=1, order_size=10_000_000)), markets, venue,
                                 private_key=acct.private_key, metrics=metrics)
            portal.call(seed_positions, engine, venue)
            shell = LiveShell(engine, venue, config=ShellConfig())
            future = portal.start_task_soon(shell.run, None)
            try:
                first = wait_for(lambda: engine.stats.orders_sent, 15, "the first quotes")
                wait_for(lambda: engine.stats.orders_sent > first, 15, "a requote as the book moves")
                assert metrics.shared_throttle_up._value.get() == 1
                server.stop()
                wait_for(lambda: not venue.shared.up, 10, "the bot noticing Redis is gone")
                sent, events = engine.stats.orders_sent, engine.stats.book_events
                # the books keep moving (requotes wanted): nothing may be placed meanwhile
                wait_for(lambda: engine.stats.book_events >= events + 20, 15, "twenty more book updates")
                assert engine.stats.orders_sent == sent
                assert metrics.shared_throttle_up._value.get() == 0
            finally:
                portal.call(shell.request_stop, "test")
                future.result(timeout=20)
                portal.call(venue.aclose)
        unreachable = [e for e in logs if e["event"] == "shared_throttle_unreachable"]
        assert unreachable and "Connection" in unreachable[0]["reason"]
        assert "sending stopped" in unreachable[0]["effect"]
        assert open_orders(ex, acct) == []
    finally:
        ex.stop()
        server.stop()
