"""``PriceLevels`` (a ``price_change`` in integers) builds exactly the books its ``price_change``
builds, in the compiled book module and in its interpreted source alike."""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.compiled import interpreted
from bot.core.book import price_levels_of
from bot.core import book as active
from bot.core.levels import PriceLevels, pack_levels
from bot.venue.models.ws import LevelChange, PriceChangeEvent


IMPLS = [pytest.param(active, id="active"), pytest.param(interpreted("bot.core.book"), id="interpreted")]

TOKENS = ["A", "B", "C"]
PRICE_TEXT = st.one_of(
    st.integers(0, 1000).map(lambda k: f"{k / 1000:.3f}"),
    st.sampled_from(["0.5", ".5", "0.50", "1", "0", "1.0000001", "2", "-0.1", "abc", "", "1e-3", "0.0001"]),
)
SIZE_TEXT = st.one_of(
    st.integers(0, 10**9).map(lambda k: f"{k / 100:.2f}"),
    st.sampled_from(["0", "100", "1e3", "-1", "x", "12345678901234567890", "0.0000001"]),
)
CHANGE = st.builds(
    lambda a, p, side, s, h: LevelChange(asset_id=a, price=p, side=side, size=s, hash=h),
    st.sampled_from(TOKENS), PRICE_TEXT, st.sampled_from(["BUY", "SELL", "BUY", "SELL", "buy", ""]),
    SIZE_TEXT, st.one_of(st.none(), st.just(""), st.text("0123456789abcdef", min_size=1, max_size=8)),
)
EVENT = st.builds(
    lambda changes, ts: PriceChangeEvent(market="m", timestamp=ts, price_changes=changes),
    st.lists(CHANGE, max_size=12),
    st.one_of(st.integers(0, 2 * 10**12).map(str), st.sampled_from(["", "x", "-5"])),
)


def state(books) -> list:
    return [(b.token_id, b.bids, b.asks, b.best_bid, b.best_ask, b.hash, b.timestamp_ms, b.epoch, b.stale,
             b.updates, b.seq) for b in books] + [books.ignored, books.errors]


def fresh(impl, tracked: list[str], track_all: bool):
    books = impl.Books(tracked, track_all=track_all)
    for b in books:
        b.apply_snapshot([(400_000, 5_000_000)], [(600_000, 5_000_000)], timestamp_ms=1)
    return books


@pytest.mark.parametrize("impl", IMPLS)
@settings(max_examples=300, deadline=None)
@given(events=st.lists(EVENT, max_size=8), tracked=st.lists(st.sampled_from(TOKENS), unique=True),
       track_all=st.booleans())
def test_price_levels_build_the_books_their_price_change_builds(impl, events, tracked, track_all) -> None:
    venue, levels = fresh(impl, tracked, track_all), fresh(impl, tracked, track_all)
    for ev in events:
        pl = price_levels_of(ev)
        touched = venue.apply_event(ev)
        if pl is None:  # a level that does not parse: the venue event is replayed as it is
            levels.apply_event(ev)
            continue
        assert type(pl) is PriceLevels and pl.timestamp == str(pl.timestamp_ms)
        other = levels.apply_event(pl)
        assert (touched and touched.token_id) == (other and other.token_id)
        assert state(venue) == state(levels)
    assert state(venue) == state(levels)


@settings(max_examples=200, deadline=None)
@given(ev=EVENT)
def test_price_changes_of_price_levels_build_the_same_books(ev) -> None:
    pl = price_levels_of(ev)
    if pl is None:
        return
    a, b = fresh(active, TOKENS, False), fresh(active, TOKENS, False)
    a.apply_event(pl)
    b.apply_event(PriceChangeEvent(market=pl.market, timestamp=pl.timestamp, price_changes=pl.price_changes))
    assert state(a) == state(b)


@pytest.mark.parametrize("impl", IMPLS)
def test_a_malformed_price_levels_changes_no_level_and_marks_its_books_stale(impl) -> None:
    ok = pack_levels([(0, 1, 450_000, 7_000_000)])
    for bad in (
        PriceLevels("m", 5, ("A",), ok + pack_levels([(1, 1, 400_000, 1)]), ("",)),  # token index out of range
        PriceLevels("m", 5, ("A",), ok + pack_levels([(0, 0, 1_000_001, 1)]), ("",)),  # price above 1
        PriceLevels("m", 5, ("A",), ok + pack_levels([(0, 0, 500_000, -1)]), ("",)),  # negative size
        PriceLevels("m", 5, ("A",), ok[:-1], ("",)),  # not whole levels
        PriceLevels("m", 5, ["A"], ok, ("",)),  # type: ignore[arg-type]  # tokens not a tuple
    ):
        books = fresh(impl, ["A"], False)
        assert books.apply_event(bad) is None
        book = books["A"]
        assert books.errors == 1 and book.stale and book.resync
        assert book.bids == {400_000: 5_000_000} and book.asks == {600_000: 5_000_000}
