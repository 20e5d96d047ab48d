"""The bot reads every position the account holds, over as many pages as the venue needs, so a
bot quoting many markets seeds and checks the right holdings (no drift on tokens that do not)."""

from __future__ import annotations

import anyio
import pytest

from bot.core.markets import MarketIndex
from bot.live.shell import Venue, held_positions, venue_positions
from tests.integration.exchange_fixture import start_exchange

pytestmark = pytest.mark.integration


def test_every_position_is_read_however_many_pages():
    ex = start_exchange(markets=60, neg_risk_events=0)
    try:
        infos = ex.call(lambda: [m.info for m in ex.exchange.state.catalog.markets])
        tokens = {t for m in infos for t in m.tokens}
        assert len(tokens) > 100  # more than the venue's default page
        acct = ex.demo_account

        async def read():
            venue = Venue(clob_url=ex.urls.clob, data_url=ex.urls.data, ws_url=ex.urls.ws, creds=acct.creds,
                          address=acct.address)
            try:
                return await held_positions(venue)
            finally:
                await venue.aclose()

        held = venue_positions(anyio.run(read), MarketIndex(infos))
        assert set(held) == tokens and all(size == 1_000_000_000 for size in held.values())
    finally:
        ex.stop()
