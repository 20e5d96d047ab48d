"""Fault injection of the local exchange, one compact test per fault, through the project's clients."""

from __future__ import annotations

import json
import time

import httpx
import pytest
import websockets.sync.client as wsc
from websockets.exceptions import ConnectionClosed

from bot.exchange.config import FaultConfig
from bot.exchange.faults import EnginePhase
from bot.venue.auth import Credentials
from bot.venue.clob import ClobClient
from bot.venue.eip712 import Wallet
from bot.venue.enums import OrderType, Side
from bot.venue.errors import EngineRestarting, PostOnlyMode, ServerError, VersionMismatch
from bot.venue.orders import OrderBuilder, orders_body
from bot.venue.transport import Transport, TransportConfig
from tests.integration.exchange_fixture import start_exchange, wait_for as poll
from tests.integration.test_exchange_trading import signed

pytestmark = pytest.mark.integration

TICK = 10_000


def faulty(**faults):
    return start_exchange(faults=FaultConfig(**faults))


def client(ex, acct) -> ClobClient:
    t = Transport(ex.urls.clob, config=TransportConfig(max_read_retries=0))
    return ClobClient(t, creds=Credentials(acct.creds.apiKey, acct.creds.secret, acct.creds.passphrase),
                      address=acct.address)


def a_market(ex):
    m = httpx.get(ex.urls.clob + "/markets").json()["data"][0]
    return m["condition_id"], m["tokens"][0]["token_id"], m["neg_risk"]


def deep_bid(acct, cond, token, neg, post_only=False):
    """A resting BUY at the lowest price: never crosses the seeded book."""
    return OrderBuilder(Wallet(acct.private_key), 137).limit(token, Side.BUY, TICK, 5_000_000, TICK, neg,
                                                             post_only=post_only, condition_id=cond)


def test_error_rate_on_one_route():
    ex = faulty(error_rate=1.0, error_routes=("/midpoint",))
    try:
        _, token, _ = a_market(ex)
        r = httpx.get(ex.urls.clob + "/midpoint", params={"token_id": token})
        assert r.status_code == 500 and r.json() == {"error": "internal_error: injected fault"}
        assert httpx.get(ex.urls.clob + "/book", params={"token_id": token}).status_code == 200
    finally:
        ex.stop()


@pytest.mark.anyio
async def test_error_rate_surfaces_as_server_error():
    ex = faulty(error_rate=1.0, error_routes=("/time",))
    try:
        c = client(ex, ex.demo_account)
        async with c.transport:
            with pytest.raises(ServerError) as se:
                await c.time()
            assert se.value.status == 500
            assert await c.version() == 2
    finally:
        ex.stop()


def test_rate_limit_bursts():
    ex = faulty(rate_limit_burst_every_s=0.6, rate_limit_burst_s=0.2)
    try:
        with httpx.Client(base_url=ex.urls.clob) as c:
            hit = poll(lambda: (r := c.get("/ok")).status_code == 429 and r, 3, "a 429 burst")
            assert int(hit.headers["Retry-After"]) >= 1 and hit.json()["error"].startswith("rate_limited: ")
            poll(lambda: c.get("/ok").status_code == 200, 3, "the burst to end")
    finally:
        ex.stop()


@pytest.mark.anyio
async def test_restart_window_then_post_only():
    ex = faulty(restart_every_s=0.8, restart_s=0.25, post_only_s=0.25)
    acct = ex.demo_account
    cond, token, neg = a_market(ex)
    try:
        c = client(ex, acct)
        async with c.transport:
            seen: set[type] = set()
            end = time.monotonic() + 5
            while {EngineRestarting, PostOnlyMode} - seen:
                assert time.monotonic() < end, f"saw only {seen}"
                try:
                    await c.post_order(deep_bid(acct, cond, token, neg))
                except (EngineRestarting, PostOnlyMode) as exc:
                    seen.add(type(exc))
                    if isinstance(exc, EngineRestarting):
                        assert exc.status == 425
                    else:
                        assert exc.status == 503 and exc.code == "post_only_mode"
            await c.cancel_all()
            # pinned in post-only: a post-only order is accepted, any other is refused
            ex.call(setattr, ex.exchange.state.faults, "forced_phase", EnginePhase.POST_ONLY)
            ok = await c.post_order(deep_bid(acct, cond, token, neg, post_only=True), post_only=True)
            assert ok.success and ok.status == "live"
            with pytest.raises(PostOnlyMode):
                await c.post_order(deep_bid(acct, cond, token, neg))
            assert (await c.cancel_all()).canceled == [ok.order_id]  # cancels still work
    finally:
        ex.stop()


def test_websocket_drop_closes_connections():
    ex = faulty(ws_drop_every_s=0.3)
    try:
        _, token, _ = a_market(ex)
        with wsc.connect(ex.urls.ws + "/ws/market") as ws:
            ws.send(json.dumps({"type": "market", "assets_ids": [token]}))
            assert json.loads(ws.recv(timeout=5))[0]["event_type"] == "book"
            with pytest.raises(ConnectionClosed):
                end = time.monotonic() + 5
                while time.monotonic() < end:
                    ws.recv(timeout=end - time.monotonic())
                    ws.send("PING")
    finally:
        ex.stop()


