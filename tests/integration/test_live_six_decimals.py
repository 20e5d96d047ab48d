"""A live run against the local exchange over real sockets in which every fill has six decimals, as
the venue's do (a market BUY spends USDC and receives ``spent / price`` shares, rounded down to the
unit): the bot's own market BUYs, then its resting asks taken by a counterparty's market BUYs.

During the run every fill the bot books is checked against the exchange's trades (same trade ids,
same sizes) and its positions against the exchange's (zero drift). Two closes of a whole position
through a resting ask: the 6-decimal one rests as its whole lots (an order sells whole lots only,
venue.md 3.2 and 3.5), so what stays is dust under one lot, the same at the exchange; the
whole-lot one ends at exactly zero.
"""

from __future__ import annotations

import json
from decimal import Decimal

import httpx
import pytest
from anyio.from_thread import start_blocking_portal

from bot.core.intents import Quote, QuoteTarget, Take
from bot.execution.orders import OrderState
from bot.strategy import Strategy
from bot.venue.eip712 import Wallet
from bot.venue.enums import OrderType, Side
from bot.venue.orders import OrderBuilder, orders_body
from bot.venue.units import LOT, UNIT, lot_floor, parse_units
from tests.integration.exchange_fixture import wait_for
from bot.live.assembly import make_engine
from bot.live.markets import load_markets
from bot.live.positions import seed_positions
from bot.live.shell import LiveShell
from bot.execution.router import RouterConfig
from bot.ops.config import ShellConfig
from bot.risk.limits import RiskLimits
from bot.venue.auth import auth_timestamp, l2_headers
from tests.integration.test_live_trading import _venue, creds_of, ex, signed  # noqa: F401 - ex: the module's exchange

pytestmark = pytest.mark.integration

TICK = 10_000
RESTING = (OrderState.LIVE, OrderState.PARTIALLY_FILLED)


class Scripted(Strategy):
    """Sends, on its next timer, the intents the test hands it; and closes each token of
    ``closing`` with an ask of its whole position at the given price (risk and the router cut it
    to whole lots), re-aimed at what is left after every fill: with under a lot left there is
    nothing an order can sell, and the target empties."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: list = []
        self.closing: dict[str, int] = {}

    def _closes(self, ctx) -> list:
        return [QuoteTarget(t, (Quote(t, Side.SELL, p, ctx.portfolio.size(t)),)) for t, p in self.closing.items()]

    def on_timer(self, ctx):
        out, self.pending = self.pending, []
        return out + self._closes(ctx)

    def on_fill(self, ctx, fill):
        return self._closes(ctx)


def units(text) -> int:
    return parse_units(str(text))


def venue_sizes(ex, acct, market) -> dict[str, int]:
    """The exchange's positions of ``acct`` in ``market`` (GET /positions, every balance; an item
    names its token as ``condition:outcome_index``), token -> units."""
    r = httpx.get(ex.urls.data + "/positions", params={"user": acct.address, "sizeThreshold": "0",
                                                      "market": market.condition_id, "limit": "500"}, timeout=10)
    assert r.status_code == 200, r.text
    out = {}
    for p in json.loads(r.text, parse_float=Decimal):
        cond, _, idx = p["asset"].partition(":")
        assert cond.lower() == market.condition_id.lower()
        out[market.tokens[int(idx)]] = units(p["size"])
    return out


def venue_fills(ex, acct) -> dict[str, int]:
    """The exchange's trades of ``acct`` (GET /data/trades): trade id -> the shares it traded."""
    out: dict[str, int] = {}
    cursor = "MA=="
    while cursor not in ("", "LTE="):
        headers = l2_headers(creds_of(acct), acct.address, "GET", "/data/trades", None, auth_timestamp())
        r = httpx.get(ex.urls.clob + "/data/trades", params={"next_cursor": cursor}, headers=headers, timeout=10)
        assert r.status_code == 200, r.text
        page = json.loads(r.text, parse_float=Decimal)
        for t in page["data"]:
            if t["trader_side"] == "TAKER" and t["maker_address"].lower() == acct.address.lower():
                out[t["id"]] = units(t["size"])
            else:
                mine = [m for m in t["maker_orders"] if m["maker_address"].lower() == acct.address.lower()]
                out[t["id"]] = sum(units(m["matched_amount"]) for m in mine)
        cursor = page["next_cursor"]
    return out


def market_buy(ex, acct, token: str, cond: str, usdc: int, price: int) -> dict:
    """A counterparty's FAK market BUY spending ``usdc`` units at worst ``price``."""
    so = OrderBuilder(Wallet(acct.private_key), 137).market(
        token, Side.BUY, usdc, price, TICK, False, order_type=OrderType.FAK, condition_id=cond)
    r = signed("POST", ex.urls.clob, "/orders", acct, orders_body([so], acct.creds.apiKey))
    assert r.status_code == 200, r.text
    return r.json()[0]


def best(ex, token: str) -> tuple[int, int]:
    book = httpx.get(ex.urls.clob + "/book", params={"token_id": token}, timeout=10).json()
    return (max(units(lv["price"]) for lv in book["bids"]), min(units(lv["price"]) for lv in book["asks"]))




