"""Bad and replayed signatures over real sockets: L2 headers moved to another body or path, stale,
or tampered with; L1 headers replayed with another nonce or address; a signed order sent twice or
with a tampered signature. Each gets the venue's error body (or an order result that is not
accepted), never a 5xx, and changes nothing."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from bot.venue.auth import auth_timestamp, l1_headers, l2_headers
from bot.venue.eip712 import Wallet
from bot.venue.enums import Side
from bot.venue.orders import OrderBuilder, order_body
from tests.integration.exchange_fixture import exchange, start_exchange  # noqa: F401
from tests.integration.test_exchange_bad_input import snapshot
from tests.integration.test_exchange_trading import creds_of, first_market

pytestmark = pytest.mark.integration


def refused_order(r: httpx.Response) -> None:
    """The venue's refusals of an order: a 4xx error body, or a result not accepted (10.1)."""
    assert r.status_code < 500, (r.status_code, r.text)
    body = r.json()
    if r.status_code >= 400:
        assert set(body) == {"error"} and body["error"], r.text
    else:
        assert body["success"] is False and body["errorMsg"] and body["status"] == "unmatched", r.text


def unauthorized(r: httpx.Response) -> None:
    assert r.status_code == 401, (r.status_code, r.text)
    assert set(r.json()) == {"error"} and r.json()["error"].startswith("unauthorized: "), r.text


def test_moved_stale_or_tampered_l2_headers_are_refused_and_change_nothing(exchange):
    ex, acct = exchange, exchange.demo_account
    cond, token, neg = first_market(ex)
    creds = creds_of(acct)
    builder = OrderBuilder(Wallet(acct.private_key), 137)
    body = order_body(builder.limit(token, Side.BUY, 10_000, 5_000_000, 10_000, neg, condition_id=cond),
                      acct.creds.apiKey)
    other = order_body(builder.limit(token, Side.BUY, 20_000, 5_000_000, 10_000, neg, condition_id=cond),
                       acct.creds.apiKey)
    headers = l2_headers(creds, acct.address, "POST", "/order", body, auth_timestamp())
    before = snapshot(ex)

    url = ex.urls.clob
    unauthorized(httpx.post(url + "/order", content=other, headers=headers))  # another body
    unauthorized(httpx.post(url + "/orders", content=b"[" + body + b"]", headers=headers))  # another path
    unauthorized(httpx.delete(url + "/cancel-all", headers=headers))  # another method and path
    sig = headers["SERVICE_SIGNATURE"]
    for bad in (sig[:-2] + ("A=" if sig[-2] != "A" else "B="), sig[:20], "", "not base64!" * 4, sig + sig):
        unauthorized(httpx.post(url + "/order", content=body, headers=headers | {"SERVICE_SIGNATURE": bad}))
    for name, value in (("SERVICE_PASSPHRASE", creds.passphrase.reveal() + "x"),
                        ("SERVICE_API_KEY", "00000000-0000-4000-8000-000000000000"),
                        ("SERVICE_ADDRESS", Wallet("0x" + "66" * 32).address)):
        unauthorized(httpx.post(url + "/order", content=body, headers=headers | {name: value}))
    assert snapshot(ex) == before

    # the untouched headers still work once: the exchange refused the others, it did not burn them
    r = httpx.post(url + "/order", content=body, headers=headers)
    assert r.status_code == 200 and r.json()["success"] is True, r.text
    placed = snapshot(ex)
    assert placed[1] == before[1] + 1
    # the very same request again: the same order hash, never a second order
    oid = r.json()["orderID"]
    refused_order(httpx.post(url + "/order", content=body, headers=headers))
    assert snapshot(ex) == placed
    cancel = json.dumps({"orderID": oid}).encode()
    r = httpx.request("DELETE", url + "/order", content=cancel,
                      headers=l2_headers(creds, acct.address, "DELETE", "/order", cancel, auth_timestamp()))
    assert r.json()["canceled"] == [oid]


def test_a_tampered_order_signature_is_refused_and_changes_nothing(exchange):
    ex, acct = exchange, exchange.demo_account
    cond, token, neg = first_market(ex)
    so = OrderBuilder(Wallet(acct.private_key), 137).limit(token, Side.BUY, 10_000, 5_000_000, 10_000, neg,
                                                           condition_id=cond)
    doc = json.loads(order_body(so, acct.creds.apiKey))
    creds = creds_of(acct)
    sig = doc["order"]["signature"]
    before = snapshot(ex)
    for bad in (sig[:-2] + ("1c" if sig[-2:] != "1c" else "1b"), sig[:-4] + "0000", "0x" + "00" * 65, "0x", 5,
                sig[:40]):
        body = json.dumps(doc | {"order": doc["order"] | {"signature": bad}}).encode()
        headers = l2_headers(creds, acct.address, "POST", "/order", body, auth_timestamp())
        refused_order(httpx.post(ex.urls.clob + "/order", content=body, headers=headers))
    # a signature that is valid, but over another order (the price changed after signing)
    body = json.dumps(doc | {"order": doc["order"] | {"makerAmount": str(int(doc["order"]["makerAmount"]) * 2)}})
    headers = l2_headers(creds, acct.address, "POST", "/order", body.encode(), auth_timestamp())
    refused_order(httpx.post(ex.urls.clob + "/order", content=body, headers=headers))
    assert snapshot(ex) == before


def test_l1_headers_replayed_with_another_nonce_or_address_are_refused(exchange):
    ex = exchange
    w = Wallet("0x" + "78" * 32)
    before = snapshot(ex)
    h = l1_headers(w, 137, str(int(time.time())), nonce=0)
    unauthorized(httpx.post(ex.urls.clob + "/auth/api-key", headers=h | {"SERVICE_NONCE": "1"}))
    unauthorized(httpx.post(ex.urls.clob + "/auth/api-key", headers=h | {"SERVICE_ADDRESS": Wallet("0x" + "79" * 32).address}))
    assert snapshot(ex) == before


def test_stale_or_future_headers_are_refused_outside_the_freshness_window():
    ex = start_exchange(auth_window_s=30.0)  # the shared fixture's window is open wide for old vectors
    try:
        acct = ex.demo_account
        cond, token, neg = first_market(ex)
        body = order_body(OrderBuilder(Wallet(acct.private_key), 137).limit(
            token, Side.BUY, 10_000, 5_000_000, 10_000, neg, condition_id=cond), acct.creds.apiKey)
        before = snapshot(ex)
        now = int(time.time())
        for stamp in (str(now - 3600), str(now + 3600), str((now - 3600) * 1000), str((now + 3600) * 1000)):
            headers = l2_headers(creds_of(acct), acct.address, "POST", "/order", body, stamp)
            unauthorized(httpx.post(ex.urls.clob + "/order", content=body, headers=headers))
        w = Wallet("0x" + "7a" * 32)
        for stamp in (now - 3600, now + 3600):
            unauthorized(httpx.post(ex.urls.clob + "/auth/api-key", headers=l1_headers(w, 137, str(stamp))))
        assert snapshot(ex) == before
    finally:
        ex.stop()
