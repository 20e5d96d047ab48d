"""Fees over real sockets: the local exchange serves a market's fee rule on ``/clob-markets``, the
bot reads it into its market info, and what the exchange's ledger moves for a trade equals what
our reconciler books for it, to the micro-unit (taker fee and maker rebate). Market orders with
more decimals than the venue accepts are refused with the venue's words."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest

from bot.core.events import Fill
from bot.exchange.config import MarketSeed
from bot.execution.orders import OwnOrder
from bot.execution.reconciler import Reconciler
from bot.live.markets import load_markets
from bot.venue.clob import ClobClient
from bot.venue.eip712 import Wallet
from bot.venue.enums import OrderType, Side
from bot.venue.fees import FeeSchedule, maker_rebate, taker_fee
from bot.venue.orders import OrderBuilder, order_body, orders_body
from bot.venue.transport import Transport
from bot.venue.units import UNIT
from tests.integration.exchange_fixture import start_exchange
from tests.integration.test_exchange_trading import signed

pytestmark = pytest.mark.integration

COND = "0x" + "fe" * 32
TOKEN = "4242424242"
PRICE = 300_000  # inside the seeded spread around the 0.30 mid
SIZE = 10 * UNIT
TICK = 10_000
RULE = FeeSchedule(rate=20_000, exponent=2, rebate=250_000)  # r = 0.02, e = 2, makers get a quarter
REFUSAL = ("invalid amounts, the market buy orders maker amount supports a max accuracy of 2 decimals, "
           "taker amount a max of 4 decimals")


@pytest.fixture(scope="module")
def ex():
    seed = MarketSeed(condition_id=COND, token_id=TOKEN, tick_size="0.01", mid="0.3", question="Fee market?",
                      fee_rate_bps=200, fee_exponent=2, fee_rebate_bps=2_500)
    ex = start_exchange(extra_markets=(seed,))
    try:
        yield ex
    finally:
        ex.stop()


def read_markets(ex):
    async def run():
        async with Transport(ex.urls.clob) as t:
            return await load_markets(ClobClient(t), (COND,))

    return anyio.run(run)


def balances(ex, *accounts: str) -> dict[str, tuple[int, int]]:
    """Each ledger account's (collateral, shares of TOKEN), read on the exchange's own thread."""
    def read():
        eng = ex.exchange.state.engine
        return {a: (eng.balance(a).collateral, eng.balance(a).tokens.get(TOKEN, 0)) for a in accounts}

    return ex.call(read)


def book_fills(ex, acct, order: OwnOrder, fees: dict) -> list[Fill]:
    """What our reconciler books for ``order`` from the account's ``GET /data/trades``."""
    rec = Reconciler()
    rec.fees = fees
    rec.on_places_sent([order], 0.0)
    out = []
    for t in signed("GET", ex.urls.clob, "/data/trades", acct).json()["data"]:
        out += [o for o in rec.on_trade_event(t, 1.0) if isinstance(o, Fill) and o.order_id == order.order_id]
    return out


def test_clob_markets_serves_the_rule_and_the_bot_reads_it(ex):
    fd = httpx.get(ex.urls.clob + f"/clob-markets/{COND}").json()["fd"]
    assert fd == {"r": 0.02, "e": 2, "to": True, "rb": 0.25}
    (info,) = read_markets(ex)
    assert info.condition_id == COND and info.fee == RULE
    # /fee-rate answers the market's rate, the one its trades carry, not the exchange's default
    assert httpx.get(ex.urls.clob + "/fee-rate", params={"token_id": TOKEN}).json()["base_fee"] == "200"


