"""The local exchange over real sockets: auth, orders, fills, user channel, settlement, errors."""

from __future__ import annotations

import json
import time

import httpx
import pytest
import websockets.sync.client as wsc

from bot.venue.auth import Credentials, auth_timestamp, l1_headers, l2_headers
from bot.venue.eip712 import Wallet
from bot.venue.enums import Side
from bot.venue.orders import OrderBuilder, orders_body
from tests.integration.exchange_fixture import exchange, start_exchange, wait_for  # noqa: F401

pytestmark = pytest.mark.integration


def creds_of(acct) -> Credentials:
    return Credentials(acct.creds.apiKey, acct.creds.secret, acct.creds.passphrase)


def signed(method: str, base: str, path: str, acct, body: bytes | None = None, **kw) -> httpx.Response:
    headers = l2_headers(creds_of(acct), acct.address, method, path, body, auth_timestamp())
    return httpx.request(method, base + path, content=body, headers=headers, timeout=10, **kw)


def first_market(ex):
    m = httpx.get(ex.urls.clob + "/markets").json()["data"][0]
    return m["condition_id"], m["tokens"][0]["token_id"], m["neg_risk"]


def test_vector_order_is_accepted(exchange, signing_vectors):
    v = signing_vectors
    o = next(x for x in v["orders"] if x["id"] == "limit_buy_t001_eoa")
    body = json.loads(o["outputs"]["post_body"])
    order = body["order"]
    order.pop("expiration", None)
    items = list(order.items())
    items.insert(4, ("conditionId", o["inputs"]["condition_id_for_service_variant"]))
    body["order"] = dict(items)
    raw = json.dumps([body], separators=(",", ":")).encode()

    class Acct:
        address = v["test_eoa_address"]
        creds = type("C", (), v["api_creds"] | {"apiKey": v["api_creds"]["apiKey"]})

    r = signed("POST", exchange.urls.clob, "/orders", Acct, raw)
    assert r.status_code == 200, r.text
    res = r.json()[0]
    assert res["success"] is True and res["errorMsg"] == "", res
    assert res["orderID"] == o["outputs"]["typed_data_hash"]
    # the same signed order again is a duplicate
    r2 = signed("POST", exchange.urls.clob, "/orders", Acct, raw)
    assert r2.json()[0]["success"] is False and r2.json()[0]["errorMsg"]


def test_l1_create_and_derive(exchange):
    w = Wallet("0x" + "11" * 32)
    ts = str(int(time.time()))
    a = httpx.post(exchange.urls.clob + "/auth/api-key", headers=l1_headers(w, 137, ts)).json()
    b = httpx.get(exchange.urls.clob + "/auth/derive-api-key", headers=l1_headers(w, 137, ts)).json()
    assert a == b and set(a) == {"apiKey", "secret", "passphrase"}
    bad = httpx.get(exchange.urls.clob + "/auth/derive-api-key", headers=l1_headers(w, 80002, ts))
    assert bad.status_code == 401 and bad.json()["error"].startswith("unauthorized: ")


def test_maker_filled_seen_on_user_channel_and_confirmed(exchange):
    maker = exchange.demo_account
    taker = exchange.new_account(1)
    cond, token, neg = first_market(exchange)
    book = httpx.get(exchange.urls.clob + "/book", params={"token_id": token}).json()
    best_bid = max(int(round(float(l["price"]) * 100)) for l in book["bids"])
    best_ask = min(int(round(float(l["price"]) * 100)) for l in book["asks"])
    price = (best_bid + 1) * 10_000
    assert price < best_ask * 10_000
    with wsc.connect(exchange.urls.ws + "/ws/user") as ws:
        ws.send(json.dumps({"type": "user", "auth": {"apiKey": maker.creds.apiKey, "secret": maker.creds.secret,
                                                     "passphrase": maker.creds.passphrase}}))
        ws.send("PING")
        assert ws.recv(timeout=5) == "PONG"
        mb = OrderBuilder(Wallet(maker.private_key), 137)
        so = mb.limit(token, Side.BUY, price, 10_000_000, 10_000, neg, condition_id=cond)
        r = signed("POST", exchange.urls.clob, "/orders", maker, orders_body([so], maker.creds.apiKey))
        res = r.json()[0]
        assert res["success"] and res["status"] == "live", res
        oid = res["orderID"]
        tb = OrderBuilder(Wallet(taker.private_key), 137)
        sell = tb.limit(token, Side.SELL, price, 10_000_000, 10_000, neg, condition_id=cond)
        r = signed("POST", exchange.urls.clob, "/orders", taker, orders_body([sell], taker.creds.apiKey))
        assert r.json()[0]["status"] == "matched", r.json()
        statuses = set()
        kinds = set()
        end = time.monotonic() + 8
        while "CONFIRMED" not in statuses and time.monotonic() < end:
            frame = json.loads(ws.recv(timeout=5))
            for ev in frame if isinstance(frame, list) else [frame]:
                kinds.add((ev["event_type"], ev.get("type")))
                if ev["event_type"] == "trade":
                    assert ev["maker_orders"][0]["order_id"] == oid
                    statuses.add(ev["status"])
        assert {"MATCHED", "MINED", "CONFIRMED"} <= statuses
        assert ("order", "PLACEMENT") in kinds
    trades = signed("GET", exchange.urls.clob, "/data/trades", maker).json()
    assert trades["next_cursor"] == "LTE="
    mine = [t for t in trades["data"] if any(m["order_id"] == oid for m in t["maker_orders"])]
    assert mine and mine[0]["status"] == "CONFIRMED" and mine[0]["trader_side"] == "MAKER"
    orders = signed("GET", exchange.urls.clob, "/data/orders", maker).json()
    assert orders["next_cursor"] == "LTE=" and all(o["id"] != oid for o in orders["data"])


