"""Client and server share one rate-limit table: a client throttled by it never sees a 429."""

from __future__ import annotations

import time

import httpx
import pytest

from bot.exchange.edge import edge_config, trading_config
from bot.venue.auth import Credentials
from bot.venue.clob import ClobClient
from bot.venue.eip712 import Wallet
from bot.venue.enums import Side
from bot.venue.errors import RateLimited
from bot.venue.limits import CLOB_LIMITS, LimitsConfig, RouteLimiter
from bot.venue.orders import OrderBuilder
from bot.venue.transport import Transport, TransportConfig
from tests.integration.exchange_fixture import start_exchange

pytestmark = pytest.mark.integration

SCALE = 0.05  # GET /book: 200 * 0.05 = 10 per 10 s


def test_server_table_is_the_client_table():
    server = {s.name: s for s in edge_config().clob.scopes} | {s.name: s for s in trading_config().clob.scopes}
    assert server == {s.name: s for s in CLOB_LIMITS.scopes}


@pytest.fixture(scope="module")
def limited():
    ex = start_exchange(limits_scale=SCALE)
    try:
        yield ex
    finally:
        ex.stop()


@pytest.mark.anyio
async def test_throttled_client_flood_sees_no_429(limited):
    token = httpx.get(limited.urls.clob + "/markets").json()["data"][0]["tokens"][0]["token_id"]
    limiter = RouteLimiter(LimitsConfig(scale=SCALE), "clob")
    capacity = limiter.throttle("clob:book").capacity
    assert capacity == 10
    # no automatic retry: any 429 would surface as RateLimited
    async with Transport(limited.urls.clob, limiter=limiter, config=TransportConfig(max_read_retries=0)) as t:
        clob = ClobClient(t)
        start = time.monotonic()
        for _ in range(capacity + 3):
            book = await clob.book(token)
            assert book.asset_id == token
        assert time.monotonic() - start >= 9.0  # the client waited for the window instead
        assert limiter.waits.get("GET /book", 0) >= 1


def test_unthrottled_flood_gets_429_with_retry_after(limited):
    token = httpx.get(limited.urls.clob + "/markets").json()["data"][0]["tokens"][0]["token_id"]
    codes = []
    with httpx.Client(base_url=limited.urls.clob) as c:
        for _ in range(15):
            r = c.get("/midpoint", params={"token_id": token})
            codes.append(r.status_code)
            if r.status_code == 429:
                assert int(r.headers["Retry-After"]) >= 1
                assert r.json()["error"].startswith("rate_limited: ") and r.json()["retry_after_seconds"] >= 1
    assert codes[:10] == [200] * 10 and 429 in codes[10:]


@pytest.mark.anyio
async def test_per_key_write_buckets_refuse_at_once():
    ex = start_exchange(limits_scale=0.01)  # orders and cancels: 2400 * 0.01 = 24 per 10 s each
    try:
        acct = ex.demo_account
        async with Transport(ex.urls.clob) as t:
            clob = ClobClient(t, creds=Credentials(acct.creds.apiKey, acct.creds.secret, acct.creds.passphrase),
                              address=acct.address)
            m = (await clob.markets_page()).data[0]
            token = m.tokens[0].token_id
            b = OrderBuilder(Wallet(acct.private_key), 137)
            orders = [b.limit(token, Side.BUY, 10_000, 5_000_000, 10_000, m.neg_risk, condition_id=m.condition_id)
                      for _ in range(25)]
            assert all(r.success for r in await clob.post_orders(orders[:15]))  # 15 tokens
            assert all(r.success for r in await clob.post_orders(orders[15:24]))  # 9 more: the bucket is full
            with pytest.raises(RateLimited) as rl:
                await clob.post_order(orders[24])
            assert rl.value.status == 429 and rl.value.retry_after >= 1
            assert len([o async for o in clob.get_orders()]) == 24  # nothing placed by the refused post
            # cancel-all costs 1 plus the 24 it canceled (capped at the 24 of the window): nothing is left
            assert len((await clob.cancel_all()).canceled) == 24
            with pytest.raises(RateLimited):
                await clob.cancel("0x01")
    finally:
        ex.stop()
