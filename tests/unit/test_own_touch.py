"""Quoting from the book net of our own orders: ``bot.core.touch`` takes our working orders (and
the complement's, mirrored) out of a book's touch, the engine hands it to strategies as
``ctx.touch``, and the market maker centres on it, so it never chases its own quotes; its
post-only orders still never cross the touch with our orders in."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.book import Book
from bot.core.clock import SimClock
from bot.core.touch import net_touch, own_levels
from bot.core.vocabulary import UNIT, Side
from bot.execution.protocol import SendPlaces, all_live
from strategies.market_maker import BookView, Params, quote
from tests.unit.test_engine import NO, YES, book, make_engine, places, up

TICK = 10_000


def _book(bids: dict[int, int], asks: dict[int, int]) -> Book:
    b = Book("t")
    b.apply_snapshot(list(bids.items()), list(asks.items()))
    return b


_prices = st.integers(1, 99).map(lambda p: p * TICK)
_sizes = st.integers(1, 50).map(lambda s: s * 1_000_000)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_prices, _sizes, max_size=6), st.dictionaries(_prices, _sizes, max_size=6),
       st.lists(st.tuples(st.booleans(), _prices, _sizes), max_size=6))
def test_the_net_touch_is_the_touch_of_the_book_without_our_orders(bids, asks, own):
    # the others' book, and the one the venue shows: ours added at their levels
    shown_bids, shown_asks = dict(bids), dict(asks)
    for is_bid, price, size in own:
        side = shown_bids if is_bid else shown_asks
        side[price] = side.get(price, 0) + size
    others, shown = _book(bids, asks), _book(shown_bids, shown_asks)
    t = net_touch(shown, own)
    assert (t.best_bid, t.best_ask, t.best_bid_size, t.best_ask_size) == others.top()[:4]
    assert (t.gross_bid, t.gross_ask) == (shown.best_bid, shown.best_ask)


def test_our_orders_the_book_does_not_show_yet_bound_the_gross_touch():
    # our bid at 0.55 and ask at 0.45 are on their way: a post-only order must not meet them
    t = net_touch(_book({400_000: 10}, {600_000: 10}), [(True, 550_000, 5), (False, 450_000, 5)])
    assert (t.best_bid, t.best_ask) == (400_000, 600_000)
    assert (t.gross_bid, t.gross_ask) == (550_000, 450_000)


def test_our_orders_on_the_complement_show_mirrored():
    o = lambda side, price, size: SimpleNamespace(side=side, price=price, remaining=size)  # noqa: E731
    levels = own_levels([o(Side.BUY, 480_000, 5), o(Side.SELL, 530_000, 0)],
                        [o(Side.BUY, 470_000, 7), o(Side.SELL, 600_000, 2)])
    # a filled-out order shows nowhere; a complement BUY at p is an ask at 1 - p, a SELL a bid
    assert levels == [(True, 480_000, 5), (False, UNIT - 470_000, 7), (True, UNIT - 600_000, 2)]


def test_a_quote_never_crosses_our_own_order_on_the_other_side():
    # the market without us: 0.40 / 0.60; our complement bid shows as an ask at 0.50
    view = BookView("t", 400_000, 600_000, 100, 100, TICK, 0, False, gross_bid=400_000, gross_ask=500_000)
    q = quote(view, 0, Params(half_spread_ticks=1), 0.0)
    (bid,) = [x for x in q.quotes if x.side is Side.BUY]
    assert bid.price < 500_000


def test_the_maker_does_not_requote_when_the_book_shows_its_own_bid():
    clock = SimClock(1_000.0)
    eng = make_engine(clock)
    eng.strategy.params = Params(half_spread_ticks=1, tokens=(YES,))
    eng.start()
    eng.on_connection(up(clock))
    out = eng.on_market([book(YES, [("0.46", "100")], [("0.54", "100")]),
                               book(NO, [("0.46", "100")], [("0.54", "100")])], [clock.now()] * 2)
    (bid,) = places(out)
    assert (bid.token_id, bid.side, bid.price) == (YES, Side.BUY, 490_000)
    for a in out:
        if isinstance(a, SendPlaces):
            eng.on_result(all_live(a.batch))
    # the venue's books now show our bid (and its mirror on NO): the market has not moved
    clock.advance(0.1)
    out = eng.on_market([book(YES, [("0.49", "10"), ("0.46", "100")], [("0.54", "100")], ts=2),
                               book(NO, [("0.46", "100")], [("0.51", "10"), ("0.54", "100")], ts=2)],
                              [clock.now()] * 2)
    assert places(out) == [] and not [a for a in out if type(a).__name__ == "SendCancels"]
    touch = eng.ctx.touch(YES)
    assert (touch.best_bid, touch.best_ask, touch.gross_bid) == (460_000, 540_000, 490_000)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(_prices, _sizes, max_size=6), st.dictionaries(_prices, _sizes, max_size=6),
       st.lists(st.tuples(st.booleans(), _prices, _sizes), max_size=6))
def test_books_that_do_not_show_our_orders_are_quoted_from_as_they_are(bids, asks, own):
    # paper trading, a backtest on books recorded without us: nothing of ours is in the book to take
    # out (taking it out would walk the touch away from levels no larger than our order), but the
    # gross touch a post-only order must not cross still counts our orders
    book = _book(bids, asks)
    t = net_touch(book, own, shown=False)
    assert (t.best_bid, t.best_ask, t.best_bid_size, t.best_ask_size) == book.top()[:4]
    own_bids = [price for is_bid, price, _ in own if is_bid]
    own_asks = [price for is_bid, price, _ in own if not is_bid]
    assert t.gross_bid == max([p for p in (book.best_bid,) if p is not None] + own_bids, default=None)
    assert t.gross_ask == min([p for p in (book.best_ask,) if p is not None] + own_asks, default=None)


def test_an_engine_whose_books_do_not_show_our_orders_takes_none_out_of_the_touch():
    clock = SimClock(1_000.0)
    eng = make_engine(clock)
    eng.own_orders_shown = False  # paper trading: the venue's live books never show our orders
    eng.strategy.params = Params(half_spread_ticks=1, tokens=(YES,))
    eng.start()
    eng.on_connection(up(clock))
    out = eng.on_market([book(YES, [("0.46", "100")], [("0.54", "100")]),
                               book(NO, [("0.46", "100")], [("0.54", "100")])], [clock.now()] * 2)
    for a in out:
        if isinstance(a, SendPlaces):
            eng.on_result(all_live(a.batch))
    # someone else bids 0.49 for as much as our resting bid there: the touch is theirs, all of it
    clock.advance(0.1)
    eng.on_market([book(YES, [("0.49", "10"), ("0.46", "100")], [("0.54", "100")], ts=2),
                         book(NO, [("0.46", "100")], [("0.51", "10"), ("0.54", "100")], ts=2)], [clock.now()] * 2)
    touch = eng.ctx.touch(YES)
    assert (touch.best_bid, touch.best_bid_size, touch.best_ask) == (490_000, 10_000_000, 540_000)


def test_a_backtest_takes_our_orders_out_of_the_touch_only_for_books_recorded_while_we_quoted(monkeypatch):
    import bot.backtest.runner as runner
    from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket
    from bot.ops.config import decode_bot_config

    built = []
    real = runner.build_engine
    monkeypatch.setattr(runner, "build_engine", lambda *a, **k: built.append(real(*a, **k)) or built[-1])
    for section, shown in (("", False), ("[backtest]\nown_orders_recorded = true\n", True)):
        config = decode_bot_config('[strategy]\npath = "strategies.market_maker:MarketMaker"\n' + section)
        runner.run_backtest(config, [], source=SyntheticMarket(SyntheticConfig(seed=1, duration_s=5.0)))
        assert built[-1].own_orders_shown is shown
