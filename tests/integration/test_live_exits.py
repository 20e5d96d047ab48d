"""Exits against the local exchange over real sockets: a market maker whose market is inside its
``flatten_before_end_s`` never quotes it and sells its net exposure there down to under the
market's minimum order, and what the exchange's own records show (positions, open orders) says
so while it runs, not only at the end."""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest

from bot.exits import ExitRules, Exits
from bot.venue.enums import OrderType, Side
from strategies.market_maker import MarketMaker, Params
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.test_live_trading import counterparty_order, ours_on, running_bot

pytestmark = pytest.mark.integration

SH = 1_000_000


def exposure(ex, cond: str) -> Decimal:
    """YES held minus NO held by the demo account in market ``cond``, as GET /positions says (its
    ``asset`` is ``<condition id>:<outcome index>``)."""
    r = httpx.get(ex.urls.data + "/positions",
                  params={"user": ex.demo_account.address, "market": cond, "sizeThreshold": "0"})
    assert r.status_code == 200, r.text
    held = {p["asset"]: Decimal(str(p["size"])) for p in r.json()}
    return held.get(f"{cond}:0", Decimal(0)) - held.get(f"{cond}:1", Decimal(0))


def test_a_market_near_its_end_is_never_quoted_and_its_exposure_is_sold_down():
    ex = start_exchange(extra_markets=())  # generated markets only
    try:
        other = ex.new_account(21)
        demo = ex.demo_account
        m = next(m for m in ex.exchange.state.catalog.markets if m.active and not m.closed)
        cond, (yes, no) = m.condition_id, m.token_ids
        # a counterparty's bids on both tokens; the demo account sells 40 NO into one: 40 YES net
        counterparty_order(ex, other, yes, cond, Side.BUY, 450_000, 200 * SH)
        counterparty_order(ex, other, no, cond, Side.BUY, 440_000, 200 * SH)
        start = exposure(ex, cond)
        sold = counterparty_order(ex, demo, no, cond, Side.SELL, 440_000, 40 * SH, OrderType.FAK)
        assert sold.get("success"), sold
        wait_for(lambda: exposure(ex, cond) == start + 40, what="40 YES net")
        # the bot starts holding it, in a market whose end is within its flatten_before_end_s
        strategy = Exits(MarketMaker(Params(half_spread_ticks=1, order_size=10 * SH)),
                         ExitRules(flatten_before_end_s=10.0 ** 9, exit_every_s=0.5))
        with running_bot(ex, strategy=strategy) as bot:
            assert bot.markets[0].condition_id == cond
            assert bot.read(lambda: dict(strategy.exiting)) == {cond: "end_date"}
            # it sells its YES at the 0.45 bid (buying NO at 0.56 would shed it for less)
            wait_for(lambda: abs(exposure(ex, cond) - start) < 5, deadline_s=15.0, what="the exposure shed")
            for token in (yes, no):
                assert ours_on(ex, token) == []  # never a quote of ours there
            wait_for(lambda: bot.read(lambda: cond in strategy.done), what="the market done")
            held = bot.read(lambda: bot.engine.portfolio.size(yes) - bot.engine.portfolio.size(no))
            assert Decimal(held) / SH == exposure(ex, cond)  # the bot's book is the exchange's
            assert bot.read(lambda: bot.engine.stats.orders_sent) >= 1
    finally:
        ex.stop()
