"""The local exchange's two spellings, and our own client reading both.

By default the exchange answers as captures of the live venue show (snake_case open orders with
``created_at`` in epoch seconds, ``GET /data/order/{id}`` the bare order, ``LTE=`` at the end of
every list, ``base_fee`` a string); ``spelling = "seed"`` serves the spec's text (camelCase with ISO
``createdAt``, the order wrapped in ``{"order": ...}``, ``""`` at the end of market and order lists,
``base_fee`` a number). Requests are read in either header spelling.
"""

from __future__ import annotations

import pytest
import httpx

from bot.exchange.cli import build_config, build_parser
from bot.venue.auth import Credentials, auth_timestamp, l2_headers
from bot.venue.clob import ClobClient
from bot.venue.eip712 import Wallet
from bot.venue.enums import Side
from bot.venue.orders import OrderBuilder, orders_body
from bot.venue.transport import Transport
from tests.integration.exchange_fixture import seed_exchange, start_exchange  # noqa: F401

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

LIVE_KEYS = ["id", "status", "owner", "maker_address", "market", "asset_id", "side", "original_size",
             "size_matched", "price", "outcome", "expiration", "order_type", "associate_trades", "created_at"]
SEED_KEYS = {"associateTrades", "id", "status", "market", "originalSize", "outcome", "makerAddress", "owner",
             "price", "side", "sizeMatched", "assetId", "expiration", "order_type", "createdAt"}
ORDERS = 103  # more than a page of /data/orders (100)


@pytest.fixture(scope="module", params=["live", "seed"])
def spelled(request):
    """(exchange, spelling, the ids of ``ORDERS`` resting orders of the demo account, their token)."""
    ex = start_exchange(spelling=request.param)
    try:
        acct = ex.demo_account
        markets = httpx.get(ex.urls.clob + "/markets").json()["data"]
        m = next(m for m in markets if not m["neg_risk"] and m["minimum_tick_size"] == 0.01)
        token = m["tokens"][0]["token_id"]
        builder = OrderBuilder(Wallet(acct.private_key), chain_id=137)
        ids = []
        for start in range(0, ORDERS, 15):
            orders = [builder.limit(token, Side.BUY, 10_000 * (1 + i % 5), 5_000_000, 10_000, False,
                                    condition_id=m["condition_id"])
                      for i in range(min(15, ORDERS - start))]
            body = orders_body(orders, acct.creds.apiKey)
            r = _signed(ex, acct, "POST", "/orders", body)
            assert all(x["status"] == "live" for x in r.json()), r.text
            ids += [x["orderID"] for x in r.json()]
        yield ex, request.param, ids, token
    finally:
        ex.stop()


def _signed(ex, acct, method: str, path: str, body: bytes | None = None, params=None, live_headers=False):
    creds = Credentials(acct.creds.apiKey, acct.creds.secret, acct.creds.passphrase)
    headers = dict(l2_headers(creds, acct.address, method, path, body, auth_timestamp("s")))
    if live_headers:
        headers = {k.replace("SERVICE_", "POLY_"): v for k, v in headers.items()}
    return httpx.request(method, ex.urls.clob + path, content=body, headers=headers, params=params, timeout=10)


def test_open_orders_in_the_spelling_chosen(spelled):
    ex, spelling, ids, _ = spelled
    acct = ex.demo_account
    first = _signed(ex, acct, "GET", "/data/orders").json()
    second = _signed(ex, acct, "GET", "/data/orders", params={"next_cursor": first["next_cursor"]}).json()
    assert sorted(o["id"] for o in first["data"] + second["data"]) == sorted(ids)
    one = _signed(ex, acct, "GET", f"/data/order/{ids[0]}").json()
    one = one if spelling == "live" else one["order"]  # bare in the live venue's spelling, wrapped in the seed's
    if spelling == "live":
        assert second["next_cursor"] == "LTE="
        assert all(list(o) == LIVE_KEYS for o in first["data"] + [one])
        assert isinstance(one["created_at"], int) and one["original_size"] == "5"
    else:
        assert second["next_cursor"] == ""
        assert all(set(o) == SEED_KEYS for o in first["data"] + [one])
        assert one["createdAt"].endswith("Z") and one["originalSize"] == "5"


@pytest.mark.parametrize("path", ["/markets", "/simplified-markets", "/sampling-markets",
                                  "/sampling-simplified-markets"])
def test_market_lists_end_in_the_spelling_chosen(spelled, path):
    ex, spelling, _, _ = spelled
    page = httpx.get(ex.urls.clob + path).json()
    assert page["data"] and page["next_cursor"] == ("LTE=" if spelling == "live" else "")


def test_fee_rate_in_the_spelling_chosen(spelled):
    ex, spelling, _, token = spelled
    fee = httpx.get(ex.urls.clob + "/fee-rate", params={"token_id": token}).json()
    assert fee == {"base_fee": "0" if spelling == "live" else 0}


def test_trades_end_with_lte_in_both(spelled):
    ex, _, _, _ = spelled
    assert _signed(ex, ex.demo_account, "GET", "/data/trades").json()["next_cursor"] == "LTE="


def test_both_header_spellings_are_read(spelled):
    ex, _, ids, _ = spelled
    for live_headers in (False, True):
        r = _signed(ex, ex.demo_account, "GET", f"/data/order/{ids[1]}", live_headers=live_headers)
        assert r.status_code == 200, r.text
    r = httpx.get(ex.urls.clob + "/data/orders", headers={"POLY_API_KEY": ex.demo_account.creds.apiKey})
    assert r.status_code == 401 and r.json()["error"].startswith("unauthorized: missing header")


async def test_our_client_reads_either_spelling(spelled):
    ex, _, ids, token = spelled
    acct = ex.demo_account
    creds = Credentials(acct.creds.apiKey, acct.creds.secret, acct.creds.passphrase)
    async with Transport(ex.urls.clob) as t:
        clob = ClobClient(t, creds=creds, address=acct.address)
        orders = [o async for o in clob.get_orders()]
        assert sorted(o.id for o in orders) == sorted(ids)
        assert all(o.asset_id == token and o.original_size == "5" and o.created_at_ms for o in orders)
        one = await clob.get_order(ids[2])
        assert (one.id, one.size_matched, one.maker_address) == (ids[2], "0", acct.address)
        markets = [m async for m in clob.iter_markets()]
        assert len({m.condition_id for m in markets}) == len(markets) >= 4
        assert await clob.fee_rate(token) == "0"


def test_the_seed_fixture_serves_the_spec_text(seed_exchange):
    assert httpx.get(seed_exchange.urls.clob + "/markets").json()["next_cursor"] == ""


def test_the_spelling_is_a_flag_and_a_config_setting(tmp_path):
    assert build_config(build_parser().parse_args([])).spelling == "live"
    assert build_config(build_parser().parse_args(["--spelling", "seed"])).spelling == "seed"
    conf = tmp_path / "exchange.toml"
    conf.write_text('spelling = "seed"\n')
    assert build_config(build_parser().parse_args(["--config", str(conf)])).spelling == "seed"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--spelling", "neither"])
