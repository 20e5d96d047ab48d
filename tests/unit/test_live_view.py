"""The live view rendered by rich at 80 and 120 columns: every figure whole, no line too wide, and
the URL lines never wrapped or cut."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console

from bot.core.clock import SimClock
from bot.engine.engine import Engine
from bot.core.markets import MarketIndex, MarketInfo
from bot.execution.reconciler import Reconciler, ReconcilerConfig
from bot.execution.router import Router
from bot.live.view import header_lines, px, render, short, usd
from bot.portfolio import Portfolio
from bot.risk import RiskGate, RiskLimits
from bot.venue.models.ws import decode_market_frame
from bot.venue.stream import ConnectionEvent
from bot.venue.throttle import RateWindow, Throttle
from bot.venue.units import format_units
from strategies.market_maker import MarketMaker, Params
from tests.unit.test_engine import Signer

COND = "0x" + "ab" * 32
# real-length token ids, as the venue's are (77 decimal digits)
YES = "71321045679252212594626385532706912750332728571942532289631379312455583992563"
NO = "52114319501245915516055106046884209969926127482827954674443846427813813222426"
COND2 = "0x" + "cd" * 32
YES2 = "10498265339214873659104721095837465019283746501928374650192837465019283746501"
NO2 = "99283746501928374650192837465019283746501928374650192837465019283746501928374"


def _book(cond: str, token: str, bids, asks) -> object:
    frame = {"event_type": "book", "market": cond, "asset_id": token, "timestamp": "1", "hash": "h",
             "bids": [{"price": p, "size": s} for p, s in bids], "asks": [{"price": p, "size": s} for p, s in asks]}
    return decode_market_frame(json.dumps([frame]).encode())[0]


@pytest.fixture
def engine() -> Engine:
    """Two markets quoted by the market maker, wide figures everywhere, one book never received."""
    clock = SimClock()
    markets = MarketIndex([MarketInfo(COND, (YES, NO)), MarketInfo(COND2, (YES2, NO2), tick=1_000)])
    rec = Reconciler(ReconcilerConfig(owner="o"))
    big = [RateWindow(1000, 10.0)]
    router = Router(rec.orders, Signer(), place_throttle=Throttle(big, clock.now),
                    cancel_throttle=Throttle(big, clock.now))
    pf = Portfolio()
    pf.seed(YES, 12_345_670_000, 512_345)
    pf.seed(NO, 970_000_000, 487_655)
    pf.seed(YES2, 1_005_510_000, 990_000)
    eng = Engine(strategy=MarketMaker(Params(half_spread_ticks=1)), markets=markets, clock=clock, router=router,
                 reconciler=rec, risk=RiskGate(RiskLimits(max_position=None, max_market_notional=None, max_net_exposure=None), markets), portfolio=pf,
                 perf=lambda: clock.now())
    eng.start()
    eng.on_connection(ConnectionEvent(kind="connected", channel="market", shard=0, attempt=0, at=clock.now(),
                                      subscriptions=(YES, NO, YES2, NO2)))
    eng.on_market([_book(COND, YES, [("0.45", "102.88")], [("0.51", "1003.55")])])
    eng.on_market([_book(COND, NO, [("0.49", "1003.55")], [("0.55", "102.88")])])
    eng.on_market([_book(COND2, YES2, [("0.011", "99999.99")], [("0.019", "12345.67")])])
    return eng


def _figures(eng: Engine) -> list[str]:
    """Every figure the books table shows, formatted as the view formats it."""
    marks = eng.marks()
    out = []
    for m in eng.markets:
        for t in m.tokens:
            b = eng.books.get(t)
            if b is not None and b.best_bid is not None:
                out += [format_units(b.best_bid_size), px(b.best_bid), px(b.best_ask), format_units(b.best_ask_size)]
            out += [f"{px(o.price)}x{format_units(o.remaining)}" for o in eng.working_orders(t)]
            pos = eng.portfolio.position(t)
            out += [short(t), format_units(pos.size), usd(pos.unrealized_pnl(marks.get(t)))]
    return out


def _rendered(width: int, *things) -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    for thing in things:
        console.print(thing)
    return console.export_text().splitlines()


@pytest.mark.parametrize("width", [80, 120])
def test_every_figure_shows_whole_and_no_line_is_too_wide(engine, width):
    lines = _rendered(width, render(engine, elapsed=3.0, duration=60.0))
    assert max(len(line) for line in lines) <= width
    text = "\n".join(lines)
    figures = _figures(engine)
    assert len(figures) > 20 and any(f.startswith("-") for f in figures)  # the wide cases are there
    for figure in figures:
        assert re.search(rf"(?<!\S){re.escape(figure)}(?!\S)", text), (figure, text)
    for header in ("token", "position", "unreal.", "our", "bids", "asks"):
        assert re.search(rf"(?<!\S){re.escape(header)}(?!\S)", text), header
    assert "orders sent" in text and "tick-to-order median" in text


@pytest.mark.parametrize("width", [80, 120])
def test_url_lines_are_never_wrapped_or_cut(width):
    urls = [("exchange", "http://127.0.0.1:40097"), ("metrics", "http://127.0.0.1:9464/metrics")]
    lines = _rendered(width, *header_lines("demo: market making on 2 market(s) for 60s against the local exchange",
                                           urls))
    assert max(len(line) for line in lines) <= width
    for _, url in urls:
        assert sum(url in line for line in lines) == 1
