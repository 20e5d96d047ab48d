"""A live session of the market maker against the local exchange, recorded by ``bot record``,
then backtested with the same strategy and config: the backtest is shown every touch the live run
quoted from, both runs quote from the book net of their own orders, the backtest quotes exactly
what the live run quoted wherever the touch read the same, and each of its fills is one the recording allows
under the conservative queue model (a trade print at or through our price, after our order was
sent: a touch is never a fill)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import msgspec
import pyarrow.parquet as pq
import pytest

from bot.backtest.replay import replay
from bot.backtest.runner import run_backtest
from bot.core.touch import net_touch, own_levels
from bot.exchange.config import ServerFlowConfig
from bot.ops.config import decode_bot_config
from bot.venue.units import parse_units
from strategies.market_maker import MarketMaker
from tests.integration.exchange_fixture import start_exchange, wait_for
from tests.integration.recorder_fixture import recording
from tests.integration.test_live_trading import running_bot

pytestmark = pytest.mark.integration

# the quotes read the touch's prices (centred on the mid, no minimum size at the top), not its sizes
PARAMS = {"half_spread_ticks": 1, "skew_ticks": 0, "order_size": 10, "max_inventory": 10_000,
          "fair": "mid", "min_top_size": 0}


class Shown(NamedTuple):
    """A book as a run was shown it (what the recording holds: the venue's messages)."""

    best_bid: int | None
    best_ask: int | None
    best_bid_size: int
    best_ask_size: int
    stale: bool
    tick: int
    min_size: int
    bids: tuple  # (price, size) best first
    asks: tuple

    @classmethod
    def of(cls, book: Any) -> Shown:
        return cls(*book.top(), book.min_size, tuple(book.levels(True)), tuple(book.levels(False)))

    def top(self) -> tuple:
        """The touch as the book shows it: best prices and sizes, staleness, tick, minimum size."""
        return self[:7]

    def net_touch(self, own: tuple) -> tuple:
        """The touch of this book without ``own`` (``bot.core.touch.net_touch``), as a tuple."""
        book = SimpleNamespace(**{**self._asdict(), "bids": dict(self.bids), "asks": dict(self.asks)})
        return msgspec.structs.astuple(net_touch(book, own))


class Seen(NamedTuple):
    """One book state a run quoted from: the book, our own orders as it shows them
    (``own_levels``, sorted), the touch the run read (``ctx.touch``) and the quotes it wanted."""

    token: str
    book: Shown
    own: tuple
    touch: tuple
    wanted: tuple  # (side, price, size) of each quote

    def prices(self) -> tuple:
        """What the quotes read of the touch: everything but the sizes left to others (which vary
        with the size our own orders had left there at that moment)."""
        return self.touch[:2] + self.touch[4:]


SEEN: dict[str, list[Seen]] = {"live": [], "backtest": []}


class TracedMaker(MarketMaker):
    """The market maker, noting at each book state it is shown its own orders there, the touch it
    reads and the quotes it wants."""

    run = "live"

    def on_book(self, ctx: Any, token_id: str) -> Any:
        wanted = tuple((q.side.value, q.price, q.size) for q in self.target(ctx, token_id).quotes)
        orders = ctx.open_orders
        own = own_levels(orders.get(token_id) or (), orders.get(ctx.market(token_id).complement(token_id)) or ())
        SEEN[self.run].append(Seen(token_id, Shown.of(ctx.book(token_id)), tuple(sorted(own)),
                                   msgspec.structs.astuple(ctx.touch(token_id)), wanted))
        return super().on_book(ctx, token_id)


class BacktestMaker(TracedMaker):
    run = "backtest"


def config_text(ex, cond: str, strategy: str) -> str:
    u = ex.urls
    params = ", ".join(f"{k} = {json.dumps(v)}" for k, v in PARAMS.items())
    return f"""
{u.venue_toml()}
[strategy]
path = "{strategy}"
markets = ["{cond}"]
params = {{ {params} }}

[sim]
holdings = 1000

[risk]
max_orders_per_window = 200

[backtest]
own_orders_recorded = true  # the recording is of the live session: its books show the live orders
"""


def test_a_backtest_of_a_recorded_live_session_quotes_as_live_did(tmp_path: Path):
    ex = start_exchange(flow=ServerFlowConfig(enabled=True, speed=10.0))
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
                wait_for(lambda: bot.read(lambda: bot.engine.stats.fills) >= 3 and len(SEEN["live"]) >= 40,
                         deadline_s=30, what="a few live fills and 40 book states quoted")
        assert len(SEEN["live"]) >= 40

        SEEN["backtest"].clear()
        config = decode_bot_config(config_text(ex, cond, "tests.integration.test_backtest_vs_live:BacktestMaker"))
        out = tmp_path / "results"
        summary = run_backtest(config, [rec_dir], out=out, seed=3)
        assert summary.fills > 0

        # every touch of the book the live run quoted from, the backtest was shown too (the recording
        # holds the messages live read; updates read together are quoted once, at the newest; a
        # strategy reading the touch is shown a book when its touch moves: the levels under it
        # may have moved on by then)
        shown = {(s.token, s.book.top()) for s in SEEN["backtest"]}
        missing = [s for s in SEEN["live"] if (s.token, s.book.top()) not in shown]
        assert not missing, missing[:2]
        # in both runs the touch quoted from is the book net of the run's own orders there. Those
        # orders differ with timing alone (the backtest quotes from the recording's first snapshot,
        # live from its start a moment later; replacing orders takes the latency model's time, not
        # the venue's), and the recording cannot tell live's orders from others': so the touches
        # are compared where quoting reads the same, not book state by book state
        for s in SEEN["live"] + SEEN["backtest"]:
            assert s.book.net_touch(s.own) == s.touch, s
        # where the touch read the same, live and the backtest quoted the same
        quoted: dict[tuple, tuple] = {}
        for s in SEEN["backtest"]:
            assert quoted.setdefault((s.token, s.prices()), s.wanted) == s.wanted, s
        same = [s for s in SEEN["live"] if (s.token, s.prices()) in quoted]
        assert same
        for s in same:
            assert quoted[(s.token, s.prices())] == s.wanted, s

        # every backtest fill is one the recording allows: a print at or through our price, after we sent
        prints: dict[str, list[tuple[float, int]]] = {}
        for ns, ev in replay([rec_dir]):
            if getattr(ev, "event_type", None) == "last_trade_price" or type(ev).__name__ == "LastTradePriceEvent":
                prints.setdefault(ev.asset_id, []).append((ns / 1e9, parse_units(ev.price)))
        sent = {}
        for o in pq.read_table(out / "orders.parquet").to_pylist():
            sent.setdefault(o["order_id"], o["sent_at"])
        fills = pq.read_table(out / "fills.parquet").to_pylist()
        assert fills
        for f in fills:
            assert f["is_maker"], f
            through = [(t, p) for t, p in prints.get(f["token_id"], ())
                       if sent[f["order_id"]] <= t and (p <= f["price"] if f["side"] == "BUY" else p >= f["price"])]
            assert through, f"fill without a print at or through its price after the order was sent: {f}"
    finally:
        ex.stop()

