"""The bot reads every position the account holds, over as many pages as the venue needs, so a
bot quoting many markets seeds and checks the right holdings (no drift on tokens that do not)."""

from __future__ import annotations

import anyio
import pytest

from bot.core.markets import MarketIndex
from bot.live.positions import held_positions, venue_positions
from bot.live.venue import Venue
from tests.integration.exchange_fixture import start_exchange

pytestmark = pytest.mark.integration


def read_positions(ex, acct):
    """What the venue's account-data route lists for ``acct``, read as a live run reads it."""

    async def read():
        venue = Venue(clob_url=ex.urls.clob, data_url=ex.urls.data, ws_url=ex.urls.ws, creds=acct.creds,
                      address=acct.address)
        try:
            return await held_positions(venue)
        finally:
            await venue.aclose()

    return anyio.run(read)


def test_every_position_is_read_however_many_pages():
    ex = start_exchange(markets=60, neg_risk_events=0)
    try:
        infos = ex.call(lambda: [m.info for m in ex.exchange.state.catalog.markets])
        tokens = {t for m in infos for t in m.tokens}
        assert len(tokens) > 100  # more than the venue's default page
        acct = ex.demo_account

        held = venue_positions(read_positions(ex, acct), MarketIndex(infos))
        assert set(held) == tokens and all(size == 1_000_000_000 for size in held.values())
    finally:
        ex.stop()


def test_an_account_of_2000_positions_is_read_to_the_end_and_seeded():
    """1,000 markets, the account holding both tokens of each: all 2,000 positions are read (four
    full pages of 500, then the empty one), and every one of them is seeded in the portfolio, at the
    books' mids read in batches the venue accepts (it names at most 500 tokens per POST /books)."""
    from types import SimpleNamespace

    from bot.core.feed import FeedConfig
    from bot.live.positions import seed_positions

    ex = start_exchange(markets=997, neg_risk_events=0)  # with the fixture's own three: 1,000
    try:
        infos = ex.call(lambda: [m.info for m in ex.exchange.state.catalog.markets])
        tokens = {t for m in infos for t in m.tokens}
        assert len(tokens) == 2000
        acct = ex.demo_account

        class Portfolio:
            def __init__(self):
                self.seeded: dict[str, tuple[int, int]] = {}

            def size(self, token):
                return 0

            def seed(self, token, size, mark):
                self.seeded[token] = (size, mark)

        engine = SimpleNamespace(markets=MarketIndex(infos), feed=SimpleNamespace(config=FeedConfig()),
                                 portfolio=Portfolio(), opening_marks={})

        async def read():
            venue = Venue(clob_url=ex.urls.clob, data_url=ex.urls.data, ws_url=ex.urls.ws, creds=acct.creds,
                          address=acct.address)
            try:
                return await held_positions(venue), await seed_positions(engine, venue)
            finally:
                await venue.aclose()

        items, held = anyio.run(read)
        assert len(items) == 2000 and set(venue_positions(items, engine.markets)) == tokens
        assert set(held) == tokens and set(engine.portfolio.seeded) == tokens
        assert all(size == 1_000_000_000 for size, _ in engine.portfolio.seeded.values())
        assert len(engine.opening_marks) == 2000  # every book's mid, over several POST /books
    finally:
        ex.stop()
