"""diff(): keep matching orders (queue place), cancel the rest, place what is missing."""

from __future__ import annotations

from bot.core.intents import Quote, QuoteTarget
from bot.execution.diff import diff, on_tick
from bot.execution.orders import OrderState, OwnOrder
from bot.venue.enums import Side

T = "tok"
U = 1_000_000


def live(oid: str, side: Side, price: int, size: int, filled: int = 0) -> OwnOrder:
    return OwnOrder(oid, T, side, price, size, state=OrderState.LIVE, filled=filled)


def q(side: Side, price: int, size: int) -> Quote:
    return Quote(T, side, price, size)


def test_matching_order_is_kept():
    cancels, places = diff(QuoteTarget(T, (q(Side.BUY, 500_000, 10 * U),)), [live("a", Side.BUY, 500_000, 10 * U)], 10_000)
    assert cancels == [] and places == []


def test_reprice_cancels_and_places():
    cancels, places = diff([q(Side.BUY, 510_000, 10 * U)], [live("a", Side.BUY, 500_000, 10 * U)], 10_000)
    assert cancels == ["a"] and places == [q(Side.BUY, 510_000, 10 * U)]


def test_side_must_match():
    cancels, places = diff([q(Side.SELL, 500_000, 10 * U)], [live("a", Side.BUY, 500_000, 10 * U)], 10_000)
    assert cancels == ["a"] and len(places) == 1


def test_remaining_size_within_tolerance_is_kept():
    o = live("a", Side.BUY, 500_000, 10 * U, filled=U // 2)  # 9.5 remaining
    assert diff([q(Side.BUY, 500_000, 10 * U)], [o], 10_000, size_tolerance=U) == ([], [])
    assert diff([q(Side.BUY, 500_000, 10 * U)], [o], 10_000, size_tolerance=0)[0] == ["a"]


def test_empty_target_cancels_everything_in_order():
    orders = [live("a", Side.BUY, 400_000, U), live("b", Side.SELL, 600_000, U)]
    assert diff(QuoteTarget(T), orders, 10_000) == (["a", "b"], [])


def test_oldest_duplicate_is_kept():
    orders = [live("old", Side.BUY, 500_000, U), live("new", Side.BUY, 500_000, U)]
    assert diff([q(Side.BUY, 500_000, U)], orders, 10_000) == (["new"], [])


def test_two_identical_quotes_need_two_orders():
    orders = [live("a", Side.BUY, 500_000, U)]
    cancels, places = diff([q(Side.BUY, 500_000, U), q(Side.BUY, 500_000, U)], orders, 10_000)
    assert cancels == [] and places == [q(Side.BUY, 500_000, U)]


def test_prices_compared_on_the_tick_grid():
    assert on_tick(504_000, 10_000) == 500_000 and on_tick(505_000, 10_000) == 510_000
    assert diff([q(Side.BUY, 500_000, U)], [live("a", Side.BUY, 500_400, U)], 1_000) == ([], [])


def test_zero_size_quote_wants_nothing():
    assert diff([q(Side.BUY, 500_000, 0)], [live("a", Side.BUY, 500_000, U)], 10_000) == (["a"], [])
