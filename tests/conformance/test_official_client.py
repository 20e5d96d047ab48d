"""The venue's official Python client, py-clob-client-v2 1.2.1, trading against the local exchange.

Every call the client makes is named in ``CALLS`` with what it gets from ``bot exchange``: an
answer the client takes (``WORKS``), or the venue's error body (501 ``not_implemented: ...``) for
a feature the local exchange does not serve (``UNSERVED``); ``CHAIN`` would name a call that
needs the chain (none does: balances and allowances are the simulator's). A test checks the table
against the client's own methods, so a call the client adds cannot go uncounted. Each working
call is driven over real sockets, the way a user would: keys from L1 creation, orders signed by
the client (its binary-float amounts included: venue.md 3.4), read back through the client.

The client is an optional test dependency (requirements-extras.lock); without it this module is
skipped.
"""

from __future__ import annotations

import inspect
import time
from decimal import Decimal

import pytest

client_module = pytest.importorskip("py_clob_client_v2.client")

from py_clob_client_v2.clob_types import (  # noqa: E402
    ApiCreds, AssetType, BalanceAllowanceParams, BookParams, BuilderTradeParams, MarketOrderArgsV2,
    OpenOrderParams, OrderArgsV2, OrderMarketCancelParams, OrderPayload, OrderScoringParams,
    OrdersScoringParams, OrderType, PostOrdersV2Args, PricesHistoryParams, TradeParams,
)
from py_clob_client_v2.exceptions import PolyApiException  # noqa: E402
from py_clob_client_v2.rfq.rfq_client import RfqClient  # noqa: E402
from py_clob_client_v2.rfq.rfq_types import (  # noqa: E402
    AcceptQuoteParams, ApproveOrderParams, CancelRfqQuoteParams, CancelRfqRequestParams, GetRfqBestQuoteParams,
    RfqUserQuote, RfqUserRequest,
)

from bot.venue.models import LiveOpenOrder, OpenOrder, Trade, convert  # noqa: E402
from bot.exchange.config import MarketSeed  # noqa: E402
from tests.integration.exchange_fixture import start_exchange, vector_seeds  # noqa: E402

pytestmark = pytest.mark.integration

ClobClient = client_module.ClobClient
WORKS, UNSERVED, CHAIN = "works", "unserved", "chain"

# Every method of ClobClient (and of its ``rfq`` part) that talks to the venue.
CALLS = {
    **dict.fromkeys((
        "get_ok", "get_server_time", "get_version", "get_markets", "get_simplified_markets",
        "get_sampling_markets", "get_sampling_simplified_markets", "get_market", "get_clob_market_info",
        "get_order_book", "get_order_books", "get_tick_size", "get_neg_risk", "get_fee_rate_bps",
        "get_fee_exponent", "get_midpoint", "get_midpoints", "get_price", "get_prices", "get_spread",
        "get_spreads", "get_last_trade_price", "get_last_trades_prices", "get_prices_history",
        "calculate_market_price", "create_api_key", "derive_api_key", "create_or_derive_api_key",
        "get_api_keys", "get_closed_only_mode", "delete_api_key", "post_heartbeat", "get_order",
        "get_open_orders", "get_pre_migration_orders", "get_trades", "get_trades_paginated",
        "get_balance_allowance", "update_balance_allowance", "create_order", "create_market_order",
        "create_and_post_order", "create_and_post_market_order", "post_order", "post_orders",
        "cancel_order", "cancel_orders", "cancel_all", "cancel_market_orders",
    ), WORKS),
    **dict.fromkeys((
        "get_notifications", "drop_notifications", "create_builder_api_key", "get_builder_api_keys",
        "revoke_builder_api_key", "create_readonly_api_key", "get_readonly_api_keys",
        "delete_readonly_api_key", "is_order_scoring", "are_orders_scoring", "get_earnings_for_user_for_day",
        "get_total_earnings_for_user_for_day", "get_user_earnings_and_markets_config",
        "get_reward_percentages", "get_current_rewards", "get_raw_rewards_for_market",
        "get_market_trades_events", "get_builder_trades",
        "rfq.create_rfq_request", "rfq.cancel_rfq_request", "rfq.get_rfq_requests", "rfq.create_rfq_quote",
        "rfq.get_rfq_requester_quotes", "rfq.get_rfq_quoter_quotes", "rfq.get_rfq_best_quote",
        "rfq.cancel_rfq_quote", "rfq.accept_rfq_quote", "rfq.approve_rfq_order", "rfq.rfq_config",
    ), UNSERVED),
}
LOCAL = {"assert_level_1_auth", "assert_level_2_auth", "get_address", "set_api_creds", "get_order_book_hash"}

