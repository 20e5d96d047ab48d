"""Property tests of the L2 book: deltas equal a rebuild, best prices are extremes, no crossing."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.book import Book, Books
from bot.venue.units import format_units

PRICES = st.integers(min_value=1, max_value=999).map(lambda k: k * 1_000)  # 0.001 grid
SIZES = st.one_of(st.just(0), st.integers(min_value=1, max_value=10**12))
LEVEL = st.tuples(st.booleans(), PRICES, SIZES)


class Change(msgspec.Struct):
    asset_id: str
    price: str
    side: str
    size: str
    hash: str = ""


def as_change(is_bid: bool, price: int, size: int) -> Change:
    return Change("t", format_units(price), "BUY" if is_bid else "SELL", format_units(size))


@st.composite
def uncrossed_levels(draw):
    mid = draw(st.integers(min_value=2, max_value=998)) * 1_000
    bids = draw(st.dictionaries(st.integers(1, mid // 1_000 - 1).map(lambda k: k * 1_000),
                                st.integers(1, 10**12), max_size=30))
    asks = draw(st.dictionaries(st.integers(mid // 1_000, 999).map(lambda k: k * 1_000),
                                st.integers(1, 10**12), max_size=30))
    return list(bids.items()), list(asks.items())


@settings(max_examples=300, deadline=None)
@given(start=st.tuples(st.lists(st.tuples(PRICES, SIZES)), st.lists(st.tuples(PRICES, SIZES))),
       deltas=st.lists(LEVEL, max_size=200), chunk=st.integers(1, 20))
def test_deltas_equal_rebuild_from_final_state(start, deltas, chunk) -> None:
    books = Books(["t"])
    book = books["t"]
    book.apply_snapshot(*start)
    # the model: plain dicts with the "size is the new total, 0 removes" rule
    model = {True: {p: s for p, s in start[0] if s}, False: {p: s for p, s in start[1] if s}}
    changes = [as_change(*d) for d in deltas]
    for i in range(0, len(changes), chunk):  # applied frame by frame, like the stream does
        books.apply_changes(changes[i:i + chunk])
        for is_bid, p, s in deltas[i:i + chunk]:
            if s:
                model[is_bid][p] = s
            else:
                model[is_bid].pop(p, None)
        # best prices are the extremes of the levels at every step (the cache never lies)
        assert book.best_bid == (max(book.bids) if book.bids else None)
        assert book.best_ask == (min(book.asks) if book.asks else None)
    assert book.bids == model[True] and book.asks == model[False]
    rebuilt = Book("t")
    rebuilt.apply_snapshot(list(model[True].items()), list(model[False].items()))
    assert (rebuilt.bids, rebuilt.asks) == (book.bids, book.asks)
    assert (rebuilt.best_bid, rebuilt.best_ask) == (book.best_bid, book.best_ask)
    assert all(s > 0 for s in book.bids.values()) and all(s > 0 for s in book.asks.values())
    assert book.updates == len(deltas)


@settings(max_examples=300, deadline=None)
@given(levels=uncrossed_levels(), deltas=st.lists(LEVEL, max_size=50))
def test_snapshot_of_uncrossed_book_is_never_crossed(levels, deltas) -> None:
    book = Book("t")
    for is_bid, p, s in deltas:  # whatever happened before
        book.set_level(is_bid, p, s)
    bids, asks = levels
    book.apply_snapshot(bids, asks)
    assert not book.crossed
    assert book.best_bid == (max(p for p, _ in bids) if bids else None)
    assert book.best_ask == (min(p for p, _ in asks) if asks else None)
    if bids and asks:
        assert book.spread > 0 and book.best_bid <= book.mid < book.best_ask


@settings(max_examples=200, deadline=None)
@given(levels=uncrossed_levels(), limit=PRICES)
def test_depth_and_levels_agree(levels, limit) -> None:
    book = Book("t")
    book.apply_snapshot(*levels)
    bids = book.levels(True)
    asks = book.levels(False)
    assert [p for p, _ in bids] == sorted(book.bids, reverse=True)
    assert [p for p, _ in asks] == sorted(book.asks)
    assert book.depth_to(True, limit) == sum(s for p, s in bids if p >= limit)
    assert book.depth_to(False, limit) == sum(s for p, s in asks if p <= limit)


@settings(max_examples=100, deadline=None)
@given(n_reconnects=st.integers(0, 5), n_ticks=st.integers(0, 5), live_snaps=st.integers(0, 5))
def test_epoch_counts_continuity_breaks(n_reconnects, n_ticks, live_snaps) -> None:
    book = Book("t")
    book.apply_snapshot([], [])
    for _ in range(live_snaps):
        book.apply_snapshot([], [])
    for _ in range(n_reconnects):
        book.mark_stale()
        book.mark_stale()  # marking twice is still one break
        book.apply_snapshot([], [])
    for k in range(n_ticks):
        book.set_tick(1_000 if k % 2 else 10_000)
    assert book.epoch == 1 + n_reconnects + n_ticks
