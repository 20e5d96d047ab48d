"""Two strategies live on one account against the local exchange over real sockets: each quotes
only its own market, a counterparty trades with both, and what the bot books (positions, fills
per strategy, working orders) is what the exchange's records show."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal
from prometheus_client import generate_latest

from bot.core.markets import MarketIndex
from bot.strategy_set import configured_strategy
from bot.live.run import engine_of
from bot.live.markets import load_markets
from bot.live.positions import held_positions, seed_positions, venue_positions
from bot.live.shell import LiveShell
from bot.ops.config import BotConfig, ShellConfig, StrategyInstanceConfig
from bot.ops.metrics import Metrics
from bot.risk.limits import StrategyLimits
from bot.venue.enums import OrderType, Side
from bot.venue.units import UNIT
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.test_live_trading import _venue, counterparty_order, open_orders, signed

pytestmark = pytest.mark.integration

TICK = 10_000
REPO = Path(__file__).resolve().parents[2]


def test_two_strategies_share_one_account_and_agree_with_the_exchange():
    ex = start_exchange()
    other = ex.new_account(21)
    acct = ex.demo_account
    try:
        with start_blocking_portal() as portal:
            venue = portal.call(lambda: _venue(ex))
            m1, m2 = portal.call(load_markets, venue.clob, (), 2)
            config = BotConfig(strategies=(
                StrategyInstanceConfig(name="mm", path="strategies.market_maker:MarketMaker",
                                       markets=(m1.condition_id,),
                                       params={"half_spread_ticks": 1, "order_size": 10}),
                StrategyInstanceConfig(name="mm-wide", path="strategies.market_maker:MarketMaker",
                                       markets=(m2.condition_id,),
                                       params={"half_spread_ticks": 2, "order_size": 5},
                                       risk=StrategyLimits(max_open_orders=4)),
            ))
            strategy = configured_strategy(config)
            metrics = Metrics()
            engine = engine_of(config, strategy, [m1, m2], venue, acct.private_key, metrics=metrics)
            portal.call(seed_positions, engine, venue)
            held0 = {t: engine.portfolio.size(t) for m in (m1, m2) for t in m.tokens}
            shell = LiveShell(engine, venue, config=ShellConfig())
            future = portal.start_task_soon(shell.run, None)

            async def on_loop(fn):
                return fn()

            def read(fn):
                return portal.call(on_loop, fn)

            def ours(token: str) -> list[dict]:
                return [o for o in open_orders(ex, acct) if _asset(o) == token]

            try:
                # each strategy quotes its own market, and only it
                for m in (m1, m2):
                    wait_for(lambda m=m: all(ours(t) for t in m.tokens), what=f"quotes on {m.condition_id[:10]}")
                bids = {}
                for m in (m1, m2):
                    yes = m.tokens[0]
                    found = wait_for(lambda yes=yes: [o for o in ours(yes) if o["side"] == "BUY"], what="our bid")
                    bids[m.condition_id] = int(round(float(found[0]["price"]) * 100)) * TICK
                # a counterparty sells into both strategies' bids (FAK at our price: nothing below it)
                for m in (m1, m2):
                    res = counterparty_order(ex, other, m.tokens[0], m.condition_id, Side.SELL, bids[m.condition_id],
                                             500_000_000, OrderType.FAK)
                    assert res["success"], res

                def tallies():
                    got = {t.name: t.fills for t in strategy.tallies}
                    return got if got["mm"] and got["mm-wide"] else None

                fills = wait_for(lambda: read(tallies), 10, "fills booked for both strategies")

                # the exchange's records: our trades on each strategy's tokens ...
                trades = portal.call(lambda: _collect(venue.clob.get_trades(maker=acct.address)))
                ours_by_token: dict[str, set[tuple[str, str]]] = {}
                for tr in trades:
                    for mo in tr.maker_orders:
                        if (mo.maker_address or "").lower() == acct.address.lower():
                            ours_by_token.setdefault(mo.asset_id, set()).add((tr.id, mo.order_id))
                assert fills == {"mm": len(set().union(*(ours_by_token.get(t, set()) for t in m1.tokens))),
                                 "mm-wide": len(set().union(*(ours_by_token.get(t, set()) for t in m2.tokens)))}
                # ... its positions, token by token, are the bot's
                positions = venue_positions(portal.call(held_positions, venue), MarketIndex([m1, m2]))

                def booked():
                    return {t: engine.portfolio.size(t) for m in (m1, m2) for t in m.tokens}

                assert read(booked) == {t: positions.get(t, 0) for t in held0}
                assert read(booked) != held0
                # ... and its open orders are the bot's working orders, each on its strategy's market
                def agree():
                    venue_ids = {o["id"] for o in open_orders(ex, acct)}
                    working = read(lambda: {o.order_id for o in engine.working_orders() if o.order_id})
                    return venue_ids if venue_ids == working else None

                wait_for(agree, 10, "the exchange's open orders and ours to agree")
                owners = strategy.owners
                assert {owners[_asset(o)] for o in open_orders(ex, acct)} <= {"mm", "mm-wide"}
                assert len([o for o in open_orders(ex, acct) if owners[_asset(o)] == "mm-wide"]) <= 4
                text = generate_latest(metrics.registry).decode()
                assert f'bot_strategy_fills_total{{strategy="mm"}} {float(fills["mm"])}' in text
                assert f'bot_strategy_token{{strategy="mm-wide",token="{m2.tokens[0][-8:]}"}} 1.0' in text
            finally:
                portal.call(shell.request_stop, "test")
                future.result(timeout=15)
                portal.call(venue.aclose)
        assert open_orders(ex, acct) == []
        signed("DELETE", ex.urls.clob, "/cancel-all", other)
    finally:
        ex.stop()


async def _collect(items) -> list:
    return [x async for x in items]


def _asset(order: dict) -> str:
    return order.get("asset_id") or order["assetId"]


def test_the_same_config_of_two_strategies_runs_live_and_in_paper(tmp_path):
    """``bot run`` and ``bot run --paper`` with one file listing two strategies: live, each quotes
    its market at the exchange; paper, the simulated venue takes orders on both and none is sent."""
    repo = REPO
    ex = start_exchange()
    acct = ex.demo_account
    try:
        m1, m2 = (m.info for m in ex.call(lambda: list(ex.exchange.state.catalog.markets))[:2])
        u = ex.urls
        cfg = tmp_path / "bot.toml"
        cfg.write_text(
            u.venue_toml() +
            f'[[strategies]]\nname = "one"\npath = "strategies.market_maker:MarketMaker"\n'
            f'markets = ["{m1.condition_id}"]\n'
            f'[[strategies]]\nname = "two"\npath = "strategies.bands:BandsMarketMaker"\n'
            f'markets = ["{m2.condition_id}"]\n[strategies.risk]\nmax_open_orders = 6\n'
            f'[sim]\nholdings = 200\n[metrics]\nenabled = false\n[journal]\npath = "{tmp_path / "j.sqlite"}"\n')
        env = dict(os.environ, BOT_PRIVATE_KEY=acct.private_key, BOT_API_KEY=acct.creds.apiKey,
                   BOT_API_SECRET=acct.creds.secret, BOT_API_PASSPHRASE=acct.creds.passphrase)
        live = subprocess.Popen([sys.executable, "-m", "bot.cli", "run", "--config", str(cfg), "--duration", "4"],
                                cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            quoted = lambda: {_asset(o) for o in open_orders(ex, acct)}  # noqa: E731
            wait_for(lambda: quoted() & set(m1.tokens) and quoted() & set(m2.tokens), deadline_s=20,
                     what="both strategies quoting at the exchange")
            assert quoted() <= set(m1.tokens) | set(m2.tokens)
            out, err = live.communicate(timeout=30)
        finally:
            live.kill()
        assert live.returncode == 0, out[-2000:] + err[-2000:]
        assert "open orders at the exchange: 0" in out
        sent_live = ex.call(lambda: set(ex.exchange.state.engine.orders))
        paper_env = {k: v for k, v in os.environ.items() if not k.startswith("BOT_")}  # no key, no credentials
        proc = subprocess.run([sys.executable, "-m", "bot.cli", "run", "--paper", "--config", str(cfg),
                               "--duration", "2"], cwd=repo, env=paper_env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert "paper trading: no order was sent" in proc.stdout
        assert ex.call(lambda: set(ex.exchange.state.engine.orders)) == sent_live
        with sqlite3.connect(tmp_path / "j.paper.sqlite") as db:
            tokens = {row[0] for row in db.execute("SELECT DISTINCT token_id FROM orders")}
        assert tokens & set(m1.tokens) and tokens & set(m2.tokens)
    finally:
        ex.stop()