def _user_auth(ws, acct) -> None:
    c = acct.creds
    ws.send(json.dumps({"type": "user", "auth": {"apiKey": c.apiKey, "secret": c.secret, "passphrase": c.passphrase}}))
    ws.send("PING")
    assert ws.recv(timeout=5) == "PONG"


def _orders_posted(ex, acct, n):
    cond, token, neg = a_market(ex)
    b = OrderBuilder(Wallet(acct.private_key), 137)
    ids = []
    for k in range(n):
        so = b.limit(token, Side.BUY, (1 + k) * TICK, 5_000_000, TICK, neg, condition_id=cond)
        ids.append(signed("POST", ex.urls.clob, "/orders", acct, orders_body([so], acct.creds.apiKey)).json()[0]["orderID"])
    return ids


def _placements(ws, n):
    got = []
    end = time.monotonic() + 5
    while len(got) < n:
        frame = json.loads(ws.recv(timeout=max(0.01, end - time.monotonic())))
        for ev in frame if isinstance(frame, list) else [frame]:
            if ev.get("event_type") == "order" and ev.get("type") == "PLACEMENT":
                got.append(ev["id"])
    return got


def test_user_events_duplicated():
    ex = faulty(user_event_duplicate_rate=1.0)
    try:
        acct = ex.demo_account
        with wsc.connect(ex.urls.ws + "/ws/user") as ws:
            _user_auth(ws, acct)
            (oid,) = _orders_posted(ex, acct, 1)
            assert _placements(ws, 2) == [oid, oid]
    finally:
        ex.stop()


def test_user_events_reordered():
    ex = faulty(user_event_reorder_rate=1.0)
    try:
        acct = ex.demo_account
        with wsc.connect(ex.urls.ws + "/ws/user") as ws:
            _user_auth(ws, acct)
            first, second = _orders_posted(ex, acct, 2)
            assert _placements(ws, 2) == [second, first]
    finally:
        ex.stop()


@pytest.mark.anyio
async def test_settlement_failure_reverses_balances():
    ex = faulty(settlement_fail_rate=1.0)
    try:
        maker, taker = ex.demo_account, ex.new_account(1)
        cond, token, neg = a_market(ex)
        mc, tc = client(ex, maker), client(ex, taker)
        async with mc.transport, tc.transport:
            usdc0 = int((await mc.balance_allowance("COLLATERAL")).balance)
            shares0 = int((await tc.balance_allowance("CONDITIONAL", token_id=token)).balance)
            book = await mc.book(token)
            price = (max(round(float(l.price) * 100) for l in book.bids) + 1) * TICK
            rest = await mc.post_order(OrderBuilder(Wallet(maker.private_key), 137).limit(
                token, Side.BUY, price, 10_000_000, TICK, neg, condition_id=cond))
            hit = await tc.post_order(OrderBuilder(Wallet(taker.private_key), 137).market(
                token, Side.SELL, 10_000_000, price, TICK, neg, OrderType.FOK, condition_id=cond),
                order_type=OrderType.FOK)
            assert rest.success and hit.status == "matched", hit
            end = time.monotonic() + 10
            while True:
                trades = [t async for t in mc.get_trades(market=cond)]
                status = {t.status for t in trades if any(m.order_id == rest.order_id for m in t.maker_orders)}
                if status == {"FAILED"}:
                    break
                assert time.monotonic() < end, f"trade never FAILED ({status})"
                time.sleep(0.05)
            assert int((await mc.balance_allowance("COLLATERAL")).balance) == usdc0
            assert int((await tc.balance_allowance("CONDITIONAL", token_id=token)).balance) == shares0
    finally:
        ex.stop()


@pytest.mark.anyio
async def test_order_version_mismatch():
    ex = faulty(version_mismatch_rate=1.0)
    try:
        acct = ex.demo_account
        cond, token, neg = a_market(ex)
        c = client(ex, acct)
        async with c.transport:
            with pytest.raises(VersionMismatch) as vm:
                await c.post_order(deep_bid(acct, cond, token, neg))
            assert vm.value.status == 400 and "order_version_mismatch" in vm.value.message
            assert await c.version() == 2
            assert (await c.orders_page()).data == []
    finally:
        ex.stop()


def test_added_latency():
    ex = faulty(latency_ms_min=150, latency_ms_max=200)
    try:
        with httpx.Client(base_url=ex.urls.clob) as c:
            c.get("/ok")  # connection set up outside the measurement
            start = time.monotonic()
            assert c.get("/ok").status_code == 200
            assert time.monotonic() - start >= 0.15
    finally:
        ex.stop()


def test_user_events_delayed():
    ex = faulty(user_event_delay_ms=300)
    try:
        acct = ex.demo_account
        with wsc.connect(ex.urls.ws + "/ws/user") as ws:
            _user_auth(ws, acct)
            start = time.monotonic()
            (oid,) = _orders_posted(ex, acct, 1)
            assert _placements(ws, 1) == [oid]
            assert time.monotonic() - start >= 0.3
    finally:
        ex.stop()
