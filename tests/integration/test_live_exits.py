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


def exposure(ex, yes: str, no: str) -> Decimal:
    """YES held minus NO held by the demo account, as GET /positions says."""
    r = httpx.get(ex.urls.data + "/positions", params={"user": ex.demo_account.address, "sizeThreshold": "0"})
    assert r.status_code == 200, r.text
    held = {p["asset"]: Decimal(str(p["size"])) for p in r.json()}
    return held.get(yes, Decimal(0)) - held.get(no, Decimal(0))


def test_a_market_near_its_end_is_never_quoted_and_its_exposure_is_sold_down():
    ex = start_exchange()
    try:
        other = ex.new_account(21)
        demo = ex.demo_account
        with httpx.Client() as c:
            m = c.get(ex.urls.clob + "/clob-markets", timeout=10).json()["data"][0]  # noqa: F841 - listed
        from bot.core.markets import MarketInfo  # noqa: F401 - the bot loads the market itself

        with running_bot(ex, strategy=Exits(MarketMaker(Params(half_spread_ticks=1, order_size=10 * SH)),
                                            ExitRules(flatten_before_end_s=10.0 ** 9, exit_every_s=0.5))) as bot:
            market = bot.markets[0]
            yes, no = market.tokens
            cond = market.condition_id
            assert bot.read(lambda: dict(bot.engine.strategy.exiting)) == {cond: "end_date"}
            # a counterparty's bids on both tokens; the demo account sells 40 NO into one: 40 YES net
            counterparty_order(ex, other, yes, cond, Side.BUY, 450_000, 200 * SH)
            counterparty_order(ex, other, no, cond, Side.BUY, 440_000, 200 * SH)
            start = exposure(ex, yes, no)
            counterparty_order(ex, demo, no, cond, Side.SELL, 440_000, 40 * SH, OrderType.FAK)
            assert exposure(ex, yes, no) == start + 40
            # the bot sells it down (its YES at the 0.45 bid: buying NO at 0.56 sheds for less)
            wait_for(lambda: abs(exposure(ex, yes, no) - start) < 5, deadline_s=15.0, what="the exposure shed")
            for token in (yes, no):
                assert ours_on(ex, token) == []  # never a quote of ours there
            held = bot.read(lambda: bot.engine.portfolio.size(yes) - bot.engine.portfolio.size(no))
            assert Decimal(held) / SH == exposure(ex, yes, no)  # the bot's book is the exchange's
            wait_for(lambda: bot.read(lambda: cond in bot.engine.strategy.done), what="the market done")
    finally:
        ex.stop()
