"""A live session of the market maker against the local exchange, recorded by ``bot record``,
then backtested with the same strategy and config: the backtest quotes exactly what the live run
quoted at every book state the live run saw, and each of its fills is one the recording allows
under the conservative queue model (a trade print at or through our price, after our order was
sent: a touch is never a fill)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from bot.backtest.replay import replay
from bot.backtest.runner import run_backtest
from bot.exchange.config import FlowConfig
from bot.ops.config import decode_bot_config
from bot.venue.units import parse_units
from strategies.market_maker import MarketMaker
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.recorder_fixture import recording
from tests.integration.test_live_trading import running_bot

pytestmark = pytest.mark.integration

PARAMS = {"half_spread_ticks": 1, "skew_ticks": 0, "order_size": 10_000_000, "max_inventory": 10_000_000_000}
SEEN: dict[str, list[tuple[str, tuple, tuple]]] = {"live": [], "backtest": []}


class TracedMaker(MarketMaker):
    """The market maker, noting at each book state it is shown (the touch net of its own orders,
    with the gross touch beside it) the quotes it wants there."""

    run = "live"

    def on_book(self, ctx: Any, token_id: str) -> Any:
        wanted = tuple((q.side.value, q.price, q.size) for q in self.target(ctx, token_id).quotes)
        SEEN[self.run].append((token_id, msgspec.structs.astuple(ctx.touch(token_id)), wanted))
        return super().on_book(ctx, token_id)


class BacktestMaker(TracedMaker):
    run = "backtest"


def config_text(ex, cond: str, strategy: str) -> str:
    u = ex.urls
    params = ", ".join(f"{k} = {v}" for k, v in PARAMS.items())
    return f"""
{u.venue_toml()}
[strategy]
path = "{strategy}"
markets = ["{cond}"]
params = {{ {params} }}

[sim]
holdings = 1000000000

[risk]
max_orders_per_window = 200
"""


def test_a_backtest_of_a_recorded_live_session_quotes_as_live_did(tmp_path: Path):
    ex = start_exchange(flow=FlowConfig(enabled=True, speed=10.0))
    try:
        with running_bot(ex) as probe:  # the market the live bot trades: the first it loads
            cond = probe.markets[0].condition_id
        cfg = tmp_path / "record.toml"
        cfg.write_text(config_text(ex, cond, "strategies.market_maker:MarketMaker"))
        with recording(cfg, cond, tmp_path / "rec", duration_s=30, log=tmp_path / "rec.log") as rec_dir:
            SEEN["live"].clear()
            live = TracedMaker(PARAMS)
            with running_bot(ex, strategy=live) as bot:
                # updates received together are quoted once (their newest book): wait for enough states
                wait_for(lambda: bot.read(lambda: bot.engine.stats.fills) >= 3 and len(SEEN["live"]) >= 20,
                         deadline_s=30, what="a few live fills and 20 book states quoted")
        assert len(SEEN["live"]) >= 20

        SEEN["backtest"].clear()
        config = decode_bot_config(config_text(ex, cond, "tests.integration.test_backtest_vs_live:BacktestMaker"))
        out = tmp_path / "results"
        summary = run_backtest(config, [rec_dir], out=out, seed=3)
        assert summary.fills > 0

        # the book states the live run quoted from (the touch net of its own orders), the backtest saw
        # too: all but the first states, before the recording's snapshot, and a few around our own
        # orders (the touch counts them as they rest and travel: the venue timed them live, the
        # latency model in the backtest); at the same state, orders included, it quoted the same
        seen = {(t, touch[:7]) for t, touch, _ in SEEN["backtest"]}
        missing = [(t, touch) for t, touch, _ in SEEN["live"] if (t, touch[:7]) not in seen]
        assert len(missing) <= max(2, len(SEEN["live"]) // 5), missing[:3]
        backtest = {(t, touch): wanted for t, touch, wanted in SEEN["backtest"]}
        same = [(t, touch, wanted) for t, touch, wanted in SEEN["live"] if (t, touch) in backtest]
        assert same
        for t, touch, wanted in same:
            assert backtest[(t, touch)] == wanted, (t, touch)

        # every backtest fill is one the recording allows: a print at or through our price, after we sent
        prints: dict[str, list[tuple[float, int]]] = {}
        for ns, ev in replay([rec_dir]):
            if getattr(ev, "event_type", None) == "last_trade_price" or type(ev).__name__ == "LastTradePriceEvent":
                prints.setdefault(ev.asset_id, []).append((ns / 1e9, parse_units(ev.price)))
        sent = {}
        for line in (out / "orders.jsonl").read_text().splitlines():
            o = json.loads(line)
            sent.setdefault(o["order_id"], o["sent_at"])
        fills = [json.loads(line) for line in (out / "fills.jsonl").read_text().splitlines()]
        assert fills
        for f in fills:
            assert f["is_maker"], f
            through = [(t, p) for t, p in prints.get(f["token_id"], ())
                       if sent[f["order_id"]] <= t and (p <= f["price"] if f["side"] == "BUY" else p >= f["price"])]
            assert through, f"fill without a print at or through its price after the order was sent: {f}"
    finally:
        ex.stop()

