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


class Plain:
    """A live order as a record holds it: the side as the venue's string, not the enum."""

    def __init__(self, order_id: str, side: str, price: int, remaining: int) -> None:
        self.order_id, self.side, self.price, self.remaining = order_id, side, price, remaining


def test_default_size_tolerance_is_exact():
    assert diff([q(Side.BUY, 500_000, U)], [live("a", Side.BUY, 500_000, U - 1)], 10_000) == (
        ["a"], [q(Side.BUY, 500_000, U)])


def test_a_side_given_as_the_venue_string_matches_the_enum():
    assert diff([q(Side.SELL, 600_000, U)], [Plain("a", "SELL", 600_000, U)], 10_000) == ([], [])
    assert diff([q(Side.BUY, 600_000, U)], [Plain("a", "SELL", 600_000, U)], 10_000)[0] == ["a"]


def test_rounding_to_the_grid_is_half_up_for_live_orders_and_quotes():
    # 0.506 is nearer 0.51 than 0.50: a live order there does the job of a quote at 0.51 ...
    assert diff([q(Side.BUY, 510_000, U)], [live("a", Side.BUY, 506_000, U)], 10_000) == ([], [])
    # ... and a quote at 0.506 is kept by a live order at 0.51
    assert diff([q(Side.BUY, 506_000, U)], [live("a", Side.BUY, 510_000, U)], 10_000) == ([], [])
    assert diff([q(Side.BUY, 504_000, U)], [live("a", Side.BUY, 510_000, U)], 10_000)[0] == ["a"]


def test_a_tick_of_zero_or_one_compares_exact_prices():
    for tick in (0, 1):
        assert diff([q(Side.BUY, 500_001, U)], [live("a", Side.BUY, 500_001, U)], tick) == ([], [])
        assert diff([q(Side.BUY, 500_001, U)], [live("a", Side.BUY, 500_000, U)], tick)[0] == ["a"]
        assert on_tick(500_001, tick) == 500_001


def test_a_tick_of_two_rounds_odd_prices():
    assert on_tick(3, 2) == 4 and on_tick(4, 2) == 4
    assert diff([q(Side.BUY, 4, U)], [live("a", Side.BUY, 3, U)], 2) == ([], [])
    assert diff([q(Side.BUY, 3, U)], [live("a", Side.BUY, 4, U)], 2) == ([], [])


def test_grid_prices_stay_exact_integers_of_any_size():
    assert type(on_tick(505_000, 10_000)) is int
    grid = 3 * (10**18 + 1)  # beyond a float's integers: a float step there is 512
    assert on_tick(grid + 1, 3) == grid and on_tick(grid + 2, 3) == grid + 3
    assert diff([q(Side.BUY, grid, U)], [live("a", Side.BUY, grid + 1, U)], 3) == ([], [])
    assert diff([q(Side.BUY, grid, U)], [live("a", Side.BUY, grid - 3, U)], 3) == (["a"], [q(Side.BUY, grid, U)])


def test_two_live_orders_at_one_side_and_price_each_keep_a_quote():
    orders = [live("a", Side.BUY, 500_000, U), live("b", Side.BUY, 500_000, U), live("c", Side.BUY, 500_000, U)]
    assert diff([q(Side.BUY, 500_000, U), q(Side.BUY, 500_000, U)], orders, 10_000) == (["c"], [])


def test_a_zero_size_quote_does_not_end_the_quotes_after_it():
    want = [q(Side.BUY, 500_000, 0), q(Side.SELL, 600_000, U), q(Side.BUY, 400_000, -1), q(Side.BUY, 300_000, U)]
    assert diff(want, [live("a", Side.SELL, 600_000, U)], 10_000) == ([], [q(Side.BUY, 300_000, U)])


def test_the_smallest_positive_size_is_wanted():
    assert diff([q(Side.BUY, 500_000, 1)], [], 10_000) == ([], [q(Side.BUY, 500_000, 1)])
