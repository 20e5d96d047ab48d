"""The shipped market maker: the pure quote function and the re-quote rule."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.clock import SimClock
from bot.core.events import Fill
from bot.core.intents import QuoteTarget
from bot.core.markets import MarketIndex, MarketInfo
from bot.portfolio import Portfolio
from bot.strategy import StrategyContext, load_strategy
from bot.venue.enums import Side
from bot.venue.units import UNIT
from strategies.market_maker import (
    BookView, Inventory, MarketMaker, Params, quote, should_requote,
)

TICK = 10_000
SH = UNIT  # one share


def view(bid=500_000, ask=540_000, bid_size=100 * SH, ask_size=100 * SH, tick=TICK, stale=False, min_size=5 * SH):
    return BookView("Y", bid, ask, bid_size, ask_size, tick, min_size, stale)


def sides(target: QuoteTarget) -> dict:
    return {q.side: q for q in target.quotes}


def test_flat_inventory_quotes_bid_only_around_mid():
    t = quote(view(), 0, Params(), 0.0)
    s = sides(t)
    assert set(s) == {Side.BUY}  # nothing held: no ask (no short sales)
    assert s[Side.BUY].price == 500_000  # mid 0.52 - 2 ticks
    assert s[Side.BUY].size == 10 * SH
    assert s[Side.BUY].post_only


def test_held_inventory_quotes_both_sides_and_skews_down():
    flat = sides(quote(view(), Inventory(50 * SH, 0), Params(), 0.0))
    long = sides(quote(view(), Inventory(50 * SH, 50 * SH), Params(max_inventory=100 * SH, skew_ticks=2), 0.0))
    assert flat[Side.BUY].price == 500_000 and flat[Side.SELL].price == 540_000
    assert long[Side.BUY].price == 490_000  # centre moved one tick down at half inventory
    assert long[Side.SELL].price == 530_000


def test_short_exposure_skews_up_but_never_crosses():
    s = sides(quote(view(), Inventory(0, -100 * SH), Params(skew_ticks=10), 0.0))
    assert s[Side.BUY].price == 530_000  # would be 0.60, capped one tick under the ask


def test_prices_rounded_outward_to_the_grid():
    # mid 0.5150 with tick 0.01: bid floors to 0.49, ask ceils to 0.54
    s = sides(quote(view(bid=510_000, ask=520_000), Inventory(20 * SH, 0), Params(), 0.0))
    assert s[Side.BUY].price == 490_000
    assert s[Side.SELL].price == 540_000


def test_micro_price_leans_towards_the_thin_side():
    m = sides(quote(view(bid_size=300 * SH, ask_size=100 * SH), 0, Params(fair="micro", half_spread_ticks=1), 0.0))
    assert m[Side.BUY].price == 520_000  # micro 0.53 - 1 tick (mid would give 0.51)


def test_no_quotes_on_stale_one_sided_or_thin_book():
    assert quote(view(stale=True), 0, Params(), 0.0).quotes == ()
    assert quote(view(bid=None), 0, Params(), 0.0).quotes == ()
    assert quote(view(ask=None), 0, Params(), 0.0).quotes == ()
    assert quote(view(bid_size=1 * SH), 0, Params(min_top_size=5 * SH), 0.0).quotes == ()


def test_clamped_to_price_range_at_the_extremes():
    s = sides(quote(view(bid=10_000, ask=20_000), Inventory(20 * SH, 0), Params(), 0.0))
    assert s[Side.BUY].price == 10_000  # clamped up to the lowest price, still under the ask
    assert s[Side.SELL].price == 40_000
    assert quote(view(bid=None, ask=10_000), 0, Params(), 0.0).quotes == ()
    high = sides(quote(view(bid=980_000, ask=990_000), Inventory(20 * SH, 0), Params(), 0.0))
    assert high[Side.SELL].price == 990_000  # clamped to 1 - tick
    assert high[Side.BUY].price == 960_000


def test_sizes_respect_inventory_and_min_size():
    s = sides(quote(view(), Inventory(3 * SH, 95 * SH), Params(max_inventory=100 * SH), 0.0))
    assert s[Side.BUY].size == 5 * SH  # room left to max inventory
    assert Side.SELL not in s  # 3 shares held < 5 minimum
    s = sides(quote(view(), Inventory(7_123_456, 0), Params(), 0.0))
    assert s[Side.SELL].size == 7_120_000  # lots of 0.01 share, never more than held
    assert quote(view(), Inventory(0, 100 * SH), Params(max_inventory=100 * SH), 0.0).quotes == ()


def test_gtd_expiration_from_now():
    q = quote(view(), 0, Params(order_ttl_s=300), 1_000.7).quotes[0]
    assert q.expiration == 1_300


@settings(max_examples=300, deadline=None)
@given(
    tick=st.sampled_from([1_000, 10_000, 100_000]),
    bid_t=st.integers(1, 999),
    width=st.integers(1, 50),
    pos=st.integers(0, 200 * SH),
    exp=st.integers(-300 * SH, 300 * SH),
    half=st.integers(1, 10),
    skew=st.integers(0, 20),
    fair=st.sampled_from(["mid", "micro"]),
    bsz=st.integers(1, 500 * SH),
    asz=st.integers(1, 500 * SH),
)
def test_quote_invariants(tick, bid_t, width, pos, exp, half, skew, fair, bsz, asz):
    levels = UNIT // tick
    bid = min(bid_t, levels - 2) * tick
    ask = min(bid + width * tick, UNIT - tick)
    b = BookView("Y", bid, ask, bsz, asz, tick, 5 * SH, False)
    p = Params(half_spread_ticks=half, skew_ticks=skew, fair=fair, max_inventory=100 * SH)
    t = quote(b, Inventory(pos, exp), p, 0.0)
    s = sides(t)
    for q in t.quotes:
        assert q.price % tick == 0 and tick <= q.price <= UNIT - tick
        assert q.size % 10_000 == 0 and q.size >= 5 * SH
    if Side.BUY in s:
        assert s[Side.BUY].price < ask
        assert exp + s[Side.BUY].size <= 100 * SH
    if Side.SELL in s:
        assert s[Side.SELL].price > bid
        assert s[Side.SELL].size <= pos
    if len(s) == 2:
        assert s[Side.BUY].price < s[Side.SELL].price


def test_requote_threshold_keeps_queue_place():
    a = quote(view(), Inventory(20 * SH, 0), Params(), 0.0)
    b = quote(view(bid=510_000, ask=550_000), Inventory(20 * SH, 0), Params(), 0.0)  # moved 1 tick
    assert not should_requote(a, a, TICK, 1)
    assert should_requote(a, b, TICK, 1)
    assert not should_requote(a, b, TICK, 2)
    assert should_requote(a, quote(view(stale=True), 0, Params(), 0.0), TICK, 5)  # pull on stale
    assert not should_requote(None, QuoteTarget("Y"), TICK, 1)
    assert should_requote(None, a, TICK, 1)


class _Book:
    def __init__(self, token_id, bid, ask, tick=TICK, stale=False):
        self.token_id, self.best_bid, self.best_ask, self.tick, self.stale = token_id, bid, ask, tick, stale
        self.best_bid_size = self.best_ask_size = 100 * SH
        self.min_size = 0

    @property
    def mid(self):
        return (self.best_bid + self.best_ask) // 2


def test_strategy_requotes_on_book_and_fill_and_pulls_on_stop():
    markets = MarketIndex([MarketInfo("c1", ("Y", "N"))])
    books = {"Y": _Book("Y", 500_000, 540_000), "N": _Book("N", 460_000, 500_000)}
    pf = Portfolio()
    mm = load_strategy("strategies.market_maker:MarketMaker", {"tokens": ["Y", "N"]})
    assert isinstance(mm, MarketMaker)
    ctx = StrategyContext(books=books, portfolio=pf, clock=SimClock(0), markets=markets, params=mm.params)
    start = mm.on_start(ctx)
    assert [t.token_id for t in start] == ["Y", "N"]
    assert mm.on_book(ctx, "Y") == []  # unchanged: keep queue place
    books["Y"].best_bid, books["Y"].best_ask = 520_000, 560_000
    (t,) = mm.on_book(ctx, "Y")
    assert sides(t)[Side.BUY].price == 520_000
    fill = Fill("t1", "o1", "Y", Side.BUY, 520_000, 50 * SH)
    pf.apply(fill)
    out = mm.on_fill(ctx, fill)
    assert {t.token_id for t in out} == {"Y", "N"}  # Y gains an ask, N's bid skews up
    y = next(t for t in out if t.token_id == "Y")
    assert sides(y)[Side.SELL].size == 10 * SH
    books["Y"].stale = True
    (pulled,) = mm.on_book(ctx, "Y")
    assert pulled.quotes == ()
    stop = mm.on_stop(ctx)
    assert stop == [QuoteTarget("N")]


def test_an_order_size_no_market_takes_is_said_in_the_summary_and_the_report(tmp_path):
    from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket
    from bot.results.report import summary_rows
    from tests.unit.strategy_kit import backtest

    syn = SyntheticConfig(seed=1, duration_s=60.0)
    market = SyntheticMarket(syn).markets[0].condition_id
    summary, _ = backtest(tmp_path, "strategies.market_maker:MarketMaker", {"order_size": 4}, synthetic=syn)
    assert summary.orders_sent == 0
    assert summary.warnings == (f"order_size = 4 shares is below the minimum order of 1 market(s) (up to 5 shares: "
                                f"{market}): none is sent there",)
    assert ("warning", summary.warnings[0]) in summary_rows(summary)
    summary, _ = backtest(tmp_path / "b", "strategies.market_maker:MarketMaker", {"order_size": 5}, synthetic=syn)
    assert summary.warnings == () and summary.orders_sent > 0