@pytest.mark.parametrize("taker_side", [Side.BUY, Side.SELL])
def test_the_ledger_and_the_booked_fees_agree(ex, taker_side):
    (info,) = read_markets(ex)
    fees = {t: info.fee for t in info.tokens}
    maker, taker = ex.new_account(10 + (taker_side is Side.SELL)), ex.new_account(20 + (taker_side is Side.SELL))
    mw, tw = maker.wallets.of(0), taker.wallets.of(0)
    # the maker rests the other side at 0.30; the taker's FOK market order takes exactly it
    rest = OrderBuilder(Wallet(maker.private_key), 137).limit(TOKEN, taker_side.opposite, PRICE, SIZE, TICK, False,
                                                              condition_id=COND)
    r = signed("POST", ex.urls.clob, "/orders", maker, orders_body([rest], maker.creds.apiKey)).json()[0]
    assert r["success"] and r["status"] == "live", r
    amount = SIZE * PRICE // UNIT if taker_side is Side.BUY else SIZE
    take = OrderBuilder(Wallet(taker.private_key), 137).market(TOKEN, taker_side, amount, PRICE, TICK, False,
                                                               OrderType.FOK, condition_id=COND)
    before = balances(ex, mw, tw, "fees")
    r = signed("POST", ex.urls.clob, "/order", taker, order_body(take, taker.creds.apiKey)).json()
    assert r["success"] and r["status"] == "matched", r
    after = balances(ex, mw, tw, "fees")
    delta = {a: (after[a][0] - before[a][0], after[a][1] - before[a][1]) for a in after}

    fee = taker_fee(taker_side, PRICE, SIZE, RULE)
    rebate = maker_rebate(PRICE, SIZE, RULE)
    # 10 * 0.02 * 0.21^2 = 0.00882 USDC: 0.0294 share on a BUY; makers get a quarter of it
    assert (fee, rebate) == ((29_400, 2_205) if taker_side is Side.BUY else (8_820, 2_205))
    (t_fill,) = book_fills(ex, taker, OwnOrder(take.hash, TOKEN, taker_side, PRICE, SIZE,
                                                  order_type=OrderType.FOK, signed=take), fees)
    (m_fill,) = book_fills(ex, maker, OwnOrder(rest.hash, TOKEN, taker_side.opposite, PRICE, SIZE, signed=rest), fees)
    if taker_side is Side.BUY:
        # the taker receives its shares less the fee shares, which the fee account keeps
        assert delta[tw] == (-3 * UNIT, SIZE - fee) and t_fill.size == SIZE - fee
        assert delta["fees"] == (-rebate, fee) and t_fill.fee == PRICE * fee // UNIT
    else:
        assert delta[tw] == (3 * UNIT - fee, -SIZE) and (t_fill.size, t_fill.fee) == (SIZE, fee)
        assert delta["fees"] == (fee - rebate, 0)
    # the maker's rebate: paid by the fee account into its collateral, booked as a negative fee
    cash = 3 * UNIT if taker_side is Side.BUY else -3 * UNIT
    assert delta[mw] == (cash + rebate, -SIZE if taker_side is Side.BUY else SIZE)
    assert (m_fill.size, m_fill.fee, m_fill.is_maker) == (SIZE, -rebate, True)


def test_a_market_order_with_too_many_decimals_is_refused_with_the_venues_words(ex):
    acct = ex.new_account(30)
    b = OrderBuilder(Wallet(acct.private_key), 137)
    # what the official client signs for BUY 9.98 USDC at 0.985 on a 0.001 tick: 10.13197 shares
    bad = b._sign(TOKEN, Side.BUY, 9_980_000, 10_131_970, False, OrderType.FOK, 0, 7, 1_767_225_600_123,  # noqa: SLF001
                  False, COND, None, None)
    r = signed("POST", ex.urls.clob, "/order", acct, order_body(bad, acct.creds.apiKey))
    assert r.status_code == 400 and r.json() == {"error": REFUSAL}
    # in a batch, the order's own result carries the refusal
    r = signed("POST", ex.urls.clob, "/orders", acct, orders_body([bad], acct.creds.apiKey))
    assert r.status_code == 200
    (res,) = r.json()
    assert res["success"] is False and res["errorMsg"] == REFUSAL
    # ours: the same order floors the taker leg to 4 decimals and is accepted (FOK killed only by the book)
    good = b.market(TOKEN, Side.BUY, 9_980_000, 985_000, 1_000, False, OrderType.FOK, condition_id=COND)
    assert good.taker_amount == 10_131_900
    r = signed("POST", ex.urls.clob, "/order", acct, order_body(good, acct.creds.apiKey))
    assert r.status_code == 200 and json.loads(r.text)["errorMsg"] != REFUSAL
