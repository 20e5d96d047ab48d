"""The project's own venue clients (catalog, CLOB, account data) against the local exchange, route by route.

Every client method is called over real sockets and its decoded response checked; typed errors
(``NotFound``, ``BadRequest``, ``Unauthorized``) come back for the venue's error bodies.
"""

from __future__ import annotations

import time
from contextlib import asynccontextmanager

import pytest

from bot.venue.account import AccountClient
from bot.venue.auth import Credentials
from bot.venue.catalog import CatalogClient
from bot.venue.clob import ClobClient
from bot.venue.eip712 import Wallet
from bot.venue.enums import OrderType, Side
from bot.venue.errors import BadRequest, NotFound, Unauthorized
from bot.venue.orders import OrderBuilder
from bot.venue.transport import Transport
from tests.integration.exchange_fixture import exchange  # noqa: F401

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TICK = 10_000  # 0.01 in micro-units


def creds_of(acct) -> Credentials:
    return Credentials(acct.creds.apiKey, acct.creds.secret, acct.creds.passphrase)


@asynccontextmanager
async def clob_for(ex, acct=None, wallet=None):
    async with Transport(ex.urls.clob) as t:
        if acct is None:
            yield ClobClient(t, wallet=wallet)
        else:
            yield ClobClient(t, creds=creds_of(acct), address=acct.address, wallet=Wallet(acct.private_key))


async def collect(it) -> list:
    return [x async for x in it]


async def a_market(clob: ClobClient):
    """A generated (not vector) binary market: (condition id, YES token, neg_risk)."""
    async for m in clob.iter_markets():
        if not m.neg_risk and not m.question.startswith("Vector"):
            return m.condition_id, m.tokens[0].token_id, m.neg_risk
    raise AssertionError("no binary market")


# -- catalog --------------------------------------------------------------------------------


async def test_catalog_markets_events_creators_comments(exchange):
    async with Transport(exchange.urls.catalog) as t:
        cat = CatalogClient(t)
        everything = await collect(cat.iter_markets(limit=3))
        assert len(everything) >= 4 and len({m.id for m in everything}) == len(everything)
        first = await cat.markets(limit=2)
        assert [m.id for m in first] == [m.id for m in everything[:2]]
        second = await cat.markets(limit=2, offset=2)
        assert [m.id for m in second] == [m.id for m in everything[2:4]]
        m = everything[0]
        by_cond = await cat.markets(condition_id=m.condition_id)
        assert [x.id for x in by_cond] == [m.id]
        assert (await cat.market_by_slug(m.slug)).condition_id == m.condition_id
        active = await cat.markets(active=True, closed=False, limit=100)
        assert active and all(x.active and not x.closed for x in active)
        by_id = await cat.markets(order="id", ascending=True, limit=100)
        assert [int(x.id) for x in by_id] == sorted(int(x.id) for x in everything)
        desc = await cat.markets(order="id", ascending=False, limit=100)
        assert [x.id for x in desc] == [x.id for x in reversed(by_id)]
        with pytest.raises(BadRequest):
            await cat.markets(order="no_such_column")
        with pytest.raises(NotFound):
            await cat.market_by_slug("no-such-market")

        event_id = next(x for x in everything if x.events).events[0].id
        ev = await cat.event(int(event_id))
        assert str(ev.id) == str(event_id)
        assert (await cat.event_by_slug(ev.slug)).id == ev.id
        in_event = await cat.markets(event_id=int(event_id))
        assert in_event and all(any(e.id == ev.id for e in x.events) for x in in_event)
        assert [x.id for x in await cat.markets(event_slug=ev.slug)] == [x.id for x in in_event]
        if ev.tags:
            tagged = await cat.markets(tag_slug=ev.tags[0].slug, limit=100)
            assert tagged and {x.id for x in in_event} <= {x.id for x in tagged}
        with pytest.raises(NotFound) as nf:
            await cat.event(999_999)
        assert nf.value.status == 404 and "id not found" in str(nf.value)
        with pytest.raises(NotFound):
            await cat.event_by_slug("nope")

        catalog = exchange.exchange.state.catalog  # what the exchange serves, read beside the routes
        creators = await cat.event_creators(limit=5)
        assert creators and [c.id for c in creators] == [c.id for c in catalog.creators][:5]
        assert len(await collect(cat.iter_event_creators(limit=1))) == len(await cat.event_creators(limit=100))
        some = catalog.comments[0].user_address
        comments = await cat.user_comments(some, limit=10)
        assert comments and {c.id for c in comments} == {
            c.id for c in catalog.comments if c.user_address.lower() == some.lower()}
        assert await collect(cat.iter_user_comments(some, limit=1)) == comments


# -- CLOB public reads ----------------------------------------------------------------------


