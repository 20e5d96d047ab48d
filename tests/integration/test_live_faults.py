"""The live shell under venue faults, over real sockets: FAILED settlement, dropped WebSockets,
429 bursts and ambiguous (5xx) submits. Each test has its own exchange with one fault on."""

from __future__ import annotations

import pytest

from bench.audit import exchange_fills
from bot.exchange.config import FaultConfig
from bot.venue.enums import OrderType, Side, TradeStatus
from tests.integration.exchange_fixture import start_exchange
from tests.integration.test_live_trading import (
    TICK, counterparty_order, open_orders, ours_on, running_bot, signed, wait_for,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def faulty(request):
    ex = start_exchange(faults=FaultConfig(**request.param))
    try:
        yield ex
    finally:
        ex.stop()


@pytest.mark.parametrize("faulty", [{"settlement_fail_rate": 1.0}], indirect=True)
def test_failed_trade_is_reversed_in_the_portfolio(faulty):
    ex = faulty
    other = ex.new_account(21)
    with running_bot(ex) as bot:
        m = bot.markets[0]
        yes = m.tokens[0]
        bids = wait_for(lambda: [o for o in ours_on(ex, yes) if o["side"] == "BUY"], what="our bid")
        price = int(round(float(bids[0]["price"]) * 100)) * TICK
        size0 = bot.read(lambda: bot.engine.portfolio.size(yes))
        res = counterparty_order(ex, other, yes, m.condition_id, Side.SELL, price, 500_000_000, OrderType.FAK)
        assert res["success"], res
        wait_for(lambda: bot.read(lambda: bot.engine.stats.fills), 10, "our fill")
        wait_for(lambda: bot.read(lambda: bot.engine.stats.reversals), 10, "the reversal of the FAILED trade")
        fill = bot.read(lambda: next(f for f in bot.engine.recent_fills if f.token_id == yes))
        assert bot.read(lambda: bot.engine.settlement[fill.trade_id]) is TradeStatus.FAILED
        wait_for(lambda: bot.read(lambda: bot.engine.portfolio.size(yes)) == size0, 5, "position restored")


@pytest.mark.parametrize("faulty", [{"ws_drop_every_s": 1.0}], indirect=True)
def test_websocket_drops_are_recovered_and_quoting_continues(faulty):
    ex = faulty
    with running_bot(ex) as bot:
        yes = bot.markets[0].tokens[0]
        wait_for(lambda: bot.read(lambda: bot.engine.stats.reconnects) >= 2, 10, "reconnects")
        # after a reconnect the books resync from the new snapshot and quotes are still there
        wait_for(lambda: bot.read(lambda: not bot.engine.books[yes].stale), 5, "fresh book after reconnect")
        wait_for(lambda: ours_on(ex, yes), 5, "quotes after reconnects")
        assert bot.read(lambda: bot.engine.state.value) == "ACTIVE"


@pytest.mark.parametrize("faulty", [{"rate_limit_burst_every_s": 1.5, "rate_limit_burst_s": 0.4}], indirect=True)
def test_429_bursts_are_absorbed(faulty):
    ex = faulty
    other = ex.new_account(22)
    with running_bot(ex, heartbeat_interval_s=0.2) as bot:  # heartbeats run into the bursts
        m = bot.markets[0]
        yes = m.tokens[0]
        wait_for(lambda: _quiet(lambda: ours_on(ex, yes)), 10, "quotes")
        # keep the book moving so the bot keeps sending until one of its requests meets a burst
        # (bursts come every 1.5 s: the deadline spans several, however fast the bot runs)
        def moved_until_rate_limited() -> bool:
            if bot.read(lambda: bot.engine.stats.rate_limited) >= 1:
                return True
            seen = bot.read(lambda: bot.engine.stats.book_events)
            book = bot.read(lambda: (bot.engine.books[yes].best_bid, bot.engine.books[yes].best_ask))
            try:
                if book[0] is not None and book[1] is not None and book[1] - book[0] > TICK:
                    counterparty_order(ex, other, yes, m.condition_id, Side.BUY, book[0] + TICK, 5_000_000)
                else:
                    signed("DELETE", ex.urls.clob, "/cancel-all", other)
            except AssertionError:
                pass  # the counterparty meets the same bursts
            # the book moves, or (nothing of the counterparty's left to cancel) a heartbeat every
            # 0.2 s meets the next burst within 1.5 s
            wait_for(lambda: bot.read(lambda: (bot.engine.stats.book_events > seen
                                               or bot.engine.stats.rate_limited >= 1)), 3,
                     "a book update or a 429")
            return bot.read(lambda: bot.engine.stats.rate_limited) >= 1

        wait_for(moved_until_rate_limited, 15, "a 429 met while the book moves")
        assert bot.read(lambda: bot.engine.stats.rate_limited) >= 1
        assert bot.read(lambda: bot.engine.state.value) == "ACTIVE"
        wait_for(lambda: _quiet(lambda: ours_on(ex, yes)), 10, "quotes after the bursts")
    # stopping during a burst still leaves nothing resting (the stop retries through 429s)
    assert wait_for(lambda: _quiet(lambda: open_orders(ex, ex.demo_account) == []), 10, "no open orders")
    wait_for(lambda: _quiet(lambda: signed("DELETE", ex.urls.clob, "/cancel-all", other).status_code == 200), 10,
             "counterparty cleanup")


def _quiet(fn):
    """``fn()``, or False when the exchange answered 429 (an AssertionError in the helpers)."""
    try:
        return fn()
    except AssertionError:
        return False


@pytest.mark.parametrize("faulty", [{"error_rate": 0.5, "error_routes": ("/orders",), "seed": 1}], indirect=True)
def test_ambiguous_submits_are_resolved_without_duplicates(faulty):
    ex = faulty
    with running_bot(ex) as bot:
        m = bot.markets[0]
        wait_for(lambda: bot.read(lambda: bot.engine.stats.send_errors) >= 1, 10, "a 5xx on POST /orders")

        def settled():
            states = bot.read(lambda: [o.state.value for o in bot.engine.working_orders()])
            return states and "UNKNOWN" not in states and "PENDING_SUBMIT" not in states

        wait_for(settled, 10, "unknown outcomes resolved")
        # the 5xx'd orders were looked up, found absent and resent under the same id
        resolved = bot.read(lambda: [o for o in bot.engine.orders if o.reason == "server"])
        assert resolved and any(o.state.value in ("LIVE", "PARTIALLY_FILLED", "CANCELED", "FILLED")
                                for o in resolved)
        for token in m.tokens:
            mine = ours_on(ex, token)
            keys = [(o["side"], o["price"]) for o in mine]
            assert len(keys) == len(set(keys)), f"duplicate orders at the exchange: {keys}"
        ids = {o["id"] for o in open_orders(ex, ex.demo_account)}
        local = bot.read(lambda: {o.order_id for o in bot.engine.working_orders()})
        assert ids <= local  # nothing at the exchange that the bot does not know


def sell_at_our_bid(ex, bot, other) -> None:
    """``other`` sells 500 shares at the price of the bot's YES bid, once the exchange shows it."""
    m = bot.markets[0]
    yes = m.tokens[0]
    bids = wait_for(lambda: [o for o in ours_on(ex, yes) if o["side"] == "BUY"], what="our bid")
    price = int(round(float(bids[0]["price"]) * 100)) * TICK
    res = counterparty_order(ex, other, yes, m.condition_id, Side.SELL, price, 500_000_000, OrderType.FAK)
    assert res["success"], res


def sell_into_our_bid(ex, bot, other):
    """``other`` sells into the bot's YES bid; returns the exchange's fills of ours, after checking
    that our bid (and maybe our NO ask, its mirror) traded and the bot has booked none yet."""
    sell_at_our_bid(ex, bot, other)
    holder = ex.demo_account.address
    venue = ex.call(lambda: exchange_fills(ex.exchange.state.engine.trades_of(holder), holder))
    assert venue
    assert bot.read(lambda: bot.engine.stats.fills) == 0  # nothing delivered yet
    return venue


@pytest.mark.parametrize("faulty", [{"user_event_delay_ms": 60_000}], indirect=True)
def test_a_fill_the_user_channel_has_not_delivered_is_booked_at_stop(faulty):
    # the user channel lags a minute and the trades poll never comes: the stop's last read of the
    # trades pages is what books the fill
    ex = faulty
    with running_bot(ex, trades_poll_s=0, orders_sync_s=0) as bot:
        venue = sell_into_our_bid(ex, bot, ex.new_account(23))
    booked = {(f.trade_id, f.order_id): f.size for f in bot.engine.recent_fills}
    assert booked == {key: line.size for key, (line, _status) in venue.items()}


@pytest.mark.parametrize("faulty", [{"user_event_delay_ms": 60_000}], indirect=True)
def test_the_last_trades_read_has_a_budget_of_its_own(faulty):
    # the stop's cancel-all is answered after the stop timeout: the trades are still read after it
    ex = faulty
    hold = None
    try:
        with running_bot(ex, trades_poll_s=0, orders_sync_s=0, stop_timeout_s=1.0) as bot:
            venue = sell_into_our_bid(ex, bot, ex.new_account(24))
            hold = ex.hold("DELETE", "/cancel-all", "after")
        assert hold.held()  # the cancel-all was sent and its answer held past the timeout
        booked = {(f.trade_id, f.order_id): f.size for f in bot.engine.recent_fills}
        assert booked == {key: line.size for key, (line, _status) in venue.items()}
    finally:
        if hold is not None:
            hold.release()
