"""The bands market maker: orders at their band's target, kept while the mid wanders within the
band (queue place), replaced when they leave it; sizes and sides against the inventory limit; and
its backtests on the synthetic market and on the sample recording."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.backtest.synthetic import SyntheticConfig, SyntheticMarket
from bot.venue.enums import Side
from strategies.bands import Band, BandQuotes, Params, centre, quote
from strategies.pairs import Holdings, orders
from tests.unit.strategy_kit import SH, backtest, check_accounts, check_orders, check_quotes, holdings_space, pair, pairs

PATH = "strategies.bands:BandsMarketMaker"
TWO = (Band(min_ticks=1, target_ticks=2, max_ticks=3, size=10 * SH), Band(min_ticks=4, target_ticks=5, max_ticks=7, size=20 * SH))


def prices(b: BandQuotes) -> tuple:
    return tuple(lv.price if lv else None for lv in b.bids), tuple(lv.price if lv else None for lv in b.asks)


def test_new_orders_go_to_each_bands_target():
    b = quote(pair(480_000, 520_000), Holdings(), Params(bands=TWO, skew_ticks=0))
    assert prices(b) == ((480_000, 450_000), (520_000, 550_000))
    assert [lv.size for lv in b.bids] == [10 * SH, 20 * SH]


def test_an_order_keeps_its_price_while_the_mid_stays_within_its_band():
    p = Params(bands=TWO, skew_ticks=0)
    first = quote(pair(480_000, 520_000), Holdings(), p)
    up_one = quote(pair(490_000, 530_000), Holdings(), p, first)  # mid 0.50 -> 0.51
    assert up_one == first  # 3 and 6 ticks under, 1 and 4 over: every order is still in its band
    up_two = quote(pair(500_000, 540_000), Holdings(), p, up_one)  # mid 0.52
    # the inner bid (4 ticks under) and both asks (0 and 3 over) left their bands; 0.45 (7 under) stays
    assert prices(up_two) == ((500_000, 450_000), (540_000, 570_000))


def test_orders_that_leave_their_band_go_back_to_the_target():
    p = Params(bands=TWO, skew_ticks=0)
    first = quote(pair(480_000, 520_000), Holdings(), p)
    jumped = quote(pair(520_000, 560_000), Holdings(), p, first)  # the mid went up four ticks
    assert prices(jumped) == ((520_000, 490_000), (560_000, 590_000))


def test_skew_and_pause_against_the_inventory():
    p = Params(bands=TWO, skew_ticks=2, max_inventory=100 * SH, pause_inventory=80 * SH)
    flat = quote(pair(480_000, 520_000), Holdings(), p)
    long = quote(pair(480_000, 520_000), Holdings(yes=50 * SH), p)
    assert prices(long)[0][0] == prices(flat)[0][0] - 10_000  # half the limit: one tick of skew
    paused = quote(pair(480_000, 520_000), Holdings(yes=80 * SH), p)
    assert all(lv is None for lv in paused.bids) and any(paused.asks)


def test_sizes_shrink_to_the_room_left_inner_band_first():
    p = Params(bands=TWO, skew_ticks=0, max_inventory=100 * SH)
    b = quote(pair(480_000, 520_000), Holdings(yes=85 * SH), p)
    assert [lv.size if lv else 0 for lv in b.bids] == [10 * SH, 5 * SH]  # 15 left: 10, then the minimum 5
    c = quote(pair(480_000, 520_000), Holdings(yes=88 * SH), p)
    assert [lv.size if lv else 0 for lv in c.bids] == [10 * SH, 0]  # 2 left: under the minimum


def test_buying_yes_and_selling_no_are_the_same_band():
    """A band's bid rests as a SELL of held NO; after a fill that uses the NO up, the same band is a
    BUY of YES at the same YES price: the decision did not change, only its leg."""
    p = Params(bands=(TWO[0],), skew_ticks=0)
    b = quote(pair(480_000, 520_000), Holdings(no=10 * SH), p)
    yes, no = orders(pair(480_000, 520_000), b.quotes(), Holdings(no=10 * SH))
    assert [(q.side, q.price) for q in no.quotes] == [(Side.SELL, 520_000), (Side.BUY, 480_000)]
    again = quote(pair(480_000, 520_000), Holdings(), p, b)
    assert again == b  # same prices in YES terms
    yes, no = orders(pair(480_000, 520_000), again.quotes(), Holdings())
    assert [(q.side, q.price) for q in yes.quotes] == [(Side.BUY, 480_000)]
    assert [(q.side, q.price) for q in no.quotes] == [(Side.BUY, 480_000)]


def test_bands_must_be_listed_inner_first():
    with pytest.raises(ValueError, match="inner first"):
        Params(bands=(TWO[1], TWO[0]))
    with pytest.raises(ValueError, match="min_ticks"):
        Band(min_ticks=3, target_ticks=2, max_ticks=4, size=SH)


@settings(max_examples=300, deadline=None)
@given(pairs(), holdings_space, st.integers(0, 4), st.integers(-3, 3), st.integers(0, 5))
def test_quotes_keep_every_invariant_before_and_after_the_mid_moves(p, h: Holdings, skew: int, shift: int, tick_gap: int):
    params = Params(bands=TWO, skew_ticks=skew, max_inventory=100 * SH)
    first = quote(p, h, params)
    check_quotes(first.quotes(), p, h, params.max_inventory)
    touch = p.touch()
    lo = touch.best_bid + shift * touch.tick
    hi = max(lo + touch.tick, touch.best_ask + (shift + tick_gap) * touch.tick)
    if touch.tick <= lo and hi <= 1_000_000 - touch.tick:
        moved = pair(lo, hi)
        second = quote(moved, h, params, first)
        check_quotes(second.quotes(), moved, h, params.max_inventory)
        check_orders(orders(moved, second.quotes(), h), moved, h)
        fresh = quote(moved, h, params)  # where each band's orders go when placed anew
        mid = centre(moved.touch(), h.exposure, params)
        for i, band in enumerate(TWO):
            for old, new, target, bid in ((first.bids[i], second.bids[i], fresh.bids[i], True),
                                          (first.asks[i], second.asks[i], fresh.asks[i], False)):
                if old is None or new is None or new == target:
                    continue
                # an order not at its target was kept: it is the old one, and within its band
                assert new == old
                assert band.min_ticks * 10_000 <= ((mid - old.price) if bid else (old.price - mid)) <= band.max_ticks * 10_000


def test_synthetic_backtest(tmp_path: Path):
    syn = SyntheticConfig(seed=2, duration_s=1200.0)
    summary, out = backtest(tmp_path, PATH, {"max_inventory": 40}, synthetic=syn)
    assert summary.fills > 10
    check_accounts(summary, out, SyntheticMarket(syn).markets, max_inventory=40 * SH)
    # queue place: far fewer cancels than a quote that follows every tick of the mid would send
    assert summary.cancels_sent < summary.orders_sent


def test_sample_recording_backtest(tmp_path: Path):
    summary, out = backtest(tmp_path, PATH, {})
    assert summary.orders_sent > 0 and summary.fills > 0
    check_accounts(summary, out)
