"""What the shipped strategies' tests share: a market, its books as values, hypothesis spaces of
books and holdings, the invariants every quote must keep, and backtests on the synthetic market and
on the sample recording whose results are checked against each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pyarrow.parquet as pq
from hypothesis import strategies as st

from bot.results.read import read_results
from bot.backtest.runner import run_backtest
from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket
from bot.core.intents import QuoteTarget
from bot.core.markets import MarketInfo
from bot.ops.config import BotConfig
from bot.venue.enums import Side
from bot.venue.units import LOT, UNIT
from strategies.market_maker import BookView
from strategies.pairs import Holdings, Pair, YesQuotes

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"
TICK = 10_000
SH = UNIT  # one share
MIN = 5 * SH
MARKET = MarketInfo("0xmkt", ("YES", "NO"), tick=TICK, min_size=MIN)


def view(token: str, bid: int | None, ask: int | None, size: int = 100 * SH, stale: bool = False,
         tick: int = TICK) -> BookView:
    return BookView(token, bid, ask, size if bid is not None else 0, size if ask is not None else 0, tick, MIN, stale)


def pair(bid: int | None = 480_000, ask: int | None = 520_000, *, size: int = 100 * SH, tick: int = TICK,
         stale: bool = False, market: MarketInfo = MARKET) -> Pair:
    """A market whose NO book mirrors the YES book exactly (as the venue's do)."""
    yes = view(market.tokens[0], bid, ask, size, stale, tick)
    no = view(market.tokens[1], UNIT - ask if ask is not None else None, UNIT - bid if bid is not None else None,
              size, stale, tick)
    return Pair(market, yes, no)


@st.composite
def pairs(draw: Any, tick: int = TICK) -> Pair:
    """Two-sided mirrored markets anywhere on the grid, spreads from one tick to a quarter."""
    bid = draw(st.integers(1, UNIT // tick - 2)) * tick
    ask = bid + draw(st.integers(1, min(25, UNIT // tick - 1 - bid // tick))) * tick
    return pair(bid, ask, size=draw(st.integers(1, 500)) * SH, tick=tick)


holdings_space = st.builds(Holdings, st.integers(0, 300).map(lambda n: n * SH // 2),
                           st.integers(0, 300).map(lambda n: n * SH // 2))


def check_quotes(q: YesQuotes, p: Pair, h: Holdings, max_inventory: int) -> None:
    """Invariants of every YES-terms decision: grid, range, no crossing, bid < ask, sizes, limits."""
    touch = p.touch()
    tick = touch.tick
    for lv in q.bids + q.asks:
        assert lv.price % tick == 0 and tick <= lv.price <= UNIT - tick
        assert lv.size % LOT == 0 and lv.size >= max(p.min_size, LOT)
    for lv in q.bids:
        assert lv.price < touch.best_ask
    for lv in q.asks:
        assert lv.price > touch.best_bid
    if q.bids and q.asks:
        assert max(lv.price for lv in q.bids) < min(lv.price for lv in q.asks)
    assert h.exposure + sum(lv.size for lv in q.bids) <= max(max_inventory, h.exposure)
    assert h.exposure - sum(lv.size for lv in q.asks) >= min(-max_inventory, h.exposure)


def check_orders(targets: tuple[QuoteTarget, QuoteTarget], p: Pair, h: Holdings) -> None:
    """Invariants of the orders a decision becomes: on each token's grid, not crossing its book
    (post-only), sells never more than held."""
    sold = {p.market.tokens[0]: 0, p.market.tokens[1]: 0}
    for target, book in zip(targets, (p.yes, p.no)):
        for q in target.quotes:
            assert q.token_id == target.token_id
            assert q.price % book.tick == 0 and book.tick <= q.price <= UNIT - book.tick
            if q.side is Side.BUY:
                assert book.best_ask is None or q.price < book.best_ask
            else:
                assert book.best_bid is None or q.price > book.best_bid
                sold[q.token_id] += q.size
    assert sold[p.market.tokens[0]] <= h.yes and sold[p.market.tokens[1]] <= h.no


def config(path: str, params: dict[str, Any] | None = None, **sections: Any) -> BotConfig:
    c = BotConfig()
    c = msgspec.structs.replace(c, strategy=msgspec.structs.replace(c.strategy, path=path, params=params or {}))
    for name, values in sections.items():
        c = msgspec.structs.replace(c, **{name: msgspec.structs.replace(getattr(c, name), **values)})
    return c


def backtest(tmp: Path, path: str, params: dict[str, Any] | None = None, *,
             synthetic: SyntheticConfig | None = None, **sections: Any) -> tuple[Any, Path]:
    """A backtest of ``path`` on the synthetic market (when given) or on the sample recording;
    returns the summary and the results folder. ``params`` as a config file writes them (sizes in
    shares)."""
    out = tmp / "results"
    source = SyntheticMarket(synthetic) if synthetic is not None else None
    summary = run_backtest(config(path, params, **sections), [] if source else [SAMPLE], out=out, source=source)
    return summary, out


def rows(out: Path, name: str) -> list[dict[str, Any]]:
    """The rows of a results table (``orders``, ``fills``), read as anyone reads them."""
    return pq.read_table(out / f"{name}.parquet").to_pylist()


def check_accounts(summary: Any, out: Path, markets: list[MarketInfo] | None = None,
                   max_inventory: int | None = None) -> None:
    """The run's books add up: every token's final position is the sum of its fills, the summary
    counts the fills the results hold, and (with ``max_inventory``) no sample ever shows a market's
    exposure YES - NO beyond it."""
    fills = [f for f in rows(out, "fills") if not f.get("reversed")]
    assert summary.fills == len(fills)
    held: dict[str, int] = {}
    for f in fills:
        held[f["token_id"]] = held.get(f["token_id"], 0) + (f["size"] if f["side"] == "BUY" else -f["size"])
    for token, size in summary.final_position.items():
        assert size == held.get(token, 0), token
    if max_inventory is not None and markets:
        for sample in read_results(out).series:
            for m in markets:
                yes, no = (sample.tokens[t].position if t in sample.tokens else 0 for t in m.tokens)
                assert abs(yes - no) <= max_inventory, sample.t
