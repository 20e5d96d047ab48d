"""The live shell and engine against the local exchange over real sockets (no synthetic flow, so
every book move and fill here is made by the test's counterparty)."""

from __future__ import annotations

from contextlib import contextmanager

import httpx
import pytest
from anyio.from_thread import start_blocking_portal

from bot.ops.config import ShellConfig
from bot.live.assembly import make_engine
from bot.live.markets import load_markets
from bot.live.positions import seed_positions
from bot.live.shell import LiveShell
from bot.live.venue import Venue
from bot.venue.auth import Credentials, auth_timestamp, l2_headers
from bot.venue.eip712 import Wallet
from bot.venue.enums import OrderType, Side, TradeStatus
from bot.venue.orders import OrderBuilder, orders_body
from strategies.market_maker import MarketMaker, Params
from tests.integration.exchange_fixture import start_exchange, wait_for

pytestmark = pytest.mark.integration

TICK = 10_000


def creds_of(acct) -> Credentials:
    return Credentials(acct.creds.apiKey, acct.creds.secret, acct.creds.passphrase)


def signed(method: str, base: str, path: str, acct, body: bytes | None = None) -> httpx.Response:
    headers = l2_headers(creds_of(acct), acct.address, method, path, body, auth_timestamp())
    return httpx.request(method, base + path, content=body, headers=headers, timeout=10)


def open_orders(ex, acct) -> list[dict]:
    r = signed("GET", ex.urls.clob, "/data/orders", acct)
    assert r.status_code == 200, r.text
    return r.json()["data"]


class Bot:
    """A LiveShell running the market maker in a background event loop."""

    def __init__(self, ex, portal, markets: int = 1, strategy=None, journal=None, metrics=None, **shell_kw) -> None:
        self.ex = ex
        self.portal = portal
        acct = ex.demo_account
        self.venue = portal.call(lambda: _venue(ex))
        self.markets = portal.call(load_markets, self.venue.clob, (), markets)
        strategy = strategy or MarketMaker(Params(half_spread_ticks=1, order_size=10_000_000))
        self.engine = make_engine(strategy, self.markets, self.venue, private_key=acct.private_key, journal=journal,
                                  metrics=metrics)
        portal.call(seed_positions, self.engine, self.venue)
        self.shell = LiveShell(self.engine, self.venue, config=ShellConfig(**shell_kw), journal=journal)
        self.future = portal.start_task_soon(self.shell.run, None)

    def read(self, fn):
        """Run ``fn()`` on the bot's loop thread (the engine is single-threaded)."""

        async def run():
            return fn()

        return self.portal.call(run)

    def stop(self) -> None:
        self.portal.call(self.shell.request_stop, "test")
        self.future.result(timeout=15)
        self.portal.call(self.venue.aclose)


def _venue(ex):
    acct = ex.demo_account
    return Venue(clob_url=ex.urls.clob, data_url=ex.urls.data, ws_url=ex.urls.ws, creds=acct.creds,
                 address=acct.address)


@contextmanager
def running_bot(ex, **kw):
    with start_blocking_portal() as portal:
        bot = Bot(ex, portal, **kw)
        try:
            yield bot
        finally:
            bot.stop()


@pytest.fixture(scope="module")
def ex():
    e = start_exchange()
    try:
        yield e
    finally:
        e.stop()


def counterparty_order(ex, acct, token, cond, side, price, size, order_type=OrderType.GTC) -> dict:
    b = OrderBuilder(Wallet(acct.private_key), 137)
    if order_type.is_market:
        amount = size if side is Side.SELL else price * size // 1_000_000
        so = b.market(token, side, amount, price, TICK, False, order_type=order_type, condition_id=cond)
    else:
        so = b.limit(token, side, price, size, TICK, False, condition_id=cond)
    r = signed("POST", ex.urls.clob, "/orders", acct, orders_body([so], acct.creds.apiKey))
    assert r.status_code == 200, r.text
    return r.json()[0]