# The keys of a live open order, in the venue's order (captured 2026-07-24).
CAPTURED_ORDER_KEYS = ["id", "status", "owner", "maker_address", "market", "asset_id", "side", "original_size",
                       "size_matched", "price", "outcome", "expiration", "order_type", "associate_trades",
                       "created_at"]


def _public_methods(cls, prefix: str = "") -> set[str]:
    return {prefix + name for name, _ in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_")}


def test_every_client_call_is_counted():
    """The table names each public method of the client once, and nothing else."""
    methods = (_public_methods(ClobClient) - LOCAL) | _public_methods(RfqClient, "rfq.")
    assert methods == set(CALLS)
    assert CHAIN not in CALLS.values()  # nothing the client calls needs the chain here


# -- the exchange, the accounts, the client ---------------------------------------------------------


# A market on the finest tick, where the client's binary floats reach the exchange's checks.
FINE = MarketSeed(condition_id="0x" + "f1" * 32, token_id="9" * 76, tick_size="0.0001", mid="0.5",
                  question="Fine tick market?")


@pytest.fixture(scope="module")
def exchange():
    ex = start_exchange(extra_markets=(*vector_seeds()[0], FINE))
    try:
        yield ex
    finally:
        ex.stop()


_accounts = iter(range(40, 1000))


def official(exchange, account=None) -> ClobClient:
    """A fresh official client (empty caches) for ``account`` (a new funded one by default), with
    L2 credentials it created itself over L1."""
    account = account or exchange.new_account(next(_accounts))
    c = ClobClient(exchange.urls.clob, 137, key=account.private_key)
    c.set_api_creds(c.create_or_derive_api_key())
    return c


@pytest.fixture(scope="module")
def markets(exchange):
    """A plain market (tick 0.01), a neg-risk one, and the first token of each."""
    c = ClobClient(exchange.urls.clob, 137)
    items = c.get_markets()["data"]
    plain = [m for m in items if m["minimum_tick_size"] == 0.01 and not m["neg_risk"]]
    neg = [m for m in items if m["neg_risk"]]
    return plain, neg


@pytest.fixture
def market(markets):
    plain, _ = markets
    return plain[0]


def token_of(m: dict, i: int = 0) -> str:
    return m["tokens"][i]["token_id"]


def refused(call) -> dict:
    """The error body of a call the exchange refuses (status checked by the caller)."""
    with pytest.raises(PolyApiException) as info:
        call()
    return {"status": info.value.status_code, "body": info.value.error_msg}


# -- keys ----------------------------------------------------------------------------------------


def test_create_api_key_over_l1(exchange):
    acct = exchange.new_account(next(_accounts))
    c = ClobClient(exchange.urls.clob, 137, key=acct.private_key)
    creds = c.create_api_key()
    assert isinstance(creds, ApiCreds) and creds.api_key and creds.api_secret and creds.api_passphrase
    c.set_api_creds(creds)
    assert creds.api_key in str(c.get_api_keys())  # the key signs L2 requests


def test_derive_api_key_gives_the_created_key(exchange):
    acct = exchange.new_account(next(_accounts))
    c = ClobClient(exchange.urls.clob, 137, key=acct.private_key)
    created = c.create_api_key(nonce=3)
    assert c.derive_api_key(nonce=3) == created
    assert c.create_or_derive_api_key(nonce=3) == created
    assert c.derive_api_key(nonce=4) != created


def test_closed_only_mode_and_key_deletion(exchange):
    c = official(exchange)
    assert c.get_closed_only_mode() == {"closed_only": False}
    assert c.delete_api_key() == "OK"
    assert refused(c.get_closed_only_mode)["status"] == 401  # the deleted key no longer signs


def test_requests_signed_on_the_server_clock(exchange):
    """``use_server_time``: every auth header stamped with ``GET /time`` (a bare integer here)."""
    acct = exchange.new_account(next(_accounts))
    c = ClobClient(exchange.urls.clob, 137, key=acct.private_key, use_server_time=True)
    c.set_api_creds(c.create_or_derive_api_key())
    assert c.get_closed_only_mode() == {"closed_only": False}


def test_heartbeat_echoes_its_id(exchange):
    c = official(exchange)
    first = c.post_heartbeat("")["heartbeat_id"]
    second = c.post_heartbeat(first)["heartbeat_id"]
    assert first and second and second != first
    wrong = refused(lambda: c.post_heartbeat(first))
    assert wrong["status"] == 400 and wrong["body"]["heartbeat_id"] == second


# -- public reads --------------------------------------------------------------------------------


def test_health_time_and_version(exchange):
    c = ClobClient(exchange.urls.clob, 137)
    assert c.get_ok() == "OK"
    assert abs(int(c.get_server_time()) - time.time()) < 60
    assert c.get_version() == 2


@pytest.mark.parametrize("call", ["get_markets", "get_simplified_markets", "get_sampling_markets",
                                  "get_sampling_simplified_markets"])
def test_market_lists_end_with_the_venue_cursor(exchange, call):
    """Read to the end the way the official client's own loops do: until ``LTE=``."""
    c = ClobClient(exchange.urls.clob, 137)
    cursor, seen, pages = "MA==", [], 0
    while cursor != "LTE=":
        page = getattr(c, call)(next_cursor=cursor)
        seen += [m["condition_id"] for m in page["data"]]
        cursor, pages = page["next_cursor"], pages + 1
        assert pages < 50
    assert seen and len(seen) == len(set(seen))


def test_market_and_market_info(exchange, market):
    c = ClobClient(exchange.urls.clob, 137)
    cond, tok = market["condition_id"], token_of(market)
    assert c.get_market(cond)["condition_id"] == cond
    info = c.get_clob_market_info(cond)
    assert {t["t"] for t in info["t"]} == {token_of(market, 0), token_of(market, 1)}
    assert c.get_tick_size(tok) == "0.01"  # cached from the market info, as the client reads it


def test_books_and_their_hash(exchange, market):
    c = ClobClient(exchange.urls.clob, 137)
    tok = token_of(market)
    book = c.get_order_book(tok)
    assert book["asset_id"] == tok and book["bids"] and book["asks"]
    assert c.get_order_book_hash(dict(book)) == book["hash"]  # the client's recipe, the exchange's hash
    both = c.get_order_books([BookParams(token_id=tok), BookParams(token_id=token_of(market, 1))])
    assert [b["asset_id"] for b in both] == [tok, token_of(market, 1)]


def test_tick_size_neg_risk_and_fees(exchange, markets):
    plain, neg = markets
    c = ClobClient(exchange.urls.clob, 137)
    assert c.get_tick_size(token_of(plain[0])) == "0.01"
    assert c.get_neg_risk(token_of(plain[0])) is False
    assert c.get_neg_risk(token_of(neg[0])) is True
    assert c.get_fee_rate_bps(token_of(plain[0])) == "0"  # base_fee as the live venue spells it: a string


def test_fee_exponent_resolves_the_market_by_token(exchange, market):
    """A fresh client knows no market of the token: it asks ``/markets-by-token`` first."""
    c = ClobClient(exchange.urls.clob, 137)
    exponent = c.get_fee_exponent(token_of(market))
    assert exponent == ClobClient(exchange.urls.clob, 137).get_clob_market_info(market["condition_id"])["fd"]["e"]


def test_market_by_token_names_the_market_and_both_tokens(exchange, market):
    c = ClobClient(exchange.urls.clob, 137)
    got = c._get(f"{exchange.urls.clob}/markets-by-token/{token_of(market, 1)}")
    assert got == {"condition_id": market["condition_id"], "primary_token_id": token_of(market, 0),
                   "secondary_token_id": token_of(market, 1)}


def test_prices_and_midpoints(exchange, market):
    c = ClobClient(exchange.urls.clob, 137)
    tok = token_of(market)
    book = c.get_order_book(tok)
    bid = max(float(b["price"]) for b in book["bids"])
    ask = min(float(a["price"]) for a in book["asks"])
    assert float(c.get_price(tok, "BUY")["price"]) == bid
    assert float(c.get_price(tok, "SELL")["price"]) == ask
    prices = c.get_prices([BookParams(token_id=tok, side="BUY"), BookParams(token_id=tok, side="SELL")])
    assert prices == {tok: {"BUY": c.get_price(tok, "BUY")["price"], "SELL": c.get_price(tok, "SELL")["price"]}}
    mid = c.get_midpoint(tok)["mid"]
    assert float(mid) == pytest.approx((bid + ask) / 2)
    other = token_of(market, 1)
    assert c.get_midpoints([BookParams(token_id=tok), BookParams(token_id=other)]) == {
        tok: mid, other: c.get_midpoint(other)["mid"]}


def test_spreads(exchange, market):
    c = ClobClient(exchange.urls.clob, 137)
    tok, other = token_of(market), token_of(market, 1)
    spread = c.get_spread(tok)["spread"]
    assert float(spread) == pytest.approx(float(c.get_price(tok, "SELL")["price"])
                                          - float(c.get_price(tok, "BUY")["price"]))
    assert c.get_spreads([BookParams(token_id=tok), BookParams(token_id=other)]) == {
        tok: spread, other: c.get_spread(other)["spread"]}


def test_last_trade_prices_follow_a_trade(exchange, markets):
    plain, _ = markets
    m = plain[1]
    tok, other = token_of(m), token_of(m, 1)
    c = official(exchange)
    res = c.create_and_post_market_order(MarketOrderArgsV2(token_id=tok, amount=3, side="BUY"))
    assert res["status"] == "matched", res
    last_trade = c.get_trades(TradeParams(id=res["tradeIDs"][-1]))[0]
    last = c.get_last_trade_price(tok)
    assert last == {"price": last_trade["price"], "side": "BUY"}
    both = c.get_last_trades_prices([BookParams(token_id=tok), BookParams(token_id=other)])
    complement = str((1 - Decimal(last["price"])).normalize())
    assert both == [{"token_id": tok, **last}, {"token_id": other, "price": complement, "side": "SELL"}]


def test_prices_history(exchange, market):
    c = ClobClient(exchange.urls.clob, 137)
    now = int(time.time())
    hist = c.get_prices_history(PricesHistoryParams(market=token_of(market), start_ts=now - 3600, end_ts=now,
                                                   fidelity=10))
    assert len(hist["history"]) == 7 and all(0 < p["p"] < 1 for p in hist["history"])
    assert c.get_prices_history(PricesHistoryParams(market=token_of(market), interval="1h"))["history"]


def test_market_price_from_the_book(exchange, market):
    c = ClobClient(exchange.urls.clob, 137)
    tok = token_of(market)
    ask = min(float(a["price"]) for a in c.get_order_book(tok)["asks"])
    assert c.calculate_market_price(tok, "BUY", 1) == ask
    with pytest.raises(Exception, match="no match"):
        c.calculate_market_price(tok, "BUY", 10**9, OrderType.FOK)


# -- balances --------------------------------------------------------------------------------------


def test_balances_and_allowances(exchange, market):
    acct = exchange.new_account(next(_accounts), usdc="250", shares="40")
    c = official(exchange, acct)
    usdc = c.get_balance_allowance(BalanceAllowanceParams(asset_type=AssetType.COLLATERAL))
    assert usdc["balance"] == "250000000" and int(usdc["allowance"]) > 0
    tok = token_of(market)
    shares = c.get_balance_allowance(BalanceAllowanceParams(asset_type=AssetType.CONDITIONAL, token_id=tok))
    assert shares["balance"] == "40000000"
    assert c.update_balance_allowance(BalanceAllowanceParams(asset_type=AssetType.COLLATERAL)) == usdc


# -- orders ----------------------------------------------------------------------------------------


def _open_ids(c, **params) -> dict[str, dict]:
    return {o["id"]: o for o in c.get_open_orders(OpenOrderParams(**params))}


def test_limit_gtc_rests_and_reads_back_in_the_live_spelling(exchange, markets):
    plain, _ = markets
    m = plain[2]
    c = official(exchange)
    tok = token_of(m)
    signed = c.create_order(OrderArgsV2(token_id=tok, price=0.21, size=12.5, side="BUY"))
    res = c.post_order(signed, OrderType.GTC)
    assert res["success"] and res["status"] == "live" and res["errorMsg"] == ""
    oid = res["orderID"]
    order = c.get_order(oid)  # the bare order, as the live venue answers
    assert list(order) == CAPTURED_ORDER_KEYS
    assert (order["id"], order["status"], order["side"], order["price"], order["original_size"],
            order["size_matched"], order["order_type"], order["expiration"]) == (
        oid, "LIVE", "BUY", "0.21", "12.5", "0", "GTC", "0")
    assert isinstance(order["created_at"], int) and abs(order["created_at"] - time.time()) < 60
    assert order["maker_address"] == c.get_address() and order["asset_id"] == tok
    mine = _open_ids(c, asset_id=tok)
    assert mine[oid] == order
    assert convert(order, OpenOrder).original_size == "12.5"  # our client reads the live spelling too


def test_limit_gtd_carries_its_expiration(exchange, markets):
    plain, _ = markets
    c = official(exchange)
    tok = token_of(plain[2])
    expiration = int(time.time()) + 3600
    res = c.create_and_post_order(OrderArgsV2(token_id=tok, price=0.22, size=5, side="BUY", expiration=expiration),
                                  order_type=OrderType.GTD)
    assert res["status"] == "live", res
    order = c.get_order(res["orderID"])
    assert (order["order_type"], order["expiration"]) == ("GTD", str(expiration))
    past = c.create_and_post_order(
        OrderArgsV2(token_id=tok, price=0.22, size=5, side="BUY", expiration=int(time.time()) - 10),
        order_type=OrderType.GTD)
    assert past["success"] is False and past["errorMsg"] == "invalid expiration"


def test_post_only_rests_or_is_refused_when_it_would_cross(exchange, markets):
    plain, _ = markets
    c = official(exchange)
    tok = token_of(plain[2])
    ask = min(float(a["price"]) for a in c.get_order_book(tok)["asks"])
    rests = c.create_and_post_order(OrderArgsV2(token_id=tok, price=0.23, size=5, side="BUY"), post_only=True)
    assert rests["status"] == "live", rests
    crosses = c.create_and_post_order(OrderArgsV2(token_id=tok, price=ask, size=5, side="BUY"), post_only=True)
    assert crosses["success"] is False and crosses["errorMsg"] == "invalid post-only order: order crosses book"


def test_limit_on_a_neg_risk_market_is_signed_for_its_exchange(exchange, markets):
    _, neg = markets
    c = official(exchange)
    res = c.create_and_post_order(OrderArgsV2(token_id=token_of(neg[0]), price=0.05, size=6, side="BUY"))
    assert res["status"] == "live", res


def _market_order(exchange, m: dict, side: str, amount: float, order_type: str):
    c = official(exchange)
    tok = token_of(m)
    before = c.get_balance_allowance(BalanceAllowanceParams(asset_type=AssetType.CONDITIONAL, token_id=tok))
    res = c.create_and_post_market_order(MarketOrderArgsV2(token_id=tok, amount=amount, side=side,
                                                           order_type=order_type), order_type=order_type)
    assert res["success"] and res["status"] == "matched" and res["tradeIDs"], res
    trades = c.get_trades(TradeParams(id=res["tradeIDs"][0]))
    assert [t["id"] for t in trades] == res["tradeIDs"][:1] and trades[0]["side"] == side
    assert trades[0]["transaction_hash"] and res["transactionsHashes"]  # the client waited for them
    convert(trades[0], Trade)
    after = c.get_balance_allowance(BalanceAllowanceParams(asset_type=AssetType.CONDITIONAL, token_id=tok))
    moved = int(after["balance"]) - int(before["balance"])
    return res, moved


@pytest.mark.parametrize("order_type", [OrderType.FOK, OrderType.FAK])
def test_market_buy(exchange, markets, order_type):
    plain, _ = markets
    res, moved = _market_order(exchange, plain[3], "BUY", 4, order_type)
    assert res["makingAmount"] and float(res["makingAmount"]) <= 4
    assert moved == round(float(res["takingAmount"]) * 10**6) > 0


@pytest.mark.parametrize("order_type", [OrderType.FOK, OrderType.FAK])
def test_market_sell(exchange, markets, order_type):
    plain, _ = markets
    res, moved = _market_order(exchange, plain[3], "SELL", 6, order_type)
    assert res["makingAmount"] == "6" and moved == -6_000_000


def test_market_fok_too_big_is_refused_locally_and_fak_takes_what_is_there(exchange, markets):
    plain, _ = markets
    c = official(exchange)
    tok = token_of(plain[0])
    with pytest.raises(Exception, match="no match"):
        c.create_market_order(MarketOrderArgsV2(token_id=tok, amount=10**6, side="BUY", order_type=OrderType.FOK))
    res = c.create_and_post_market_order(
        MarketOrderArgsV2(token_id=tok, amount=5000, side="BUY", order_type=OrderType.FAK), order_type=OrderType.FAK)
    assert res["status"] == "matched" and 0 < float(res["makingAmount"]) < 5000, res


def test_batch_places_in_order(exchange, markets):
    plain, _ = markets
    c = official(exchange)
    tok = token_of(plain[2])
    args = [PostOrdersV2Args(order=c.create_order(OrderArgsV2(token_id=tok, price=p, size=5, side="BUY")),
                             orderType=OrderType.GTC) for p in (0.11, 0.12, 0.13)]
    res = c.post_orders(args)
    assert [r["status"] for r in res] == ["live"] * 3
    mine = _open_ids(c, asset_id=tok)
    assert [mine[r["orderID"]]["price"] for r in res] == ["0.11", "0.12", "0.13"]


def test_cancels(exchange, markets):
    plain, _ = markets
    c = official(exchange)
    tok, cond = token_of(plain[1]), plain[1]["condition_id"]

    def place(n: int) -> list[str]:
        args = [PostOrdersV2Args(order=c.create_order(OrderArgsV2(token_id=tok, price=0.02 + i / 100, size=5,
                                                                   side="BUY"))) for i in range(n)]
        return [r["orderID"] for r in c.post_orders(args)]

    one, two, three, four = place(1), place(2), place(3), place(2)
    assert c.cancel_order(OrderPayload(orderID=one[0])) == {"canceled": one, "not_canceled": {}}
    assert sorted(c.cancel_orders(two)["canceled"]) == sorted(two)
    gone = c.cancel_market_orders(OrderMarketCancelParams(market=cond, asset_id=tok))
    assert sorted(gone["canceled"]) == sorted(three + four)
    five = place(2)
    assert sorted(c.cancel_all()["canceled"]) == sorted(five)
    again = c.cancel_order(OrderPayload(orderID=one[0]))
    assert again["canceled"] == [] and one[0] in again["not_canceled"]
    assert _open_ids(c) == {}


def test_open_orders_are_read_to_the_end_of_the_list(exchange, markets):
    """More orders than a page: the client's loop stops on ``LTE=``, every order seen once."""
    plain, _ = markets
    c = official(exchange)
    tok = token_of(plain[0])
    placed = []
    for batch in range(8):
        args = [PostOrdersV2Args(order=c.create_order(OrderArgsV2(token_id=tok, price=0.01 + (i % 5) / 100,
                                                                   size=5 + batch, side="BUY")))
                for i in range(15)]
        placed += [r["orderID"] for r in c.post_orders(args)]
    assert len(set(placed)) == 120
    first = c.get_open_orders(only_first_page=True)
    assert len(first) == 100
    everything = c.get_open_orders()
    assert sorted(o["id"] for o in everything) == sorted(placed)
    assert all(list(o) == CAPTURED_ORDER_KEYS for o in everything)
    raw = c._get(f"{exchange.urls.clob}/data/orders", headers=c._l2_headers("GET", "/data/orders"),
                 params={"next_cursor": "MTAw"})
    assert raw["next_cursor"] == "LTE=" and len(raw["data"]) == 20
    assert c.get_pre_migration_orders() == []
    c.cancel_all()


def test_trades_read_and_paginated(exchange, markets):
    plain, _ = markets
    c = official(exchange)
    tok = token_of(plain[3])
    res = c.create_and_post_market_order(MarketOrderArgsV2(token_id=tok, amount=2, side="BUY"))
    assert res["status"] == "matched", res
    trades = c.get_trades()
    assert res["tradeIDs"][0] in {t["id"] for t in trades}
    page = c.get_trades_paginated(TradeParams(asset_id=tok))
    assert page["next_cursor"] == "LTE=" and {t["id"] for t in page["trades"]} >= set(res["tradeIDs"])


def test_float_amounts_the_client_signs_are_booked_as_signed(exchange, markets):
    """venue.md 3.4: in the client's binary floats a size of 5.06 shares floors to 5.05; the
    exchange books exactly the amounts signed (it neither rejects nor repairs them)."""
    plain, _ = markets
    c = official(exchange)
    tok = token_of(plain[2])
    signed = c.create_order(OrderArgsV2(token_id=tok, price=0.5, size=5.06, side="BUY"))
    assert (int(signed.makerAmount), int(signed.takerAmount)) == (2_525_000, 5_050_000)  # exact: 2530000/5060000
    res = c.post_order(signed)
    assert res["status"] == "live", res
    order = c.get_order(res["orderID"])
    assert order["original_size"] == f"{int(signed.takerAmount) / 10**6:g}"


def test_float_amounts_off_the_tick_grid_are_refused_not_repaired(exchange):
    """venue.md 3.4 at scale: BUY 361974.22 @ 0.9652 on a 0.0001 tick is 349377.517144 USDC exactly;
    the client's floats sign one unit less, an implied price off the grid, and the exchange refuses
    the order with its reason rather than accept a price nobody asked for."""
    acct = exchange.new_account(next(_accounts), usdc="400000")
    c = official(exchange, acct)
    signed = c.create_order(OrderArgsV2(token_id=FINE.token_id, price=0.9652, size=361974.22, side="BUY"))
    assert (int(signed.makerAmount), int(signed.takerAmount)) == (349_377_517_143, 361_974_220_000)
    res = c.post_order(signed)
    assert res["success"] is False and "implied price is not on the tick grid" in res["errorMsg"], res
    assert _open_ids(c) == {}


# -- what the local exchange does not serve -------------------------------------------------------


UNSERVED_CALLS = {
    "get_notifications": lambda c, m: c.get_notifications(),
    "drop_notifications": lambda c, m: c.drop_notifications(),
    "create_builder_api_key": lambda c, m: c.create_builder_api_key(),
    "get_builder_api_keys": lambda c, m: c.get_builder_api_keys(),
    "revoke_builder_api_key": lambda c, m: c.revoke_builder_api_key(),
    "create_readonly_api_key": lambda c, m: c.create_readonly_api_key(),
    "get_readonly_api_keys": lambda c, m: c.get_readonly_api_keys(),
    "delete_readonly_api_key": lambda c, m: c.delete_readonly_api_key("k"),
    "is_order_scoring": lambda c, m: c.is_order_scoring(OrderScoringParams(orderId="0x" + "1" * 64)),
    "are_orders_scoring": lambda c, m: c.are_orders_scoring(OrdersScoringParams(orderIds=["0x" + "1" * 64])),
    "get_earnings_for_user_for_day": lambda c, m: c.get_earnings_for_user_for_day("2026-07-24"),
    "get_total_earnings_for_user_for_day": lambda c, m: c.get_total_earnings_for_user_for_day("2026-07-24"),
    "get_user_earnings_and_markets_config": lambda c, m: c.get_user_earnings_and_markets_config("2026-07-24"),
    "get_reward_percentages": lambda c, m: c.get_reward_percentages(),
    "get_current_rewards": lambda c, m: c.get_current_rewards(),
    "get_raw_rewards_for_market": lambda c, m: c.get_raw_rewards_for_market(m["condition_id"]),
    "get_market_trades_events": lambda c, m: c.get_market_trades_events(m["condition_id"]),
    "get_builder_trades": lambda c, m: c.get_builder_trades(BuilderTradeParams(builder_code="0x" + "12" * 32)),
    "rfq.rfq_config": lambda c, m: c.rfq.rfq_config(),
    "rfq.get_rfq_requests": lambda c, m: c.rfq.get_rfq_requests(),
    "rfq.get_rfq_requester_quotes": lambda c, m: c.rfq.get_rfq_requester_quotes(),
    "rfq.get_rfq_quoter_quotes": lambda c, m: c.rfq.get_rfq_quoter_quotes(),
    "rfq.get_rfq_best_quote": lambda c, m: c.rfq.get_rfq_best_quote(GetRfqBestQuoteParams(request_id="r")),
    "rfq.cancel_rfq_request": lambda c, m: c.rfq.cancel_rfq_request(CancelRfqRequestParams(request_id="r")),
    "rfq.cancel_rfq_quote": lambda c, m: c.rfq.cancel_rfq_quote(CancelRfqQuoteParams(quote_id="q")),
    "rfq.create_rfq_request": lambda c, m: c.rfq.create_rfq_request(
        RfqUserRequest(token_id=token_of(m), price=0.5, side="BUY", size=10.0)),
    "rfq.create_rfq_quote": lambda c, m: c.rfq.create_rfq_quote(
        RfqUserQuote(request_id="r", token_id=token_of(m), price=0.5, side="SELL", size=10.0)),
    "rfq.accept_rfq_quote": lambda c, m: c.rfq.accept_rfq_quote(
        AcceptQuoteParams(request_id="r", quote_id="q", expiration=2_000_000_000)),
    "rfq.approve_rfq_order": lambda c, m: c.rfq.approve_rfq_order(
        ApproveOrderParams(request_id="r", quote_id="q", expiration=2_000_000_000)),
}


def test_every_call_the_local_exchange_does_not_serve_is_tried_and_the_counts_are_the_readmes():
    """The README's figure: 49 of the client's 78 calls work, the other 29 get the venue's error
    body, each of which a test below makes."""
    from collections import Counter

    assert set(UNSERVED_CALLS) == {name for name, kind in CALLS.items() if kind == UNSERVED}
    assert Counter(CALLS.values()) == {WORKS: 49, UNSERVED: 29}


@pytest.fixture(scope="module")
def any_client(exchange):
    return official(exchange)


@pytest.mark.parametrize("name", sorted(UNSERVED_CALLS))
def test_unserved_calls_get_the_venue_error_body(exchange, any_client, market, name):
    assert CALLS[name] == UNSERVED
    got = refused(lambda: UNSERVED_CALLS[name](any_client, market))
    assert got["status"] == 501
    assert set(got["body"]) == {"error"} and got["body"]["error"].startswith("not_implemented: ")


def test_unserved_l2_routes_check_credentials_first(exchange):
    c = official(exchange)
    c.set_api_creds(ApiCreds(api_key=c.creds.api_key, api_secret=c.creds.api_secret, api_passphrase="wrong"))
    assert refused(c.get_notifications)["status"] == 401


def test_live_open_order_model_matches_the_captured_keys():
    assert list(LiveOpenOrder.__struct_fields__) == CAPTURED_ORDER_KEYS