def test_market_channel_snapshot_and_deltas(exchange):
    cond, token, neg = first_market(exchange)
    acct = exchange.demo_account
    with wsc.connect(exchange.urls.ws + "/ws/market") as ws:
        ws.send(json.dumps({"type": "market", "assets_ids": [token], "custom_feature_enabled": True}))
        snap = json.loads(ws.recv(timeout=5))
        assert isinstance(snap, list) and snap[0]["event_type"] == "book" and snap[0]["asset_id"] == token
        so = OrderBuilder(Wallet(acct.private_key), 137).limit(token, Side.BUY, 10_000, 5_000_000, 10_000, neg,
                                                               condition_id=cond)
        signed("POST", exchange.urls.clob, "/orders", acct, orders_body([so], acct.creds.apiKey))
        ev = json.loads(ws.recv(timeout=5))
        assert ev["event_type"] == "price_change"
        ch = [c for c in ev["price_changes"] if c["asset_id"] == token]
        assert ch and ch[0]["price"] == "0.01" and ch[0]["side"] == "BUY"
        signed("DELETE", exchange.urls.clob, "/cancel-all", acct)
    with wsc.connect(exchange.urls.ws + "/ws/market") as ws:
        ws.send(json.dumps({"type": "market", "assets_ids": [str(i) for i in range(501)]}))
        with pytest.raises(Exception):
            ws.recv(timeout=5)
        assert ws.close_code == 1008


def test_errors_of_section_7(exchange):
    u = exchange.urls
    r = httpx.get(u.catalog + "/public-search")
    assert r.status_code == 400 and r.json() == {"type": "bad request", "error": "q is required"}
    r = httpx.get(u.catalog + "/events/999999")
    assert r.status_code == 404 and r.json() == {"type": "not found error", "error": "id not found"}
    r = httpx.get(u.catalog + "/events/slug/nope")
    assert r.status_code == 404 and r.json() == {"type": "not found error", "error": "slug not found"}
    r = httpx.get(u.data + "/positions", params={"user": exchange.demo_account.address, "bogus": "1"})
    assert r.status_code == 400 and r.json() == {"error": "unknown_field: bogus"}
    r = httpx.get(u.data + "/holders", params={"market": "0x1", "sortBy": "x"})
    assert r.json() == {"error": "unknown_field: sortBy"}
    r = httpx.get(u.clob + "/data/orders")
    assert r.status_code == 401 and r.json()["error"].startswith("unauthorized: ")


def test_heartbeat_expiry_and_rate_limits():
    ex = start_exchange(heartbeat_timeout_s=0.5, limits_scale=0.01, allow_ips=("10.0.0.1",))
    try:
        acct = ex.demo_account
        cond, token, neg = first_market(ex)
        so = OrderBuilder(Wallet(acct.private_key), 137).limit(token, Side.BUY, 10_000, 5_000_000, 10_000, neg,
                                                               condition_id=cond)
        assert signed("POST", ex.urls.clob, "/orders", acct, orders_body([so], acct.creds.apiKey)).json()[0]["success"]
        r = signed("POST", ex.urls.clob, "/v1/heartbeats", acct, b'{"heartbeat_id":""}')
        hid = r.json()["heartbeat_id"]
        bad = signed("POST", ex.urls.clob, "/v1/heartbeats", acct, b'{"heartbeat_id":"wrong"}')
        assert bad.status_code == 400 and bad.json() == {"error_msg": "Invalid Heartbeat ID", "heartbeat_id": hid}
        wait_for(lambda: not signed("GET", ex.urls.clob, "/data/orders", acct).json()["data"], 5, "heartbeat cancel")
        # 429 with Retry-After once the (scaled) /book window is full: 200 * 0.01 = 2 per 10 s
        codes = [httpx.get(ex.urls.clob + "/book", params={"token_id": token}) for _ in range(3)]
        assert [c.status_code for c in codes[:2]] == [200, 200]
        assert codes[2].status_code == 429 and int(codes[2].headers["Retry-After"]) >= 1
        # allow-list refusal
        r = httpx.get(ex.urls.data + "/positions", params={"user": acct.address})
        assert r.status_code == 403 and r.json() == {"error": "unauthorized: ip_not_allowlisted"}
    finally:
        ex.stop()


def test_single_port_mode():
    ex = start_exchange(single_port=True)
    try:
        assert httpx.get(ex.urls.clob + "/version").json() == {"version": 2}
        assert isinstance(httpx.get(ex.urls.catalog + "/markets").json(), list)
        acct = ex.demo_account
        assert signed("GET", ex.urls.clob, "/data/orders", acct).status_code == 200
    finally:
        ex.stop()