def ours_on(ex, token) -> list[dict]:
    return [o for o in open_orders(ex, ex.demo_account) if (o.get("asset_id") or o.get("assetId")) == token]


def test_quotes_both_tokens_and_requotes_when_the_book_moves(ex):
    other = ex.new_account(11)
    with running_bot(ex) as bot:
        m = bot.markets[0]
        yes, no = m.tokens
        # both sides on both tokens (seeded holdings allow the ask); paced writes send them a few at a time
        wait_for(lambda: {o["side"] for o in ours_on(ex, yes)} == {"BUY", "SELL"} and ours_on(ex, no),
                 what="quotes on both outcome tokens, both sides on the first")
        before = {o["id"]: o["price"] for o in ours_on(ex, yes)}
        book = bot.read(lambda: bot.engine.books[yes])
        bid, ask = bot.read(lambda: (book.best_bid, book.best_ask))
        assert ask - bid >= 2 * TICK
        # another trader improves the bid: the mid moves up, so do our quotes
        res = counterparty_order(ex, other, yes, m.condition_id, Side.BUY, ask - TICK, 50_000_000)
        assert res["success"], res
        wait_for(lambda: {o["id"] for o in ours_on(ex, yes)} - set(before), what="a requote on the moved book")
        after = {o["id"]: o["price"] for o in ours_on(ex, yes)}
        assert after != before
        signed("DELETE", ex.urls.clob, "/cancel-all", other)


def test_fill_is_booked_and_settles_to_confirmed(ex):
    other = ex.new_account(12)
    with running_bot(ex) as bot:
        m = bot.markets[0]
        yes = m.tokens[0]
        bids = wait_for(lambda: [o for o in ours_on(ex, yes) if o["side"] == "BUY"], what="our bid")
        price = int(round(float(bids[0]["price"]) * 100)) * TICK
        size0 = bot.read(lambda: bot.engine.portfolio.size(yes))
        # our bid may queue behind resting liquidity at its price: sell through the whole level
        # (FAK limited at our price: nothing trades below it, the rest is killed)
        res = counterparty_order(ex, other, yes, m.condition_id, Side.SELL, price, 500_000_000, OrderType.FAK)
        assert res["success"], res

        def confirmed():
            def look():
                fills = [f for f in bot.engine.recent_fills if f.token_id == yes and f.side is Side.BUY]
                return [f for f in fills if bot.engine.settlement.get(f.trade_id) is TradeStatus.CONFIRMED]

            return bot.read(look)

        fills = wait_for(confirmed, 10, "a CONFIRMED fill of our bid")
        assert fills[0].price == price and fills[0].is_maker
        assert bot.read(lambda: bot.engine.portfolio.size(yes)) == size0 + sum(f.size for f in fills)
        assert bot.read(lambda: bot.engine.reconciler.trade_status(fills[0].trade_id)) is TradeStatus.CONFIRMED
        signed("DELETE", ex.urls.clob, "/cancel-all", other)


def test_halt_cancels_everything_at_the_exchange(ex):
    with running_bot(ex, markets=2) as bot:
        wait_for(lambda: len(open_orders(ex, ex.demo_account)) >= 4, what="quotes resting")
        bot.portal.call(bot.shell.submit, "halt", "test halt")
        wait_for(lambda: not open_orders(ex, ex.demo_account), what="every order cancelled")
        assert bot.read(lambda: bot.engine.state.value) == "HALTED"
        # our side of it: every own order closed, and nothing new goes out while halted
        wait_for(lambda: bot.read(lambda: not bot.engine.working_orders()), what="own orders closed")
        sent = bot.read(lambda: bot.engine.stats.orders_sent)
        bot.read(lambda: bot.shell._dispatch(bot.engine.on_timer()))
        assert bot.read(lambda: bot.engine.stats.orders_sent) == sent
        assert open_orders(ex, ex.demo_account) == []


def test_stop_leaves_nothing_resting(ex):
    with running_bot(ex) as bot:
        wait_for(lambda: open_orders(ex, ex.demo_account), what="quotes resting")
    assert open_orders(ex, ex.demo_account) == []
