"""The venue's positions mark `mergeable` the markets whose YES and NO the account both holds: the
complete pairs the portfolio counts, seeded from those positions, are in exactly those markets,
as many as the fewer of the two."""

from __future__ import annotations

import pytest

from bot.core.markets import MarketIndex
from bot.live.positions import venue_positions
from bot.portfolio import Portfolio, complete_sets, totals
from bot.venue.units import UNIT
from tests.integration.exchange_fixture import start_exchange
from tests.integration.test_live_positions import read_positions

pytestmark = pytest.mark.integration


def test_the_venues_mergeable_hint_marks_the_markets_of_the_pairs_counted():
    ex = start_exchange(markets=4, neg_risk_events=0)
    try:
        infos = ex.call(lambda: [m.info for m in ex.exchange.state.catalog.markets])[:3]
        acct = ex.new_account(1, shares="0")
        holdings = {infos[0].tokens[0]: 7 * UNIT, infos[0].tokens[1]: 3 * UNIT,  # 3 pairs
                    infos[1].tokens[0]: 5 * UNIT,  # YES alone
                    infos[2].tokens[0]: 2 * UNIT, infos[2].tokens[1]: 2 * UNIT}  # 2 pairs
        engine = ex.exchange.state.engine
        ex.call(lambda: [engine.mint_tokens(acct.address, t, n) for t, n in holdings.items()])

        items = read_positions(ex, acct)
        markets = MarketIndex(infos)
        held = venue_positions(items, markets)
        assert held == holdings
        pf = Portfolio()
        for token, size in held.items():
            pf.seed(token, size, UNIT // 2)
        pairs = {h.group.key: h.sets for h in complete_sets(pf.positions(), infos) if h.group.mergeable}
        assert pairs == {infos[0].condition_id: 3 * UNIT, infos[2].condition_id: 2 * UNIT}
        hinted = {p.condition_id for p in items if p.mergeable}
        assert hinted == set(pairs)
        t = totals(complete_sets(pf.positions(), infos))
        assert (t.mergeable, t.mergeable_cost, t.edge) == (5 * UNIT, 5 * UNIT, 0)  # bought at 0.50 a leg
    finally:
        ex.stop()
