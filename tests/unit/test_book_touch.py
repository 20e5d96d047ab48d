"""A book's ``touch`` counter and the books' token slots: the shortcuts the engine and the level
hot path take must never hide a change."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.book import Book, Books
from bot.core.levels import PriceLevels, pack_levels

TICK = 10_000

# one write to a book: a level (side, price in ticks, size in lots; 0 removes), a snapshot, a tick
_level = st.tuples(st.just("level"), st.booleans(), st.integers(1, 12), st.integers(0, 3))
_snapshot = st.tuples(st.just("snapshot"), st.lists(st.tuples(st.integers(1, 12), st.integers(1, 3)), max_size=4),
                      st.lists(st.tuples(st.integers(1, 12), st.integers(1, 3)), max_size=4))
_tick = st.tuples(st.just("tick"), st.sampled_from((1_000, 10_000)))


def _apply(book: Book, op: tuple) -> None:
    if op[0] == "level":
        _, is_bid, ticks, lots = op
        book.set_level(is_bid, ticks * TICK, lots * 1_000_000)
    elif op[0] == "snapshot":
        _, bids, asks = op
        book.apply_snapshot([(p * TICK, s * 1_000_000) for p, s in bids],
                            [(p * TICK, s * 1_000_000) for p, s in asks])
    else:
        book.set_tick(op[1])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_level, _snapshot, _tick), max_size=40), st.lists(st.booleans(), max_size=40))
def test_the_touch_counter_moves_whenever_the_touch_does(ops: list[tuple], reads: list[bool]) -> None:
    """Whatever the writes, ``top()`` differs from the last one read only if ``touch`` moved since
    (``reads``: after which writes the touch is not read, so a cleared best price stays to be
    recomputed through the next ones)."""
    book = Book("t")
    seen_top, seen_touch = book.top(), book.touch
    for i, op in enumerate(ops):
        _apply(book, op)
        if i < len(reads) and reads[i]:
            continue  # not read after this write
        top = book.top()
        if book.touch == seen_touch:
            assert top == seen_top, (op, top, seen_top)
        seen_top, seen_touch = top, book.touch


def test_a_level_behind_the_touch_leaves_the_counter_alone() -> None:
    book = Book("t")
    book.apply_snapshot([(480_000, 5), (470_000, 5)], [(520_000, 5)])
    before = book.touch
    book.set_level(True, 460_000, 7)  # below the best bid
    book.set_level(True, 470_000, 0)  # a bid behind the best leaves
    book.set_level(False, 530_000, 9)  # above the best ask
    assert book.touch == before
    book.set_level(True, 480_000, 6)  # the best bid's size
    assert book.touch > before


def _levels(tokens: tuple[str, ...], rows: list[tuple[int, int, int, int]]) -> PriceLevels:
    return PriceLevels("m", 1, tokens, pack_levels(rows), ("",) * len(tokens))


def test_levels_for_a_token_tracked_later_reach_its_book() -> None:
    """The token slots of the last event are kept only while no book is added or removed."""
    books = Books(["a"])
    assert books.apply_levels(_levels(("a", "b"), [(0, 1, 500_000, 1), (1, 1, 500_000, 2)])) == 1
    books.add("b")
    assert books.apply_levels(_levels(("a", "b"), [(0, 1, 500_000, 3), (1, 1, 500_000, 4)])) == 2
    assert books["b"].bids == {500_000: 4}
    books.remove("a")
    assert books.apply_levels(_levels(("a", "b"), [(0, 1, 500_000, 5), (1, 1, 500_000, 6)])) == 1
    assert books["b"].bids == {500_000: 6}


def test_an_event_naming_no_token_after_a_book_came_touches_no_book() -> None:
    """Forgetting the kept slots forgets their books too: an event with no tokens (which matches
    the forgotten, empty token list) reaches no book, as its ``price_change`` reaches none."""
    books = Books([], track_all=True)
    books.apply_levels(PriceLevels("m", 0, ("a",), pack_levels([(0, 1, 500_000, 1)]), ("",)))
    books.add("b")
    books.apply_levels(PriceLevels("m", 7, (), b"", ()))
    assert books["a"].timestamp_ms == 0 and books["b"].timestamp_ms == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_level, _snapshot, _tick), max_size=30), st.booleans(), st.integers(1, 12),
       st.booleans())
def test_a_post_only_order_crosses_the_book_iff_it_meets_the_other_sides_best(ops, is_buy, ticks, stale) -> None:
    book = Book("t")
    book.stale = False
    for op in ops:
        _apply(book, op)
    book.stale = stale
    price = ticks * TICK
    other = book.best_ask if is_buy else book.best_bid
    meets = other is not None and (price >= other if is_buy else price <= other)
    assert book.crosses(is_buy, price) is (stale or meets)
