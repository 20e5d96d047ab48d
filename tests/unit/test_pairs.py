"""A binary market in YES terms: both books as one touch, and YES quotes put on the token that
can carry them (buying YES and selling NO are the same liquidity)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.venue.enums import Side
from bot.venue.units import UNIT
from strategies.pairs import Holdings, Level, Pair, YesQuotes, distance_units, on_grid, orders, side_sizes
from tests.unit.strategy_kit import MARKET, MIN, SH, TICK, check_orders, holdings_space, pair, pairs, view


def test_touch_takes_the_better_side_from_either_book():
    # YES book 0.48/0.52; the NO book has a bid at 0.50 (a YES ask at 0.50) and an ask at 0.53
    p = Pair(MARKET, view("YES", 480_000, 520_000), view("NO", 500_000, 530_000))
    t = p.touch()
    assert (t.best_bid, t.best_ask) == (480_000, 500_000) and not t.stale


def test_touch_reads_the_no_book_alone_when_the_yes_book_is_stale():
    p = Pair(MARKET, view("YES", 480_000, 520_000, stale=True), view("NO", 470_000, 510_000))
    t = p.touch()
    assert (t.best_bid, t.best_ask, t.stale) == (490_000, 530_000, False)
    assert Pair(MARKET, view("YES", None, None, stale=True), view("NO", None, None, stale=True)).touch().stale


def test_a_bid_sells_held_no_and_an_ask_buys_no_when_no_yes_is_held():
    p = pair(480_000, 520_000)
    q = YesQuotes((Level(470_000, 10 * SH),), (Level(530_000, 10 * SH),))
    yes, no = orders(p, q, Holdings(yes=0, no=50 * SH))
    assert yes.quotes == ()
    got = {(o.side, o.price, o.size) for o in no.quotes}
    assert got == {(Side.SELL, 530_000, 10 * SH), (Side.BUY, 470_000, 10 * SH)}  # 1 - 0.47 and 1 - 0.53


def test_held_yes_sells_at_the_ask_and_the_bid_buys_yes_without_no():
    yes, no = orders(pair(), YesQuotes((Level(470_000, 10 * SH),), (Level(530_000, 10 * SH),)), Holdings(yes=30 * SH))
    assert {(o.side, o.price) for o in yes.quotes} == {(Side.BUY, 470_000), (Side.SELL, 530_000)}
    assert no.quotes == ()


def test_sells_never_exceed_what_is_held_across_levels():
    q = YesQuotes((), (Level(530_000, 10 * SH), Level(540_000, 10 * SH)))
    yes, no = orders(pair(), q, Holdings(yes=15 * SH))
    assert [(o.side, o.price) for o in yes.quotes] == [(Side.SELL, 530_000)]
    assert [(o.side, o.price) for o in no.quotes] == [(Side.BUY, 460_000)]  # the second level buys NO


def test_orders_on_a_stale_book_are_left_out():
    p = Pair(MARKET, view("YES", 480_000, 520_000, stale=True), view("NO", 480_000, 520_000))
    yes, no = orders(p, YesQuotes((Level(470_000, 10 * SH),), ()), Holdings())
    assert yes.quotes == () and no.quotes == ()


def test_grid_rounds_away_from_the_mid_and_never_takes():
    t = pair(480_000, 520_000).touch()
    assert on_grid(t, 487_000, 511_000) == (480_000, 520_000)
    assert on_grid(t, 530_000, 560_000) == (510_000, 560_000)  # a bid through the ask sits under it
    assert on_grid(t, 515_000, 505_000) == (None, None)  # they would meet
    assert distance_units(0.0123) == 12_300 and distance_units(-0.0000004) == 0
    assert distance_units(float("nan")) is None and distance_units(float("inf")) is None


def test_sizes_stop_at_the_inventory_limit_and_the_minimum():
    assert side_sizes(Holdings(yes=95 * SH), 10 * SH, 100 * SH, MIN) == (5 * SH, 10 * SH)  # the minimum fits
    assert side_sizes(Holdings(yes=96 * SH), 10 * SH, 100 * SH, MIN) == (0, 10 * SH)  # 4 left: under it
    assert side_sizes(Holdings(no=100 * SH), 10 * SH, 100 * SH, MIN) == (10 * SH, 0)


@settings(max_examples=300, deadline=None)
@given(pairs(), holdings_space, st.lists(st.tuples(st.booleans(), st.integers(1, 99), st.integers(1, 40)), max_size=6))
def test_orders_keep_grid_book_and_holdings(p: Pair, h: Holdings, levels: list) -> None:
    touch = p.touch()
    bids = tuple(Level(price * TICK, size * SH) for bid, price, size in levels if bid and price * TICK < touch.best_ask)
    asks = tuple(Level(price * TICK, size * SH) for bid, price, size in levels
                 if not bid and price * TICK > touch.best_bid)
    targets = orders(p, YesQuotes(bids, asks), h)
    check_orders(targets, p, h)
    assert len(targets[0].quotes) + len(targets[1].quotes) == len(bids) + len(asks)  # mirrored books: none lost
    for target in targets:
        for q in target.quotes:  # each order is the YES quote it stands for
            yes_price = q.price if q.token_id == "YES" else UNIT - q.price
            is_bid = (q.side is Side.BUY) == (q.token_id == "YES")
            assert Level(yes_price, q.size) in (bids if is_bid else asks)


def test_a_quote_that_would_lock_or_cross_our_own_is_left_out_the_resting_one_stays():
    from strategies.pairs import Level, YesQuotes, uncrossed

    bid, ask = Level(500_000, 10 * SH), Level(500_000, 10 * SH)
    fine = YesQuotes((Level(490_000, 10 * SH),), (Level(510_000, 10 * SH),))
    assert uncrossed(fine, YesQuotes()) == fine
    assert uncrossed(YesQuotes((bid,), (ask,)), YesQuotes((), (ask,))) == YesQuotes((), (ask,))  # the ask rested
    assert uncrossed(YesQuotes((bid,), (ask,)), YesQuotes((bid,), ())) == YesQuotes((bid,), ())  # the bid rested
    assert uncrossed(YesQuotes((bid,), (ask,)), YesQuotes()) == YesQuotes()  # both new: neither goes
    inner = Level(520_000, 10 * SH)
    two = YesQuotes((inner, Level(480_000, 10 * SH)), (Level(510_000, 10 * SH), Level(530_000, 10 * SH)))
    # the new inner bid crosses the resting inner ask: it alone is left out
    assert uncrossed(two, YesQuotes((), (Level(510_000, 10 * SH),))) == YesQuotes(two.bids[1:], two.asks)


@given(st.lists(st.integers(1, 99), max_size=3), st.lists(st.integers(1, 99), max_size=3),
       st.lists(st.booleans(), min_size=6, max_size=6))
def test_what_is_left_never_locks_or_crosses_and_keeps_every_level_that_crossed_nothing(bids, asks, rested):
    from strategies.pairs import Level, YesQuotes, uncrossed

    q = YesQuotes(tuple(Level(p * 10_000, SH) for p in sorted(bids, reverse=True)),
                  tuple(Level(p * 10_000, SH) for p in sorted(asks)))
    resting = YesQuotes(tuple(lv for lv, r in zip(q.bids, rested) if r), tuple(lv for lv, r in zip(q.asks, rested[3:]) if r))
    out = uncrossed(q, resting)
    assert not out.bids or not out.asks or max(b.price for b in out.bids) < min(a.price for a in out.asks)
    for b in q.bids:
        if all(b.price < a.price for a in q.asks):
            assert b in out.bids
    for a in q.asks:
        if all(b.price < a.price for b in q.bids):
            assert a in out.asks
