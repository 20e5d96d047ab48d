"""``bot run`` with no market named in its config trades every open market the venue lists (the
strategy decides), neg-risk ones included, as the config documents."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.test_live_restart import start_bot
from tests.integration.test_live_trading import open_orders

pytestmark = pytest.mark.integration


def test_no_market_named_means_every_market(tmp_path: Path):
    ex = start_exchange(markets=3, neg_risk_events=1, extra_markets=())
    acct = ex.demo_account
    try:
        listed = ex.call(lambda: [m for m in ex.exchange.state.catalog.markets if m.active and not m.closed])
        tokens = {t for m in listed for t in m.info.tokens}
        u = ex.urls
        cfg = tmp_path / "bot.toml"
        cfg.write_text(u.venue_toml() +
                       f'[strategy]\npath = "strategies.market_maker:MarketMaker"\n'
                       f'[metrics]\nenabled = false\n[journal]\npath = "{tmp_path / "j.sqlite"}"\n')
        env = dict(os.environ, BOT_PRIVATE_KEY=acct.private_key, BOT_API_KEY=acct.creds.apiKey,
                   BOT_API_SECRET=acct.creds.secret, BOT_API_PASSPHRASE=acct.creds.passphrase)
        bot = start_bot(cfg, env, tmp_path / "bot.log")
        try:
            quoted = lambda: {o.get("asset_id") or o.get("assetId") for o in open_orders(ex, acct)}  # noqa: E731
            wait_for(lambda: quoted() >= tokens, deadline_s=20, what="quotes on every listed market's tokens")
            assert any(m.neg_risk for m in listed) and len(listed) >= 6
        finally:
            bot.terminate()
            bot.wait(timeout=20)
    finally:
        ex.stop()
