"""Exits (``bot.exits``): a strategy stops quoting a market and sheds its exposure there on a
loss, a drawdown or the market's end date coming near; the exit order sells at the touch or buys
the complement when that sheds for less; configs carry the rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.book import Book
from bot.core.clock import SimClock
from bot.core.events import Fill
from bot.core.intents import CENT, Quote, QuoteTarget, Take
from bot.core.markets import MarketIndex, MarketInfo
from bot.exits import ExitRules, Exits, exit_order, marked_pnl, with_exits
from bot.portfolio import Portfolio
from bot.strategy import Strategy, StrategyContext
from bot.venue.enums import OrderType, Side
from bot.venue.units import LOT, UNIT

A = MarketInfo("0xa", ("YA", "NA"), end_ts=10_000)
B = MarketInfo("0xb", ("YB", "NB"), end_ts=90_000)
SH = UNIT


def book(token: str, bid: int | None, ask: int | None) -> Book:
    b = Book(token)
    b.apply_snapshot([(bid, 100 * SH)] if bid else [], [(ask, 100 * SH)] if ask else [])
    return b


class Quoter(Strategy):
    """Quotes a bid on every YES token, on every hook."""

    def _all(self, ctx):
        return [QuoteTarget(m.tokens[0], (Quote(m.tokens[0], Side.BUY, 400_000, 10 * SH),)) for m in ctx.markets]

    def on_start(self, ctx):
        return self._all(ctx)

    def on_book(self, ctx, token_id):
        return self._all(ctx)

    def on_timer(self, ctx):
        return self._all(ctx)


def context(books: dict[str, Book], portfolio: Portfolio, now: float = 0.0) -> StrategyContext:
    return StrategyContext(books=books, portfolio=portfolio, clock=SimClock(now), markets=MarketIndex([A, B]))


def books_at(yes_a=(480_000, 520_000), no_a=(480_000, 520_000)) -> dict[str, Book]:
    return {"YA": book("YA", *yes_a), "NA": book("NA", *no_a), "YB": book("YB", 480_000, 520_000),
            "NB": book("NB", 480_000, 520_000)}


def fill(token: str, side: Side, price: int, size: int, n: int = 1) -> Fill:
    return Fill(f"t{n}", f"o{n}", token, side, price, size)


# --- the exit order -------------------------------------------------------------------------


def test_a_long_yes_is_sold_at_its_bid_unless_buying_no_sheds_it_for_more():
    pf = Portfolio()
    pf.seed("YA", 30 * SH)
    # YES bid 0.48, NO ask 0.52: a set sheds YES for 1 - 0.52 = 0.48, no more than the bid: sell
    assert exit_order(A, pf, books_at(), True) == Take("YA", Side.SELL, 480_000, 30 * SH, OrderType.FAK)
    # NO ask 0.50: buying NO sheds YES for 0.50 > 0.48
    got = exit_order(A, pf, books_at(no_a=(450_000, 500_000)), True)
    assert got.token_id == "NA" and got.side is Side.BUY and got.price == 500_000 and got.order_type is OrderType.FAK
    assert got.amount * UNIT // got.price >= 30 * SH and got.amount % 10_000 == 0  # whole cents, buys it all
    assert exit_order(A, pf, books_at(no_a=(450_000, 500_000)), False).side is Side.SELL  # the rule off


def test_the_net_exposure_is_shed_and_nothing_under_the_minimum_order():
    pf = Portfolio()
    pf.seed("YA", 30 * SH)
    pf.seed("NA", 50 * SH)  # short 20 net: NO is the side held over YES
    assert exit_order(A, pf, books_at(), True) == Take("NA", Side.SELL, 480_000, 20 * SH, OrderType.FAK)
    pf.seed("NA", 33 * SH)  # 3 shares net: under the market's 5-share minimum
    assert exit_order(A, pf, books_at(), True) is None
    stale = books_at()
    stale["NA"].stale = True
    pf.seed("NA", 80 * SH)
    assert exit_order(A, pf, stale, False) is None  # no book to sell into


@given(yes=st.integers(0, 500).map(lambda x: x * LOT * 10), no=st.integers(0, 500).map(lambda x: x * LOT * 10),
       bid=st.integers(1, 98).map(lambda p: p * 10_000), spread=st.integers(1, 5).map(lambda p: p * 10_000),
       gap=st.integers(0, 3).map(lambda p: p * 10_000), complement=st.booleans())
def test_an_exit_order_never_grows_the_exposure_it_sheds(yes, no, bid, spread, gap, complement):
    pf = Portfolio()
    pf.seed("YA", yes)
    pf.seed("NA", no)
    ask = min(bid + spread, 990_000)
    # the NO book ``gap`` under the YES book's mirror: buying one side sheds the other for more
    books = {"YA": book("YA", bid, ask), "NA": book("NA", max(10_000, UNIT - ask - gap), max(20_000, UNIT - bid - gap))}
    order = exit_order(A, pf, books, complement)
    exposure = yes - no
    if abs(exposure) < 5 * SH:  # under the market's minimum order: nothing to shed
        assert order is None
        return
    assert order is not None and order.order_type is OrderType.FAK
    if order.side is Side.SELL:  # the side held over the other, in whole lots, no more than held
        assert order.token_id == ("YA" if exposure > 0 else "NA") and order.price == books[order.token_id].best_bid
        assert order.amount == abs(exposure) // LOT * LOT <= pf.size(order.token_id)
    else:  # the other side bought at its ask: at least the exposure, at most one cent's worth more
        assert order.token_id == ("NA" if exposure > 0 else "YA") and order.price == books[order.token_id].best_ask
        shares = order.amount * UNIT // order.price
        assert abs(exposure) // LOT * LOT <= shares < abs(exposure) // LOT * LOT + CENT * UNIT // order.price + 1
        assert complement and UNIT - order.price > books["YA" if exposure > 0 else "NA"].best_bid
    if complement and gap and order.side is Side.SELL:  # selling was the dearer way only without a book to buy
        assert UNIT - books["NA" if exposure > 0 else "YA"].best_ask <= books[order.token_id].best_bid


# --- the rules --------------------------------------------------------------------------------


def test_a_loss_past_the_limit_empties_every_target_then_sheds_and_the_strategy_never_quotes_again():
    pf = Portfolio()
    pf.apply_fill(fill("YA", Side.BUY, 500_000, 40 * SH))
    ex = Exits(Quoter(), ExitRules(max_loss=3 * SH))
    ctx = context(books_at(), pf)
    assert [t.token_id for t in ex.on_start(ctx)] == ["YA", "YB"]  # quoting
    # YES falls to 0.40 mid: 40 shares lose 4 USDC > 3
    ctx = context(books_at(yes_a=(380_000, 420_000), no_a=(580_000, 620_000)), pf, now=1.0)
    out = ex.on_timer(ctx)
    assert QuoteTarget("YA") in out and QuoteTarget("NA") in out and QuoteTarget("YB") in out
    assert not any(type(i) is QuoteTarget and i.quotes for i in out)  # no quote on any market
    assert Take("YA", Side.SELL, 380_000, 40 * SH, OrderType.FAK) in out
    assert ex.exiting == {"0xa": "loss", "0xb": "loss"}
    # its next hooks: nothing quoted; one exit order per market every exit_every_s
    assert ex.on_book(ctx, "YA") == []
    assert ex.on_timer(context(ctx.books, pf, now=2.0)) == []
    pf.apply_fill(fill("YA", Side.SELL, 380_000, 40 * SH, n=2))  # the exit filled: flat
    assert ex.on_timer(context(ctx.books, pf, now=4.0)) == []
    assert ex.done == {"0xa", "0xb"}


def test_a_drawdown_from_the_highest_marked_pnl_exits():
    pf = Portfolio()
    pf.apply_fill(fill("YA", Side.BUY, 500_000, 40 * SH))
    ex = Exits(Quoter(), ExitRules(max_drawdown=3 * SH))
    ex.on_start(context(books_at(), pf))
    ex.on_timer(context(books_at(yes_a=(580_000, 620_000), no_a=(380_000, 420_000)), pf, now=1.0))  # up 4
    assert not ex.exiting
    ex.on_timer(context(books_at(yes_a=(490_000, 510_000), no_a=(490_000, 510_000)), pf, now=2.0))  # 4 off the top
    assert ex.exiting == {"0xa": "drawdown", "0xb": "drawdown"}


def test_a_market_near_its_end_date_exits_alone_and_the_other_keeps_quoting():
    pf = Portfolio()
    ex = Exits(Quoter(), ExitRules(flatten_before_end_s=600.0))
    assert ex.on_timer(context(books_at(), pf, now=9_000.0)) == Quoter()._all(context(books_at(), pf))
    out = ex.on_timer(context(books_at(), pf, now=9_500.0))  # A ends at 10,000: 500 s away
    assert ex.exiting == {"0xa": "end_date"}
    assert QuoteTarget("YA") in out and QuoteTarget("NA") in out
    assert [t for t in out if type(t) is QuoteTarget and t.quotes] == [Quoter()._all(context(books_at(), pf))[1]]
    assert ex.done == {"0xa"}  # nothing held there: done at once


def test_without_rules_a_strategy_is_not_wrapped_and_the_wrapper_keeps_its_name_and_figures():
    q = Quoter()
    assert with_exits(q, None) is q and with_exits(q, ExitRules()) is q
    wrapped = with_exits(q, ExitRules(max_loss=SH))
    assert isinstance(wrapped, Exits) and wrapped.name == "Quoter" and wrapped.reads == q.reads


def test_the_marked_pnl_counts_realized_unrealized_and_fees():
    pf = Portfolio()
    pf.apply_fill(Fill("t1", "o1", "YA", Side.BUY, 500_000, 10 * SH, fee=20_000))
    pf.apply_fill(Fill("t2", "o2", "YA", Side.SELL, 600_000, 4 * SH))
    # realized 4 x 0.10 = 0.40, unrealized 6 x (0.45 - 0.50) = -0.30, fees 0.02
    assert marked_pnl(pf, books_at(yes_a=(440_000, 460_000)), ["YA", "NA"]) == 80_000


def test_exit_rules_in_a_config_are_checked_and_applied():
    from bot.ops.config import BotConfig, ConfigError, decode_config
    from bot.strategy_set import configured_strategy

    toml = ('[strategy]\npath = "strategies.market_maker:MarketMaker"\n'
            '[strategy.exits]\nmax_loss = 5\nflatten_before_end_s = 3600\n')
    config = decode_config(toml, BotConfig)
    s = configured_strategy(config)
    assert isinstance(s, Exits) and s.rules == ExitRules(max_loss=5 * SH, flatten_before_end_s=3600.0)
    head = '[strategy]\npath = "strategies.market_maker:MarketMaker"\n[strategy.exits]\n'
    with pytest.raises(ConfigError, match="max_drawdown"):
        decode_config(head + "max_drawdown = -1\n", BotConfig)
    with pytest.raises(ConfigError, match="unknown field"):
        decode_config(head + "max_los = 1\n", BotConfig)
    assert configured_strategy(decode_config(head + 'max_loss = "off"\n', BotConfig)).__class__.__name__ == "MarketMaker"
