"""Two strategies live on one account against the local exchange over real sockets: each quotes
only its own market, a counterparty trades with both, and what the bot books (positions, fills
per strategy, working orders) is what the exchange's records show."""

from __future__ import annotations

import pytest
from anyio.from_thread import start_blocking_portal
from prometheus_client import generate_latest

from bot.core.markets import MarketIndex
from bot.engine.assembly import configured_strategy
from bot.live.run import engine_of
from bot.live.shell import LiveShell, held_positions, load_markets, seed_positions, venue_positions
from bot.ops.config import BotConfig, ShellConfig, StrategyInstanceConfig
from bot.ops.metrics import Metrics
from bot.risk.limits import StrategyLimits
from bot.venue.enums import OrderType, Side
from bot.venue.units import UNIT
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.test_live_trading import _venue, counterparty_order, open_orders, signed

pytestmark = pytest.mark.integration

TICK = 10_000


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
                                       params={"half_spread_ticks": 1, "order_size": 10 * UNIT}),
                StrategyInstanceConfig(name="mm-wide", path="strategies.market_maker:MarketMaker",
                                       markets=(m2.condition_id,),
                                       params={"half_spread_ticks": 2, "order_size": 5 * UNIT},
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