async def test_clob_public_reads(exchange):
    async with clob_for(exchange) as clob:
        assert await clob.ok() == "OK"
        assert await clob.health() == "OK"
        assert abs(await clob.sync_clock()) < 5
        assert await clob.version() == 2
        assert abs(await clob.time() - time.time()) < 5
        cond, token, neg = await a_market(clob)
        book = await clob.book(token)
        assert book.asset_id == token and book.market == cond and book.bids and book.asks
        best_bid = max(float(l.price) for l in book.bids)
        best_ask = min(float(l.price) for l in book.asks)
        assert best_bid < best_ask
        books = await clob.books([token])
        assert [b.asset_id for b in books] == [token]
        # GET /price: BUY reads the best bid, SELL the best ask (what a maker on that side gets)
        assert float(await clob.price(token, Side.BUY)) == best_bid
        assert float(await clob.price(token, Side.SELL)) == best_ask
        prices = await clob.prices([(token, Side.BUY), (token, Side.SELL)])
        assert token in prices
        mid = float(await clob.midpoint(token))
        assert abs(mid - (best_bid + best_ask) / 2) < 1e-9
        assert await clob.tick_size(token) == "0.01"
        assert await clob.neg_risk(token) is neg is False
        assert int(await clob.fee_rate(token)) >= 0

        markets = await collect(clob.iter_markets())
        conds = {m.condition_id for m in markets}
        assert cond in conds and len(conds) == len(markets)
        simplified = await collect(clob.iter_simplified_markets())
        assert {m.condition_id for m in simplified} == conds
        sampling = await collect(clob.iter_sampling_markets())
        assert sampling and {m.condition_id for m in sampling} <= conds
        sampling_s = await collect(clob.iter_sampling_simplified_markets())
        assert {m.condition_id for m in sampling_s} == {m.condition_id for m in sampling}
        page = await clob.markets_page()  # fewer markets than a page holds: one page, the last
        assert {m.condition_id for m in page.data} == conds and page.is_last

        m = await clob.market(cond)
        assert m.condition_id == cond and token in {t.token_id for t in m.tokens}
        info = await clob.clob_market(cond)
        assert info.condition_id == cond and str(info.min_tick_size) in ("0.01", "0.010")
        with pytest.raises(NotFound):
            await clob.market("0x" + "99" * 32)


# -- keys and account -----------------------------------------------------------------------


async def test_keys_and_balances(exchange):
    wallet = Wallet("0x" + "22" * 32)
    async with clob_for(exchange, wallet=wallet) as clob:
        created = await clob.create_api_key()
        derived = await clob.derive_api_key()
        assert created.api_key == derived.api_key and created.secret.reveal() == derived.secret.reveal()
        again = await clob.create_or_derive_api_key()
        assert again.api_key == created.api_key and clob.creds is again
        keys = await clob.api_keys()
        assert created.api_key in str(keys)
        assert (await clob.ban_status()).closed_only is False
        other = await clob.derive_api_key(nonce=1)
        assert other.api_key != created.api_key
        clob.use_credentials(other)
        await clob.delete_api_key()
        with pytest.raises(Unauthorized):
            await clob.ban_status()  # the deleted key no longer authenticates

    acct = exchange.demo_account
    async with clob_for(exchange, acct) as clob:
        bal = await clob.balance_allowance("COLLATERAL")
        assert int(bal.balance) == 100_000 * 1_000_000
        _, token, _ = await a_market(clob)
        shares = await clob.balance_allowance("CONDITIONAL", token_id=token)
        assert int(shares.balance) == 1000 * 1_000_000
        assert int((await clob.balance_allowance("COLLATERAL", update=True)).balance) == int(bal.balance)

    async with Transport(exchange.urls.clob) as t:
        bad = ClobClient(t, creds=Credentials("00000000-0000-4000-8000-000000000000", "c2VjcmV0", "x"),
                         address=acct.address)
        with pytest.raises(Unauthorized):
            await bad.ban_status()


# -- trading --------------------------------------------------------------------------------


