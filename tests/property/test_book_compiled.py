"""The compiled book and its interpreted source build the same books from the same changes.

``bot.core.book`` is the compiled module when the build had a C compiler; the source file is loaded
here a second time, interpreted, and both are fed identical streams, good and bad input alike.
"""

from __future__ import annotations


import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.compiled import interpreted as source_build
from bot.core import book as active
from bot.venue.units import UNIT, format_units, parse_units

interpreted = source_build("bot.core.book")
IMPLS = [pytest.param(active, id="active"), pytest.param(interpreted, id="interpreted")]


class Change(msgspec.Struct):
    asset_id: str
    price: str
    side: str
    size: str
    hash: str | None = None


TOKENS = ("yes", "no", "other")
# prices and sizes in the venue's spellings, plus spellings the fast parser hands to the general one
PRICE = st.one_of(st.integers(0, 1000).map(lambda k: format_units(k * 1_000)),
                  st.sampled_from(["0.50", "0.5000", ".5", "1e-1", "1.5", "-0.1", "x", "", "0.0000001"]))
SIZE = st.one_of(st.just("0"), st.integers(0, 10**15).map(format_units),
                 st.integers(0, 10**6).map(lambda k: f"{k / 100:.2f}"),
                 st.sampled_from(["0.00", "1.", "1e3", " 5", "+5", "-1", "abc", "", "1.0000001", "١٢",
                                  "12345678901234.5"]))
CHANGE = st.builds(Change, asset_id=st.sampled_from(TOKENS), price=PRICE,
                   side=st.sampled_from(["BUY", "SELL", "BUY", "SELL", "HOLD"]), size=SIZE,
                   hash=st.one_of(st.none(), st.text("abcdef0123456789", min_size=1, max_size=4)))


def _state(books) -> list:
    out = []
    for b in books:
        out.append((b.token_id, b.bids, b.asks, b.best_bid, b.best_ask, b.hash, b.updates,
                    b.timestamp_ms, b.epoch, b.stale))
    return out + [books.ignored, books.errors]


def _run(module, frames: list[list[Change]], track_all: bool) -> tuple[list, list]:
    books = module.Books(TOKENS[:2], track_all=track_all)
    outcomes = []
    for i, frame in enumerate(frames):
        try:
            outcomes.append(books.apply_changes(frame, 1_000 + i))
        except module.BookError as exc:
            outcomes.append(str(exc))
    return outcomes, _state(books)


@settings(max_examples=300, deadline=None)
@given(frames=st.lists(st.lists(CHANGE, max_size=12), max_size=12), track_all=st.booleans())
def test_compiled_and_interpreted_build_the_same_books(frames, track_all) -> None:
    assert _run(active, frames, track_all) == _run(interpreted, frames, track_all)


@pytest.mark.parametrize("impl", IMPLS)
@settings(max_examples=500, deadline=None)
@given(units=st.integers(0, 10**18 - 1), decimals=st.integers(0, 6), pad=st.integers(0, 3))
def test_plain_units_is_exact_or_declines(impl, units, decimals, pad) -> None:
    whole, frac = divmod(units, UNIT)
    text = str(whole) if decimals == 0 else f"{whole}.{frac // 10 ** (6 - decimals):0{decimals}d}" + "0" * pad
    value = impl.plain_units(text)
    expected = parse_units(text)
    if value == -1:  # declined: more than six decimals or too large for the fast path
        assert len(text.partition(".")[2]) > 6 or whole >= 10**12
    else:
        assert value == expected


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("text", ["", ".", "1.2.3", "-1", "+1", " 1", "1e3", "١٢", "1_000", "0x10", "1.0000001"])
def test_plain_units_declines_every_other_spelling(impl, text) -> None:
    assert impl.plain_units(text) == -1


def test_the_build_says_what_runs() -> None:
    assert active.COMPILED == active.__file__.endswith((".so", ".pyd"))
    assert interpreted.COMPILED is False