class Bot:
    """The live shell running ``Scripted`` for the demo account, without an order-size cap (a
    close here sells a whole holding of over a thousand shares)."""

    def __init__(self, ex, portal) -> None:
        self.portal = portal
        self.strategy = Scripted()
        self.venue = portal.call(lambda: _venue(ex))
        self.markets = portal.call(load_markets, self.venue.clob, (), 1)
        # a closing ask is kept while it fills, whatever its remaining (6-decimal fills leave it
        # off the lot grid, where no target can name it): it is never replaced, so never cut
        self.engine = make_engine(self.strategy, self.markets, self.venue, private_key=ex.demo_account.private_key,
                                  risk_limits=RiskLimits(max_order_size=None),
                                  router_config=RouterConfig(size_tolerance=10**15))
        portal.call(seed_positions, self.engine, self.venue)
        self.shell = LiveShell(self.engine, self.venue, config=ShellConfig())
        self.future = portal.start_task_soon(self.shell.run, None)

    def read(self, fn):
        async def run():
            return fn()

        return self.portal.call(run)

    def send(self, *intents) -> None:
        """The strategy returns ``intents`` on a timer run now, on the bot's loop."""

        def push():
            self.strategy.pending.extend(intents)
            self.shell._dispatch(self.engine.on_timer())

        self.read(push)

    def fills(self) -> list:
        return self.read(lambda: list(self.engine.recent_fills))

    def size(self, token: str) -> int:
        return self.read(lambda: self.engine.portfolio.size(token))

    def stop(self) -> None:
        self.portal.call(self.shell.request_stop, "test")
        self.future.result(timeout=15)
        self.portal.call(self.venue.aclose)


def test_every_fill_has_six_decimals_no_drift_and_closes_are_exact(ex):
    other = ex.new_account(41)
    acct = ex.demo_account
    with start_blocking_portal() as portal:
        bot = Bot(ex, portal)
        try:
            m = bot.markets[0]
            yes, no = m.tokens
            wait_for(lambda: bot.read(lambda: bot.engine.books[yes].best_ask), what="the bot's book")

            def no_drift():
                """Our fills are the exchange's trades, our sizes its positions: exactly."""
                assert {f.trade_id: f.size for f in bot.fills()} == venue_fills(ex, acct)
                held = venue_sizes(ex, acct, m)
                sizes = {t: bot.size(t) for t in (yes, no)}
                assert sizes == {t: held.get(t, 0) for t in (yes, no)}
                return sizes

            def close_on_ask(token: str, size: int, spends: tuple[int, ...]) -> int:
                """Close the whole position ``size`` with an ask at the token's best ask (behind what
                rests there) that the counterparty's market BUYs take; returns what stays held."""
                price = best(ex, token)[1]
                strategy = bot.strategy
                bot.read(lambda: strategy.closing.__setitem__(token, price))
                bot.send()
                before = bot.size(token)
                for spend in spends:
                    wait_for(lambda: [o for o in bot.read(lambda: bot.engine.working_orders())
                                      if o.token_id == token and o.state in RESTING], what="our ask resting")
                    res = market_buy(ex, other, token, m.condition_id, spend, price)
                    assert res["success"], res
                    held = venue_sizes(ex, acct, m).get(token, 0)
                    wait_for(lambda: bot.size(token) == held, what="our ask's fill booked")
                    no_drift()
                    if held < LOT:
                        break
                bot.read(lambda: strategy.closing.pop(token))
                assert held == before - lot_floor(size)  # all but the dust sold
                assert not [o for o in bot.read(lambda: bot.engine.working_orders()) if o.token_id == token]
                return held

            # 1. market BUYs spending whole cents at the best ask, within its level: 6-decimal fills
            ask = best(ex, yes)[1]
            spends = [2_170_000, 3_330_000, 4_790_000]
            for n, spend in enumerate(spends, 1):
                bot.send(Take(yes, Side.BUY, ask, spend, OrderType.FOK))
                wait_for(lambda: len(bot.fills()) == n, what=f"fill {n}")
                assert bot.fills()[-1].size == spend * UNIT // ask  # spent / price, to the unit
                wait_for(lambda: bot.read(lambda: not bot.engine.working_orders()), what="the take closed")
                no_drift()
            position = bot.size(yes)
            assert position % LOT  # a 6-decimal holding

            # 2. close the whole 6-decimal position: its whole lots rest and sell, dust under a lot stays
            spent = (123_450_000, 150_010_000, 99_990_000, 1_000_000_000)
            dust = close_on_ask(yes, position, spent)
            assert dust == position % LOT and no_drift()[yes] == dust

            # 3. close the whole NO holding (whole lots) the same way: exactly zero stays
            assert bot.size(no) % LOT == 0
            assert close_on_ask(no, bot.size(no), spent) == 0
            assert no_drift()[no] == 0 and venue_sizes(ex, acct, m).get(no, 0) == 0

            every = bot.fills()
            assert len(every) >= len(spends) + 4
            assert all(f.size % LOT for f in every)  # every fill of the run has six decimals
            print(f"fills {len(every)}, six-decimal {sum(1 for f in every if f.size % LOT)}; drift 0; "
                  f"residual after the whole-lot close {venue_sizes(ex, acct, m).get(no, 0)}, after the "
                  f"6-decimal close {dust} units (dust under one lot)")
        finally:
            bot.stop()