async def test_trading_round_trip(exchange):
    maker = exchange.demo_account
    taker = exchange.new_account(5)
    async with clob_for(exchange, maker) as mc, clob_for(exchange, taker) as tc:
        cond, token, neg = await a_market(mc)
        book = await mc.book(token)
        best_bid = max(round(float(l.price) * 100) for l in book.bids) * TICK
        mb = OrderBuilder(Wallet(maker.private_key), 137)
        # resting orders far below the book: one single post, one batch of three
        single = mb.limit(token, Side.BUY, TICK, 5_000_000, TICK, neg, condition_id=cond)
        r = await mc.post_order(single)
        assert r.success and r.status == "live" and r.order_id
        batch = [mb.limit(token, Side.BUY, (2 + i) * TICK, 5_000_000, TICK, neg, condition_id=cond) for i in range(3)]
        results = await mc.post_orders(batch)
        assert [x.success for x in results] == [True] * 3
        ids = {r.order_id} | {x.order_id for x in results}

        mine = await collect(mc.get_orders(market=cond))
        assert {o.id for o in mine} == ids
        got = await mc.get_order(r.order_id)
        assert got.id == r.order_id and got.side == "BUY" and float(got.price) == 0.01
        assert [o.id for o in await collect(mc.get_orders(id=r.order_id))] == [r.order_id]

        c1 = await mc.cancel(r.order_id)
        assert c1.canceled == [r.order_id]
        c2 = await mc.cancel_orders([results[0].order_id, "0xdead"])
        assert c2.canceled == [results[0].order_id] and "0xdead" in c2.not_canceled
        c3 = await mc.cancel_market_orders(market=cond)
        assert set(c3.canceled) == {results[1].order_id, results[2].order_id}
        assert await collect(mc.get_orders()) == []

        # a fill: maker rests one tick above the best bid, taker sells into it
        price = best_bid + TICK
        rest = await mc.post_order(mb.limit(token, Side.BUY, price, 10_000_000, TICK, neg, condition_id=cond))
        assert rest.status == "live"
        sell = OrderBuilder(Wallet(taker.private_key), 137).market(
            token, Side.SELL, 10_000_000, price, TICK, neg, OrderType.FOK, condition_id=cond)
        hit = await tc.post_order(sell, order_type=OrderType.FOK)
        assert hit.success and hit.status == "matched", hit
        trades = await collect(mc.get_trades(market=cond))
        ours = [t for t in trades if any(m.order_id == rest.order_id for m in t.maker_orders)]
        assert ours and ours[0].trader_side == "MAKER" and float(ours[0].price) == price / 1_000_000
        assert (await mc.trades_page()).next_cursor == "LTE="
        assert await collect(tc.get_trades(id=ours[0].id))
        assert {t.id for t in await mc.builder_trades(market=cond)} == {t.id for t in trades}

        # cancel-all on a fresh resting order
        left = await mc.post_order(mb.limit(token, Side.BUY, TICK, 5_000_000, TICK, neg, condition_id=cond))
        assert (await mc.cancel_all()).canceled == [left.order_id]

        # heartbeat: arm, echo, and recover from a wrong id by resending the expected one
        first = await mc.heartbeat("")
        second = await mc.heartbeat()
        assert first and second and second != first
        third = await mc.heartbeat("not-the-id")
        assert third and third != second and mc.heartbeat_id == third
        # the same signed order again is refused per order, not by status
        again = await mc.post_orders([single])
        assert again[0].success is False and again[0].error_msg


UNIT_PRICE = 1_000_000


async def test_vector_inputs_accepted_through_client(exchange, signing_vectors):
    v = signing_vectors
    o = next(x for x in v["orders"] if x["id"] == "limit_buy_t001_eoa")
    i = o["inputs"]
    acct = type("A", (), {"address": v["test_eoa_address"], "private_key": v["test_private_key"],
                          "creds": type("C", (), v["api_creds"])})
    builder = OrderBuilder(Wallet(v["test_private_key"]), i["chain_id"])
    price = int(round(float(i["price"]) * UNIT_PRICE))
    size = int(round(float(i["size"]) * UNIT_PRICE))
    signed = builder.limit(i["token_id"], Side(i["side"]), price, size, int(float(i["tick_size"]) * UNIT_PRICE),
                           i["neg_risk"], salt=int(i["salt"]), timestamp_ms=int(i["timestamp_ms"]),
                           condition_id=i["condition_id_for_service_variant"])
    async with clob_for(exchange, acct) as clob:
        res = await clob.post_order(signed)
        assert res.success and res.order_id == o["outputs"]["typed_data_hash"], res
        assert (await clob.get_order(res.order_id)).id == res.order_id
        await clob.cancel_all()


# -- account data ---------------------------------------------------------------------------


async def test_account_positions_and_holders(exchange):
    acct = exchange.demo_account
    async with Transport(exchange.urls.data) as t:
        data = AccountClient(t)
        positions = await data.positions(acct.address)
        assert positions and all(p.proxy_wallet.lower() == acct.address.lower() for p in positions)
        cond = positions[0].condition_id
        one = await data.positions(acct.address, market=cond)
        assert one and {p.condition_id for p in one} == {cond}
        ordered = await data.positions(acct.address, sort_by="TITLE", sort_direction="ASC")
        assert [p.title for p in ordered] == sorted(p.title for p in ordered)
        assert len(await data.positions(acct.address, limit=2)) == min(2, len(positions))
        assert await data.positions(acct.address, size_threshold=10**9) == []
        assert len(await collect(data.iter_positions(acct.address, limit=3))) == len(positions)
        holders = await data.holders(cond)
        assert holders and any(h.proxy_wallet.lower() == acct.address.lower() for g in holders for h in g.holders)
        with pytest.raises(BadRequest) as br:
            await t.request("GET", "/positions", params={"user": acct.address, "bogus": "1"})
        assert br.value.message == "unknown_field: bogus"


async def test_a_request_reports_when_its_body_is_written(exchange):
    """``on_written`` fires once, after the request left and before its answer is read."""
    import sys
    import time

    from bot.venue.transport import Transport

    stamps: list[float] = []
    async with Transport(exchange.urls.clob) as t:
        before = time.perf_counter()
        response = await t.request("GET", "/ok", on_written=lambda: stamps.append(time.perf_counter()))
        after = time.perf_counter()
    assert response.status_code == 200 and len(stamps) == 1 and before <= stamps[0] <= after
    # httpcore's probe for sniffio fails at once when sniffio is not installed
    assert "sniffio" in sys.modules
