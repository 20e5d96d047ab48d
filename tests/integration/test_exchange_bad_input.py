"""Client mistakes over real sockets: each gets the venue's 400 body and changes nothing."""

from __future__ import annotations

import json
import time

import httpx
import pytest
import websockets.sync.client as wsc
from websockets.exceptions import ConnectionClosed

from bot.exchange.bodies import MAX_BODY_BYTES
from bot.venue.auth import auth_timestamp, l1_headers, l2_headers
from bot.venue.eip712 import Wallet
from tests.integration.exchange_fixture import exchange  # noqa: F401

pytestmark = pytest.mark.integration

DEEP = b"[" * 50_000 + b"]" * 50_000


def snapshot(ex) -> tuple:
    """What a refused request must leave as it was: keys, orders, trades, the demo's balance."""
    def read():
        st = ex.exchange.state
        bal = st.engine.balance(ex.demo_account.address)
        return (len(st.keys), len(st.engine.orders), len(st.engine.trades), bal.collateral, bal.collateral_reserved)
    return ex.call(read)


def assert_client_error(r: httpx.Response) -> None:
    assert r.status_code == 400, (r.status_code, r.text)
    body = r.json()
    assert set(body) == {"error"} and isinstance(body["error"], str) and body["error"], body
    assert "internal_error" not in body["error"]


def test_client_mistakes_are_400_and_change_nothing(exchange):
    ex = exchange
    u = ex.urls
    acct = ex.demo_account
    from bot.venue.auth import Credentials

    creds = Credentials(acct.creds.apiKey, acct.creds.secret, acct.creds.passphrase)
    token = httpx.get(u.clob + "/markets").json()["data"][0]["tokens"][0]["token_id"]
    before = snapshot(ex)

    # 50 000 levels of nesting, on an authenticated order post and on a public batch
    headers = l2_headers(creds, acct.address, "POST", "/order", DEEP, auth_timestamp())
    assert_client_error(httpx.post(u.clob + "/order", content=DEEP, headers=headers, timeout=20))
    assert_client_error(httpx.post(u.clob + "/prices", content=DEEP, timeout=20))
    # L1 numbers that overflow: a 100-digit nonce, a 400-digit timestamp
    w = Wallet("0x" + "77" * 32)
    h = l1_headers(w, 137, str(int(time.time())))
    assert_client_error(httpx.post(u.clob + "/auth/api-key", headers=h | {"SERVICE_NONCE": "9" * 100}))
    assert_client_error(httpx.post(u.clob + "/auth/api-key", headers=h | {"SERVICE_TIMESTAMP": "9" * 400}))
    # the same overflowing timestamp on an L2 route
    h2 = l2_headers(creds, acct.address, "GET", "/data/orders", None, auth_timestamp())
    assert_client_error(httpx.get(u.clob + "/data/orders", headers=h2 | {"SERVICE_TIMESTAMP": "9" * 400}))
    # numbers that are not numbers, or out of range
    for q in ({"sizeThreshold": "nan"}, {"sizeThreshold": "inf"}, {"limit": "-1"}, {"offset": "1e3"}):
        assert_client_error(httpx.get(u.data + "/positions", params={"user": acct.address} | q))
    assert_client_error(httpx.get(u.data + "/holders", params={"market": "0x1", "minBalance": "Infinity"}))
    assert_client_error(httpx.get(u.clob + "/prices-history", params={"market": token, "startTs": "-5"}))

    assert snapshot(ex) == before
    # and the refused L1 calls registered nothing: the key made now is new
    ok = httpx.post(u.clob + "/auth/api-key", headers=h)
    assert ok.status_code == 200
    assert snapshot(ex)[0] == before[0] + 1


def test_malformed_websocket_frames_never_break_the_channel(exchange):
    """Wrong JSON types and deep nesting in frames: ignored, or a 1008 close for a bad first frame;
    never an internal error (1011), and a channel that was serving keeps serving."""
    url = exchange.urls.ws
    for first in ({"type": 5}, {"type": "user", "auth": "x"}, {"type": "user", "auth": {"apiKey": [], "secret": 3}}):
        with wsc.connect(url + ("/ws/user" if first["type"] == "user" else "/ws/market")) as ws:
            ws.send(json.dumps(first))
            with pytest.raises(ConnectionClosed):
                ws.recv(timeout=5)
            assert ws.close_code == 1008, (first, ws.close_code)
    with wsc.connect(url + "/ws/market", max_size=None) as ws:
        ws.send(json.dumps({"type": "market", "assets_ids": 7, "custom_feature_enabled": False}))
        for frame in ("[" * 50_000 + "]" * 50_000, json.dumps({"operation": "subscribe", "assets_ids": {"a": 1}}),
                      json.dumps({"operation": "unsubscribe", "assets_ids": 3}), "[1, 2]", "null"):
            ws.send(frame)
        ws.send("PING")
        assert ws.recv(timeout=5) == "PONG"
        ws.send("[" + " " * MAX_BODY_BYTES + "]")  # a frame over the cap ends the connection (1009)
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=5)
        assert ws.close_code == 1009


def test_unrouted_requests_get_the_venue_error_bodies(exchange):
    u = exchange.urls
    for base, shape in ((u.clob, {"error"}), (u.data, {"error"}), (u.catalog, {"type", "error"})):
        r = httpx.get(base + "/no/such/route")
        assert r.status_code == 404 and set(r.json()) == shape, r.text
    r = httpx.delete(u.clob + "/book")
    assert r.status_code == 405 and r.json() == {"error": "method DELETE not allowed"}
    r = httpx.put(u.catalog + "/markets")
    assert r.status_code == 405 and set(r.json()) == {"type", "error"}
